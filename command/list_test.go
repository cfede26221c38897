package command

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// listScript is a command sequence with the replies redis-server 7.0.15
// gave to it, byte for byte, in RESP2 and (where they differ) RESP3. It
// covers every error text of the list commands and the order of their
// checks, indexes and ranges at their limits, LPOS's options, LMOVE and
// RPOPLPUSH between two keys and on one, emptied lists disappearing,
// WRONGTYPE both ways, RENAME and SCAN's TYPE filter. (LPOS RANK
// -9223372036854775808 is left out: Redis 7.0 wraps it, 7.2 refuses it as
// ratekv does; TestLposRankRange.)
var listScript = []scriptStep{
	0:   {[]string{"del", "l", "s"}, ":0\r\n", ""},
	1:   {[]string{"lpush", "l"}, "-ERR wrong number of arguments for 'lpush' command\r\n", ""},
	2:   {[]string{"rpush", "l"}, "-ERR wrong number of arguments for 'rpush' command\r\n", ""},
	3:   {[]string{"lpush", "l", "a"}, ":1\r\n", ""},
	4:   {[]string{"rpush", "l", "b", "c"}, ":3\r\n", ""},
	5:   {[]string{"lpush", "l", "x", "y"}, ":5\r\n", ""},
	6:   {[]string{"lrange", "l", "0", "-1"}, "*5\r\n$1\r\ny\r\n$1\r\nx\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", ""},
	7:   {[]string{"llen", "l"}, ":5\r\n", ""},
	8:   {[]string{"llen", "nokey"}, ":0\r\n", ""},
	9:   {[]string{"lpushx", "nokey", "a"}, ":0\r\n", ""},
	10:  {[]string{"rpushx", "nokey", "a", "b"}, ":0\r\n", ""},
	11:  {[]string{"exists", "nokey"}, ":0\r\n", ""},
	12:  {[]string{"lpushx", "l", "p1", "p2"}, ":7\r\n", ""},
	13:  {[]string{"rpushx", "l", "q1"}, ":8\r\n", ""},
	14:  {[]string{"lrange", "l", "0", "-1"}, "*8\r\n$2\r\np2\r\n$2\r\np1\r\n$1\r\ny\r\n$1\r\nx\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$2\r\nq1\r\n", ""},
	15:  {[]string{"lindex", "l", "0"}, "$2\r\np2\r\n", ""},
	16:  {[]string{"lindex", "l", "-1"}, "$2\r\nq1\r\n", ""},
	17:  {[]string{"lindex", "l", "100"}, "$-1\r\n", "_\r\n"},
	18:  {[]string{"lindex", "l", "-100"}, "$-1\r\n", "_\r\n"},
	19:  {[]string{"lindex", "l", "abc"}, "-ERR value is not an integer or out of range\r\n", ""},
	20:  {[]string{"lindex", "nokey", "abc"}, "$-1\r\n", "_\r\n"},
	21:  {[]string{"lindex", "nokey", "0"}, "$-1\r\n", "_\r\n"},
	22:  {[]string{"lindex", "l", "9223372036854775807"}, "$-1\r\n", "_\r\n"},
	23:  {[]string{"lindex", "l", "-9223372036854775808"}, "$-1\r\n", "_\r\n"},
	24:  {[]string{"lrange", "l", "abc", "1"}, "-ERR value is not an integer or out of range\r\n", ""},
	25:  {[]string{"lrange", "l", "0", "abc"}, "-ERR value is not an integer or out of range\r\n", ""},
	26:  {[]string{"lrange", "nokey", "abc", "1"}, "-ERR value is not an integer or out of range\r\n", ""},
	27:  {[]string{"lrange", "nokey", "0", "-1"}, "*0\r\n", ""},
	28:  {[]string{"lrange", "l", "-100", "100"}, "*8\r\n$2\r\np2\r\n$2\r\np1\r\n$1\r\ny\r\n$1\r\nx\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$2\r\nq1\r\n", ""},
	29:  {[]string{"lrange", "l", "2", "1"}, "*0\r\n", ""},
	30:  {[]string{"lrange", "l", "-3", "-1"}, "*3\r\n$1\r\nb\r\n$1\r\nc\r\n$2\r\nq1\r\n", ""},
	31:  {[]string{"lrange", "l", "5", "100"}, "*3\r\n$1\r\nb\r\n$1\r\nc\r\n$2\r\nq1\r\n", ""},
	32:  {[]string{"lrange", "l", "100", "200"}, "*0\r\n", ""},
	33:  {[]string{"lrange", "l", "-9223372036854775808", "9223372036854775807"}, "*8\r\n$2\r\np2\r\n$2\r\np1\r\n$1\r\ny\r\n$1\r\nx\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$2\r\nq1\r\n", ""},
	34:  {[]string{"lpop", "l"}, "$2\r\np2\r\n", ""},
	35:  {[]string{"rpop", "l"}, "$2\r\nq1\r\n", ""},
	36:  {[]string{"lpop", "l", "0"}, "*0\r\n", ""},
	37:  {[]string{"rpop", "l", "0"}, "*0\r\n", ""},
	38:  {[]string{"lpop", "l", "2"}, "*2\r\n$2\r\np1\r\n$1\r\ny\r\n", ""},
	39:  {[]string{"rpop", "l", "2"}, "*2\r\n$1\r\nc\r\n$1\r\nb\r\n", ""},
	40:  {[]string{"lpop", "l", "-1"}, "-ERR value is out of range, must be positive\r\n", ""},
	41:  {[]string{"lpop", "l", "abc"}, "-ERR value is out of range, must be positive\r\n", ""},
	42:  {[]string{"lpop", "l", "1", "2"}, "-ERR wrong number of arguments for 'lpop' command\r\n", ""},
	43:  {[]string{"lpop", "nokey"}, "$-1\r\n", "_\r\n"},
	44:  {[]string{"lpop", "nokey", "0"}, "*-1\r\n", "_\r\n"},
	45:  {[]string{"lpop", "nokey", "2"}, "*-1\r\n", "_\r\n"},
	46:  {[]string{"lpop", "nokey", "-1"}, "-ERR value is out of range, must be positive\r\n", ""},
	47:  {[]string{"rpop", "nokey", "3"}, "*-1\r\n", "_\r\n"},
	48:  {[]string{"lrange", "l", "0", "-1"}, "*2\r\n$1\r\nx\r\n$1\r\na\r\n", ""},
	49:  {[]string{"lpop", "l", "100"}, "*2\r\n$1\r\nx\r\n$1\r\na\r\n", ""},
	50:  {[]string{"exists", "l"}, ":0\r\n", ""},
	51:  {[]string{"rpush", "l", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, ":10\r\n", ""},
	52:  {[]string{"ltrim", "l", "abc", "1"}, "-ERR value is not an integer or out of range\r\n", ""},
	53:  {[]string{"ltrim", "nokey", "abc", "1"}, "-ERR value is not an integer or out of range\r\n", ""},
	54:  {[]string{"ltrim", "nokey", "0", "1"}, "+OK\r\n", ""},
	55:  {[]string{"exists", "nokey"}, ":0\r\n", ""},
	56:  {[]string{"ltrim", "l", "1", "-2"}, "+OK\r\n", ""},
	57:  {[]string{"lrange", "l", "0", "-1"}, "*8\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n$1\r\n5\r\n$1\r\n6\r\n$1\r\n7\r\n$1\r\n8\r\n$1\r\n9\r\n", ""},
	58:  {[]string{"ltrim", "l", "-3", "-1"}, "+OK\r\n", ""},
	59:  {[]string{"lrange", "l", "0", "-1"}, "*3\r\n$1\r\n7\r\n$1\r\n8\r\n$1\r\n9\r\n", ""},
	60:  {[]string{"ltrim", "l", "5", "1"}, "+OK\r\n", ""},
	61:  {[]string{"exists", "l"}, ":0\r\n", ""},
	62:  {[]string{"rpush", "l", "a", "b", "c", "a", "b", "c", "a"}, ":7\r\n", ""},
	63:  {[]string{"lset", "nokey", "0", "x"}, "-ERR no such key\r\n", ""},
	64:  {[]string{"lset", "nokey", "abc", "x"}, "-ERR no such key\r\n", ""},
	65:  {[]string{"lset", "l", "abc", "x"}, "-ERR value is not an integer or out of range\r\n", ""},
	66:  {[]string{"lset", "l", "100", "x"}, "-ERR index out of range\r\n", ""},
	67:  {[]string{"lset", "l", "-100", "x"}, "-ERR index out of range\r\n", ""},
	68:  {[]string{"lset", "l", "0", "first"}, "+OK\r\n", ""},
	69:  {[]string{"lset", "l", "-1", "last"}, "+OK\r\n", ""},
	70:  {[]string{"lset", "l", "3", "1795307408539667"}, "+OK\r\n", ""},
	71:  {[]string{"lrange", "l", "0", "-1"}, "*7\r\n$5\r\nfirst\r\n$1\r\nb\r\n$1\r\nc\r\n$16\r\n1795307408539667\r\n$1\r\nb\r\n$1\r\nc\r\n$4\r\nlast\r\n", ""},
	72:  {[]string{"lrem", "l", "abc", "a"}, "-ERR value is not an integer or out of range\r\n", ""},
	73:  {[]string{"lrem", "nokey", "1", "a"}, ":0\r\n", ""},
	74:  {[]string{"lrem", "l", "0", "nomatch"}, ":0\r\n", ""},
	75:  {[]string{"lrem", "l", "1", "b"}, ":1\r\n", ""},
	76:  {[]string{"lrange", "l", "0", "-1"}, "*6\r\n$5\r\nfirst\r\n$1\r\nc\r\n$16\r\n1795307408539667\r\n$1\r\nb\r\n$1\r\nc\r\n$4\r\nlast\r\n", ""},
	77:  {[]string{"lrem", "l", "-1", "c"}, ":1\r\n", ""},
	78:  {[]string{"lrange", "l", "0", "-1"}, "*5\r\n$5\r\nfirst\r\n$1\r\nc\r\n$16\r\n1795307408539667\r\n$1\r\nb\r\n$4\r\nlast\r\n", ""},
	79:  {[]string{"lrem", "l", "0", "a"}, ":0\r\n", ""},
	80:  {[]string{"lrange", "l", "0", "-1"}, "*5\r\n$5\r\nfirst\r\n$1\r\nc\r\n$16\r\n1795307408539667\r\n$1\r\nb\r\n$4\r\nlast\r\n", ""},
	81:  {[]string{"rpush", "l2", "x"}, ":1\r\n", ""},
	82:  {[]string{"lrem", "l2", "0", "x"}, ":1\r\n", ""},
	83:  {[]string{"exists", "l2"}, ":0\r\n", ""},
	84:  {[]string{"linsert", "l", "middle", "a", "x"}, "-ERR syntax error\r\n", ""},
	85:  {[]string{"linsert", "nokey", "before", "a", "x"}, ":0\r\n", ""},
	86:  {[]string{"linsert", "l", "before", "nomatch", "x"}, ":-1\r\n", ""},
	87:  {[]string{"linsert", "l", "before", "b", "new1"}, ":6\r\n", ""},
	88:  {[]string{"linsert", "l", "AFTER", "b", "new2"}, ":7\r\n", ""},
	89:  {[]string{"linsert", "l", "after", "last", "tail"}, ":8\r\n", ""},
	90:  {[]string{"linsert", "l", "before", "first", "head"}, ":9\r\n", ""},
	91:  {[]string{"lrange", "l", "0", "-1"}, "*9\r\n$4\r\nhead\r\n$5\r\nfirst\r\n$1\r\nc\r\n$16\r\n1795307408539667\r\n$4\r\nnew1\r\n$1\r\nb\r\n$4\r\nnew2\r\n$4\r\nlast\r\n$4\r\ntail\r\n", ""},
	92:  {[]string{"linsert", "l", "before", "1795307408539667", "n"}, ":10\r\n", ""},
	93:  {[]string{"lrange", "l", "0", "-1"}, "*10\r\n$4\r\nhead\r\n$5\r\nfirst\r\n$1\r\nc\r\n$1\r\nn\r\n$16\r\n1795307408539667\r\n$4\r\nnew1\r\n$1\r\nb\r\n$4\r\nnew2\r\n$4\r\nlast\r\n$4\r\ntail\r\n", ""},
	94:  {[]string{"del", "l"}, ":1\r\n", ""},
	95:  {[]string{"rpush", "l", "a", "b", "c", "1", "2", "3", "c", "b", "a"}, ":9\r\n", ""},
	96:  {[]string{"lpos", "l", "c"}, ":2\r\n", ""},
	97:  {[]string{"lpos", "l", "c", "rank", "2"}, ":6\r\n", ""},
	98:  {[]string{"lpos", "l", "c", "rank", "-1"}, ":6\r\n", ""},
	99:  {[]string{"lpos", "l", "c", "rank", "-2"}, ":2\r\n", ""},
	100: {[]string{"lpos", "l", "c", "rank", "3"}, "$-1\r\n", "_\r\n"},
	101: {[]string{"lpos", "l", "c", "count", "0"}, "*2\r\n:2\r\n:6\r\n", ""},
	102: {[]string{"lpos", "l", "c", "count", "1"}, "*1\r\n:2\r\n", ""},
	103: {[]string{"lpos", "l", "c", "count", "5"}, "*2\r\n:2\r\n:6\r\n", ""},
	104: {[]string{"lpos", "l", "c", "rank", "-1", "count", "0"}, "*2\r\n:6\r\n:2\r\n", ""},
	105: {[]string{"lpos", "l", "c", "maxlen", "3"}, ":2\r\n", ""},
	106: {[]string{"lpos", "l", "c", "maxlen", "2"}, "$-1\r\n", "_\r\n"},
	107: {[]string{"lpos", "l", "c", "maxlen", "3", "count", "0"}, "*1\r\n:2\r\n", ""},
	108: {[]string{"lpos", "l", "c", "rank", "-1", "maxlen", "2"}, "$-1\r\n", "_\r\n"},
	109: {[]string{"lpos", "l", "c", "rank", "-1", "maxlen", "3", "count", "0"}, "*1\r\n:6\r\n", ""},
	110: {[]string{"lpos", "l", "x"}, "$-1\r\n", "_\r\n"},
	111: {[]string{"lpos", "l", "x", "count", "0"}, "*0\r\n", ""},
	112: {[]string{"lpos", "l", "1"}, ":3\r\n", ""},
	113: {[]string{"lpos", "l", "01"}, "$-1\r\n", "_\r\n"},
	114: {[]string{"lpos", "nokey", "c"}, "$-1\r\n", "_\r\n"},
	115: {[]string{"lpos", "nokey", "c", "count", "1"}, "*0\r\n", ""},
	116: {[]string{"lpos", "l", "c", "rank", "0"}, "-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list\r\n", ""},
	117: {[]string{"lpos", "l", "c", "rank", "abc"}, "-ERR value is not an integer or out of range\r\n", ""},
	118: {[]string{"lpos", "l", "c", "count", "-1"}, "-ERR COUNT can't be negative\r\n", ""},
	119: {[]string{"lpos", "l", "c", "count", "abc"}, "-ERR COUNT can't be negative\r\n", ""},
	120: {[]string{"lpos", "l", "c", "maxlen", "-1"}, "-ERR MAXLEN can't be negative\r\n", ""},
	121: {[]string{"lpos", "l", "c", "maxlen", "abc"}, "-ERR MAXLEN can't be negative\r\n", ""},
	122: {[]string{"lpos", "l", "c", "foo"}, "-ERR syntax error\r\n", ""},
	123: {[]string{"lpos", "l", "c", "rank"}, "-ERR syntax error\r\n", ""},
	124: {[]string{"lpos", "l", "c", "count", "1", "count", "2"}, "*2\r\n:2\r\n:6\r\n", ""},
	125: {[]string{"lpos", "nokey", "c", "rank", "0"}, "-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list\r\n", ""},
	126: {[]string{"lpos", "nokey", "c", "foo"}, "-ERR syntax error\r\n", ""},
	127: {[]string{"del", "l"}, ":1\r\n", ""},
	128: {[]string{"rpush", "src", "a", "b", "c"}, ":3\r\n", ""},
	129: {[]string{"lmove", "src", "dst", "left", "right"}, "$1\r\na\r\n", ""},
	130: {[]string{"lmove", "src", "dst", "RIGHT", "LEFT"}, "$1\r\nc\r\n", ""},
	131: {[]string{"lrange", "src", "0", "-1"}, "*1\r\n$1\r\nb\r\n", ""},
	132: {[]string{"lrange", "dst", "0", "-1"}, "*2\r\n$1\r\nc\r\n$1\r\na\r\n", ""},
	133: {[]string{"lmove", "src", "dst", "up", "left"}, "-ERR syntax error\r\n", ""},
	134: {[]string{"lmove", "src", "dst", "left", "down"}, "-ERR syntax error\r\n", ""},
	135: {[]string{"lmove", "nokey", "dst", "left", "left"}, "$-1\r\n", "_\r\n"},
	136: {[]string{"lmove", "src", "src", "left", "right"}, "$1\r\nb\r\n", ""},
	137: {[]string{"lrange", "src", "0", "-1"}, "*1\r\n$1\r\nb\r\n", ""},
	138: {[]string{"rpoplpush", "src", "dst"}, "$1\r\nb\r\n", ""},
	139: {[]string{"exists", "src"}, ":0\r\n", ""},
	140: {[]string{"lrange", "dst", "0", "-1"}, "*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\na\r\n", ""},
	141: {[]string{"rpoplpush", "dst", "dst"}, "$1\r\na\r\n", ""},
	142: {[]string{"lrange", "dst", "0", "-1"}, "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", ""},
	143: {[]string{"rpoplpush", "nokey", "dst"}, "$-1\r\n", "_\r\n"},
	144: {[]string{"set", "s", "v"}, "+OK\r\n", ""},
	145: {[]string{"lmove", "src", "s", "left", "left"}, "$-1\r\n", "_\r\n"},
	146: {[]string{"lmove", "s", "dst", "left", "left"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	147: {[]string{"rpush", "src", "z"}, ":1\r\n", ""},
	148: {[]string{"lmove", "src", "s", "left", "left"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	149: {[]string{"lrange", "src", "0", "-1"}, "*1\r\n$1\r\nz\r\n", ""},
	150: {[]string{"rpoplpush", "s", "dst"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	151: {[]string{"rpoplpush", "src", "s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	152: {[]string{"lpush", "s", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	153: {[]string{"rpush", "s", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	154: {[]string{"lpushx", "s", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	155: {[]string{"rpushx", "s", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	156: {[]string{"lpop", "s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	157: {[]string{"rpop", "s", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	158: {[]string{"llen", "s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	159: {[]string{"lindex", "s", "0"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	160: {[]string{"lindex", "s", "abc"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	161: {[]string{"lrange", "s", "0", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	162: {[]string{"lrange", "s", "abc", "1"}, "-ERR value is not an integer or out of range\r\n", ""},
	163: {[]string{"ltrim", "s", "0", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	164: {[]string{"ltrim", "s", "abc", "1"}, "-ERR value is not an integer or out of range\r\n", ""},
	165: {[]string{"lset", "s", "0", "x"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	166: {[]string{"lset", "s", "abc", "x"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	167: {[]string{"lrem", "s", "0", "x"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	168: {[]string{"lrem", "s", "abc", "x"}, "-ERR value is not an integer or out of range\r\n", ""},
	169: {[]string{"linsert", "s", "before", "a", "b"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	170: {[]string{"linsert", "s", "middle", "a", "b"}, "-ERR syntax error\r\n", ""},
	171: {[]string{"lpos", "s", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	172: {[]string{"lpos", "s", "a", "rank", "0"}, "-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list\r\n", ""},
	173: {[]string{"type", "dst"}, "+list\r\n", ""},
	174: {[]string{"get", "dst"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	175: {[]string{"incr", "dst"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	176: {[]string{"hset", "dst", "a", "b"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	177: {[]string{"zadd", "dst", "1", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	178: {[]string{"hget", "dst", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	179: {[]string{"type", "dst"}, "+list\r\n", ""},
	180: {[]string{"rename", "dst", "dst2"}, "+OK\r\n", ""},
	181: {[]string{"lrange", "dst2", "0", "-1"}, "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", ""},
	182: {[]string{"scan", "0", "type", "list", "match", "s*", "count", "1000"}, "*2\r\n$1\r\n0\r\n*1\r\n$3\r\nsrc\r\n", ""},
	183: {[]string{"scan", "0", "type", "LIST", "match", "d*", "count", "1000"}, "*2\r\n$1\r\n0\r\n*1\r\n$4\r\ndst2\r\n", ""},
}

// TestListScript runs listScript with nodes of the default 8 KiB (every
// list compact), of one element (every list of two or more a quicklist)
// and of two.
func TestListScript(t *testing.T) {
	for _, size := range []string{"-2", "1", "2"} {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("size=%s/RESP%d", size, proto), func(t *testing.T) {
				runScript(t, listScript, proto, []string{"list-max-listpack-size", size}, nil)
			})
		}
	}
}

// TestLposRankRange: RANK is read as Redis 7.2 reads it, within ±(2^63-1)
// (Redis 7.0 took -2^63 and wrapped it).
func TestLposRankRange(t *testing.T) {
	r := newTestServer(t).raw(t)
	require.Equal(t, ":3\r\n", r.do("RPUSH", "l", "a", "b", "a"))
	require.Equal(t, "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n",
		r.do("LPOS", "l", "a", "RANK", "-9223372036854775808"))
	require.Equal(t, "$-1\r\n", r.do("LPOS", "l", "a", "RANK", "-9223372036854775807"))
	require.Equal(t, ":2\r\n", r.do("LPOS", "l", "a", "RANK", "-1"))
	require.Equal(t, "$-1\r\n", r.do("LPOS", "l", "a", "RANK", "9223372036854775807"))
}

// TestListConfig: list-max-listpack-size under both names, with Redis's
// errors, and lists that keep working as it changes under them.
func TestListConfig(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	failed := func(name, reason string) string {
		return "-ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason + "\r\n"
	}
	require.Equal(t, failed("list-max-listpack-size", "argument couldn't be parsed into an integer"), r.do("CONFIG", "SET", "list-max-listpack-size", "abc"))
	require.Equal(t, failed("list-max-ziplist-size", "argument must be between -2147483648 and 2147483647 inclusive"),
		r.do("CONFIG", "SET", "list-max-ziplist-size", "2147483648"))
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "list-max-ziplist-size", "5"))
	all := r.do("CONFIG", "GET", "list-max-*")
	require.True(t, strings.HasPrefix(all, "*4\r\n"), all)
	require.Contains(t, all, "$21\r\nlist-max-ziplist-size\r\n$1\r\n5\r\n")
	require.Contains(t, all, "$22\r\nlist-max-listpack-size\r\n$1\r\n5\r\n")
	encoding := func(key string) string {
		st := ts.store
		i := st.ShardIndex([]byte(key))
		st.Lock(i)
		defer st.Unlock(i)
		return st.List(st.Peek([]byte(key), ts.clock.Now()/1e6)).Encoding()
	}
	var want []string
	for i := 0; i < 12; i++ {
		r.do("RPUSH", "l", strconv.Itoa(i))
		want = append(want, strconv.Itoa(i))
	}
	require.Equal(t, "quicklist", encoding("l"))
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "list-max-listpack-size", "-2"))
	r.do("LINSERT", "l", "BEFORE", "6", "x")
	want = slices.Insert(want, 6, "x")
	require.Equal(t, multibulkReply(want...), r.do("LRANGE", "l", "0", "-1"))
	require.Equal(t, "+OK\r\n", r.do("LTRIM", "l", "0", "1"))
	require.Equal(t, "listpack", encoding("l"), "back to one small node")
	require.Equal(t, multibulkReply("0", "1"), r.do("LRANGE", "l", "0", "-1"))
}

// multibulkReply is the RESP2 reply of an array of bulk strings.
func multibulkReply(elems ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(elems))
	for _, e := range elems {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(e), e)
	}
	return b.String()
}

// TestMovingWindowGoRedis runs the moving-window recipe of the Redis
// rate-limit libraries (LPUSH, LTRIM, LLEN or LRANGE, PEXPIRE in a
// transaction) through go-redis, in both protocols.
func TestMovingWindowGoRedis(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		rdb := ts.client(t, proto)
		key := "window:" + strconv.Itoa(proto)
		for i := 0; i < 15; i++ {
			cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.LPush(ctx, key, 1795307408539667+int64(i)*1000)
				p.LTrim(ctx, key, 0, 9)
				p.LLen(ctx, key)
				p.PExpire(ctx, key, time.Minute)
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, int64(min(i+1, 10)), cmds[2].(*redis.IntCmd).Val(), "RESP%d step %d", proto, i)
		}
		oldest, err := rdb.LIndex(ctx, key, -1).Result()
		require.NoError(t, err)
		require.Equal(t, "1795307408544667", oldest)
		all, err := rdb.LRange(ctx, key, 0, -1).Result()
		require.NoError(t, err)
		require.Len(t, all, 10)
		require.Equal(t, "1795307408553667", all[0])
		pos, err := rdb.LPos(ctx, key, "1795307408550667", redis.LPosArgs{}).Result()
		require.NoError(t, err)
		require.Equal(t, int64(3), pos)
		popped, err := rdb.RPopCount(ctx, key, 3).Result()
		require.NoError(t, err)
		require.Equal(t, []string{"1795307408544667", "1795307408545667", "1795307408546667"}, popped)
	}
}
