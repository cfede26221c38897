package command

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/internal/resptest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// hashScript is a command sequence with the replies redis-server 7.0.15
// gave to it, byte for byte, in RESP2 and (where they differ) RESP3. It
// covers every error text of the hash commands and the order of their
// checks, integer and float values at their limits, emptied hashes
// disappearing, WRONGTYPE both ways, RENAME and deadlines.
var hashScript = []scriptStep{
	0:   {[]string{"del", "h", "s"}, ":0\r\n", ""},
	1:   {[]string{"hset", "h"}, "-ERR wrong number of arguments for 'hset' command\r\n", ""},
	2:   {[]string{"hset", "h", "f"}, "-ERR wrong number of arguments for 'hset' command\r\n", ""},
	3:   {[]string{"hset", "h", "f", "v", "x"}, "-ERR wrong number of arguments for 'hset' command\r\n", ""},
	4:   {[]string{"hmset", "h", "f"}, "-ERR wrong number of arguments for 'hmset' command\r\n", ""},
	5:   {[]string{"hset", "h", "f", "v"}, ":1\r\n", ""},
	6:   {[]string{"hset", "h", "f", "v"}, ":0\r\n", ""},
	7:   {[]string{"hset", "h", "f2", "v2", "f3", "v3"}, ":2\r\n", ""},
	8:   {[]string{"hmset", "h", "f4", "v4", "f", "w"}, "+OK\r\n", ""},
	9:   {[]string{"hgetall", "h"}, "*8\r\n$1\r\nf\r\n$1\r\nw\r\n$2\r\nf2\r\n$2\r\nv2\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n", "%4\r\n$1\r\nf\r\n$1\r\nw\r\n$2\r\nf2\r\n$2\r\nv2\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n"},
	10:  {[]string{"hget", "h", "f"}, "$1\r\nw\r\n", ""},
	11:  {[]string{"hget", "h", "nofield"}, "$-1\r\n", "_\r\n"},
	12:  {[]string{"hget", "nokey", "f"}, "$-1\r\n", "_\r\n"},
	13:  {[]string{"hmget", "h", "f", "nofield", "f2"}, "*3\r\n$1\r\nw\r\n$-1\r\n$2\r\nv2\r\n", "*3\r\n$1\r\nw\r\n_\r\n$2\r\nv2\r\n"},
	14:  {[]string{"hmget", "nokey", "a", "b"}, "*2\r\n$-1\r\n$-1\r\n", "*2\r\n_\r\n_\r\n"},
	15:  {[]string{"hkeys", "h"}, "*4\r\n$1\r\nf\r\n$2\r\nf2\r\n$2\r\nf3\r\n$2\r\nf4\r\n", ""},
	16:  {[]string{"hvals", "h"}, "*4\r\n$1\r\nw\r\n$2\r\nv2\r\n$2\r\nv3\r\n$2\r\nv4\r\n", ""},
	17:  {[]string{"hlen", "h"}, ":4\r\n", ""},
	18:  {[]string{"hlen", "nokey"}, ":0\r\n", ""},
	19:  {[]string{"hstrlen", "h", "f"}, ":1\r\n", ""},
	20:  {[]string{"hstrlen", "h", "nofield"}, ":0\r\n", ""},
	21:  {[]string{"hstrlen", "nokey", "f"}, ":0\r\n", ""},
	22:  {[]string{"hexists", "h", "f"}, ":1\r\n", ""},
	23:  {[]string{"hexists", "h", "nofield"}, ":0\r\n", ""},
	24:  {[]string{"hexists", "nokey", "f"}, ":0\r\n", ""},
	25:  {[]string{"hsetnx", "h", "f", "x"}, ":0\r\n", ""},
	26:  {[]string{"hsetnx", "h", "f5", "5"}, ":1\r\n", ""},
	27:  {[]string{"hsetnx", "newh", "a", "b"}, ":1\r\n", ""},
	28:  {[]string{"hdel", "newh", "a"}, ":1\r\n", ""},
	29:  {[]string{"exists", "newh"}, ":0\r\n", ""},
	30:  {[]string{"hdel", "h", "nofield"}, ":0\r\n", ""},
	31:  {[]string{"hdel", "nokey", "f"}, ":0\r\n", ""},
	32:  {[]string{"hdel", "h", "f", "f", "nofield", "f2"}, ":2\r\n", ""},
	33:  {[]string{"hgetall", "h"}, "*6\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n$2\r\nf5\r\n$1\r\n5\r\n", "%3\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n$2\r\nf5\r\n$1\r\n5\r\n"},
	34:  {[]string{"hincrby", "h", "n", "abc"}, "-ERR value is not an integer or out of range\r\n", ""},
	35:  {[]string{"hincrby", "h", "n", "1.5"}, "-ERR value is not an integer or out of range\r\n", ""},
	36:  {[]string{"hincrby", "h", "n", ""}, "-ERR value is not an integer or out of range\r\n", ""},
	37:  {[]string{"hincrby", "h", "n", "9223372036854775807"}, ":9223372036854775807\r\n", ""},
	38:  {[]string{"hincrby", "h", "n", "1"}, "-ERR increment or decrement would overflow\r\n", ""},
	39:  {[]string{"hincrby", "h", "n", "-9223372036854775808"}, ":-1\r\n", ""},
	40:  {[]string{"hincrby", "h", "n", "-1"}, ":-2\r\n", ""},
	41:  {[]string{"hincrby", "h", "n", "-9223372036854775808"}, "-ERR increment or decrement would overflow\r\n", ""},
	42:  {[]string{"hincrby", "h", "f3", "1"}, "-ERR hash value is not an integer\r\n", ""},
	43:  {[]string{"hset", "h", "i", "007", "j", "-0", "k", " 1", "m", "12345678901234567890", "neg", "-5"}, ":5\r\n", ""},
	44:  {[]string{"hincrby", "h", "i", "1"}, "-ERR hash value is not an integer\r\n", ""},
	45:  {[]string{"hincrby", "h", "j", "1"}, "-ERR hash value is not an integer\r\n", ""},
	46:  {[]string{"hincrby", "h", "k", "1"}, "-ERR hash value is not an integer\r\n", ""},
	47:  {[]string{"hincrby", "h", "m", "1"}, "-ERR hash value is not an integer\r\n", ""},
	48:  {[]string{"hincrby", "h", "neg", "-9223372036854775804"}, "-ERR increment or decrement would overflow\r\n", ""},
	49:  {[]string{"hincrby", "h", "neg", "-1"}, ":-6\r\n", ""},
	50:  {[]string{"hincrby", "nokey2", "f", "5"}, ":5\r\n", ""},
	51:  {[]string{"hgetall", "nokey2"}, "*2\r\n$1\r\nf\r\n$1\r\n5\r\n", "%1\r\n$1\r\nf\r\n$1\r\n5\r\n"},
	52:  {[]string{"hincrbyfloat", "h", "x", "abc"}, "-ERR value is not a valid float\r\n", ""},
	53:  {[]string{"hincrbyfloat", "h", "x", "nan"}, "-ERR value is not a valid float\r\n", ""},
	54:  {[]string{"hincrbyfloat", "h", "x", "inf"}, "-ERR value is NaN or Infinity\r\n", ""},
	55:  {[]string{"hincrbyfloat", "h", "x", "-inf"}, "-ERR value is NaN or Infinity\r\n", ""},
	56:  {[]string{"hincrbyfloat", "h", "x", "1e5000"}, "-ERR value is not a valid float\r\n", ""},
	57:  {[]string{"hincrbyfloat", "h", "x", ""}, "-ERR value is not a valid float\r\n", ""},
	58:  {[]string{"hincrbyfloat", "h", "x", " 1"}, "-ERR value is not a valid float\r\n", ""},
	59:  {[]string{"hincrbyfloat", "h", "x", "1.5"}, "$3\r\n1.5\r\n", ""},
	60:  {[]string{"hincrbyfloat", "h", "x", "0.1"}, "$3\r\n1.6\r\n", ""},
	61:  {[]string{"hincrbyfloat", "h", "x", "0.2"}, "$3\r\n1.8\r\n", ""},
	62:  {[]string{"hincrbyfloat", "h", "x", "-1.8"}, "$1\r\n0\r\n", ""},
	63:  {[]string{"hincrbyfloat", "h", "x", "5.0e3"}, "$4\r\n5000\r\n", ""},
	64:  {[]string{"hincrbyfloat", "h", "x", "0x10"}, "$4\r\n5016\r\n", ""},
	65:  {[]string{"hincrbyfloat", "h", "f3", "1"}, "-ERR hash value is not a float\r\n", ""},
	66:  {[]string{"hset", "fl", "big", "1e308"}, ":1\r\n", ""},
	67:  {[]string{"hincrbyfloat", "fl", "big", "1e308"}, "$309\r\n199999999999999999993371759311691291321120199694831134415594095989843469737676123744200253843777078640893494450108026446304269499187921167194841628860392837535918200039206381557326219209014213335878306791577877829121087126122536729803237260434173178506889763247582601711514636284849020905456510092687857156096\r\n", ""},
	68:  {[]string{"hgetall", "fl"}, "*2\r\n$3\r\nbig\r\n$309\r\n199999999999999999993371759311691291321120199694831134415594095989843469737676123744200253843777078640893494450108026446304269499187921167194841628860392837535918200039206381557326219209014213335878306791577877829121087126122536729803237260434173178506889763247582601711514636284849020905456510092687857156096\r\n", "%1\r\n$3\r\nbig\r\n$309\r\n199999999999999999993371759311691291321120199694831134415594095989843469737676123744200253843777078640893494450108026446304269499187921167194841628860392837535918200039206381557326219209014213335878306791577877829121087126122536729803237260434173178506889763247582601711514636284849020905456510092687857156096\r\n"},
	69:  {[]string{"hset", "fl", "small", "1"}, ":1\r\n", ""},
	70:  {[]string{"hincrbyfloat", "fl", "small", "1e-17"}, "$19\r\n1.00000000000000001\r\n", ""},
	71:  {[]string{"hincrbyfloat", "fl", "small", "1e17"}, "$18\r\n100000000000000001\r\n", ""},
	72:  {[]string{"hset", "h", "infv", "inf"}, ":1\r\n", ""},
	73:  {[]string{"hincrbyfloat", "h", "infv", "1"}, "-ERR increment would produce NaN or Infinity\r\n", ""},
	74:  {[]string{"hset", "h", "nanv", "nan"}, ":1\r\n", ""},
	75:  {[]string{"hincrbyfloat", "h", "nanv", "1"}, "-ERR hash value is not a float\r\n", ""},
	76:  {[]string{"hincrbyfloat", "h", "neg", "0.5"}, "$4\r\n-5.5\r\n", ""},
	77:  {[]string{"hincrbyfloat", "nokey3", "f", "-2.5"}, "$4\r\n-2.5\r\n", ""},
	78:  {[]string{"hget", "nokey3", "f"}, "$4\r\n-2.5\r\n", ""},
	79:  {[]string{"hincrby", "h", "x", "1"}, ":5017\r\n", ""},
	80:  {[]string{"hgetall", "h"}, "*24\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n$2\r\nf5\r\n$1\r\n5\r\n$1\r\nn\r\n$2\r\n-2\r\n$1\r\ni\r\n$3\r\n007\r\n$1\r\nj\r\n$2\r\n-0\r\n$1\r\nk\r\n$2\r\n 1\r\n$1\r\nm\r\n$20\r\n12345678901234567890\r\n$3\r\nneg\r\n$4\r\n-5.5\r\n$1\r\nx\r\n$4\r\n5017\r\n$4\r\ninfv\r\n$3\r\ninf\r\n$4\r\nnanv\r\n$3\r\nnan\r\n", "%12\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n$2\r\nf5\r\n$1\r\n5\r\n$1\r\nn\r\n$2\r\n-2\r\n$1\r\ni\r\n$3\r\n007\r\n$1\r\nj\r\n$2\r\n-0\r\n$1\r\nk\r\n$2\r\n 1\r\n$1\r\nm\r\n$20\r\n12345678901234567890\r\n$3\r\nneg\r\n$4\r\n-5.5\r\n$1\r\nx\r\n$4\r\n5017\r\n$4\r\ninfv\r\n$3\r\ninf\r\n$4\r\nnanv\r\n$3\r\nnan\r\n"},
	81:  {[]string{"hrandfield", "h", "abc"}, "-ERR value is not an integer or out of range\r\n", ""},
	82:  {[]string{"hrandfield", "h", "-9223372036854775808"}, "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n", ""},
	83:  {[]string{"hrandfield", "h", "9223372036854775807", "withvalues"}, "-ERR value is out of range\r\n", ""},
	84:  {[]string{"hrandfield", "h", "-4611686018427387904", "withvalues"}, "-ERR value is out of range\r\n", ""},
	85:  {[]string{"hrandfield", "h", "1", "withvalue"}, "-ERR syntax error\r\n", ""},
	86:  {[]string{"hrandfield", "h", "1", "withvalues", "x"}, "-ERR syntax error\r\n", ""},
	87:  {[]string{"hrandfield", "nokey"}, "$-1\r\n", "_\r\n"},
	88:  {[]string{"hrandfield", "nokey", "5"}, "*0\r\n", ""},
	89:  {[]string{"hrandfield", "nokey", "0"}, "*0\r\n", ""},
	90:  {[]string{"hrandfield", "nokey", "5", "withvalues"}, "*0\r\n", ""},
	91:  {[]string{"hrandfield", "nokey", "abc"}, "-ERR value is not an integer or out of range\r\n", ""},
	92:  {[]string{"hrandfield", "h", "0"}, "*0\r\n", ""},
	93:  {[]string{"hrandfield", "h", "0", "withvalues"}, "*0\r\n", ""},
	94:  {[]string{"hrandfield", "h", "100"}, "*12\r\n$2\r\nf3\r\n$2\r\nf4\r\n$2\r\nf5\r\n$1\r\nn\r\n$1\r\ni\r\n$1\r\nj\r\n$1\r\nk\r\n$1\r\nm\r\n$3\r\nneg\r\n$1\r\nx\r\n$4\r\ninfv\r\n$4\r\nnanv\r\n", ""},
	95:  {[]string{"hrandfield", "h", "100", "withvalues"}, "*24\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n$2\r\nf5\r\n$1\r\n5\r\n$1\r\nn\r\n$2\r\n-2\r\n$1\r\ni\r\n$3\r\n007\r\n$1\r\nj\r\n$2\r\n-0\r\n$1\r\nk\r\n$2\r\n 1\r\n$1\r\nm\r\n$20\r\n12345678901234567890\r\n$3\r\nneg\r\n$4\r\n-5.5\r\n$1\r\nx\r\n$4\r\n5017\r\n$4\r\ninfv\r\n$3\r\ninf\r\n$4\r\nnanv\r\n$3\r\nnan\r\n", "*12\r\n*2\r\n$2\r\nf3\r\n$2\r\nv3\r\n*2\r\n$2\r\nf4\r\n$2\r\nv4\r\n*2\r\n$2\r\nf5\r\n$1\r\n5\r\n*2\r\n$1\r\nn\r\n$2\r\n-2\r\n*2\r\n$1\r\ni\r\n$3\r\n007\r\n*2\r\n$1\r\nj\r\n$2\r\n-0\r\n*2\r\n$1\r\nk\r\n$2\r\n 1\r\n*2\r\n$1\r\nm\r\n$20\r\n12345678901234567890\r\n*2\r\n$3\r\nneg\r\n$4\r\n-5.5\r\n*2\r\n$1\r\nx\r\n$4\r\n5017\r\n*2\r\n$4\r\ninfv\r\n$3\r\ninf\r\n*2\r\n$4\r\nnanv\r\n$3\r\nnan\r\n"},
	96:  {[]string{"hset", "one", "a", "1"}, ":1\r\n", ""},
	97:  {[]string{"hrandfield", "one"}, "$1\r\na\r\n", ""},
	98:  {[]string{"hrandfield", "one", "1"}, "*1\r\n$1\r\na\r\n", ""},
	99:  {[]string{"hrandfield", "one", "-3"}, "*3\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n", ""},
	100: {[]string{"hrandfield", "one", "-3", "withvalues"}, "*6\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n1\r\n", "*3\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"},
	101: {[]string{"hrandfield", "one", "1", "withvalues"}, "*2\r\n$1\r\na\r\n$1\r\n1\r\n", "*1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"},
	102: {[]string{"hrandfield", "one", "1", "WITHVALUES"}, "*2\r\n$1\r\na\r\n$1\r\n1\r\n", "*1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"},
	103: {[]string{"hscan", "h", "abc"}, "-ERR invalid cursor\r\n", ""},
	104: {[]string{"hscan", "h", "0", "count", "0"}, "-ERR syntax error\r\n", ""},
	105: {[]string{"hscan", "nokey", "0", "count", "0"}, "*2\r\n$1\r\n0\r\n*0\r\n", ""},
	106: {[]string{"hscan", "nokey", "0", "foo"}, "*2\r\n$1\r\n0\r\n*0\r\n", ""},
	107: {[]string{"hscan", "h", "0", "foo"}, "-ERR syntax error\r\n", ""},
	108: {[]string{"hscan", "h", "0", "count"}, "-ERR syntax error\r\n", ""},
	109: {[]string{"hscan", "h", "0", "count", "x"}, "-ERR value is not an integer or out of range\r\n", ""},
	110: {[]string{"hscan", "h", "0"}, "*2\r\n$1\r\n0\r\n*24\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n$2\r\nf5\r\n$1\r\n5\r\n$1\r\nn\r\n$2\r\n-2\r\n$1\r\ni\r\n$3\r\n007\r\n$1\r\nj\r\n$2\r\n-0\r\n$1\r\nk\r\n$2\r\n 1\r\n$1\r\nm\r\n$20\r\n12345678901234567890\r\n$3\r\nneg\r\n$4\r\n-5.5\r\n$1\r\nx\r\n$4\r\n5017\r\n$4\r\ninfv\r\n$3\r\ninf\r\n$4\r\nnanv\r\n$3\r\nnan\r\n", ""},
	111: {[]string{"hscan", "h", "0", "match", "f*"}, "*2\r\n$1\r\n0\r\n*6\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n$2\r\nf5\r\n$1\r\n5\r\n", ""},
	112: {[]string{"hscan", "h", "0", "MATCH", "*", "COUNT", "1"}, "*2\r\n$1\r\n0\r\n*24\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n$2\r\nf5\r\n$1\r\n5\r\n$1\r\nn\r\n$2\r\n-2\r\n$1\r\ni\r\n$3\r\n007\r\n$1\r\nj\r\n$2\r\n-0\r\n$1\r\nk\r\n$2\r\n 1\r\n$1\r\nm\r\n$20\r\n12345678901234567890\r\n$3\r\nneg\r\n$4\r\n-5.5\r\n$1\r\nx\r\n$4\r\n5017\r\n$4\r\ninfv\r\n$3\r\ninf\r\n$4\r\nnanv\r\n$3\r\nnan\r\n", ""},
	113: {[]string{"hscan", "h", "18446744073709551615"}, "*2\r\n$1\r\n0\r\n*24\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n$2\r\nf5\r\n$1\r\n5\r\n$1\r\nn\r\n$2\r\n-2\r\n$1\r\ni\r\n$3\r\n007\r\n$1\r\nj\r\n$2\r\n-0\r\n$1\r\nk\r\n$2\r\n 1\r\n$1\r\nm\r\n$20\r\n12345678901234567890\r\n$3\r\nneg\r\n$4\r\n-5.5\r\n$1\r\nx\r\n$4\r\n5017\r\n$4\r\ninfv\r\n$3\r\ninf\r\n$4\r\nnanv\r\n$3\r\nnan\r\n", ""},
	114: {[]string{"hscan", "h", "18446744073709551616"}, "-ERR invalid cursor\r\n", ""},
	115: {[]string{"hscan", "h", "0", "match", "n*", "count", "5", "match", "x*"}, "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nx\r\n$4\r\n5017\r\n", ""},
	116: {[]string{"hscan", "one", "0", "match", "1"}, "*2\r\n$1\r\n0\r\n*0\r\n", ""},
	117: {[]string{"hset", "ints", "1", "2", "-3", "4"}, ":2\r\n", ""},
	118: {[]string{"hscan", "ints", "0", "match", "1"}, "*2\r\n$1\r\n0\r\n*2\r\n$1\r\n1\r\n$1\r\n2\r\n", ""},
	119: {[]string{"hscan", "ints", "0", "match", "-*"}, "*2\r\n$1\r\n0\r\n*2\r\n$2\r\n-3\r\n$1\r\n4\r\n", ""},
	120: {[]string{"hgetall", "ints"}, "*4\r\n$1\r\n1\r\n$1\r\n2\r\n$2\r\n-3\r\n$1\r\n4\r\n", "%2\r\n$1\r\n1\r\n$1\r\n2\r\n$2\r\n-3\r\n$1\r\n4\r\n"},
	121: {[]string{"hkeys", "ints"}, "*2\r\n$1\r\n1\r\n$2\r\n-3\r\n", ""},
	122: {[]string{"hget", "ints", "1"}, "$1\r\n2\r\n", ""},
	123: {[]string{"hget", "ints", "-3"}, "$1\r\n4\r\n", ""},
	124: {[]string{"hstrlen", "ints", "-3"}, ":1\r\n", ""},
	125: {[]string{"hexists", "ints", "01"}, ":0\r\n", ""},
	126: {[]string{"set", "s", "v"}, "+OK\r\n", ""},
	127: {[]string{"hset", "s", "f", "v"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	128: {[]string{"hmset", "s", "f", "v"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	129: {[]string{"hsetnx", "s", "f", "v"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	130: {[]string{"hget", "s", "f"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	131: {[]string{"hmget", "s", "f"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	132: {[]string{"hgetall", "s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	133: {[]string{"hkeys", "s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	134: {[]string{"hvals", "s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	135: {[]string{"hdel", "s", "f"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	136: {[]string{"hexists", "s", "f"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	137: {[]string{"hlen", "s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	138: {[]string{"hstrlen", "s", "f"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	139: {[]string{"hincrby", "s", "f", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	140: {[]string{"hincrby", "s", "f", "abc"}, "-ERR value is not an integer or out of range\r\n", ""},
	141: {[]string{"hincrbyfloat", "s", "f", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	142: {[]string{"hincrbyfloat", "s", "f", "abc"}, "-ERR value is not a valid float\r\n", ""},
	143: {[]string{"hincrbyfloat", "s", "f", "inf"}, "-ERR value is NaN or Infinity\r\n", ""},
	144: {[]string{"hrandfield", "s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	145: {[]string{"hrandfield", "s", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	146: {[]string{"hrandfield", "s", "x"}, "-ERR value is not an integer or out of range\r\n", ""},
	147: {[]string{"hrandfield", "s", "1", "withvalues"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	148: {[]string{"hscan", "s", "0"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	149: {[]string{"hscan", "s", "x"}, "-ERR invalid cursor\r\n", ""},
	150: {[]string{"hset", "s", "f"}, "-ERR wrong number of arguments for 'hset' command\r\n", ""},
	151: {[]string{"get", "h"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	152: {[]string{"set", "h", "v", "get"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	153: {[]string{"getset", "h", "v"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	154: {[]string{"incr", "h"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	155: {[]string{"incrbyfloat", "h", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	156: {[]string{"append", "h", "x"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	157: {[]string{"strlen", "h"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	158: {[]string{"getrange", "h", "0", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	159: {[]string{"setrange", "h", "0", "x"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	160: {[]string{"zadd", "h", "1", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	161: {[]string{"zscore", "h", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	162: {[]string{"zrange", "h", "0", "-1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	163: {[]string{"zcard", "h"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	164: {[]string{"type", "h"}, "+hash\r\n", ""},
	165: {[]string{"type", "ints"}, "+hash\r\n", ""},
	166: {[]string{"type", "nokey"}, "+none\r\n", ""},
	167: {[]string{"mget", "h", "s", "ints"}, "*3\r\n$-1\r\n$1\r\nv\r\n$-1\r\n", "*3\r\n_\r\n$1\r\nv\r\n_\r\n"},
	168: {[]string{"hset", "h2", "a", "1"}, ":1\r\n", ""},
	169: {[]string{"pexpire", "h2", "100000"}, ":1\r\n", ""},
	170: {[]string{"rename", "h2", "h3"}, "+OK\r\n", ""},
	171: {[]string{"type", "h3"}, "+hash\r\n", ""},
	172: {[]string{"hgetall", "h3"}, "*2\r\n$1\r\na\r\n$1\r\n1\r\n", "%1\r\n$1\r\na\r\n$1\r\n1\r\n"},
	173: {[]string{"exists", "h2"}, ":0\r\n", ""},
	174: {[]string{"hdel", "h3", "a"}, ":1\r\n", ""},
	175: {[]string{"exists", "h3"}, ":0\r\n", ""},
	176: {[]string{"type", "h3"}, "+none\r\n", ""},
	177: {[]string{"hset", "h4", "a", "1", "b", "2"}, ":2\r\n", ""},
	178: {[]string{"hdel", "h4", "a", "b", "c"}, ":2\r\n", ""},
	179: {[]string{"exists", "h4"}, ":0\r\n", ""},
	180: {[]string{"del", "h"}, ":1\r\n", ""},
	181: {[]string{"hgetall", "h"}, "*0\r\n", "%0\r\n"},
	182: {[]string{"hkeys", "h"}, "*0\r\n", ""},
	183: {[]string{"hvals", "h"}, "*0\r\n", ""},
	184: {[]string{"hlen", "h"}, ":0\r\n", ""},
	185: {[]string{"set", "s", "v"}, "+OK\r\n", ""},
	186: {[]string{"hset", "h", "a", "1"}, ":1\r\n", ""},
	187: {[]string{"set", "h", "x"}, "+OK\r\n", ""},
	188: {[]string{"get", "h"}, "$1\r\nx\r\n", ""},
}

// hashUnordered says which replies of hashScript list a hash in its
// encoding's order, compared as sets when the hash is in the large
// encoding: the command, and how many elements make one item.
var hashUnordered = map[string]int{"hgetall": 2, "hkeys": 1, "hvals": 1, "hscan": 2, "hrandfield": 1}

// TestHashScript runs hashScript in both encodings: the compact one, whose
// order is insertion order as in Redis's listpack, and the large one, whose
// replies are compared without their order.
func TestHashScript(t *testing.T) {
	for _, enc := range []string{"512", "0"} {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("entries=%s/RESP%d", enc, proto), func(t *testing.T) {
				runScript(t, hashScript, proto, []string{"hash-max-listpack-entries", enc}, func(st scriptStep, have, want string) (string, string, bool) {
					group, ok := hashUnordered[st.args[0]]
					switch {
					case !ok || enc != "0":
						return have, want, false
					case st.args[0] == "hscan":
						return have, want, true // a large hash comes in batches: TestHscanLarge
					case st.args[0] == "hrandfield" && len(st.args) > 3 && proto == 2:
						group = 2
					}
					return unordered(have, group, false), unordered(want, group, false), false
				})
			})
		}
	}
}

// unordered normalises an aggregate reply whose order is unspecified: its
// elements, group at a time, are sorted (for a scan reply, [cursor,
// items], the items).
func unordered(reply string, group int, scan bool) string {
	rd := bufio.NewReader(strings.NewReader(reply))
	head, _ := rd.ReadString('\n')
	if scan && head == "*2\r\n" {
		var cursor strings.Builder
		if resptest.ReadReply(rd, &cursor) != nil {
			return reply
		}
		items, _ := rd.ReadString('\n')
		head += cursor.String() + items
	}
	if head == "" || !strings.ContainsRune("*%~", rune(head[0])) {
		return reply
	}
	var elems []string
	for {
		var b strings.Builder
		if resptest.ReadReply(rd, &b) != nil {
			break
		}
		elems = append(elems, b.String())
	}
	var items []string
	for i := 0; i+group <= len(elems); i += group {
		items = append(items, strings.Join(elems[i:i+group], ""))
	}
	slices.Sort(items)
	return head + strings.Join(items, "")
}

// TestHashConvertsAtTheLimits: hashes keep working across CONFIG SET of
// the limits and the conversions they cause.
func TestHashConvertsAtTheLimits(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "hash-max-ziplist-entries", "4", "hash-max-listpack-value", "8"))
	require.Equal(t, "*4\r\n$25\r\nhash-max-listpack-entries\r\n$1\r\n4\r\n$22\r\nhash-max-ziplist-value\r\n$1\r\n8\r\n",
		r.do("CONFIG", "GET", "hash-max-listpack-entries", "hash-max-ziplist-value"))
	for i := 0; i < 10; i++ {
		f := "f" + strconv.Itoa(i)
		require.Equal(t, ":1\r\n", r.do("HSET", "h", f, strconv.Itoa(i)), f)
		require.Equal(t, ":"+strconv.Itoa(i+1)+"\r\n", r.do("HLEN", "h"), f)
	}
	require.Equal(t, ":1\r\n", r.do("HSET", "v", "a", "12345678"))
	require.Equal(t, ":0\r\n", r.do("HSET", "v", "a", "123456789"))
	require.Equal(t, "$9\r\n123456789\r\n", r.do("HGET", "v", "a"))
	for i := 0; i < 10; i++ {
		require.Equal(t, "$"+strconv.Itoa(len(strconv.Itoa(i)))+"\r\n"+strconv.Itoa(i)+"\r\n", r.do("HGET", "h", "f"+strconv.Itoa(i)))
	}
	encoding := func(key string) string {
		st := ts.store
		i := st.ShardIndex([]byte(key))
		st.Lock(i)
		defer st.Unlock(i)
		return st.Hash(st.Peek([]byte(key), ts.clock.Now()/1e6)).Encoding()
	}
	require.Equal(t, "hashtable", encoding("h"))
	require.Equal(t, "hashtable", encoding("v"))
	require.Equal(t, ":1\r\n", r.do("HSET", "small", "a", "1"))
	require.Equal(t, "listpack", encoding("small"))
	require.Equal(t, ":10\r\n", r.do("HDEL", "h", "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9"))
	require.Equal(t, ":0\r\n", r.do("EXISTS", "h"))

	all := r.do("CONFIG", "GET", "hash-max-*")
	for _, name := range []string{"hash-max-listpack-entries", "hash-max-listpack-value", "hash-max-ziplist-entries", "hash-max-ziplist-value"} {
		require.Contains(t, all, "\r\n"+name+"\r\n")
	}
	require.True(t, strings.HasPrefix(all, "*8\r\n"), "have %q", all)
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "hash-max-listpack-value", "1kb"))
	require.Equal(t, "*2\r\n$23\r\nhash-max-listpack-value\r\n$4\r\n1024\r\n", r.do("CONFIG", "GET", "hash-max-listpack-value"))
	require.Equal(t, "-ERR CONFIG SET failed (possibly related to argument 'hash-max-listpack-value') - argument must be a memory value\r\n",
		r.do("CONFIG", "SET", "hash-max-listpack-value", "-1"))
	require.Equal(t, "-ERR CONFIG SET failed (possibly related to argument 'hash-max-ziplist-entries') - argument couldn't be parsed into an integer\r\n",
		r.do("CONFIG", "SET", "hash-max-ziplist-entries", "1kb"))
}

// TestHscanLarge: HSCAN of a large hash returns every field once over a
// full iteration, with MATCH applied to each batch, and a field added or
// removed meanwhile at most once.
func TestHscanLarge(t *testing.T) {
	ts := newTestServer(t, "hash-max-listpack-entries", "16")
	r := ts.raw(t)
	for i := 0; i < 500; i++ {
		r.do("HSET", "h", "f"+strconv.Itoa(i), strconv.Itoa(i))
	}
	for _, match := range []string{"*", "f1*"} {
		seen := map[string]int{}
		cursor := "0"
		for round := 0; ; round++ {
			require.Less(t, round, 100)
			reply := r.do("HSCAN", "h", cursor, "MATCH", match, "COUNT", "7")
			lines := strings.Split(reply, "\r\n")
			require.Equal(t, "*2", lines[0], reply)
			cursor = lines[2]
			for i := 5; i+3 < len(lines); i += 4 {
				f, v := lines[i], lines[i+2]
				if !strings.HasPrefix(f, "extra") {
					require.Equal(t, "f"+v, f, reply)
				}
				seen[f]++
			}
			r.do("HSET", "h", "extra"+strconv.Itoa(round), "x")
			if cursor == "0" {
				break
			}
		}
		for i := 0; i < 500; i++ {
			f := "f" + strconv.Itoa(i)
			want := 1
			if match == "f1*" && !strings.HasPrefix(f, "f1") {
				want = 0
			}
			require.Equal(t, want, seen[f], "MATCH %s: %s", match, f)
		}
	}
}

// TestHrandfieldPicks: a positive count picks distinct fields (the whole
// hash, in order, when it covers it), a negative one picks with repeats,
// in both encodings, and WITHVALUES keeps each field with its value.
func TestHrandfieldPicks(t *testing.T) {
	for _, enc := range []string{"512", "0"} {
		ts := newTestServer(t, "hash-max-listpack-entries", enc)
		rdb := ts.client(t, 3)
		want := map[string]string{}
		for i := 0; i < 50; i++ {
			f := "f" + strconv.Itoa(i)
			want[f] = strconv.Itoa(i * i)
			require.NoError(t, rdb.HSet(ctx, "h", f, want[f]).Err())
		}
		for _, count := range []int{1, 10, 40, 50, 60} {
			kv, err := rdb.HRandFieldWithValues(ctx, "h", count).Result()
			require.NoError(t, err)
			require.Len(t, kv, min(count, 50), "entries=%s count %d", enc, count)
			seen := map[string]bool{}
			for _, p := range kv {
				require.Equal(t, want[p.Key], p.Value, "entries=%s", enc)
				require.False(t, seen[p.Key], "entries=%s count %d: %s twice", enc, count, p.Key)
				seen[p.Key] = true
			}
		}
		all, err := rdb.HRandField(ctx, "h", 60).Result()
		require.NoError(t, err)
		keys, err := rdb.HKeys(ctx, "h").Result()
		require.NoError(t, err)
		require.Equal(t, keys, all, "entries=%s: the whole hash in HKEYS's order", enc)
		rep, err := rdb.HRandField(ctx, "h", -500).Result()
		require.NoError(t, err)
		require.Len(t, rep, 500)
		for _, f := range rep {
			require.Contains(t, want, f)
		}
	}
}

// TestHrandfieldReplyBound: past maxRandBytes, HRANDFIELD with a negative
// count answers an error instead of building the reply.
func TestHrandfieldReplyBound(t *testing.T) {
	old := maxRandBytes
	t.Cleanup(func() { maxRandBytes = old })
	maxRandBytes = 4 << 20
	r := newTestServer(t).raw(t)
	big := strings.Repeat("f", 1<<20)
	require.Equal(t, ":1\r\n", r.do("HSET", "h", big, "v"))
	require.Equal(t, "-ERR HRANDFIELD reply too large (over 4 MB): ask for fewer fields\r\n", r.do("HRANDFIELD", "h", "-1000"))
	require.Equal(t, "*2\r\n$1048576\r\n"+big+"\r\n$1\r\nv\r\n", r.do("HRANDFIELD", "h", "-1", "WITHVALUES"))
}

// TestTokenBucketGoRedis runs a token bucket as the Redis rate-limit
// libraries do (HMGET, HSET, PEXPIRE in a transaction) through go-redis,
// in both protocols, with HGETALL read back as a map.
func TestTokenBucketGoRedis(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		rdb := ts.client(t, proto)
		key := "bucket:" + strconv.Itoa(proto)
		vals, err := rdb.HMGet(ctx, key, "tokens", "ts").Result()
		require.NoError(t, err)
		require.Equal(t, []any{nil, nil}, vals, "RESP%d", proto)
		for i := 0; i < 3; i++ {
			_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, key, "tokens", 9-i, "ts", 1795307408539+i)
				p.PExpire(ctx, key, time.Minute)
				return nil
			})
			require.NoError(t, err)
		}
		all, err := rdb.HGetAll(ctx, key).Result()
		require.NoError(t, err)
		require.Equal(t, map[string]string{"tokens": "7", "ts": "1795307408541"}, all, "RESP%d", proto)
		n, err := rdb.HIncrBy(ctx, key, "tokens", -2).Result()
		require.NoError(t, err)
		require.Equal(t, int64(5), n)
		f, err := rdb.HIncrByFloat(ctx, key, "tokens", 0.5).Result()
		require.NoError(t, err)
		require.Equal(t, 5.5, f)
		pttl, err := rdb.PTTL(ctx, key).Result()
		require.NoError(t, err)
		require.Equal(t, time.Minute, pttl, "the clock stands still")
	}
}
