package persist_test

// Crash tests: the real ratekv binary, kill -9 in the middle of a write
// load, restarted on the same directory, again and again.
//
// Eight clients each own their keys and issue acknowledged writes of every
// kind: SET with an absolute deadline, INCR, ZADD, and the three limiters
// (CL.THROTTLE, SL.THROTTLE, SW.THROTTLE, each set up so that it allows
// exactly `limit` calls during the test). A client stops at its first
// error, so at a kill at most one write per client is in flight: applied
// or not, it is "uncertain". After each restart:
//
//   - appendfsync always: every acknowledged write is there, with its value
//     and absolute deadline; nothing else but the uncertain one is;
//   - appendfsync everysec: the same for everything acknowledged more than
//     two seconds before the kill; newer writes may be missing.
//
// At the end every limiter key is drained: the calls it allowed over the
// whole test (acknowledged before the kills plus drained at the end) must
// not exceed its limit (everysec: plus what was acknowledged in the last
// two seconds before a kill), and must not fall short of it by more than
// the uncertain calls (a replay applying a record twice would).
//
// BGREWRITEAOF and BGSAVE are started in the middle of some cycles, so
// kills also land during rewrites.
//
// Each worker also writes short-lived keys of every kind, whose deadlines
// pass during the load, while the server is down (crashDowntime between
// the kill and the restart) or after the restart: see crash_expiry_test.go.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

const (
	crashWorkers = 8
	crashLimit   = 41 // calls each limiter key allows during the test
	crashLoss    = 2 * time.Second
	crashStrKeys = 40     // string keys per worker
	crashPreload = 100000 // static keys, so that captures take a while
)

// buildRatekv builds the server binary once per test binary.
var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "ratekv-crash-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ratekv")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/ratekv/ratekv").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// preloadStatic writes the keys static:0 … static:n-1, each holding its
// number, so that captures take a while.
func preloadStatic(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	for i := 0; i < n; i += 1000 {
		p := c.Pipeline()
		for j := i; j < min(i+1000, n); j++ {
			p.Set(context.Background(), fmt.Sprint("static:", j), j, 0)
		}
		_, err := p.Exec(context.Background())
		require.NoError(t, err)
	}
}

// process is one ratekv server process.
type process struct {
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	log  strings.Builder
	done chan struct{}
}

var readyRE = regexp.MustCompile(`ready to accept connections"? addr=(\S+)`)

func startServer(t *testing.T, bin, dir string, args ...string) *process {
	t.Helper()
	s := &process{done: make(chan struct{})}
	s.cmd = exec.Command(bin, append([]string{"--port", "0", "--dir", dir, "--save", "", "--shards", "16"}, args...)...)
	stderr, err := s.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	addr := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if m := readyRE.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case s.addr = <-addr:
	case <-s.done:
		s.cmd.Wait()
		t.Fatalf("ratekv exited before it was ready:\n%s", s.output())
	case <-time.After(20 * time.Second):
		s.kill()
		t.Fatalf("ratekv not ready after 20 s:\n%s", s.output())
	}
	t.Cleanup(s.kill)
	return s
}

func (s *process) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// kill sends SIGKILL and waits for the process.
func (s *process) kill() {
	if s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	<-s.done
}

func (s *process) client() *redis.Client {
	// DialerRetries 1: a client that finds its connection dead after the
	// kill fails at once, instead of dialing a dead port five times.
	return redis.NewClient(&redis.Options{Addr: s.addr, Protocol: 2, MaxRetries: -1, PoolSize: 1, DialerRetries: 1,
		DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
}

// version is one acknowledged (or uncertain) write of a string key.
type version struct {
	value string
	at    int64 // PXAT
	acked time.Time
}

type counter struct {
	acked     int64
	history   []version // value as strconv of the counter, for the loss window
	uncertain bool
}

type limiter struct {
	cmd       []any       // the call, without quantity
	allowed   []time.Time // acknowledged allowed calls
	uncertain int
}

// worker is one client's keys and what the server acknowledged.
type worker struct {
	id        int
	strs      map[string][]version
	uncStr    map[string]version
	ctr       counter
	zctr      counter              // ZINCRBY z:<id> 1 ctr: a verbatim, non-idempotent record
	zset      map[string]time.Time // member (score = its number) → ack time
	uncMember string
	limiters  map[string]*limiter
	ttl       map[string]*ttlKey // short-lived keys (crash_expiry_test.go)
	nextTTL   time.Time          // when run writes the next one
	ops       int                // writes acknowledged in this cycle
}

func newWorker(id int) *worker {
	return &worker{id: id, strs: map[string][]version{}, uncStr: map[string]version{}, zset: map[string]time.Time{}, limiters: map[string]*limiter{}, ttl: map[string]*ttlKey{}}
}

// newWorkers returns crashWorkers workers and their write sequences, each
// starting in its own billion.
func newWorkers() ([]*worker, []int64) {
	workers := make([]*worker, crashWorkers)
	seqs := make([]int64, crashWorkers)
	for i := range workers {
		workers[i] = newWorker(i)
		seqs[i] = int64(i) * 1_000_000_000
	}
	return workers, seqs
}

// startWorkers runs every worker on a client of its own until stopAt;
// the returned group ends once all have.
func startWorkers(srv *process, workers []*worker, seqs []int64, seed uint64, cycle int, baseMs int64, stopAt time.Time, hasZadd, hasSL bool) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i, w := range workers {
		c := srv.client()
		wr := rand.New(rand.NewPCG(seed, uint64(cycle*100+i)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			w.run(c, wr, &seqs[i], baseMs, stopAt, hasZadd, hasSL)
		}()
	}
	return &wg
}

// addLimiters adds this cycle's limiter keys.
func (w *worker) addLimiters(cycle int, hasSL bool) {
	k := fmt.Sprintf("cl:%d:%d", w.id, cycle)
	w.limiters[k] = &limiter{cmd: []any{"CL.THROTTLE", k, crashLimit - 1, 1, 3600}}
	if hasSL {
		k = fmt.Sprintf("sl:%d:%d", w.id, cycle)
		w.limiters[k] = &limiter{cmd: []any{"SL.THROTTLE", k, crashLimit, 3_600_000}}
		k = fmt.Sprintf("sw:%d:%d", w.id, cycle)
		w.limiters[k] = &limiter{cmd: []any{"SW.THROTTLE", k, crashLimit, int64(1) << 40}}
	}
}

// run writes until the first error (the kill), planned at killAt.
func (w *worker) run(c *redis.Client, r *rand.Rand, seq *int64, baseMs int64, killAt time.Time, hasZadd, hasSL bool) {
	ctx := context.Background()
	lim := make([]string, 0, len(w.limiters))
	for k := range w.limiters {
		lim = append(lim, k)
	}
	for ; ; w.ops++ {
		*seq++
		n := *seq
		if now := time.Now(); now.After(w.nextTTL) {
			w.nextTTL = now.Add(crashTTLEvery)
			if !w.ttlOp(c, r, n, killAt, hasZadd, hasSL) {
				return
			}
			continue
		}
		op := r.IntN(100)
		switch {
		case op < 35:
			k := fmt.Sprintf("s:%d:%d", w.id, r.IntN(crashStrKeys))
			v := version{value: fmt.Sprintf("v%d", n), at: baseMs + 3_600_000 + n%1_000_000_000}
			if err := c.Do(ctx, "SET", k, v.value, "PXAT", v.at).Err(); err != nil {
				w.uncStr[k] = v
				return
			}
			v.acked = time.Now()
			w.strs[k] = append(w.strs[k], v)
		case op < 50:
			v, err := c.Incr(ctx, fmt.Sprint("c:", w.id)).Result()
			if err != nil {
				w.ctr.uncertain = true
				return
			}
			w.ctr.acked = v
			w.ctr.history = append(w.ctr.history, version{value: strconv.FormatInt(v, 10), acked: time.Now()})
		case op < 55 && hasZadd:
			v, err := c.ZIncrBy(ctx, fmt.Sprint("z:", w.id), 1, "ctr").Result()
			if err != nil {
				w.zctr.uncertain = true
				return
			}
			w.zctr.acked = int64(v)
			w.zctr.history = append(w.zctr.history, version{value: strconv.FormatInt(int64(v), 10), acked: time.Now()})
		case op < 65 && hasZadd:
			m := strconv.FormatInt(n, 10)
			if err := c.ZAdd(ctx, fmt.Sprint("z:", w.id), redis.Z{Score: float64(n), Member: m}).Err(); err != nil {
				w.uncMember = m
				return
			}
			w.zset[m] = time.Now()
		default:
			k := lim[r.IntN(len(lim))]
			l := w.limiters[k]
			res, err := c.Do(ctx, l.cmd...).Int64Slice()
			if err != nil {
				l.uncertain++
				return
			}
			if res[0] == 0 {
				l.allowed = append(l.allowed, time.Now())
			}
		}
	}
}

// check compares the restarted server with what was acknowledged before
// the kill at killed, then adopts what it found as the new baseline.
func (w *worker) check(t *testing.T, c *redis.Client, killed time.Time, strict bool) {
	ctx := context.Background()
	safe := killed.Add(-crashLoss) // everysec: acked before this must be there
	if strict {
		safe = killed
	}
	for k, vs := range w.strs {
		val, err := c.Get(ctx, k).Result()
		got := version{value: val}
		if errors.Is(err, redis.Nil) {
			got.value = "<missing>"
		} else {
			require.NoError(t, err)
			got.at = c.PExpireTime(ctx, k).Val().Milliseconds()
		}
		// The oldest version the key may hold: the last acknowledged before
		// safe; anything acknowledged later, or the uncertain write, also.
		first := -1
		for i, v := range vs {
			if !v.acked.After(safe) {
				first = i
			}
		}
		ok := first == -1 && got.value == "<missing>"
		for _, v := range vs[max(first, 0):] {
			ok = ok || (v.value == got.value && v.at == got.at)
		}
		if u, has := w.uncStr[k]; has {
			ok = ok || (u.value == got.value && u.at == got.at)
		}
		require.True(t, ok, "key %s holds %q PXAT %d; acknowledged (last 3) %v (uncertain %v), kill at %v",
			k, got.value, got.at, vs[max(len(vs)-3, 0):], w.uncStr[k], killed.Format(time.StampMilli))
		w.strs[k] = []version{got}
	}
	for k, u := range w.uncStr { // written only by the uncertain SET
		if _, seen := w.strs[k]; !seen {
			val, err := c.Get(ctx, k).Result()
			if err == nil {
				require.Equal(t, u.value, val, "key %s", k)
				w.strs[k] = []version{{value: val, at: u.at}}
			}
		}
	}
	clear(w.uncStr)

	v, err := c.Get(ctx, fmt.Sprint("c:", w.id)).Int64()
	if errors.Is(err, redis.Nil) {
		v, err = 0, nil
	}
	require.NoError(t, err)
	checkCounter(t, fmt.Sprint("c:", w.id), &w.ctr, v, safe)
	zv, err := c.ZScore(ctx, fmt.Sprint("z:", w.id), "ctr").Result()
	if errors.Is(err, redis.Nil) {
		zv, err = 0, nil
	}
	require.NoError(t, err)
	checkCounter(t, fmt.Sprintf("ZSCORE z:%d ctr", w.id), &w.zctr, int64(zv), safe)

	if len(w.zset) > 0 || w.uncMember != "" {
		zs, err := c.ZRangeWithScores(ctx, fmt.Sprint("z:", w.id), 0, -1).Result()
		require.NoError(t, err)
		have := map[string]bool{}
		for _, z := range zs {
			m := z.Member.(string)
			if m == "ctr" {
				continue
			}
			require.Equal(t, m, strconv.FormatFloat(z.Score, 'f', -1, 64), "score of member %s", m)
			_, acked := w.zset[m]
			require.True(t, acked || m == w.uncMember, "member %s was never written", m)
			have[m] = true
		}
		for m, at := range w.zset {
			if !at.After(safe) {
				require.True(t, have[m], "acknowledged member %s of z:%d is missing", m, w.id)
			}
		}
		w.zset = map[string]time.Time{}
		for m := range have {
			w.zset[m] = time.Time{}
		}
		w.uncMember = ""
	}
}

// checkCounter checks a counter's value v after a restart: at least what
// was acknowledged before safe, at most the last acknowledged value (plus
// one uncertain increment). It adopts v.
func checkCounter(t *testing.T, name string, c *counter, v int64, safe time.Time) {
	low := int64(0)
	for _, h := range c.history {
		if !h.acked.After(safe) {
			low, _ = strconv.ParseInt(h.value, 10, 64)
		}
	}
	high := c.acked
	if c.uncertain {
		high++
	}
	require.True(t, v >= low && v <= high, "%s is %d, want %d..%d", name, v, low, high)
	*c = counter{acked: v}
}

// drain calls every limiter until it refuses and checks the totals.
func (w *worker) drain(t *testing.T, c *redis.Client, kills []time.Time, strict bool) {
	ctx := context.Background()
	for k, l := range w.limiters {
		drained := 0
		for i := 0; i < crashLimit+5; i++ {
			res, err := c.Do(ctx, l.cmd...).Int64Slice()
			require.NoError(t, err)
			if res[0] != 0 {
				break
			}
			drained++
		}
		lost := 0 // everysec: acknowledged in the last seconds before a kill
		if !strict {
			for _, a := range l.allowed {
				for _, kt := range kills {
					if a.Before(kt) && a.After(kt.Add(-crashLoss)) {
						lost++
						break
					}
				}
			}
		}
		total := len(l.allowed) + drained
		require.LessOrEqual(t, total, crashLimit+lost,
			"%s allowed %d calls before kills and %d after: more than its limit %d (%d may be lost)", k, len(l.allowed), drained, crashLimit, lost)
		require.GreaterOrEqual(t, total, crashLimit-l.uncertain,
			"%s allowed %d calls before kills and %d after: %d uncertain cannot explain the shortfall from %d", k, len(l.allowed), drained, l.uncertain, crashLimit)
	}
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a ratekv process")
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	for _, tc := range []struct {
		policy string
		cycles int
		load   time.Duration
	}{
		{"always", 5, 1200 * time.Millisecond},
		{"everysec", 3, 3500 * time.Millisecond},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			crashCycles(t, bin, tc.policy, tc.cycles, tc.load)
		})
	}
}

func crashCycles(t *testing.T, bin, policy string, cycles int, load time.Duration) {
	dir := t.TempDir()
	strict := policy == "always"
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	srv := startServer(t, bin, dir, "--appendfsync", policy)
	probe := srv.client()
	preloadStatic(t, probe, crashPreload)
	hasZadd := commandExists(probe, "zadd")
	hasSL := commandExists(probe, "sl.throttle") && commandExists(probe, "sw.throttle")
	probe.Close()
	if !hasZadd || !hasSL {
		t.Logf("not covered (command missing): zadd=%v sl/sw.throttle=%v", hasZadd, hasSL)
	}
	workers, seqs := newWorkers()
	baseMs := time.Now().UnixMilli()
	var kills []time.Time
	cov := ttlCoverage{}
	defer func() {
		if t.Failed() {
			t.Logf("last server log:\n%s", srv.output())
		}
	}()
	for cycle := 0; cycle < cycles; cycle++ {
		killAt := time.Now().Add(load)
		for _, w := range workers {
			w.addLimiters(cycle, hasSL)
		}
		wg := startWorkers(srv, workers, seqs, seed, cycle, baseMs, killAt, hasZadd, hasSL)
		// A rewrite or a snapshot in the middle of the load, in some cycles.
		admin := srv.client()
		go func(cycle int, after time.Duration) {
			time.Sleep(after)
			switch cycle % 3 {
			case 1:
				admin.Do(context.Background(), "BGREWRITEAOF")
			case 2:
				admin.Do(context.Background(), "BGSAVE")
				admin.Do(context.Background(), "BGREWRITEAOF")
			}
			admin.Close()
		}(cycle, time.Duration(r.Int64N(int64(load))))
		time.Sleep(load)
		killed := time.Now()
		srv.kill()
		kills = append(kills, killed)
		wg.Wait()

		acked := 0
		for _, w := range workers {
			acked += w.ops
			w.ops = 0
		}
		rewritten := strings.Count(srv.output(), "append-only file rewritten")
		time.Sleep(crashDowntime) // deadlines pass while the server is down
		restarted := time.Now()
		srv = startServer(t, bin, dir, "--appendfsync", policy)
		c := srv.client()
		dbsize, atStart := keyspaceAtStart(t, c)
		for _, w := range workers {
			w.check(t, c, killed, strict)
		}
		checkShortLived(t, c, workers, killed, restarted, strict, dbsize, atStart, cov)
		for _, j := range []int{0, r.IntN(crashPreload), crashPreload - 1} {
			require.Equal(t, strconv.Itoa(j), c.Get(context.Background(), fmt.Sprint("static:", j)).Val())
		}
		require.Equal(t, int64(crashPreload), int64(len(c.Keys(context.Background(), "static:*").Val())))
		c.Close()
		short := 0
		for _, w := range workers {
			short += len(w.ttl)
		}
		t.Logf("cycle %d: %d acknowledged commands checked after kill -9 and restart; %d rewrites finished before the kill; %d short-lived keys",
			cycle, acked, rewritten, short)
	}
	var covered []string
	for _, kind := range slices.Sorted(maps.Keys(cov)) {
		n := cov[kind]
		covered = append(covered, fmt.Sprintf("%s %d/%d", kind, n[0], n[1]))
		require.True(t, n[0] > 0 && n[1] > 0, "short-lived %s keys: %d had a deadline pass while the server was down, %d were found ahead of it; both must happen", kind, n[0], n[1])
	}
	t.Logf("short-lived keys with a deadline that passed while the server was down / found ahead of it: %s", strings.Join(covered, ", "))
	c := srv.client()
	defer c.Close()
	for _, w := range workers {
		w.drain(t, c, kills, strict)
	}
	// A clean shutdown flushes the log: nothing is lost, not even with
	// everysec.
	require.NoError(t, c.Set(context.Background(), "last", "1", 0).Err())
	c.Do(context.Background(), "SHUTDOWN")
	select {
	case <-srv.done:
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SHUTDOWN")
	}
	srv.cmd.Wait()
	require.Contains(t, srv.output(), "append-only file flushed and fsynced")
	srv = startServer(t, bin, dir, "--appendfsync", policy)
	c2 := srv.client()
	defer c2.Close()
	require.Equal(t, "1", c2.Get(context.Background(), "last").Val())
}

func commandExists(c *redis.Client, name string) bool {
	res, err := c.Do(context.Background(), "COMMAND", "INFO", name).Slice()
	return err == nil && len(res) == 1 && res[0] != nil
}

// TestCrashStartupDamage: a torn tail is cut and the server starts; a
// corrupt record in the middle refuses to start with a message naming the
// file, the offset and the flag, which then lets it start.
func TestCrashStartupDamage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a ratekv process")
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	dir := t.TempDir()
	srv := startServer(t, bin, dir, "--appendfsync", "always")
	c := srv.client()
	for i := 0; i < 10; i++ {
		require.NoError(t, c.Set(context.Background(), fmt.Sprint("k", i), strings.Repeat("v", 100), 0).Err())
	}
	c.Close()
	srv.kill()
	incr, err := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof"))
	require.NoError(t, err)
	require.Len(t, incr, 1)
	raw, err := os.ReadFile(incr[0])
	require.NoError(t, err)
	data := bytes.TrimRight(raw, "\x00")
	require.Greater(t, len(raw), len(data), "under always the records are followed by zeros written ahead")
	recLen := len(data) / 10

	// Torn tail: half of the last record, the rest still zeros.
	require.NoError(t, os.WriteFile(incr[0], append(data[:len(data)-recLen/2], make([]byte, 4096)...), 0o644))
	srv = startServer(t, bin, dir)
	require.Contains(t, srv.output(), "incomplete record")
	c = srv.client()
	require.Equal(t, int64(9), c.DBSize(context.Background()).Val())
	c.Close()
	srv.kill()

	// Corruption in the middle.
	data, err = os.ReadFile(incr[0])
	require.NoError(t, err)
	data[3*recLen] = '#'
	require.NoError(t, os.WriteFile(incr[0], data, 0o644))
	cmd := exec.Command(bin, "--port", "0", "--dir", dir)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "must refuse to start:\n%s", out)
	require.Contains(t, string(out), incr[0])
	require.Contains(t, string(out), fmt.Sprintf("offset %d", 3*recLen))
	require.Contains(t, string(out), "--aof-load-corrupt truncate")

	srv = startServer(t, bin, dir, "--aof-load-corrupt", "truncate")
	c = srv.client()
	defer c.Close()
	require.Equal(t, int64(3), c.DBSize(context.Background()).Val())
}
