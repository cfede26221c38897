package server

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// eventLoopModes are the runtimes a connection test runs under.
var eventLoopModes = []string{"yes", "no"}

func TestMonitor(t *testing.T) {
	for _, mode := range eventLoopModes {
		t.Run("event-loop="+mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			mon := ts.raw(t)
			require.Equal(t, "+OK\r\n", mon.do("MONITOR"))
			r := ts.raw(t)
			addr := r.nc.LocalAddr().String()
			for _, args := range [][]string{
				{"MULTI"}, {"SET", "k", "1"}, {"INCR", "k"}, {"EXEC"},
				{"EVAL", "redis.call('set','k','a\"b\\n\\1') return 1", "0"},
				{"CONFIG", "GET", "maxmemory"}, // admin: not shown
				{"AUTH", "default", "secret"},
				{"HELLO", "2", "AUTH", "default", "x"},
				{"get", "k"},
			} {
				r.do(args...)
			}
			var lines []string
			mon.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			for len(lines) < 9 {
				line, err := mon.rd.ReadString('\n')
				require.NoError(t, err, "after %q", lines)
				lines = append(lines, line)
			}
			want := []string{
				`[0 ` + addr + `] "MULTI"`,
				`[0 ` + addr + `] "SET" "k" "1"`,
				`[0 ` + addr + `] "INCR" "k"`,
				`[0 ` + addr + `] "EXEC"`,
				`[0 ` + addr + `] "EVAL" "redis.call('set','k','a\"b\\n\\1') return 1" "0"`,
				`[0 lua] "set" "k" "a\"b\n\x01"`,
				`[0 ` + addr + `] "AUTH" "(redacted)" "(redacted)"`,
				`[0 ` + addr + `] "HELLO" "2" "AUTH" "(redacted)" "(redacted)"`,
				`[0 ` + addr + `] "get" "k"`,
			}
			stamp := regexp.MustCompile(`^\+\d{10}\.\d{6} `)
			for i, line := range lines {
				require.Regexp(t, stamp, line, "line %d", i)
				require.Equal(t, want[i]+"\r\n", stamp.ReplaceAllString(line, ""), "line %d", i)
			}
			list := r.do("CLIENT", "LIST")
			require.Regexp(t, `flags=O .* cmd=monitor `, list)
			// RESET ends the monitor: nothing more reaches it.
			require.Equal(t, "+RESET\r\n", mon.do("RESET"))
			r.do("PING")
			require.Equal(t, "+PONG\r\n", mon.do("PING"))
		})
	}
}

func TestClientListFields(t *testing.T) {
	for _, mode := range eventLoopModes {
		t.Run("event-loop="+mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			a, b := ts.raw(t), ts.raw(t)
			require.Equal(t, "+OK\r\n", b.do("CLIENT", "SETNAME", "bee"))
			require.Equal(t, "+OK\r\n", b.do("CLIENT", "NO-EVICT", "on"))
			require.Equal(t, "+OK\r\n", b.do("WATCH", "x", "y"))
			require.Equal(t, "+OK\r\n", b.do("MULTI"))
			require.Equal(t, "+QUEUED\r\n", b.do("SET", "x", "1"))
			list := a.do("CLIENT", "LIST")
			lines := strings.Split(strings.TrimSpace(list[strings.Index(list, "\r\n")+2:]), "\n")
			require.Len(t, lines, 2)
			fa, fb := clientFields(lines[0]), clientFields(lines[1])
			require.NotEqual(t, fa["fd"], fb["fd"])
			require.NotEqual(t, "-1", fa["fd"])
			require.Equal(t, "client|list", fa["cmd"])
			require.Equal(t, "N", fa["flags"])
			require.Equal(t, "bee", fb["name"])
			require.Equal(t, "xe", fb["flags"])
			require.Equal(t, "1", fb["multi"])
			require.Equal(t, "2", fb["watch"])
			require.Equal(t, "0", fb["qbuf"])
			require.Equal(t, "multi", fb["cmd"])
			require.NotEqual(t, "0", fb["multi-mem"])
			require.Equal(t, "-ERR Unknown client type 'x'\r\n", a.do("CLIENT", "LIST", "TYPE", "x"))
			require.Regexp(t, `^\$0\r\n\r\n$`, a.do("CLIENT", "LIST", "TYPE", "pubsub"))
		})
	}
}

// clientFields parses a CLIENT LIST line.
func clientFields(line string) map[string]string {
	f := map[string]string{}
	for _, kv := range strings.Fields(line) {
		k, v, _ := strings.Cut(kv, "=")
		f[k] = v
	}
	return f
}

func TestClientKillFilters(t *testing.T) {
	ts := newTestServer(t)
	a, b, c := ts.raw(t), ts.raw(t), ts.raw(t)
	idOf := func(r *rawConn) string { return strings.Trim(r.do("CLIENT", "ID"), ":\r\n") }
	for i, s := range []struct {
		args []string
		want string
	}{
		0: {[]string{"CLIENT", "KILL", "MAXAGE", "x"}, "-ERR maxage is not an integer or out of range\r\n"},
		1: {[]string{"CLIENT", "KILL", "MAXAGE", "0"}, "-ERR syntax error\r\n"},
		2: {[]string{"CLIENT", "KILL", "MAXAGE", "100000"}, ":0\r\n"},
		3: {[]string{"CLIENT", "KILL", "TYPE", "pubsub"}, ":0\r\n"},
		4: {[]string{"CLIENT", "KILL", "TYPE", "x"}, "-ERR Unknown client type 'x'\r\n"},
		5: {[]string{"CLIENT", "KILL", "USER", "nobody"}, "-ERR No such user 'nobody'\r\n"},
		6: {[]string{"CLIENT", "KILL", "ID", idOf(b)}, ":1\r\n"},
		7: {[]string{"CLIENT", "KILL", "ADDR", c.nc.LocalAddr().String(), "TYPE", "normal"}, ":1\r\n"},
		8: {[]string{"CLIENT", "KILL", "1.2.3.4:5"}, "-ERR No such client\r\n"},
	} {
		require.Equal(t, s.want, a.do(s.args...), "step %d: %q", i, s.args)
	}
	// Once b and c are gone, LADDR with SKIPME no kills the caller.
	require.Eventually(t, func() bool { return strings.Count(a.do("CLIENT", "LIST"), "id=") == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, ":1\r\n", a.do("CLIENT", "KILL", "LADDR", ts.addr, "SKIPME", "no"))
	for _, r := range []*rawConn{a, b, c} {
		r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := r.rd.ReadByte()
		require.Error(t, err, "killed")
	}
}

func TestClientPause(t *testing.T) {
	for _, mode := range eventLoopModes {
		t.Run("event-loop="+mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			admin, w := ts.raw(t), ts.raw(t)
			require.Equal(t, "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n", admin.do("CLIENT", "PAUSE", "10", "x"))
			require.Equal(t, "-ERR timeout is negative\r\n", admin.do("CLIENT", "PAUSE", "-1"))
			require.Equal(t, "+OK\r\n", admin.do("CLIENT", "PAUSE", "100000", "WRITE"))
			require.Equal(t, "$-1\r\n", w.do("GET", "k")) // reads go on
			_, err := w.nc.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"))
			require.NoError(t, err)
			w.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			_, err = w.rd.ReadByte()
			require.Error(t, err, "the write waits for the pause")
			require.Equal(t, "+OK\r\n", admin.do("CLIENT", "UNPAUSE"))
			require.Equal(t, "+OK\r\n", w.reply())
			// PAUSE ALL until its timeout: every command waits.
			require.Equal(t, "+OK\r\n", admin.do("CLIENT", "PAUSE", "200", "ALL"))
			start := time.Now()
			require.Equal(t, "$1\r\nv\r\n", w.do("GET", "k"))
			require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
		})
	}
}
