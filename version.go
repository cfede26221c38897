package main

import (
	"fmt"
	"runtime/debug"

	"github.com/ratekv/ratekv/command"
)

// commit is the commit the binary was built from, for builds without the
// repository's .git (the Docker image): go build -ldflags "-X main.commit=…".
// Go's own VCS stamp, when there is one, wins.
var commit string

// versionLine is what --version prints: ratekv's version, the commit it
// was built from (and whether the tree had changes), and the Redis version
// whose semantics it follows.
func versionLine(info *debug.BuildInfo, ok bool) string {
	rev, modified := commit, false
	if ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	build := "commit unknown"
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		build = "commit " + rev
		if modified {
			build += ", modified"
		}
	}
	return fmt.Sprintf("ratekv %s (%s) follows Redis %s semantics", command.Version, build, command.RedisVersion)
}
