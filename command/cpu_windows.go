package command

import (
	"syscall"
	"time"
)

// processTimes returns the process's user and kernel CPU time.
func processTimes() (user, sys time.Duration, ok bool) {
	var creation, exit, kernel, usr syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0, 0, false
	}
	if err := syscall.GetProcessTimes(h, &creation, &exit, &kernel, &usr); err != nil {
		return 0, 0, false
	}
	// Filetime counts 100 ns intervals.
	ticks := func(f syscall.Filetime) time.Duration {
		return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
	}
	return ticks(usr), ticks(kernel), true
}
