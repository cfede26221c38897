// Package lualib implements, for gopher-lua, the Lua libraries Redis
// loads into its scripting engine besides Lua's own: bit (LuaBitOp),
// cjson, cmsgpack and struct. Each Open function returns the library's
// table; the caller decides where it lives. What is implemented is what
// scripts use (see each file's comment); nothing here touches files,
// the network or the clock.
package lualib
