//go:build unix

package server

import "syscall"

// writeFD writes b to a socket's descriptor without waiting (the flusher's
// writeNow; the socket is non-blocking).
func writeFD(fd uintptr, b []byte) (int, error) { return syscall.Write(int(fd), b) }
