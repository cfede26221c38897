//go:build !linux

package main

import (
	"errors"
	"net"
)

// serveFloor needs epoll: the -loop epoll engine is Linux only.
func serveFloor(string, func(net.Addr)) error {
	return errors.New("-loop epoll needs Linux (epoll); use -loop redcon")
}
