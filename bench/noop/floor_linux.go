//go:build linux

package main

import (
	"fmt"
	"net"
	"runtime"
	"syscall"
	"unsafe"
)

// serveFloor is the -loop epoll engine: the cheapest server this package
// can be. One locked thread blocks in epoll_wait (level-triggered), reads
// each ready socket once, frames the commands (nextCommand), and writes
// all of its replies in one write: the per-request work of a server
// reduced to the two syscalls every server pays.
//
// What it is for: at pipeline 1 the load generator's core can be the
// bottleneck (its TCP send is most of a request's cost). A server that
// matches this one there is bounded by the client, not by its own work;
// compare.sh's persistence table uses it as the client's ceiling.
func serveFloor(addr string, ready func(net.Addr)) error {
	runtime.LockOSThread()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	lf, err := ln.(*net.TCPListener).File() // a blocking duplicate we own
	if err != nil {
		return err
	}
	ln.Close()
	defer lf.Close() // keeps lf (and so lfd) from its finalizer
	lfd := int(lf.Fd())
	if ready != nil {
		ready(listenAddr(lfd))
	}
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	if err := syscall.SetNonblock(lfd, true); err != nil {
		return err
	}
	if err := epollAdd(ep, lfd, syscall.EPOLLIN); err != nil {
		return err
	}
	conns := map[int]*floorConn{}
	events := make([]syscall.EpollEvent, 256)
	rbuf := make([]byte, 64<<10)
	for {
		n, err := syscall.EpollWait(ep, events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			if fd == lfd {
				acceptAll(ep, lfd, conns)
				continue
			}
			c := conns[fd]
			if c == nil {
				continue
			}
			var ok bool
			switch {
			case ev.Events&(syscall.EPOLLERR|syscall.EPOLLHUP) != 0:
				ok = false // level-triggered: left open, it would report again and again
			case ev.Events&syscall.EPOLLOUT != 0:
				ok = c.flush(ep)
			default:
				ok = c.serve(rbuf) && c.flush(ep)
			}
			if !ok {
				c.close(ep)
				delete(conns, fd)
			}
		}
	}
}

// floorConn is one client of the floor: bytes of a command not complete
// yet, and replies not written yet.
type floorConn struct {
	fd       int
	pending  []byte
	out      []byte
	blocked  bool // waiting for EPOLLOUT: not reading meanwhile
	closeOut bool // close once out is written (after a protocol error)
}

func acceptAll(ep, lfd int, conns map[int]*floorConn) {
	for {
		nfd, _, err := syscall.Accept4(lfd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN: none left; anything else: try on the next event
		}
		_ = syscall.SetsockoptInt(nfd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		if epollAdd(ep, nfd, syscall.EPOLLIN|syscall.EPOLLRDHUP) != nil {
			syscall.Close(nfd)
			continue
		}
		conns[nfd] = &floorConn{fd: nfd}
	}
}

// serve reads once and appends a reply for every complete command. It
// returns false when the connection is done (EOF, error).
func (c *floorConn) serve(rbuf []byte) bool {
	if c.blocked || c.closeOut {
		return true
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&rbuf[0])), uintptr(len(rbuf)))
	if e == syscall.EAGAIN || e == syscall.EINTR {
		return true
	}
	if e != 0 || r == 0 {
		return false
	}
	data := rbuf[:r]
	if len(c.pending) > 0 {
		c.pending = append(c.pending, data...)
		data = c.pending
	}
	var rest []byte
	var ferr error
	c.out, rest, ferr = appendReplies(c.out, data)
	c.pending = append(c.pending[:0], rest...)
	if ferr == nil && len(c.pending) > maxPending {
		ferr = errTooBig
	}
	if ferr != nil {
		c.out = append(append(append(c.out, "-ERR "...), ferr.Error()...), "\r\n"...)
		c.closeOut = true
		c.pending = nil
	}
	return true
}

// flush writes what it can of c.out, waiting for EPOLLOUT when the socket
// is full. It returns false when the connection is done.
func (c *floorConn) flush(ep int) bool {
	for len(c.out) > 0 {
		w, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&c.out[0])), uintptr(len(c.out)))
		if e == syscall.EINTR {
			continue
		}
		if e == syscall.EAGAIN {
			if !c.blocked {
				c.blocked = true
				_ = epollMod(ep, c.fd, syscall.EPOLLOUT)
			}
			return true
		}
		if e != 0 {
			return false
		}
		c.out = c.out[:copy(c.out, c.out[w:])]
	}
	if c.closeOut {
		return false
	}
	if c.blocked {
		c.blocked = false
		_ = epollMod(ep, c.fd, syscall.EPOLLIN|syscall.EPOLLRDHUP)
	}
	return true
}

func (c *floorConn) close(ep int) {
	_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, c.fd, nil)
	syscall.Close(c.fd)
}

func epollAdd(ep, fd int, events uint32) error {
	ev := syscall.EpollEvent{Events: events, Fd: int32(fd)}
	return syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev)
}

func epollMod(ep, fd int, events uint32) error {
	ev := syscall.EpollEvent{Events: events, Fd: int32(fd)}
	return syscall.EpollCtl(ep, syscall.EPOLL_CTL_MOD, fd, &ev)
}

func listenAddr(fd int) net.Addr {
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return nil
	}
	if in4, ok := sa.(*syscall.SockaddrInet4); ok {
		return &net.TCPAddr{IP: net.IP(in4.Addr[:]), Port: in4.Port}
	}
	if in6, ok := sa.(*syscall.SockaddrInet6); ok {
		return &net.TCPAddr{IP: net.IP(in6.Addr[:]), Port: in6.Port}
	}
	return nil
}
