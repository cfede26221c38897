package resp

import "github.com/ratekv/ratekv/internal/redisnum"

// Reply and record encoding beyond redcon's Append helpers: the lengths of
// keys, values and numbers written without strconv.

// AppendArrayHeader appends a RESP array header, *n\r\n.
func AppendArrayHeader(dst []byte, n int) []byte {
	if n < 10 {
		return append(dst, '*', byte('0'+n), '\r', '\n')
	}
	dst = append(dst, '*')
	dst = redisnum.AppendInt(dst, int64(n))
	return append(dst, '\r', '\n')
}

// AppendBulk appends b as a RESP bulk string, $len\r\nb\r\n, with the
// short lengths of keys, values and numbers written without strconv (which
// redcon's AppendBulk calls for every length). Replies and journal records
// both use it.
func AppendBulk(dst, b []byte) []byte {
	switch n := len(b); {
	case n < 10:
		dst = append(dst, '$', byte('0'+n), '\r', '\n')
	case n < 100:
		dst = append(dst, '$', byte('0'+n/10), byte('0'+n%10), '\r', '\n')
	default:
		dst = append(dst, '$')
		dst = redisnum.AppendInt(dst, int64(n))
		dst = append(dst, '\r', '\n')
	}
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// AppendBulkInt appends the decimal form of n as a RESP bulk string.
func AppendBulkInt(dst []byte, n int64) []byte {
	if n < 0 {
		var num [24]byte
		return AppendBulk(dst, redisnum.AppendInt(num[:0], n))
	}
	var buf [24]byte
	i := redisnum.FormatUint(&buf, uint64(n))
	return AppendBulk(dst, buf[i:])
}
