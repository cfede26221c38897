package lualib

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// struct is Roberto Ierusalimschy's struct library as Redis ships it:
// pack(fmt, ...), unpack(fmt, s [, pos]) and size(fmt), with the formats
// < > = ! (endianness and alignment), b B h H l L T i I (with an optional
// size in bytes), f d, s (zero-terminated), c (with a length, or c0 after
// a length) and x (padding); spaces are ignored.

const structMaxSize = 16 // largest integer size, as in the C library's MAXINTSIZE

// OpenStruct returns the struct library's table.
func OpenStruct(L *lua.LState) *lua.LTable {
	return L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{
		"pack":   structPack,
		"unpack": structUnpack,
		"size":   structSize,
	})
}

type structFmt struct {
	L      *lua.LState
	f      string
	i      int
	little bool
	align  int
}

func newStructFmt(L *lua.LState, f string) *structFmt {
	return &structFmt{L: L, f: f, little: true, align: 1}
}

// num reads an optional decimal size after an option.
func (s *structFmt) num(def int) int {
	if s.i >= len(s.f) || s.f[s.i] < '0' || s.f[s.i] > '9' {
		return def
	}
	n := 0
	for s.i < len(s.f) && s.f[s.i] >= '0' && s.f[s.i] <= '9' {
		n = n*10 + int(s.f[s.i]-'0')
		if n > math.MaxInt32/10 {
			s.L.RaiseError("size too large")
		}
		s.i++
	}
	return n
}

// next reads the next item; it returns its option and size (0 for
// options that take no room), and handles the control options itself.
func (s *structFmt) next() (op byte, size int, ok bool) {
	for s.i < len(s.f) {
		op = s.f[s.i]
		s.i++
		switch op {
		case ' ':
		case '<':
			s.little = true
		case '>':
			s.little = false
		case '=':
			s.little = true
		case '!':
			s.align = s.num(8)
		case 'x':
			return op, 1, true
		case 'b', 'B':
			return op, 1, true
		case 'h', 'H':
			return op, 2, true
		case 'l', 'L', 'T':
			return op, 8, true
		case 'i', 'I':
			n := s.num(4)
			if n < 1 || n > structMaxSize {
				s.L.RaiseError("integral size %d is larger than limit of %d", n, structMaxSize)
			}
			return op, n, true
		case 'f':
			return op, 4, true
		case 'd':
			return op, 8, true
		case 's':
			return op, 0, true
		case 'c':
			return op, s.num(1), true
		default:
			s.L.RaiseError("invalid format option '%c'", op)
		}
	}
	return 0, 0, false
}

// pad returns the padding before an item of size at offset.
func (s *structFmt) pad(op byte, size, offset int) int {
	if op == 'c' || op == 's' || op == 'x' || s.align <= 1 {
		return 0
	}
	a := min(size, s.align)
	if a&(a-1) != 0 {
		s.L.RaiseError("alignment must be power of 2")
	}
	return (a - offset&(a-1)) & (a - 1)
}

func (s *structFmt) putInt(b []byte, v uint64, size int) []byte {
	for i := 0; i < size; i++ {
		shift := i
		if !s.little {
			shift = size - 1 - i
		}
		if shift >= 8 {
			if int64(v) < 0 {
				b = append(b, 0xff)
			} else {
				b = append(b, 0)
			}
			continue
		}
		b = append(b, byte(v>>(8*shift)))
	}
	return b
}

// putFloat appends f as a float (size 4) or a double (size 8).
func (s *structFmt) putFloat(b []byte, f float64, size int) []byte {
	var u uint64
	if size == 4 {
		u = uint64(math.Float32bits(float32(f)))
	} else {
		u = math.Float64bits(f)
	}
	return s.putInt(b, u, size)
}

// getUint reads the low 64 bits of an integer of size bytes.
func (s *structFmt) getUint(b string, size int) uint64 {
	var u uint64
	for i := 0; i < size && i < 8; i++ {
		idx := i
		if !s.little {
			idx = size - 1 - i
		}
		u |= uint64(b[idx]) << (8 * i)
	}
	return u
}

// getFloat reads a float (size 4) or a double (size 8).
func (s *structFmt) getFloat(b string, size int) float64 {
	u := s.getUint(b, size)
	if size == 4 {
		return float64(math.Float32frombits(uint32(u)))
	}
	return math.Float64frombits(u)
}

func structPack(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	arg := 2
	var b []byte
	for {
		op, size, ok := s.next()
		if !ok {
			break
		}
		for n := s.pad(op, size, len(b)); n > 0; n-- {
			b = append(b, 0)
		}
		switch op {
		case 'x':
			b = append(b, 0)
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			f := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if f < 0 {
				v = uint64(int64(f))
			} else {
				v = uint64(f)
			}
			b = s.putInt(b, v, size)
		case 'f', 'd':
			b = s.putFloat(b, float64(L.CheckNumber(arg)), size)
			arg++
		case 'c', 's':
			str := L.CheckString(arg)
			arg++
			l := len(str)
			if op == 'c' && size == 0 {
				size = l
			}
			if op == 'c' {
				if l < size {
					L.ArgError(arg-1, "string too short")
				}
				b = append(b, str[:size]...)
			} else {
				b = append(b, str...)
				b = append(b, 0)
			}
		}
	}
	L.Push(lua.LString(b))
	return 1
}

func structUnpack(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	data := L.CheckString(2)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 || pos > len(data) {
		L.ArgError(3, "offset must be 1 or greater")
	}
	n := 0
	prevLen := -1
	for {
		op, size, ok := s.next()
		if !ok {
			break
		}
		pos += s.pad(op, size, pos)
		if op != 's' && !(op == 'c' && size == 0) && pos+size > len(data) {
			L.ArgError(2, "data string too short")
		}
		switch op {
		case 'x':
			pos++
			continue
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			v := s.getUint(data[pos:pos+size], size)
			var f float64
			if op == 'b' || op == 'h' || op == 'l' || op == 'i' {
				if size < 8 {
					shift := 64 - 8*uint(size)
					f = float64(int64(v<<shift) >> shift)
				} else {
					f = float64(int64(v))
				}
			} else {
				f = float64(v)
			}
			prevLen = int(f)
			L.Push(lua.LNumber(f))
		case 'f', 'd':
			L.Push(lua.LNumber(s.getFloat(data[pos:pos+size], size)))
		case 'c':
			if size == 0 {
				if n == 0 || prevLen < 0 {
					L.RaiseError("format 'c0' needs a previous size")
				}
				L.Pop(1)
				n--
				size = prevLen
				if pos+size > len(data) {
					L.ArgError(2, "data string too short")
				}
			}
			L.Push(lua.LString(data[pos : pos+size]))
		case 's':
			end := strings.IndexByte(data[pos:], 0)
			if end < 0 {
				L.RaiseError("unfinished string in data")
			}
			size = end + 1
			L.Push(lua.LString(data[pos : pos+end]))
		}
		pos += size
		n++
	}
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

func structSize(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	pos := 0
	for {
		op, size, ok := s.next()
		if !ok {
			break
		}
		if op == 's' || (op == 'c' && size == 0) {
			L.ArgError(1, "options 'c0' - 's' have undefined sizes")
		}
		pos += s.pad(op, size, pos) + size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
