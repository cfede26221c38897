package lualib

import (
	"math"
	"strconv"
)

// FormatNumber formats f as Lua 5.1 does (LUA_NUMBER_FMT, "%.14g"), with
// C's spellings of the infinities and NaN: what tostring and cjson.encode
// produce in Redis.
func FormatNumber(f float64) string {
	return string(AppendNumber(nil, f))
}

// AppendNumber appends FormatNumber(f) to dst.
func AppendNumber(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		if math.Signbit(f) {
			return append(dst, "-nan"...)
		}
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case f == math.Trunc(f) && math.Abs(f) < 1e14:
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return strconv.AppendFloat(dst, f, 'g', 14, 64)
}
