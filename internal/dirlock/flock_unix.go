//go:build unix

package dirlock

import (
	"errors"
	"os"
	"syscall"
)

var errHeld = errors.New("held by another process")

func lock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errHeld
	}
	return err
}
