package lualib

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack is lua-cmsgpack's pack and unpack: pack encodes its arguments
// back to back (a table whose keys are 1..n is an array, any other a map;
// whole numbers as the smallest integer, others as a float when a float
// holds them exactly, else a double), unpack decodes every value of a
// string.

const msgpackMaxDepth = 16

// OpenCMsgpack returns the cmsgpack library's table.
func OpenCMsgpack(L *lua.LState) *lua.LTable {
	return L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{
		"pack":   msgpackPack,
		"unpack": msgpackUnpack,
	})
}

func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.RaiseError("MessagePack pack needs input.")
	}
	var b []byte
	for i := 1; i <= n; i++ {
		b = packValue(b, L.Get(i), 0)
	}
	L.Push(lua.LString(b))
	return 1
}

func packValue(b []byte, v lua.LValue, depth int) []byte {
	switch v := v.(type) {
	case lua.LBool:
		if v {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(v)
		if f == math.Trunc(f) && !math.IsInf(f, 0) && math.Abs(f) < 1<<63 {
			return packInt(b, int64(f))
		}
		if float64(float32(f)) == f || math.IsNaN(f) {
			return binary.BigEndian.AppendUint32(append(b, 0xca), math.Float32bits(float32(f)))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
	case lua.LString:
		n := len(v)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
		default:
			b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
		}
		return append(b, v...)
	case *lua.LTable:
		if depth >= msgpackMaxDepth {
			return append(b, 0xc0)
		}
		if n, ok := msgpackArrayLen(v); ok {
			b = packLen(b, n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				b = packValue(b, v.RawGetInt(i), depth+1)
			}
			return b
		}
		n := 0
		v.ForEach(func(lua.LValue, lua.LValue) { n++ })
		b = packLen(b, n, 0x80, 0xde, 0xdf)
		v.ForEach(func(k, val lua.LValue) {
			b = packValue(b, k, depth+1)
			b = packValue(b, val, depth+1)
		})
		return b
	}
	return append(b, 0xc0)
}

func packLen(b []byte, n int, fix, b16, b32 byte) []byte {
	switch {
	case n <= 15:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, b16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, b32), uint32(n))
}

func packInt(b []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n <= 127:
			return append(b, byte(n))
		case n <= 0xff:
			return append(b, 0xcc, byte(n))
		case n <= 0xffff:
			return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
		case n <= 0xffffffff:
			return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	}
	switch {
	case n >= -32:
		return append(b, byte(n))
	case n >= -128:
		return append(b, 0xd0, byte(n))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// msgpackArrayLen reports whether t's keys are exactly 1..n.
func msgpackArrayLen(t *lua.LTable) (int, bool) {
	count, ok := 0, true
	t.ForEach(func(k, _ lua.LValue) {
		count++
		if n, isNum := k.(lua.LNumber); !isNum || float64(n) != math.Trunc(float64(n)) || n < 1 {
			ok = false
		}
	})
	if !ok {
		return 0, false
	}
	for i := 1; i <= count; i++ {
		if t.RawGetInt(i) == lua.LNil {
			return 0, false
		}
	}
	return count, true
}

func msgpackUnpack(L *lua.LState) int {
	s := L.CheckString(1)
	d := msgpackDecoder{L: L, s: s}
	n := 0
	for d.i < len(s) {
		L.Push(d.value(0))
		n++
	}
	return n
}

type msgpackDecoder struct {
	L *lua.LState
	s string
	i int
}

func (d *msgpackDecoder) need(n int) string {
	if n < 0 || d.i+n > len(d.s) {
		d.L.RaiseError("Missing bytes in input.")
	}
	b := d.s[d.i : d.i+n]
	d.i += n
	return b
}

func (d *msgpackDecoder) uint(n int) uint64 {
	b := d.need(n)
	var u uint64
	for i := 0; i < n; i++ {
		u = u<<8 | uint64(b[i])
	}
	return u
}

func (d *msgpackDecoder) value(depth int) lua.LValue {
	if depth > 1000 {
		d.L.RaiseError("Bad data format in input.")
	}
	c := d.need(1)[0]
	switch {
	case c <= 0x7f:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return lua.LString(d.need(int(c & 0x1f)))
	case c&0xf0 == 0x90:
		return d.array(int(c&0x0f), depth)
	case c&0xf0 == 0x80:
		return d.mapping(int(c&0x0f), depth)
	}
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(d.uint(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(d.uint(8)))
	case 0xcc:
		return lua.LNumber(d.uint(1))
	case 0xcd:
		return lua.LNumber(d.uint(2))
	case 0xce:
		return lua.LNumber(d.uint(4))
	case 0xcf:
		return lua.LNumber(d.uint(8))
	case 0xd0:
		return lua.LNumber(int8(d.uint(1)))
	case 0xd1:
		return lua.LNumber(int16(d.uint(2)))
	case 0xd2:
		return lua.LNumber(int32(d.uint(4)))
	case 0xd3:
		return lua.LNumber(int64(d.uint(8)))
	case 0xd9, 0xc4:
		return lua.LString(d.need(int(d.uint(1))))
	case 0xda, 0xc5:
		return lua.LString(d.need(int(d.uint(2))))
	case 0xdb, 0xc6:
		return lua.LString(d.need(int(d.uint(4))))
	case 0xdc:
		return d.array(int(d.uint(2)), depth)
	case 0xdd:
		return d.array(int(d.uint(4)), depth)
	case 0xde:
		return d.mapping(int(d.uint(2)), depth)
	case 0xdf:
		return d.mapping(int(d.uint(4)), depth)
	}
	d.L.RaiseError("Bad data format in input.")
	return lua.LNil
}

func (d *msgpackDecoder) array(n, depth int) lua.LValue {
	if n > len(d.s)-d.i {
		d.L.RaiseError("Missing bytes in input.")
	}
	t := d.L.CreateTable(n, 0)
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, d.value(depth+1))
	}
	return t
}

func (d *msgpackDecoder) mapping(n, depth int) lua.LValue {
	if n > len(d.s)-d.i {
		d.L.RaiseError("Missing bytes in input.")
	}
	t := d.L.NewTable()
	for ; n > 0; n-- {
		k := d.value(depth + 1)
		v := d.value(depth + 1)
		if k != lua.LNil {
			t.RawSet(k, v)
		}
	}
	return t
}
