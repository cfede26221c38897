package main

import (
	"fmt"
	"net"
	"time"
)

// client is a RESP connection with a reusable read buffer. It is not safe
// for concurrent use.
type client struct {
	conn net.Conn
	buf  []byte
	r, w int // unread bytes are buf[r:w]
}

// dialAuth is the AUTH command every new connection sends first (-user,
// -pass), or nil.
var dialAuth []string

func dial(addr string, timeout time.Duration) (*client, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true) // the default, made explicit
	}
	c := &client{conn: conn, buf: make([]byte, 16<<10)}
	if dialAuth != nil {
		if _, err := c.do(dialAuth...); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *client) Close() error { return c.conn.Close() }

// readReply returns the next complete reply and its type byte. The slice
// aliases the read buffer and is valid until the next call.
func (c *client) readReply() ([]byte, byte, error) {
	for {
		if c.r < c.w {
			n, kind, err := parseReply(c.buf[c.r:c.w])
			if err != nil {
				return nil, 0, err
			}
			if n > 0 {
				reply := c.buf[c.r : c.r+n]
				c.r += n
				return reply, kind, nil
			}
		}
		// Need more bytes: make room, then read.
		if c.r == c.w {
			c.r, c.w = 0, 0
		} else if c.r > 0 {
			c.w = copy(c.buf, c.buf[c.r:c.w])
			c.r = 0
		}
		if c.w == len(c.buf) {
			nb := make([]byte, 2*len(c.buf))
			copy(nb, c.buf[:c.w])
			c.buf = nb
		}
		m, err := c.conn.Read(c.buf[c.w:])
		c.w += m
		if err != nil && m == 0 {
			return nil, 0, err
		}
	}
}

// do sends one command and returns a copy of its reply. An error reply is
// returned as a Go error.
func (c *client) do(args ...string) ([]byte, error) {
	if _, err := c.conn.Write(appendCommand(nil, args...)); err != nil {
		return nil, err
	}
	reply, kind, err := c.readReply()
	if err != nil {
		return nil, err
	}
	if isErrorKind(kind) {
		return nil, fmt.Errorf("server error: %s", errorText(reply))
	}
	return append([]byte(nil), reply...), nil
}
