package command

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Shared plumbing of the differential tests (diff_test.go,
// zset_diff_test.go, mixed_diff_test.go, persist_test.go): the same
// commands go to a real redis-server and to ratekv over raw connections,
// and the replies are compared byte for byte.

// redisAddr returns the address of the real redis-server to compare with,
// or skips the test when RATEKV_REDIS_ADDR is unset.
func redisAddr(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("RATEKV_REDIS_ADDR")
	if addr == "" {
		t.Skip("RATEKV_REDIS_ADDR is not set: no redis-server to compare with")
	}
	return addr
}

// diffSeed returns the random seed of a differential test: the value of
// the environment variable env when set (to replay a failure), else the
// clock. The seed is logged.
func diffSeed(t *testing.T, env string) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(env); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("seed %d (%s=%d replays it)", seed, env, seed)
	return seed
}

// dialRaw connects to addr for raw request/reply exchanges.
func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

// differ sends each command to both servers and compares the replies.
// normalize, when set, maps a pair of replies that may legitimately differ
// (a remaining time, a random pick) onto the forms to compare.
type differ struct {
	t          *testing.T
	real, ours *rawConn
	normalize  func(args []string, have, want string) (string, string)
	maxFails   int    // stop the test after this many mismatches
	want       string // redis-server's reply to the last command
	steps      int
	failures   int
}

func (d *differ) check(args []string) {
	d.t.Helper()
	d.steps++
	want := d.real.do(args...)
	have := d.ours.do(args...)
	d.want = want
	if have != want && d.normalize != nil {
		have, want = d.normalize(args, have, want)
	}
	if have == want {
		return
	}
	d.failures++
	d.t.Errorf("step %d: %q\n  redis:  %q\n  ratekv: %q", d.steps, args, want, have)
	if d.failures >= d.maxFails {
		d.t.FailNow()
	}
}

// diffOverLimits runs a family's differential test under each value of
// its encoding-limit parameter param (set on both servers; redis-server's
// restored afterwards), in RESP2 and RESP3, each run on a flushed
// keyspace: run sends the commands through d, whose normalize comes from
// normalize(value).
func diffOverLimits(t *testing.T, addr, param string, values []string,
	normalize func(value string) func(args []string, have, want string) (string, string),
	run func(t *testing.T, d *differ, value string, proto int)) {
	t.Helper()
	admin := dialRaw(t, addr)
	old := admin.do("CONFIG", "GET", param)
	t.Cleanup(func() {
		if f := strings.Split(old, "\r\n"); len(f) >= 5 {
			admin.do("CONFIG", "SET", param, f[4])
		}
	})
	ts := newTestServer(t)
	label := param[strings.LastIndexByte(param, '-')+1:]
	for _, v := range values {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s=%s/RESP%d", label, v, proto), func(t *testing.T) {
				d := &differ{t: t, real: dialRaw(t, addr), ours: ts.raw(t), maxFails: 20, normalize: normalize(v)}
				for _, r := range []*rawConn{d.real, d.ours} {
					require.Equal(t, "+OK\r\n", r.do("FLUSHALL"))
					require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", param, v))
					if proto == 3 {
						require.True(t, strings.HasPrefix(r.do("HELLO", "3"), "%"))
					}
				}
				run(t, d, v, proto)
				t.Logf("%d commands compared", d.steps)
			})
		}
	}
	ts.raw(t).do("CONFIG", "SET", param, values[0])
}
