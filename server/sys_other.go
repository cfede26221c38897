//go:build !unix

package server

import "errors"

func readCPUTimes() cpuTimes {
	var t cpuTimes
	if user, sys, ok := processTimes(); ok {
		t.user, t.sys = user.Seconds(), sys.Seconds()
	}
	return t // children: ratekv starts none
}

var errNoRawWrite = errors.New("no raw socket writes on this system")

// writeFD is only implemented on Unix; elsewhere writeNow writes nothing
// and the connection's own write sends the replies.
func writeFD(uintptr, []byte) (int, error) { return 0, errNoRawWrite }
