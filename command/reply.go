package command

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
func (c *Client) WriteOK() { c.Out = redcon.AppendOK(c.Out) }

// WriteSimple writes a simple string (+s).
func (c *Client) WriteSimple(s string) { c.Out = redcon.AppendString(c.Out, s) }

// WriteError writes an error reply; msg is a text from errors.go (without
// '-'). The first word is counted in INFO errorstats.
func (c *Client) WriteError(msg string) {
	c.Out = redcon.AppendError(c.Out, msg)
	c.cmdFailed = true
	c.eng.countError(msg)
}

// WriteInt writes an integer (:n).
//
// Most integer replies are small (CL.THROTTLE's five, counts, flags): a
// single digit is written directly, others through formatUint, both
// without strconv's call and copy.
func (c *Client) WriteInt(n int64) {
	if uint64(n) < 10 {
		c.Out = append(c.Out, ':', byte('0'+n), '\r', '\n')
		return
	}
	c.Out = append(c.Out, ':')
	c.Out = redisnum.AppendInt(c.Out, n)
	c.Out = append(c.Out, '\r', '\n')
}

// WriteBulk writes a bulk string.
func (c *Client) WriteBulk(b []byte) { c.Out = resp.AppendBulk(c.Out, b) }

// WriteBulkString writes a bulk string.
func (c *Client) WriteBulkString(s string) { c.Out = redcon.AppendBulkString(c.Out, s) }

// WriteBulkInt writes n as a bulk string (as Redis replies for GET of an
// integer-encoded string).
func (c *Client) WriteBulkInt(n int64) {
	c.Out = resp.AppendBulkInt(c.Out, n)
}

// WriteNull writes a null bulk string: $-1 in RESP2, _ in RESP3.
func (c *Client) WriteNull() {
	if c.proto == 3 {
		c.Out = append(c.Out, '_', '\r', '\n')
		return
	}
	c.Out = append(c.Out, "$-1\r\n"...)
}

// WriteNullArray writes a null array: *-1 in RESP2, _ in RESP3.
func (c *Client) WriteNullArray() {
	if c.proto == 3 {
		c.Out = append(c.Out, '_', '\r', '\n')
		return
	}
	c.Out = append(c.Out, "*-1\r\n"...)
}

// WriteArray writes an array header of n elements.
func (c *Client) WriteArray(n int) { c.Out = resp.AppendArrayHeader(c.Out, n) }

// WriteMap writes a map header of n key/value pairs: %n in RESP3, an array
// of 2n elements in RESP2.
func (c *Client) WriteMap(n int) {
	if c.proto == 3 {
		c.Out = append(c.Out, '%')
		c.Out = strconv.AppendInt(c.Out, int64(n), 10)
		c.Out = append(c.Out, '\r', '\n')
		return
	}
	c.WriteArray(2 * n)
}

// WriteSet writes a set header: ~n in RESP3, an array in RESP2.
func (c *Client) WriteSet(n int) {
	if c.proto == 3 {
		c.Out = append(c.Out, '~')
		c.Out = strconv.AppendInt(c.Out, int64(n), 10)
		c.Out = append(c.Out, '\r', '\n')
		return
	}
	c.WriteArray(n)
}

// WriteDouble writes a double: ,f in RESP3, a bulk string in RESP2, with
// Redis's formatting (AppendFloat).
func (c *Client) WriteDouble(f float64) {
	var buf [32]byte
	if c.proto == 3 {
		c.Out = append(c.Out, ',')
		c.Out = redisnum.AppendFloat(c.Out, f)
		c.Out = append(c.Out, '\r', '\n')
		return
	}
	c.Out = redcon.AppendBulk(c.Out, redisnum.AppendFloat(buf[:0], f))
}

// WriteBool writes a boolean: #t/#f in RESP3, :1/:0 in RESP2.
func (c *Client) WriteBool(b bool) {
	if c.proto == 3 {
		if b {
			c.Out = append(c.Out, "#t\r\n"...)
		} else {
			c.Out = append(c.Out, "#f\r\n"...)
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
func (c *Client) WriteVerbatim(text string) {
	if c.proto == 3 {
		c.Out = append(c.Out, '=')
		c.Out = strconv.AppendInt(c.Out, int64(len(text)+4), 10)
		c.Out = append(c.Out, "\r\ntxt:"...)
		c.Out = append(c.Out, text...)
		c.Out = append(c.Out, '\r', '\n')
		return
	}
	c.WriteBulkString(text)
}
