package main

import (
	"os"
	"os/exec"
	"testing"
)

// TestBuildsForOtherSystems type-checks every package, tests included, for
// systems other than this one: the Linux-only parts (the event loops,
// io_uring, getrusage, raw socket writes) must keep their fallbacks
// compiling. It only compiles (go vet), it runs nothing.
func TestBuildsForOtherSystems(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the module for other systems")
	}
	for _, goos := range []string{"windows", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			cmd := exec.Command("go", "vet", "./...")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("GOOS=%s go vet ./...: %v\n%s", goos, err, out)
			}
		})
	}
}
