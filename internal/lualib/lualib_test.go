package lualib

import (
	"math"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// eval runs expr (a Lua expression) with the libraries loaded and returns
// its value as text (numbers as FormatNumber, strings quoted with %q) or
// the error.
func eval(t *testing.T, expr string) string {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("bit", OpenBit(L))
	L.SetGlobal("cjson", OpenCJSON(L))
	L.SetGlobal("cmsgpack", OpenCMsgpack(L))
	L.SetGlobal("struct", OpenStruct(L))
	if err := L.DoString("return " + expr); err != nil {
		msg := err.Error()
		if i := strings.Index(msg, "\n"); i >= 0 {
			msg = msg[:i]
		}
		return "error: " + msg
	}
	return show(L.Get(-1))
}

func show(v lua.LValue) string {
	switch v := v.(type) {
	case lua.LNumber:
		return FormatNumber(float64(v))
	case lua.LString:
		return string(v)
	case *lua.LTable:
		var parts []string
		for i := 1; i <= v.MaxN(); i++ {
			parts = append(parts, show(v.RawGetInt(i)))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return v.String()
}

func TestLibraries(t *testing.T) {
	tests := []struct{ expr, want string }{
		// bit
		{"bit.band(0xff, 0x0f, 0x3)", "3"},
		{"bit.bor(1, 2, 4)", "7"},
		{"bit.bxor(5, 3)", "6"},
		{"bit.lshift(1, 31)", "-2147483648"},
		{"bit.lshift(1, 32)", "1"},
		{"bit.rshift(-1, 28)", "15"},
		{"bit.arshift(-256, 4)", "-16"},
		{"bit.tobit(2^32 + 5)", "5"},
		{"bit.tobit(2^31)", "-2147483648"},
		{"bit.tobit(1.5)", "2"},
		{"bit.tobit(2.5)", "2"},
		{"bit.bnot(0)", "-1"},
		{"bit.tohex(255)", "000000ff"},
		{"bit.tohex(-1, 4)", "ffff"},
		{"bit.tohex(255, -2)", "FF"},
		{"bit.rol(1, 33)", "2"},
		{"bit.ror(1, 1)", "-2147483648"},
		{"bit.bswap(0x12345678)", "2018915346"},
		{"bit.band('x')", "error: <string>:1: bad argument #1 to band (number expected, got string)"},
		// cjson
		{"cjson.encode({1, 2, 'a/b', {x = 1.5}, 1/3, true})", `[1,2,"a\/b",{"x":1.5},0.33333333333333,true]`},
		{"cjson.encode({})", "{}"},
		{"cjson.encode({[1] = 1, [3] = 3})", "[1,null,3]"},
		{"cjson.encode({[1] = 1, [20] = 3})", "error: <string>:1: Cannot serialise table: excessively sparse array"},
		{"cjson.encode(1/0)", "error: <string>:1: Cannot serialise number: must not be NaN or Inf"},
		{"cjson.encode(print)", "error: <string>:1: Cannot serialise function: type not supported"},
		{"cjson.encode('\\0\\1\\127\"\\\\\\n')", `"\u0000\u0001\u007f\"\\\n"`},
		{"cjson.encode(cjson.null)", "null"},
		{"cjson.decode('[1, 2.5, \"x\"]')", `{1,2.5,x}`},
		{"cjson.decode('{\"a\": {\"b\": [true, false]}}').a.b[2]", "false"},
		{"cjson.decode('[null]')[1] == cjson.null", "true"},
		{"cjson.decode('\"\\\\u00e9\\\\ud83d\\\\ude00\"')", "é😀"},
		{"cjson.decode('[1,2')", "error: <string>:1: Expected comma or array end but found T_END at character 5"},
		{"cjson.decode('{1:2}')", "error: <string>:1: Expected object key string but found T_NUMBER at character 2"},
		{"cjson.decode('[1] x')", "error: <string>:1: Expected the end but found invalid token at character 5"},
		{"cjson.decode('')", "error: <string>:1: Expected value but found T_END at character 1"},
		// cmsgpack
		{"cmsgpack.pack(1, -1, 127, 128, -33, 300, 70000, 2^32, -2^40)", "\x01\xff\x7f\xcc\x80\xd0\xdf\xcd\x01\x2c\xce\x00\x01\x11\x70\xcf\x00\x00\x00\x01\x00\x00\x00\x00\xd3\xff\xff\xff\x00\x00\x00\x00\x00"},
		{"cmsgpack.pack(1.5, 0.1)", "\xca\x3f\xc0\x00\x00\xcb\x3f\xb9\x99\x99\x99\x99\x99\x9a"},
		{"cmsgpack.pack('abc', true, false, {1, 2}, {a = 1})", "\xa3abc\xc3\xc2\x92\x01\x02\x81\xa1a\x01"},
		{"cmsgpack.pack(string.rep('x', 40)):sub(1, 2)", "\xd9("},
		{"{cmsgpack.unpack(cmsgpack.pack({1, {2, 'x'}}, 'y', -5, 1.5, 2^40))}", "{{1,{2,x}},y,-5,1.5,1099511627776}"},
		{"cmsgpack.unpack(cmsgpack.pack({a = 'b'})).a", "b"},
		{"cmsgpack.unpack('\\205')", "error: <string>:1: Missing bytes in input."},
		{"cmsgpack.unpack('\\193')", "error: <string>:1: Bad data format in input."},
		{"cmsgpack.pack()", "error: <string>:1: MessagePack pack needs input."},
		// struct
		{"struct.pack('>I2i4', 258, -2)", "\x01\x02\xff\xff\xff\xfe"},
		{"struct.pack('<h', -2)", "\xfe\xff"},
		{"{struct.unpack('<hHbBi8', struct.pack('<hHbBi8', -2, 65535, -1, 255, 1234567890123))}", "{-2,65535,-1,255,1234567890123,15}"},
		{"{struct.unpack('>d', struct.pack('>d', 1.5))}", "{1.5,9}"},
		{"{struct.unpack('f', struct.pack('f', 0.5))}", "{0.5,5}"},
		{"{struct.unpack('s', struct.pack('s', 'hello'))}", "{hello,7}"},
		{"{struct.unpack('c3', 'abcdef', 2)}", "{bcd,5}"},
		{"{struct.unpack('Bc0', '\\3abcd')}", "{abc,5}"},
		{"struct.size('>iId')", "16"},
		{"struct.size('!4bi')", "8"},
		{"struct.size('s')", "error: <string>:1: bad argument #1 to size (options 'c0' - 's' have undefined sizes)"},
		{"struct.pack('q', 1)", "error: <string>:1: invalid format option 'q'"},
		{"struct.unpack('i4', 'ab')", "error: <string>:1: bad argument #2 to unpack (data string too short)"},
	}
	for i, tt := range tests {
		if got := eval(t, tt.expr); got != tt.want {
			t.Errorf("step %d: %s\nhave %q\nwant %q", i, tt.expr, got, tt.want)
		}
	}
}

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{1.0 / 3, "0.33333333333333"}, {1e15, "1e+15"}, {1e14, "1e+14"}, {123456789012345, "1.2345678901234e+14"},
		{0.1, "0.1"}, {1 << 53, "9.007199254741e+15"}, {1e100, "1e+100"}, {100, "100"}, {-7, "-7"}, {1e-5, "1e-05"},
		{math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.NaN(), "nan"}, {-math.NaN(), "-nan"}, {99999999999999, "99999999999999"},
	}
	for i, tt := range tests {
		if got := FormatNumber(tt.f); got != tt.want {
			t.Errorf("step %d: FormatNumber(%v) = %q, want %q", i, tt.f, got, tt.want)
		}
	}
}

// FuzzDecoders: no input makes cjson.decode, cmsgpack.unpack or
// struct.unpack panic outside Lua's error handling, and a value cjson
// decodes re-encodes to JSON that decodes to the same encoding.
func FuzzDecoders(f *testing.F) {
	for _, s := range []string{`[1,2,{"a":null}]`, `"\ud83d\ude00"`, "\x92\x01\xa1x", "\xdc\x00\x05", "\xd9\xff"} {
		f.Add(s, "<i4s")
	}
	f.Fuzz(func(t *testing.T, data, format string) {
		L := lua.NewState()
		defer L.Close()
		L.SetGlobal("cjson", OpenCJSON(L))
		L.SetGlobal("cmsgpack", OpenCMsgpack(L))
		L.SetGlobal("struct", OpenStruct(L))
		L.SetGlobal("data", lua.LString(data))
		L.SetGlobal("format", lua.LString(format))
		for _, code := range []string{
			"local ok, v = pcall(cjson.decode, data) if ok then local e = cjson.encode(v) assert(cjson.encode(cjson.decode(e)) == e) end",
			"pcall(cmsgpack.unpack, data)",
			"pcall(struct.unpack, format, data)",
			"pcall(struct.size, format)",
		} {
			if err := L.DoString(code); err != nil {
				t.Fatalf("%s: %v", code, err)
			}
		}
	})
}
