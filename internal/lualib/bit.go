package lualib

import (
	"math"
	"math/bits"

	lua "github.com/yuin/gopher-lua"
)

// The bit library is LuaBitOp 1.0's: numbers are normalised to signed
// 32-bit integers (tobit) and every result is one.

var bitFuncs = map[string]lua.LGFunction{
	"tobit":   func(L *lua.LState) int { return push(L, bitArg(L, 1)) },
	"bnot":    func(L *lua.LState) int { return push(L, ^bitArg(L, 1)) },
	"band":    bitFold(func(a, b int32) int32 { return a & b }),
	"bor":     bitFold(func(a, b int32) int32 { return a | b }),
	"bxor":    bitFold(func(a, b int32) int32 { return a ^ b }),
	"lshift":  bitShift(func(a uint32, n uint) uint32 { return a << n }),
	"rshift":  bitShift(func(a uint32, n uint) uint32 { return a >> n }),
	"arshift": bitShift(func(a uint32, n uint) uint32 { return uint32(int32(a) >> n) }),
	"rol":     bitShift(func(a uint32, n uint) uint32 { return bits.RotateLeft32(a, int(n)) }),
	"ror":     bitShift(func(a uint32, n uint) uint32 { return bits.RotateLeft32(a, -int(n)) }),
	"bswap":   func(L *lua.LState) int { return push(L, int32(bits.ReverseBytes32(uint32(bitArg(L, 1))))) },
	"tohex":   bitToHex,
}

// OpenBit returns the bit library's table.
func OpenBit(L *lua.LState) *lua.LTable { return L.SetFuncs(L.NewTable(), bitFuncs) }

func push(L *lua.LState, v int32) int {
	L.Push(lua.LNumber(v))
	return 1
}

// ToBit normalises a number as LuaBitOp does: rounded to an integer and
// reduced modulo 2^32 into a signed 32-bit value.
func ToBit(f float64) int32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	r := math.RoundToEven(f)
	if math.Abs(r) >= 1<<63 {
		r = math.Mod(r, 1<<32)
	}
	return int32(uint32(int64(r)))
}

func bitArg(L *lua.LState, n int) int32 { return ToBit(float64(L.CheckNumber(n))) }

func bitFold(op func(a, b int32) int32) lua.LGFunction {
	return func(L *lua.LState) int {
		v := bitArg(L, 1)
		for i := 2; i <= L.GetTop(); i++ {
			v = op(v, bitArg(L, i))
		}
		return push(L, v)
	}
}

func bitShift(op func(a uint32, n uint) uint32) lua.LGFunction {
	return func(L *lua.LState) int {
		a, n := uint32(bitArg(L, 1)), uint(bitArg(L, 2))&31
		return push(L, int32(op(a, n)))
	}
}

func bitToHex(L *lua.LState) int {
	v := uint32(bitArg(L, 1))
	n := int32(8)
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		n = bitArg(L, 2)
	}
	digits := "0123456789abcdef"
	if n < 0 {
		digits, n = "0123456789ABCDEF", -n
	}
	if n > 8 {
		n = 8
	}
	buf := make([]byte, n)
	for i := int(n) - 1; i >= 0; i-- {
		buf[i] = digits[v&15]
		v >>= 4
	}
	L.Push(lua.LString(buf))
	return 1
}
