//go:build !unix

package dirlock

import (
	"errors"
	"os"
)

var errHeld = errors.New("held by another process")

// lock is a no-op where flock is not available: two servers on one
// directory are not detected there.
func lock(*os.File) error { return nil }
