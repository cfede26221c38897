package main

import (
	"os/exec"
	"strings"
	"testing"
)

// allowedImports says which project packages each package may import: the
// layout's one-way arrows (see CONTRIBUTING.md). internal/* is open to
// every package; a package missing here may import nothing of the project.
var allowedImports = map[string][]string{
	"resp":    {},
	"journal": {"resp"},
	"config":  {},
	"gcra":    {},
	"shards":  {},
	"persist": {"config", "journal", "shards"},
	"command": {"resp", "journal", "config", "gcra", "shards", "persist"},
	"server":  {"resp", "journal", "config", "gcra", "shards", "persist", "command"},
	"metrics": {"config", "persist", "command"},
	"cluster": {"resp", "journal", "config", "gcra", "shards", "persist", "command"},
	"main":    {"resp", "journal", "config", "gcra", "shards", "persist", "command", "server", "metrics", "cluster"},
}

const module = "github.com/ratekv/ratekv"

// TestImportsPointOneWay lists every package's imports (tests excluded)
// with go list and fails on an import the layout does not allow.
func TestImportsPointOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		if pkg == "" {
			pkg = "main"
		}
		if pkg == "bench" || strings.HasPrefix(pkg, "bench/") || strings.HasPrefix(pkg, "internal/") {
			checkLeaf(t, pkg, fields[1:])
			continue
		}
		allowed, known := allowedImports[pkg]
		if !known {
			t.Errorf("package %s is not in allowedImports: add it with the imports it may have", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok || strings.HasPrefix(dep, "internal/") {
				continue
			}
			if !contains(allowed, dep) {
				t.Errorf("%s imports %s, which the layout does not allow", pkg, dep)
			}
		}
	}
}

// checkLeaf: internal packages are leaves (they may use each other), and
// the bench tools stand apart from the server's packages.
func checkLeaf(t *testing.T, pkg string, imports []string) {
	for _, imp := range imports {
		dep, ok := strings.CutPrefix(imp, module+"/")
		switch {
		case !ok, strings.HasPrefix(dep, "internal/"):
		case strings.HasPrefix(pkg, "bench") && (dep == "bench" || strings.HasPrefix(dep, "bench/")):
		default:
			t.Errorf("%s imports %s: internal and bench packages import no other project package", pkg, dep)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
