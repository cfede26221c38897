//go:build !unix

package server

import "errors"

var errNoRawWrite = errors.New("no raw socket writes on this system")

// writeFD is only implemented on Unix; elsewhere writeNow writes nothing
// and the connection's own write sends the replies.
func writeFD(uintptr, []byte) (int, error) { return 0, errNoRawWrite }
