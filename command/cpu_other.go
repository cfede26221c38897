//go:build !unix

package command

func readCPUTimes() cpuTimes {
	var t cpuTimes
	if user, sys, ok := processTimes(); ok {
		t.user, t.sys = user.Seconds(), sys.Seconds()
	}
	return t // children: ratekv starts none
}
