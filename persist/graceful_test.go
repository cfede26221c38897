package persist_test

// Graceful shutdown under load: the real ratekv binary is stopped by
// SIGTERM, SIGINT or a SHUTDOWN from another client while eight clients
// write (the crash test's workers: SET with PXAT, INCR, ZADD, ZINCRBY,
// CL.THROTTLE, SL.THROTTLE, SW.THROTTLE and short-lived keys), then
// restarted on the same directory. Unlike a kill -9, a graceful stop loses
// nothing under any appendfsync policy, nor with the snapshot alone
// (appendonly no): the process exits 0 by itself, and after the restart
// every acknowledged write is there with its value and absolute deadline
// (only the one in-flight write per client may be either way), and every
// limiter, drained after the restart, allows exactly the calls it would
// have allowed without the restart (less the one in flight).
//
// The cases cover appendfsync always, everysec and no, the event loops and
// a goroutine per connection, save rules (a final snapshot besides the
// log) and appendonly no (the final snapshot alone). Some cycles stop
// right after a BGREWRITEAOF or a BGSAVE started (100k keys preloaded so
// that it takes a while): the exit must still be clean, the append-only
// directory hold only what its manifest names, and the restart load it
// without a warning.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

const (
	gracefulLoad    = 250 * time.Millisecond // writes before each stop
	gracefulExit    = 10 * time.Second       // bound from the stop to the exit
	gracefulPreload = 100000                 // static keys in the cycles with a job
)

// gracefulStop is one cycle: how the server is stopped, and the background
// job started right before (BGREWRITEAOF, BGSAVE or none).
type gracefulStop struct{ how, job string }

func TestGracefulShutdownUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and stops a ratekv process")
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	term, intr, shut := gracefulStop{how: "SIGTERM"}, gracefulStop{how: "SIGINT"}, gracefulStop{how: "SHUTDOWN"}
	with := func(s gracefulStop, job string) gracefulStop { s.job = job; return s }
	const rw, bg = "BGREWRITEAOF", "BGSAVE"
	jobs := map[string]*[2]int{rw: {}, bg: {}} // cycles with the job, and those that stopped while it ran
	for _, tc := range []struct {
		name    string
		args    []string
		preload bool
		stops   []gracefulStop
	}{
		{"always", []string{"--appendfsync", "always"}, false, []gracefulStop{term, shut, intr}},
		{"everysec", []string{"--appendfsync", "everysec"}, false, []gracefulStop{term, shut, intr}},
		{"no", []string{"--appendfsync", "no"}, false, []gracefulStop{term, shut, intr}},
		{"always-goroutines", []string{"--appendfsync", "always", "--event-loop", "no"}, false, []gracefulStop{term, shut}},
		{"everysec-goroutines", []string{"--appendfsync", "everysec", "--event-loop", "no"}, false, []gracefulStop{term, shut, intr}},
		{"no-goroutines", []string{"--appendfsync", "no", "--event-loop", "no"}, false, []gracefulStop{term, shut}},
		{"everysec-save", []string{"--appendfsync", "everysec", "--save", "3600 1"}, true,
			[]gracefulStop{term, with(shut, bg), with(term, rw)}},
		{"snapshot-only", []string{"--appendonly", "no", "--save", "3600 1"}, true,
			[]gracefulStop{term, with(shut, bg), with(intr, bg)}},
		{"snapshot-only-goroutines", []string{"--appendonly", "no", "--save", "3600 1", "--event-loop", "no"}, true,
			[]gracefulStop{shut, with(term, bg)}},
		{"everysec-jobs", []string{"--appendfsync", "everysec"}, true,
			[]gracefulStop{with(term, rw), with(shut, rw), with(term, bg)}},
		{"no-jobs", []string{"--appendfsync", "no"}, true, []gracefulStop{with(term, rw), with(intr, rw)}},
		{"always-jobs-goroutines", []string{"--appendfsync", "always", "--event-loop", "no"}, true,
			[]gracefulStop{with(term, rw), with(shut, bg)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gracefulCycles(t, bin, tc.args, tc.preload, tc.stops, jobs)
		})
	}
	// Four or five cycles of each stop right after the job started; a
	// BGSAVE or a rewrite of 100k keys lasts only milliseconds.
	for job, n := range jobs {
		require.True(t, t.Failed() || n[0] == 0 || n[1] > 0, "none of %d cycles stopped while a %s was running", n[0], job)
	}
}

// gracefulCycles runs the cycles of one case on a new directory. jobs
// counts, per job, the cycles that started it and those that stopped while
// it ran.
func gracefulCycles(t *testing.T, bin string, args []string, preload bool, stops []gracefulStop, jobs map[string]*[2]int) {
	ctx := context.Background()
	dir := t.TempDir()
	aof := !strings.Contains(strings.Join(args, " "), "--appendonly no")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	srv := startServer(t, bin, dir, args...)
	defer func() {
		if t.Failed() {
			t.Logf("last server log:\n%s", srv.output())
		}
	}()
	probe := srv.client()
	if preload {
		preloadStatic(t, probe, gracefulPreload)
	}
	hasZadd := commandExists(probe, "zadd")
	hasSL := commandExists(probe, "sl.throttle") && commandExists(probe, "sw.throttle")
	probe.Close()
	workers, seqs := newWorkers()
	baseMs := time.Now().UnixMilli()
	cov := ttlCoverage{}
	started := map[string]int{}
	for cycle, stop := range stops {
		stopAt := time.Now().Add(gracefulLoad)
		for _, w := range workers {
			gracefulLimiters(w, cycle, hasSL)
		}
		wg := startWorkers(srv, workers, seqs, seed, cycle, baseMs, stopAt, hasZadd, hasSL)
		time.Sleep(gracefulLoad)

		admin := srv.client()
		if stop.job != "" {
			res, err := admin.Do(ctx, stop.job).Text()
			require.NoError(t, err, stop.job)
			require.Contains(t, res, "started", stop.job)
			// The first job of a kind in a case is stopped at once, in
			// its capture; later ones a moment later, to land in its
			// other phases.
			jobs[stop.job][0]++
			if started[stop.job]++; started[stop.job] > 1 {
				time.Sleep(time.Duration(r.Int64N(int64(40 * time.Millisecond))))
			}
		}
		stopped := time.Now()
		switch stop.how {
		case "SIGTERM":
			require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
		case "SIGINT":
			require.NoError(t, srv.cmd.Process.Signal(syscall.SIGINT))
		case "SHUTDOWN":
			err := admin.Do(ctx, "SHUTDOWN").Err()
			var rerr redis.Error
			require.False(t, errors.As(err, &rerr), "SHUTDOWN answered %v", err)
			require.Error(t, err, "SHUTDOWN closes the connection without a reply")
		}
		select {
		case <-srv.done:
		case <-time.After(gracefulExit):
			t.Fatalf("ratekv did not exit within %v of %s", gracefulExit, stop.how)
		}
		srv.cmd.Wait()
		took := time.Since(stopped)
		admin.Close()
		wg.Wait()
		exited := time.Now() // every acknowledged write came before
		out := srv.output()
		require.Equal(t, 0, srv.cmd.ProcessState.ExitCode(), "exit code after %s", stop.how)
		require.Contains(t, out, "ratekv is now ready to exit")
		if aof {
			require.Contains(t, out, "append-only file flushed and fsynced")
		} else {
			require.Contains(t, out, "saving the final snapshot")
		}
		outcome := ""
		if stop.job != "" {
			outcome = jobOutcome(out, stop.job)
			if outcome != "it had finished before the stop" {
				jobs[stop.job][1]++
			}
			outcome = " (" + outcome + ")"
		}

		if aof {
			checkAOFDir(t, dir)
		}
		acked := 0
		for _, w := range workers {
			acked += w.ops
			w.ops = 0
		}
		restarted := time.Now()
		srv = startServer(t, bin, dir, args...)
		c := srv.client()
		dbsize, atStart := keyspaceAtStart(t, c)
		start := srv.output()
		for _, bad := range []string{"level=WARN", "level=ERROR", "incomplete record", "truncat"} {
			require.NotContains(t, start, bad, "the restart after a graceful %s", stop.how)
		}
		for _, w := range workers {
			w.check(t, c, exited, true)
		}
		checkShortLived(t, c, workers, exited, restarted, true, dbsize, atStart, cov)
		allowed, open := 0, 0
		for _, w := range workers {
			a, o := checkLimiters(t, c, w)
			allowed, open = allowed+a, open+o
		}
		if preload {
			for _, j := range []int{0, r.IntN(gracefulPreload), gracefulPreload - 1} {
				require.Equal(t, strconv.Itoa(j), c.Get(ctx, fmt.Sprint("static:", j)).Val())
			}
			require.Equal(t, int64(gracefulPreload), int64(len(c.Keys(ctx, "static:*").Val())))
		}
		c.Close()
		during := ""
		if stop.job != "" {
			during = " after " + stop.job
		}
		t.Logf("cycle %d: %s%s%s: exited 0 after %v; %d acknowledged commands, all there after the restart; %d limiter calls allowed, %d of %d limiter keys still allowing at the stop",
			cycle, stop.how, during, outcome, took.Round(time.Millisecond), acked, allowed, open, len(workers)*len(workers[0].limiters))
	}
}

// gracefulLimKeys is how many keys of each limiter kind a worker calls in
// one cycle: enough that most still allow calls when the server stops
// (some 700 limiter calls per worker and cycle under everysec).
const gracefulLimKeys = 12

// gracefulLimiters gives w this cycle's limiter keys, each allowing exactly
// crashLimit calls during the test (as the crash test's).
func gracefulLimiters(w *worker, cycle int, hasSL bool) {
	w.limiters = map[string]*limiter{}
	for j := range gracefulLimKeys {
		k := fmt.Sprintf("cl:%d:%d:%d", w.id, cycle, j)
		w.limiters[k] = &limiter{cmd: []any{"CL.THROTTLE", k, crashLimit - 1, 1, 3600}}
		if hasSL {
			k = fmt.Sprintf("sl:%d:%d:%d", w.id, cycle, j)
			w.limiters[k] = &limiter{cmd: []any{"SL.THROTTLE", k, crashLimit, 3_600_000}}
			k = fmt.Sprintf("sw:%d:%d:%d", w.id, cycle, j)
			w.limiters[k] = &limiter{cmd: []any{"SW.THROTTLE", k, crashLimit, int64(1) << 40}}
		}
	}
}

// checkLimiters drains this cycle's limiter keys of w after the restart
// (crashLimit+5 calls each, in one pipeline): the calls allowed before the
// stop and after the restart must add up to exactly crashLimit, less at
// most the one call that was in flight at the stop. More would mean the
// restart forgot allowed calls; fewer, that it replayed one twice. It
// returns the calls allowed before the stop and how many keys still
// allowed calls then.
func checkLimiters(t *testing.T, c *redis.Client, w *worker) (allowed, open int) {
	ctx := context.Background()
	cmds := map[string][]*redis.Cmd{}
	p := c.Pipeline()
	for k, l := range w.limiters {
		for range crashLimit + 5 {
			cmds[k] = append(cmds[k], p.Do(ctx, l.cmd...))
		}
	}
	_, err := p.Exec(ctx)
	require.NoError(t, err)
	for k, l := range w.limiters {
		drained := 0
		for _, cmd := range cmds[k] {
			res, err := cmd.Int64Slice()
			require.NoError(t, err)
			if res[0] == 0 {
				drained++
			}
		}
		total := len(l.allowed) + drained
		require.LessOrEqual(t, total, crashLimit,
			"%s allowed %d calls before the stop and %d after the restart: more than its limit %d", k, len(l.allowed), drained, crashLimit)
		require.GreaterOrEqual(t, total, crashLimit-l.uncertain,
			"%s allowed %d calls before the stop and %d after the restart: %d in flight cannot explain the shortfall from %d", k, len(l.allowed), drained, l.uncertain, crashLimit)
		allowed += len(l.allowed)
		if len(l.allowed) < crashLimit {
			open++
		}
	}
	return allowed, open
}

// jobOutcome tells from the server's log of one run what became of the
// job started before the shutdown.
func jobOutcome(out, job string) string {
	stop := min(idx(out, "received signal"), idx(out, "SHUTDOWN requested"))
	done, failed := "append-only file rewritten", "append-only file rewrite failed"
	if job == "BGSAVE" {
		done, failed = "snapshot saved", "background save failed"
	}
	switch {
	case idx(out, done) < stop || idx(out, failed) < stop:
		return "it had finished before the stop"
	case idx(out, failed) < len(out):
		return "the shutdown cancelled it"
	}
	return "it finished during the shutdown"
}

// idx is strings.Index with "not found" last.
func idx(s, sub string) int {
	if i := strings.Index(s, sub); i >= 0 {
		return i
	}
	return len(s)
}

// checkAOFDir checks, after a clean exit, that the append-only directory
// holds only files its manifest names, and that the incremental files end
// at their last record (the space allocated ahead is cut off at close).
func checkAOFDir(t *testing.T, dir string) {
	aofDir := filepath.Join(dir, "appendonlydir")
	man, err := os.ReadFile(filepath.Join(aofDir, "appendonly.aof.manifest"))
	require.NoError(t, err)
	ents, err := os.ReadDir(aofDir)
	require.NoError(t, err)
	for _, e := range ents {
		name := e.Name()
		if name == "appendonly.aof.manifest" {
			continue
		}
		require.Contains(t, string(man), "file "+name+" ", "%s is not named in the manifest:\n%s", name, man)
		if strings.HasSuffix(name, ".incr.aof") {
			data, err := os.ReadFile(filepath.Join(aofDir, name))
			require.NoError(t, err)
			require.False(t, len(data) > 0 && data[len(data)-1] == 0, "%s ends in zeros after a clean exit", name)
		}
	}
}
