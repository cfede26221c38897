package persist_test

// Short-lived keys in the crash test (TestCrashRecovery): deadlines that
// pass while the load runs, while the server is down (between the kill and
// the restart) and after the restart.
//
// Besides its other writes, each worker starts a new key every
// crashTTLEvery, of one of these kinds, and records every state the key
// went through with the bounds of its absolute deadline (the server sets
// it between the send and the reply):
//
//	set       SET k v PX ttl
//	incr      INCR k, PEXPIRE k ttl
//	zadd      ZADD k 1 a, PEXPIRE k ttl
//	cl        CL.THROTTLE k 4 count 10, 1-4 times (the key expires when the
//	          bucket is full again; count is chosen for the deadline)
//	sl        SL.THROTTLE k 100 ttl, 1-3 times (the log expires a window
//	          after its newest entry)
//	extend    SET k v PX ttl, PEXPIRE k 1h
//	persist   SET k v PX ttl, PERSIST k
//	recreate  ZADD k 1 a, PEXPIRE k 1h, DEL k, ZADD k 2 b, PEXPIRE k ttl
//
// ttl is chosen so that the deadline passes before the planned kill,
// while the server is down (crashDowntime, then the start-up), or after
// the restart. After each restart:
//
//   - DBSIZE, read with KEYS * in one transaction first thing after the
//     restart, counts no key beyond those KEYS lists but keys whose
//     deadline may have passed after the restart began: the loader deleted
//     the keys whose deadline passed before. A key it kept would be hidden
//     from every read but counted, until the active expiry deletes it
//     (its first tick comes 100 ms after the start, usually after this
//     read);
//   - every key is in one of the states it may be in (as for the other
//     keys: the last acknowledged before the loss window, anything after
//     it, the uncertain write), where a state whose deadline has passed
//     means the key is absent (EXISTS 0, PEXPIRETIME and PTTL -2, TYPE
//     none), and a state whose deadline has not means the key is there with
//     its type, value and a deadline within the recorded bounds (PTTL
//     agreeing with it). These are read in one transaction per batch, so
//     at one reading of the server's clock (TIME in the transaction);
//   - KEYS t:* and a full SCAN MATCH t:* list exactly the keys found there
//     whose deadline is still ahead;
//   - CL.THROTTLE and SL.THROTTLE on a key found gone answer as on a new
//     key.
//
// An extended or persisted key must survive its first deadline; a
// recreated one must not get back the member of its first life. The test
// fails if some kind never had a deadline pass while the server was down or
// was never found with its deadline ahead.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

const (
	crashDowntime = 150 * time.Millisecond // from the kill to the restart
	crashTTLEvery = 25 * time.Millisecond  // each worker starts a short-lived key this often
	crashTTLLong  = 3_600_000              // ms: PEXPIRE of extend and recreate
	crashCLPeriod = 10                     // s: CL.THROTTLE's period (count sets the interval)
	// crashTTLTol (ms) absorbs the difference between the client's and the
	// server's readings of the clock around one command.
	crashTTLTol = 3
)

// ttlVersion is one state of a short-lived key: gone, or there with a type,
// a value and a deadline in [lo, hi] (Unix ms; 0, 0: none).
type ttlVersion struct {
	gone         bool
	typ          string
	value        string // GET, or the ZRANGE members joined by ","; not for CL (tat) or SL
	lo, hi       int64
	tatLo, tatHi int64 // CL.THROTTLE: bounds of the TAT (its value) in Unix ns
	acked        time.Time
}

func (v ttlVersion) String() string {
	switch {
	case v.gone:
		return "gone"
	case v.tatHi != 0:
		return fmt.Sprintf("TAT %d..%d ns, deadline %d..%d (acked %s)", v.tatLo, v.tatHi, v.lo, v.hi, v.acked.Format(time.StampMilli))
	}
	return fmt.Sprintf("%s %q, deadline %d..%d (acked %s)", v.typ, v.value, v.lo, v.hi, v.acked.Format(time.StampMilli))
}

// ttlState is what a key was found to be.
type ttlState struct {
	present bool
	typ     string
	value   string
	at      int64 // PEXPIRETIME
}

// ttlKey is one short-lived key and what the server acknowledged.
type ttlKey struct {
	kind      string
	count     int64 // CL.THROTTLE's count; SL.THROTTLE's window in ms
	versions  []ttlVersion
	uncertain *ttlVersion
	seen      ttlState // at the last check
	refreshed bool     // a throttle call after it was found gone
}

// candidates are the states the key may be in after a restart: as for the
// other keys, the last acknowledged before safe and anything after it.
func (tk *ttlKey) candidates(safe time.Time) []ttlVersion {
	first := -1
	for i, v := range tk.versions {
		if !v.acked.After(safe) {
			first = i
		}
	}
	out := slices.Clone(tk.versions[max(first, 0):])
	if first == -1 {
		out = append(out, ttlVersion{gone: true})
	}
	if tk.uncertain != nil {
		out = append(out, *tk.uncertain)
	}
	return out
}

// explains says whether v may be what the key was found to be at the
// server's time nowMs.
func (v ttlVersion) explains(s ttlState, nowMs int64) bool {
	const tol = crashTTLTol
	switch {
	case v.gone:
		return !s.present
	case !s.present: // fine once the deadline may have passed
		return v.hi != 0 && v.lo-tol <= nowMs
	case v.hi != 0 && v.hi+tol <= nowMs, s.typ != v.typ:
		return false
	case v.hi == 0 && s.at != -1, v.hi != 0 && (s.at < v.lo-tol || s.at > v.hi+tol):
		return false
	case v.tatHi != 0: // the deadline is the TAT truncated to ms (-1 as the TTL is truncated)
		tat, err := strconv.ParseInt(s.value, 10, 64)
		return err == nil && tat >= v.tatLo-tol*1e6 && tat <= v.tatHi+tol*1e6 && s.at >= tat/1e6-1 && s.at <= tat/1e6
	}
	return s.value == v.value
}

// version is the state s as a baseline for the next check.
func (s ttlState) version(kind string) ttlVersion {
	if !s.present {
		return ttlVersion{gone: true}
	}
	v := ttlVersion{typ: s.typ, value: s.value}
	if s.at != -1 {
		v.lo, v.hi = s.at, s.at
	}
	if kind == "cl" {
		v.tatLo, _ = strconv.ParseInt(s.value, 10, 64)
		v.tatHi = v.tatLo
	}
	return v
}

// ttlTarget picks a deadline (Unix ms): before the planned kill, while the
// server is down, or after the restart.
func ttlTarget(r *rand.Rand, now, killAt time.Time) int64 {
	nowMs, kill, down := now.UnixMilli(), killAt.UnixMilli(), crashDowntime.Milliseconds()
	var at int64
	switch r.IntN(3) {
	case 0:
		at = nowMs + r.Int64N(max(kill-nowMs, 1))
	case 1:
		at = kill + 25 + r.Int64N(down-50)
	default:
		at = kill + down + 500 + r.Int64N(2000)
	}
	return max(at, nowMs+20)
}

// throttled is the state after a CL.THROTTLE or SL.THROTTLE call on a key
// in state cur; reply nil: the reply was lost, assume it was allowed.
func (tk *ttlKey) throttled(cur ttlVersion, reply any, send, ack time.Time) ttlVersion {
	if r, ok := reply.([]any); ok && len(r) > 0 && r[0] == int64(1) {
		return cur // refused: nothing changed
	}
	if tk.kind == "sl" { // a window after this call's entry, rounded up to the ms
		return ttlVersion{typ: "sllog", lo: send.UnixMilli() + tk.count, hi: ack.UnixMilli() + tk.count + 1}
	}
	// TAT = max(TAT, now) + the emission interval (computed as the server
	// does); the deadline is the TAT truncated to ms, give or take one.
	ei := int64(float64(crashCLPeriod*1e9) / float64(tk.count))
	v := ttlVersion{typ: "string", tatLo: max(cur.tatLo, send.UnixNano()) + ei, tatHi: max(cur.tatHi, ack.UnixNano()) + ei}
	v.lo, v.hi = v.tatLo/1e6-1, v.tatHi/1e6
	return v
}

// ttlOp writes a new short-lived key of a random kind, key t:<id>:<n>. It
// returns false at the first error (the kill).
func (w *worker) ttlOp(c *redis.Client, r *rand.Rand, n int64, killAt time.Time, hasZadd, hasSL bool) bool {
	ctx := context.Background()
	kinds := []string{"set", "incr", "cl", "extend", "persist"}
	if hasZadd {
		kinds = append(kinds, "zadd", "recreate")
	}
	if hasSL {
		kinds = append(kinds, "sl")
	}
	k := fmt.Sprintf("t:%d:%d", w.id, n)
	val := fmt.Sprint("v", n)
	tk := &ttlKey{kind: kinds[r.IntN(len(kinds))]}
	w.ttl[k] = tk
	now := time.Now()
	ttl := ttlTarget(r, now, killAt) - now.UnixMilli()
	cur := ttlVersion{gone: true}
	// call sends one command; after gives the key's state once it has run,
	// from its reply (nil when the reply was lost: as if it succeeded).
	call := func(after func(reply any, send, ack time.Time) ttlVersion, args ...any) bool {
		send := time.Now()
		reply, err := c.Do(ctx, args...).Result()
		ack := time.Now()
		if err != nil {
			u := after(nil, send, ack)
			tk.uncertain = &u
			return false
		}
		cur = after(reply, send, ack)
		cur.acked = ack
		tk.versions = append(tk.versions, cur)
		w.ops++
		return true
	}
	value := func(typ, v string, ttl int64) func(any, time.Time, time.Time) ttlVersion {
		return func(_ any, send, ack time.Time) ttlVersion {
			out := ttlVersion{typ: typ, value: v}
			if ttl > 0 {
				out.lo, out.hi = send.UnixMilli()+ttl, ack.UnixMilli()+ttl
			}
			return out
		}
	}
	pexpire := func(ms int64) func(any, time.Time, time.Time) ttlVersion {
		return func(reply any, send, ack time.Time) ttlVersion {
			if reply == int64(0) || cur.gone { // the key had expired
				return ttlVersion{gone: true}
			}
			v := cur
			v.lo, v.hi = send.UnixMilli()+ms, ack.UnixMilli()+ms
			return v
		}
	}
	persist := func(reply any, _, _ time.Time) ttlVersion {
		if reply == int64(0) || cur.gone {
			return ttlVersion{gone: true}
		}
		v := cur
		v.lo, v.hi = 0, 0
		return v
	}
	gone := func(any, time.Time, time.Time) ttlVersion { return ttlVersion{gone: true} }
	throttle := func(reply any, send, ack time.Time) ttlVersion { return tk.throttled(cur, reply, send, ack) }
	switch tk.kind {
	case "set":
		return call(value("string", val, ttl), "SET", k, val, "PX", ttl)
	case "incr":
		return call(value("string", "1", 0), "INCR", k) && call(pexpire(ttl), "PEXPIRE", k, ttl)
	case "zadd":
		return call(value("zset", "a", 0), "ZADD", k, 1, "a") && call(pexpire(ttl), "PEXPIRE", k, ttl)
	case "extend":
		return call(value("string", val, ttl), "SET", k, val, "PX", ttl) &&
			call(pexpire(crashTTLLong), "PEXPIRE", k, crashTTLLong)
	case "persist":
		return call(value("string", val, ttl), "SET", k, val, "PX", ttl) && call(persist, "PERSIST", k)
	case "recreate":
		return call(value("zset", "a", 0), "ZADD", k, 1, "a") && call(pexpire(crashTTLLong), "PEXPIRE", k, crashTTLLong) &&
			call(gone, "DEL", k) && call(value("zset", "b", 0), "ZADD", k, 2, "b") && call(pexpire(ttl), "PEXPIRE", k, ttl)
	case "cl":
		calls := 1 + r.IntN(4)
		tk.count = max(1, int64(math.Round(float64(calls)*crashCLPeriod*1000/float64(ttl))))
		for range calls {
			if !call(throttle, "CL.THROTTLE", k, 4, tk.count, crashCLPeriod) {
				return false
			}
		}
	case "sl":
		tk.count = ttl
		for range 1 + r.IntN(3) {
			if !call(throttle, "SL.THROTTLE", k, 100, ttl) {
				return false
			}
		}
	}
	return true
}

// ttlCoverage counts, per kind, keys with a deadline that passed while the
// server was down ([0]) and keys found with their deadline ahead ([1]).
type ttlCoverage map[string]*[2]int

// keyspaceAtStart reads DBSIZE and KEYS * at one moment, first thing after
// a restart: before the active expiry's first tick (100 ms after the
// start), a key the loader failed to delete would still be counted.
func keyspaceAtStart(t *testing.T, c *redis.Client) (dbsize int64, keys map[string]bool) {
	ctx := context.Background()
	var size *redis.IntCmd
	var all *redis.StringSliceCmd
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		size = p.DBSize(ctx)
		all = p.Keys(ctx, "*")
		return nil
	})
	require.NoError(t, err)
	keys = map[string]bool{}
	for _, k := range all.Val() {
		keys[k] = true
	}
	return size.Val(), keys
}

// checkShortLived checks every worker's short-lived keys after a restart;
// the server was killed at killed and started again at restarted; dbsize
// and atStart are from keyspaceAtStart.
func checkShortLived(t *testing.T, c *redis.Client, workers []*worker, killed, restarted time.Time, strict bool,
	dbsize int64, atStart map[string]bool, cov ttlCoverage) {
	maybe := 0 // keys absent at the start that may have been expired but not yet deleted then
	for _, w := range workers {
		maybe += w.checkTTL(t, c, killed, restarted, strict, atStart, cov)
	}
	excess := int(dbsize) - len(atStart)
	require.GreaterOrEqual(t, excess, 0, "DBSIZE %d, KEYS * lists %d", dbsize, len(atStart))
	require.LessOrEqual(t, excess, maybe,
		"DBSIZE %d counts %d keys KEYS * did not list at the same moment, but only %d keys had a deadline that may have passed since the restart began: the loader kept keys whose deadline had passed",
		dbsize, excess, maybe)
	checkTTLListing(t, c, workers)
	for _, w := range workers {
		w.refreshTTL(t, c)
	}
}

// checkTTL checks this worker's short-lived keys (see checkShortLived) and adopts
// what it found as the new baseline. It returns how many keys absent from
// atStart may have had a deadline that passed after restarted.
func (w *worker) checkTTL(t *testing.T, c *redis.Client, killed, restarted time.Time, strict bool, atStart map[string]bool, cov ttlCoverage) (maybe int) {
	ctx := context.Background()
	safe := killed.Add(-crashLoss)
	if strict {
		safe = killed
	}
	keys := make([]string, 0, len(w.ttl))
	for k := range w.ttl {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	type reads struct{ exists, typ, at, pttl, value *redis.Cmd } // value: GET or ZRANGE, by kind
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 256)]
		keys = keys[len(batch):]
		rs := make([]reads, len(batch))
		var now *redis.TimeCmd
		// One transaction: one reading of the server's clock for all. Errors
		// of single commands (GET of a missing key) are read below.
		c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			now = p.Time(ctx)
			for i, k := range batch {
				rs[i] = reads{exists: p.Do(ctx, "EXISTS", k), typ: p.Do(ctx, "TYPE", k),
					at: p.Do(ctx, "PEXPIRETIME", k), pttl: p.Do(ctx, "PTTL", k)}
				switch w.ttl[k].kind {
				case "zadd", "recreate":
					rs[i].value = p.Do(ctx, "ZRANGE", k, 0, -1)
				case "sl":
				default:
					rs[i].value = p.Do(ctx, "GET", k)
				}
			}
			return nil
		})
		require.NoError(t, now.Err())
		nowMs := now.Val().UnixMilli()
		for i, k := range batch {
			tk, r := w.ttl[k], rs[i]
			exists, err := r.exists.Int64()
			require.NoError(t, err)
			s := ttlState{present: exists == 1}
			s.typ, err = r.typ.Text()
			require.NoError(t, err)
			s.at, err = r.at.Int64()
			require.NoError(t, err)
			pttl, err := r.pttl.Int64()
			require.NoError(t, err)
			if s.present {
				if s.at == -1 {
					require.Equal(t, int64(-1), pttl, "PTTL of %s, which has no deadline", k)
				} else {
					require.Greater(t, s.at, nowMs, "%s is there after its deadline", k)
					require.InDelta(t, s.at-nowMs, pttl, 1, "PTTL of %s against its PEXPIRETIME %d at %d", k, s.at, nowMs)
				}
				switch tk.kind {
				case "zadd", "recreate":
					members, _ := r.value.StringSlice()
					s.value = strings.Join(members, ",")
				case "sl":
				default:
					s.value, _ = r.value.Text()
				}
			} else {
				require.Equal(t, []any{"none", int64(-2), int64(-2)}, []any{s.typ, s.at, pttl}, "TYPE, PEXPIRETIME and PTTL of %s, which EXISTS says is gone", k)
			}
			cands := tk.candidates(safe)
			ok := false
			for _, v := range cands {
				ok = ok || v.explains(s, nowMs)
			}
			require.True(t, ok, "%s key %s found %+v at %d (server ms); it may be one of %v; kill at %d, restart at %d",
				tk.kind, k, s, nowMs, cands, killed.UnixMilli(), restarted.UnixMilli())

			late, down := false, false
			for _, v := range cands {
				late = late || (!v.gone && v.hi != 0 && v.hi+crashTTLTol > restarted.UnixMilli())
			}
			if !atStart[k] && late {
				maybe++
			}
			for _, v := range append(cands, tk.versions...) {
				down = down || (!v.gone && v.hi != 0 && v.lo > killed.UnixMilli() && v.hi < restarted.UnixMilli())
			}
			if cov[tk.kind] == nil {
				cov[tk.kind] = &[2]int{}
			}
			if down {
				cov[tk.kind][0]++
			}
			if s.present && (s.at == -1 || s.at > nowMs) {
				cov[tk.kind][1]++
			}
			tk.seen = s
			tk.versions = []ttlVersion{s.version(tk.kind)}
			tk.uncertain = nil
		}
	}
	return maybe
}

// checkTTLListing checks that KEYS t:* and a full SCAN MATCH t:* list the
// short-lived keys found there with their deadline still ahead, and no
// other.
func checkTTLListing(t *testing.T, c *redis.Client, workers []*worker) {
	ctx := context.Background()
	track := map[string]*ttlKey{}
	for _, w := range workers {
		for k, tk := range w.ttl {
			track[k] = tk
		}
	}
	// check: listed is what a command running between the server's times
	// from and to (ms) listed. Nothing writes meanwhile: a key can only go.
	check := func(what string, listed []string, from, to int64) {
		set := map[string]bool{}
		for _, k := range listed {
			tk := track[k]
			require.NotNil(t, tk, "%s lists %s, which was never written", what, k)
			require.True(t, tk.seen.present && (tk.seen.at == -1 || tk.seen.at > from),
				"%s lists %s, found %+v, gone before %d", what, k, tk.seen, from)
			require.False(t, set[k], "%s lists %s twice", what, k)
			set[k] = true
		}
		for k, tk := range track {
			if tk.seen.present && (tk.seen.at == -1 || tk.seen.at > to) {
				require.True(t, set[k], "%s misses %s, found %+v, between %d and %d", what, k, tk.seen, from, to)
			}
		}
	}
	var now *redis.TimeCmd
	var keys *redis.StringSliceCmd
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		now = p.Time(ctx)
		keys = p.Keys(ctx, "t:*")
		return nil
	})
	require.NoError(t, err)
	check("KEYS t:*", keys.Val(), now.Val().UnixMilli(), now.Val().UnixMilli())

	from, err := c.Time(ctx).Result()
	require.NoError(t, err)
	var scanned []string
	for cursor := uint64(0); ; {
		var ks []string
		ks, cursor, err = c.Scan(ctx, cursor, "t:*", 5000).Result()
		require.NoError(t, err)
		scanned = append(scanned, ks...)
		if cursor == 0 {
			break
		}
	}
	to, err := c.Time(ctx).Result()
	require.NoError(t, err)
	check("SCAN MATCH t:*", scanned, from.UnixMilli(), to.UnixMilli())
}

// refreshTTL calls CL.THROTTLE or SL.THROTTLE once on each of the
// worker's limiter keys found gone: it must answer as on a new key.
func (w *worker) refreshTTL(t *testing.T, c *redis.Client) {
	ctx := context.Background()
	for k, tk := range w.ttl {
		if tk.seen.present || tk.refreshed || (tk.kind != "cl" && tk.kind != "sl") {
			continue
		}
		tk.refreshed = true
		args := []any{"SL.THROTTLE", k, 100, tk.count}
		want := []int64{0, 100, 99, -1, tk.count}
		if tk.kind == "cl" {
			args = []any{"CL.THROTTLE", k, 4, tk.count, crashCLPeriod}
			var err error
			want, err = c.Do(ctx, "CL.PEEK", fmt.Sprint("t:never:", w.id), 4, tk.count, crashCLPeriod).Int64Slice()
			require.NoError(t, err)
		}
		send := time.Now()
		reply, err := c.Do(ctx, args...).Result()
		ack := time.Now()
		require.NoError(t, err)
		got := make([]int64, 0, 5)
		for _, x := range reply.([]any) {
			got = append(got, x.(int64))
		}
		require.Equal(t, want, got, "%v on a key found gone after the restart must answer as on a new key", args)
		v := tk.throttled(tk.versions[0], reply, send, ack)
		v.acked = ack
		tk.versions = append(tk.versions, v)
	}
}
