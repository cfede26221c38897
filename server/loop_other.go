//go:build !linux

package server

import (
	"errors"
	"net"
)

// eventLoop exists only on Linux (loop_linux.go); elsewhere every client
// gets its own goroutine and these are never reached.
type eventLoop struct{}

func newEventLoops(*Server, int) ([]*eventLoop, error) {
	return nil, errors.New("event loops need Linux's epoll")
}

func (l *eventLoop) claim(*Conn, net.Conn) bool { return false }
func (l *eventLoop) add(*Conn)                  {}
func (l *eventLoop) wake()                      {}
func (l *eventLoop) kill(*Conn)                 {}
func (l *eventLoop) stop()                      {}
func (l *eventLoop) waitTurn()                  {}
func (l *eventLoop) releaseTurn()               {}
func (l *eventLoop) runsRequests() bool         { return false }

func (c *Conn) poke() {}

func (c *Conn) readSome([]byte) (int, error) { return 0, errors.New("no event loop") }
func (c *Conn) writeSome() error             { return errors.New("no event loop") }
func (c *Conn) closeSocket()                 {}

func (l *eventLoop) release(*Conn) (net.Conn, error) { return nil, errors.New("no event loop") }
