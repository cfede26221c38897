//go:build unix

package command

import "syscall"

func readCPUTimes() cpuTimes {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	sec := func(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
	return cpuTimes{sys: sec(self.Stime), user: sec(self.Utime), sysChildren: sec(children.Stime), userChildren: sec(children.Utime)}
}
