package lualib

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// cjson is lua-cjson 2.1 as Redis configures it: encode and decode with
// the default settings (numbers as "%.14g", "/" escaped, empty tables as
// objects, sparse arrays up to the default ratio, nesting up to 1000) and
// cjson.null. The configuration functions are not provided.

const cjsonMaxDepth = 1000

// Null is cjson.null: JSON null decoded, and encoded as null.
var Null = &lua.LUserData{}

// OpenCJSON returns the cjson library's table.
func OpenCJSON(L *lua.LState) *lua.LTable {
	t := L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{
		"encode": cjsonEncode,
		"decode": cjsonDecode,
	})
	t.RawSetString("null", Null)
	return t
}

func cjsonEncode(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.ArgError(1, "expected 1 argument")
	}
	var b []byte
	b = encodeJSON(L, b, L.Get(1), 0)
	L.Push(lua.LString(b))
	return 1
}

func encodeJSON(L *lua.LState, b []byte, v lua.LValue, depth int) []byte {
	switch v := v.(type) {
	case *lua.LNilType:
		return append(b, "null"...)
	case lua.LBool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case lua.LNumber:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			L.RaiseError("Cannot serialise number: must not be NaN or Inf")
		}
		return AppendNumber(b, f)
	case lua.LString:
		return appendJSONString(b, string(v))
	case *lua.LUserData:
		if v == Null {
			return append(b, "null"...)
		}
	case *lua.LTable:
		depth++
		if depth > cjsonMaxDepth {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		if n := jsonArrayLen(L, v); n > 0 {
			b = append(b, '[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b = append(b, ',')
				}
				b = encodeJSON(L, b, v.RawGetInt(i), depth)
			}
			return append(b, ']')
		}
		b = append(b, '{')
		first := true
		for k, val := v.Next(lua.LNil); k != lua.LNil; k, val = v.Next(k) {
			if !first {
				b = append(b, ',')
			}
			first = false
			switch k := k.(type) {
			case lua.LString:
				b = appendJSONString(b, string(k))
			case lua.LNumber:
				b = appendJSONString(b, FormatNumber(float64(k)))
			default:
				L.RaiseError("Cannot serialise %s: table key must be a number or string", k.Type().String())
			}
			b = append(b, ':')
			b = encodeJSON(L, b, val, depth)
		}
		return append(b, '}')
	}
	L.RaiseError("Cannot serialise %s: type not supported", v.Type().String())
	return b
}

// jsonArrayLen returns the length of t as a JSON array, 0 when it is an
// object (or empty). Like lua-cjson it raises an error for an array that
// is excessively sparse (more than twice as long as its element count,
// and longer than 10).
func jsonArrayLen(L *lua.LState, t *lua.LTable) int {
	maxIdx, items := 0, 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) < 1 || float64(n) != math.Floor(float64(n)) {
			return 0
		}
		if int(n) > maxIdx {
			maxIdx = int(n)
		}
		items++
	}
	if maxIdx > 10 && maxIdx > items*2 {
		L.RaiseError("Cannot serialise table: excessively sparse array")
	}
	return maxIdx
}

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '/':
			b = append(b, '\\', '/')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 || c == 0x7f {
				const hex = "0123456789abcdef"
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

func cjsonDecode(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.ArgError(1, "expected 1 argument")
	}
	d := &jsonDecoder{L: L, s: L.CheckString(1)}
	v := d.value(0)
	d.space()
	if d.i < len(d.s) {
		d.fail("the end", d.token())
	}
	L.Push(v)
	return 1
}

type jsonDecoder struct {
	L *lua.LState
	s string
	i int
}

func (d *jsonDecoder) space() {
	for d.i < len(d.s) && strings.IndexByte(" \t\r\n", d.s[d.i]) >= 0 {
		d.i++
	}
}

// token names the token at d.i as lua-cjson's errors do.
func (d *jsonDecoder) token() string {
	if d.i >= len(d.s) {
		return "T_END"
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return "T_OBJ_BEGIN"
	case c == '}':
		return "T_OBJ_END"
	case c == '[':
		return "T_ARR_BEGIN"
	case c == ']':
		return "T_ARR_END"
	case c == ',':
		return "T_COMMA"
	case c == ':':
		return "T_COLON"
	case c == '"':
		return "T_STRING"
	case c == '-' || c >= '0' && c <= '9':
		return "T_NUMBER"
	case strings.HasPrefix(d.s[d.i:], "true"), strings.HasPrefix(d.s[d.i:], "false"):
		return "T_BOOLEAN"
	case strings.HasPrefix(d.s[d.i:], "null"):
		return "T_NULL"
	}
	return "invalid token"
}

func (d *jsonDecoder) fail(want, found string) {
	d.L.RaiseError("Expected %s but found %s at character %d", want, found, d.i+1)
}

func (d *jsonDecoder) value(depth int) lua.LValue {
	d.space()
	if depth > cjsonMaxDepth {
		d.L.RaiseError("Found too many nested data structures (%d) at character %d", depth, d.i+1)
	}
	if d.i >= len(d.s) {
		d.fail("value", "T_END")
	}
	switch c := d.s[d.i]; {
	case c == '{':
		d.i++
		t := d.L.NewTable()
		d.space()
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			return t
		}
		for {
			d.space()
			if d.i >= len(d.s) || d.s[d.i] != '"' {
				d.fail("object key string", d.token())
			}
			k := d.str()
			d.space()
			if d.i >= len(d.s) || d.s[d.i] != ':' {
				d.fail("colon", d.token())
			}
			d.i++
			t.RawSetString(k, d.value(depth+1))
			d.space()
			if d.i < len(d.s) && d.s[d.i] == ',' {
				d.i++
				continue
			}
			if d.i < len(d.s) && d.s[d.i] == '}' {
				d.i++
				return t
			}
			d.fail("comma or object end", d.token())
		}
	case c == '[':
		d.i++
		t := d.L.NewTable()
		d.space()
		if d.i < len(d.s) && d.s[d.i] == ']' {
			d.i++
			return t
		}
		for n := 1; ; n++ {
			t.RawSetInt(n, d.value(depth+1))
			d.space()
			if d.i < len(d.s) && d.s[d.i] == ',' {
				d.i++
				continue
			}
			if d.i < len(d.s) && d.s[d.i] == ']' {
				d.i++
				return t
			}
			d.fail("comma or array end", d.token())
		}
	case c == '"':
		return lua.LString(d.str())
	case c == '-' || c >= '0' && c <= '9':
		j := d.i
		for j < len(d.s) && strings.IndexByte("+-0123456789.eE", d.s[j]) >= 0 {
			j++
		}
		f, err := strconv.ParseFloat(d.s[d.i:j], 64)
		if err != nil && !strings.Contains(err.Error(), "range") {
			d.fail("value", "invalid number")
		}
		d.i = j
		return lua.LNumber(f)
	case strings.HasPrefix(d.s[d.i:], "true"):
		d.i += 4
		return lua.LTrue
	case strings.HasPrefix(d.s[d.i:], "false"):
		d.i += 5
		return lua.LFalse
	case strings.HasPrefix(d.s[d.i:], "null"):
		d.i += 4
		return Null
	}
	d.fail("value", d.token())
	return lua.LNil
}

// str reads a JSON string at d.i (its opening quote).
func (d *jsonDecoder) str() string {
	start := d.i
	d.i++
	var b []byte
	for {
		if d.i >= len(d.s) {
			d.i = start
			d.fail("string", "unexpected end of string")
		}
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return string(b)
		case c == '\\':
			if d.i+1 >= len(d.s) {
				d.i = start
				d.fail("string", "invalid escape code")
			}
			e := d.s[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := d.hex4()
				if ok && r >= 0xd800 && r < 0xdc00 && strings.HasPrefix(d.s[d.i:], "\\u") {
					d.i += 2
					lo, ok2 := d.hex4()
					if !ok2 || lo < 0xdc00 || lo > 0xdfff {
						ok = false
					}
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				}
				if !ok {
					d.i = start
					d.fail("string", "invalid unicode escape code")
				}
				b = utf8.AppendRune(b, r)
			default:
				d.i = start
				d.fail("string", "invalid escape code")
			}
		default:
			b = append(b, c)
			d.i++
		}
	}
}

func (d *jsonDecoder) hex4() (rune, bool) {
	if d.i+4 > len(d.s) {
		return 0, false
	}
	n, err := strconv.ParseUint(d.s[d.i:d.i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	d.i += 4
	return rune(n), true
}
