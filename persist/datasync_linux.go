package persist

import (
	"os"
	"syscall"
)

// datasync makes f's data (and its size) durable with fdatasync, which
// unlike fsync does not wait for a journal commit of the modification
// time: what Redis uses for the AOF.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return f.Sync()
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = syscall.Fdatasync(int(fd)); serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
