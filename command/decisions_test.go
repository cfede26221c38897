package command

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// decisionCounts maps "command group" to allowed, limited, near limit.
type decisionCounts map[string][3]uint64

func readDecisionCounts(eng *Engine) decisionCounts {
	m := decisionCounts{}
	for _, d := range eng.Decisions() {
		m[d.Command+" "+d.Group] = [3]uint64{d.Allowed, d.Limited, d.NearLimit}
	}
	return m
}

// checkDecisions compares every counter with want (absent: zero) and that
// the groups listed are exactly groups.
func checkDecisions(t *testing.T, step int, eng *Engine, groups []string, want decisionCounts) {
	t.Helper()
	have := readDecisionCounts(eng)
	require.Len(t, have, len(decisionCommands)*len(groups), "step %d: %v", step, have)
	for _, cmd := range decisionCommands {
		for _, g := range groups {
			k := cmd + " " + g
			h, ok := have[k]
			if !ok || h != want[k] {
				t.Errorf("step %d: %s: have %v (present %v), want %v", step, k, h, ok, want[k])
			}
		}
	}
}

func TestDecisionCounters(t *testing.T) {
	ts := newTestServer(t, "ratelimit-metrics-groups", "login:* ap[i]:*")
	r := ts.raw(t)
	groups := []string{"login:*", "ap[i]:*", "other"}
	want := decisionCounts{}
	add := func(k string, a, l, n uint64) {
		v := want[k]
		want[k] = [3]uint64{v[0] + a, v[1] + l, v[2] + n}
	}
	steps := []struct {
		args  []string
		reply string // prefix of the reply
		count func()
	}{
		// limit 2: remaining 1 (> 20 %), then 0 (near), then limited.
		{[]string{"CL.THROTTLE", "login:1", "1", "1", "60"}, "*5\r\n:0\r\n:2\r\n:1\r\n", func() { add("cl.throttle login:*", 1, 0, 0) }},
		{[]string{"CL.THROTTLE", "login:1", "1", "1", "60"}, "*5\r\n:0\r\n:2\r\n:0\r\n", func() { add("cl.throttle login:*", 1, 0, 1) }},
		{[]string{"CL.THROTTLE", "login:1", "1", "1", "60"}, "*5\r\n:1\r\n", func() { add("cl.throttle login:*", 0, 1, 0) }},
		// CL.PEEK decides nothing; errors count nothing.
		{[]string{"CL.PEEK", "login:1", "1", "1", "60"}, "*5\r\n:1\r\n", func() {}},
		{[]string{"CL.THROTTLE", "login:1", "x", "1", "60"}, "-", func() {}},
		{[]string{"SW.THROTTLE", "api:1", "0", "1000"}, "-", func() {}},
		// limit 10, remaining 9, then 2 (= 20 %: near) with quantity 7.
		{[]string{"CL.THROTTLEMS", "api:1", "9", "10", "1000"}, "*5\r\n:0\r\n:10\r\n:9\r\n", func() { add("cl.throttlems ap[i]:*", 1, 0, 0) }},
		{[]string{"CL.THROTTLEMS", "api:1", "9", "10", "1000", "7"}, "*5\r\n:0\r\n:10\r\n:2\r\n", func() { add("cl.throttlems ap[i]:*", 1, 0, 1) }},
		// other: a key matching no pattern ("login" has no ':').
		{[]string{"SL.THROTTLE", "login", "5", "1000"}, "*5\r\n:0\r\n:5\r\n:4\r\n", func() { add("sl.throttle other", 1, 0, 0) }},
		{[]string{"SL.THROTTLE", "login", "5", "1000", "QUANTITY", "4"}, "*5\r\n:0\r\n:5\r\n:0\r\n", func() { add("sl.throttle other", 1, 0, 1) }},
		{[]string{"SL.THROTTLE", "login", "5", "1000"}, "*5\r\n:1\r\n", func() { add("sl.throttle other", 0, 1, 0) }},
		{[]string{"SW.THROTTLE", "api:2", "1", "1000"}, "*5\r\n:0\r\n:1\r\n:0\r\n", func() { add("sw.throttle ap[i]:*", 1, 0, 1) }},
		{[]string{"SW.THROTTLE", "api:2", "1", "1000"}, "*5\r\n:1\r\n", func() { add("sw.throttle ap[i]:*", 0, 1, 0) }},
		// CL.THROTTLEALL counts per limit: both allowed (login:2 near);
		// then only the limit that refused.
		{[]string{"CL.THROTTLEALL", "2", "login:2", "0", "1", "60", "api:3", "5", "1", "60"}, "*3\r\n:0\r\n", func() {
			add("cl.throttleall login:*", 1, 0, 1)
			add("cl.throttleall ap[i]:*", 1, 0, 0)
		}},
		{[]string{"CL.THROTTLEALL", "2", "login:2", "0", "1", "60", "api:3", "5", "1", "60"}, "*3\r\n:1\r\n", func() { add("cl.throttleall login:*", 0, 1, 0) }},
		// Inside a transaction, counted once when it runs.
		{[]string{"MULTI"}, "+OK", func() {}},
		{[]string{"CL.THROTTLE", "x", "10", "1", "60"}, "+QUEUED", func() {}},
		{[]string{"EXEC"}, "*1\r\n*5\r\n:0\r\n", func() { add("cl.throttle other", 1, 0, 0) }},
	}
	for i, st := range steps {
		reply := r.do(st.args...)
		require.True(t, strings.HasPrefix(reply, st.reply), "step %d %q: reply %q, want prefix %q", i, st.args, reply, st.reply)
		st.count()
		checkDecisions(t, i, ts.srv, groups, want)
	}

	info := r.do("INFO", "ratelimit")
	for _, line := range []string{
		"rlstat_cl.throttle_login%3A*:allowed=2,limited=1,near_limit=1\r\n",
		"rlstat_sl.throttle_other:allowed=2,limited=1,near_limit=1\r\n",
		"rlstat_cl.throttleall_ap[i]%3A*:allowed=1,limited=0,near_limit=0\r\n",
	} {
		require.Contains(t, info, line)
	}
	require.NotContains(t, info, "rlstat_sw.throttle_login") // no decision: no line

	// A new set of groups keeps the counts of the groups it keeps and
	// moves the others' to "other"; new keys count in the new groups.
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "ratelimit-metrics-groups", "ap[i]:* login:1*"))
	moved := decisionCounts{}
	for k, v := range want {
		cmd, g, _ := strings.Cut(k, " ")
		if g == "login:*" {
			g = "other"
		}
		a := moved[cmd+" "+g]
		moved[cmd+" "+g] = [3]uint64{a[0] + v[0], a[1] + v[1], a[2] + v[2]}
	}
	groups = []string{"ap[i]:*", "login:1*", "other"}
	checkDecisions(t, len(steps), ts.srv, groups, moved)
	require.Contains(t, r.do("CL.THROTTLE", "login:10", "1", "1", "60"), ":0\r\n:2\r\n:1\r\n")
	moved["cl.throttle login:1*"] = [3]uint64{1, 0, 0}
	checkDecisions(t, len(steps)+1, ts.srv, groups, moved)

	// Two changes before any shard is read again chain the tables.
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "ratelimit-metrics-groups", "login:1*"))
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "ratelimit-metrics-groups", "login:1* ap[i]:*"))
	for k, v := range moved {
		if cmd, g, _ := strings.Cut(k, " "); g == "ap[i]:*" {
			o := moved[cmd+" other"]
			moved[cmd+" other"] = [3]uint64{o[0] + v[0], o[1] + v[1], o[2] + v[2]}
			delete(moved, k)
		}
	}
	groups = []string{"login:1*", "ap[i]:*", "other"}
	checkDecisions(t, len(steps)+2, ts.srv, groups, moved)

	require.Equal(t, "+OK\r\n", r.do("CONFIG", "RESETSTAT"))
	checkDecisions(t, len(steps)+3, ts.srv, groups, decisionCounts{})
	require.Equal(t, "$13\r\n# Ratelimit\r\n\r\n", r.do("INFO", "ratelimit"))

	// Refused patterns leave the groups as they were.
	require.True(t, strings.HasPrefix(r.do("CONFIG", "SET", "ratelimit-metrics-groups", "a other"), "-ERR"))
	require.Equal(t, "*2\r\n$24\r\nratelimit-metrics-groups\r\n$16\r\nlogin:1* ap[i]:*\r\n",
		r.do("CONFIG", "GET", "ratelimit-metrics-groups"))
}

// TestDecisionsNoGroups checks that without patterns every key is in
// "other".
func TestDecisionsNoGroups(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	for i := range 3 {
		r.do("CL.THROTTLE", fmt.Sprintf("k%d", i%2), "0", "1", "60")
	}
	checkDecisions(t, 0, ts.srv, []string{"other"}, decisionCounts{"cl.throttle other": {2, 1, 2}})
	// A limit near 2^63: far from it, whatever 5*remaining would overflow to.
	require.Contains(t, r.do("CL.THROTTLE", "big", "2000000000000000000", "1000000000", "1"), ":0\r\n:2000000000000000001\r\n:2000000000000000000\r\n")
	checkDecisions(t, 1, ts.srv, []string{"other"}, decisionCounts{"cl.throttle other": {3, 1, 2}})
}

// TestDecisionsConcurrentRegroup runs throttling clients while the groups
// change and readers read: every call is counted once, in some group.
func TestDecisionsConcurrentRegroup(t *testing.T) {
	ts := newTestServer(t, "ratelimit-metrics-groups", "a:*")
	const clients, calls = 4, 300
	done := make(chan struct{})
	errs := make(chan error, clients+2)
	conns := make([]*rawConn, clients+1)
	for i := range conns {
		conns[i] = ts.raw(t)
	}
	for i := range clients {
		go func() {
			r := conns[i]
			for j := range calls {
				key := fmt.Sprintf("%c:%d", "abc"[j%3], (i*calls+j)%17)
				if reply := r.do("CL.THROTTLE", key, "5", "10", "1"); !strings.HasPrefix(reply, "*5") {
					errs <- fmt.Errorf("reply %q", reply)
					return
				}
			}
			errs <- nil
		}()
	}
	go func() {
		r := conns[clients]
		sets := []string{"a:*", "b:* a:*", "", "c:* b:*"}
		for i := 0; ; i++ {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			r.do("CONFIG", "SET", "ratelimit-metrics-groups", sets[i%len(sets)])
			if i%3 == 0 {
				r.do("INFO", "ratelimit")
			}
		}
	}()
	go func() {
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			ts.srv.Decisions()
		}
	}()
	for range clients {
		require.NoError(t, <-errs)
	}
	close(done)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	var total uint64
	for _, d := range ts.srv.Decisions() {
		if d.Command == "cl.throttle" {
			total += d.Allowed + d.Limited
		}
	}
	require.Equal(t, uint64(clients*calls), total)
}
