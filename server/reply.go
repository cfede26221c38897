package server

import (
	"strconv"

	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/resp"
	"github.com/tidwall/redcon"
)

// Reply writing. Replies are appended to the connection's output buffer with
// redcon's Append helpers and flushed once per pipeline batch. Methods that
// differ between RESP2 and RESP3 (nulls, maps, sets, doubles, verbatim
// text) pick the form the client negotiated with HELLO, as Redis 7 does.

// WriteOK writes +OK.
func (c *Conn) WriteOK() { c.out = redcon.AppendOK(c.out) }

// WriteSimple writes a simple string (+s).
func (c *Conn) WriteSimple(s string) { c.out = redcon.AppendString(c.out, s) }

// WriteError writes an error reply; msg is a text from errors.go (without
// '-'). The first word is counted in INFO errorstats.
func (c *Conn) WriteError(msg string) {
	c.out = redcon.AppendError(c.out, msg)
	c.cmdFailed = true
	c.srv.countError(msg)
}

// WriteInt writes an integer (:n).
//
// Most integer replies are small (CL.THROTTLE's five, counts, flags): a
// single digit is written directly, others through formatUint, both
// without strconv's call and copy.
func (c *Conn) WriteInt(n int64) {
	if uint64(n) < 10 {
		c.out = append(c.out, ':', byte('0'+n), '\r', '\n')
		return
	}
	c.out = append(c.out, ':')
	c.out = redisnum.AppendInt(c.out, n)
	c.out = append(c.out, '\r', '\n')
}

// WriteBulk writes a bulk string.
func (c *Conn) WriteBulk(b []byte) { c.out = resp.AppendBulk(c.out, b) }

// WriteBulkString writes a bulk string.
func (c *Conn) WriteBulkString(s string) { c.out = redcon.AppendBulkString(c.out, s) }

// WriteBulkInt writes n as a bulk string (as Redis replies for GET of an
// integer-encoded string).
func (c *Conn) WriteBulkInt(n int64) {
	c.out = resp.AppendBulkInt(c.out, n)
}

// WriteNull writes a null bulk string: $-1 in RESP2, _ in RESP3.
func (c *Conn) WriteNull() {
	if c.proto == 3 {
		c.out = append(c.out, '_', '\r', '\n')
		return
	}
	c.out = append(c.out, "$-1\r\n"...)
}

// WriteNullArray writes a null array: *-1 in RESP2, _ in RESP3.
func (c *Conn) WriteNullArray() {
	if c.proto == 3 {
		c.out = append(c.out, '_', '\r', '\n')
		return
	}
	c.out = append(c.out, "*-1\r\n"...)
}

// WriteArray writes an array header of n elements.
func (c *Conn) WriteArray(n int) { c.out = resp.AppendArrayHeader(c.out, n) }

// WriteMap writes a map header of n key/value pairs: %n in RESP3, an array
// of 2n elements in RESP2.
func (c *Conn) WriteMap(n int) {
	if c.proto == 3 {
		c.out = append(c.out, '%')
		c.out = strconv.AppendInt(c.out, int64(n), 10)
		c.out = append(c.out, '\r', '\n')
		return
	}
	c.WriteArray(2 * n)
}

// WriteSet writes a set header: ~n in RESP3, an array in RESP2.
func (c *Conn) WriteSet(n int) {
	if c.proto == 3 {
		c.out = append(c.out, '~')
		c.out = strconv.AppendInt(c.out, int64(n), 10)
		c.out = append(c.out, '\r', '\n')
		return
	}
	c.WriteArray(n)
}

// WriteDouble writes a double: ,f in RESP3, a bulk string in RESP2, with
// Redis's formatting (AppendFloat).
func (c *Conn) WriteDouble(f float64) {
	var buf [32]byte
	if c.proto == 3 {
		c.out = append(c.out, ',')
		c.out = redisnum.AppendFloat(c.out, f)
		c.out = append(c.out, '\r', '\n')
		return
	}
	c.out = redcon.AppendBulk(c.out, redisnum.AppendFloat(buf[:0], f))
}

// WriteBool writes a boolean: #t/#f in RESP3, :1/:0 in RESP2.
func (c *Conn) WriteBool(b bool) {
	if c.proto == 3 {
		if b {
			c.out = append(c.out, "#t\r\n"...)
		} else {
			c.out = append(c.out, "#f\r\n"...)
		}
		return
	}
	if b {
		c.WriteInt(1)
	} else {
		c.WriteInt(0)
	}
}

// WriteVerbatim writes text as Redis does for INFO and CLIENT LIST: a
// verbatim string (=N\r\ntxt:...) in RESP3, a bulk string in RESP2.
func (c *Conn) WriteVerbatim(text string) {
	if c.proto == 3 {
		c.out = append(c.out, '=')
		c.out = strconv.AppendInt(c.out, int64(len(text)+4), 10)
		c.out = append(c.out, "\r\ntxt:"...)
		c.out = append(c.out, text...)
		c.out = append(c.out, '\r', '\n')
		return
	}
	c.WriteBulkString(text)
}
