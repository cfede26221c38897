package main

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	us1 = time.Microsecond
	ms1 = time.Millisecond
)

func TestNewSchedule(t *testing.T) {
	for i, tc := range []struct {
		rate                  float64
		conns, pipeline, id   int
		wantPhase, wantPeriod time.Duration
	}{
		0:  {50000, 50, 1, 0, 0, ms1},          // 1000/s per connection
		1:  {50000, 50, 1, 1, 20 * us1, ms1},   // staggered by interval/conns
		2:  {50000, 50, 1, 49, 980 * us1, ms1}, // the last one just before the next round
		3:  {50000, 50, 10, 0, 0, 10 * ms1},    // -pipeline: the schedule is per batch
		4:  {1000, 1, 1, 0, 0, ms1},            // one connection
		5:  {3, 1, 1, 0, 0, 333333333},         // rounded to the nanosecond
		6:  {3, 2, 1, 1, 333333333, 666666667}, // phase and interval rounded separately
		7:  {1e9, 1, 1, 0, 0, 1},               // the fastest: one per nanosecond
		8:  {1e9, 4, 1, 3, 3, 4},               // 1e9/s over 4 connections
		9:  {2.5e9, 1, 1, 0, 0, 1},             // never 0: at least one nanosecond apart
		10: {100, 3, 1, 2, 20 * ms1, 30 * ms1},
	} {
		s := newSchedule(tc.rate, tc.conns, tc.pipeline, tc.id)
		if s.phase != tc.wantPhase || s.interval != tc.wantPeriod {
			t.Errorf("%d: newSchedule(%g, %d, %d, %d) = phase %v interval %v, want %v %v",
				i, tc.rate, tc.conns, tc.pipeline, tc.id, s.phase, s.interval, tc.wantPhase, tc.wantPeriod)
		}
	}
}

// TestScheduleOffersTheRate: all connections together are due rate
// requests per second, give or take one batch per connection.
func TestScheduleOffersTheRate(t *testing.T) {
	for i, tc := range []struct {
		rate            float64
		conns, pipeline int
		window          time.Duration
	}{
		0: {50000, 50, 1, 10 * time.Second},
		1: {50000, 50, 8, 10 * time.Second},
		2: {1234, 7, 1, 3 * time.Second},
		3: {10, 50, 1, time.Second}, // fewer requests than connections
	} {
		var n int64
		for id := 0; id < tc.conns; id++ {
			n += newSchedule(tc.rate, tc.conns, tc.pipeline, id).count(0, time.Second, time.Second+tc.window) * int64(tc.pipeline)
		}
		want := tc.rate * tc.window.Seconds()
		if slack := float64(tc.conns * tc.pipeline); float64(n) < want-slack || float64(n) > want+slack {
			t.Errorf("%d: %d requests due in %v, want %g ± %g", i, n, tc.window, want, slack)
		}
	}
}

func TestScheduleFirstAndCount(t *testing.T) {
	s := schedule{phase: 3 * ms1, interval: 10 * ms1} // due at 3, 13, 23, 33, ... ms
	for i, tc := range []struct {
		t         time.Duration
		wantFirst int64
	}{
		0: {0, 0},
		1: {3 * ms1, 0},
		2: {3*ms1 + 1, 1},
		3: {13 * ms1, 1},
		4: {13*ms1 + 1, 2},
		5: {12 * ms1, 1},
		6: {-time.Second, 0},
		7: {1003 * ms1, 100},
	} {
		if have := s.first(tc.t); have != tc.wantFirst {
			t.Errorf("first %d: first(%v): have %d, want %d", i, tc.t, have, tc.wantFirst)
		}
		if k := s.first(tc.t); s.at(k) < tc.t || (k > 0 && s.at(k-1) >= tc.t) {
			t.Errorf("first %d: batch %d at %v is not the first due at or after %v", i, k, s.at(k), tc.t)
		}
	}
	for i, tc := range []struct {
		k      int64
		lo, hi time.Duration
		want   int64
	}{
		0: {0, 0, 100 * ms1, 10},                  // 3 .. 93
		1: {0, 3 * ms1, 93 * ms1, 9},              // [lo, hi): 3 in, 93 out
		2: {0, 3*ms1 + 1, 93*ms1 + 1, 9},          // 13 .. 93
		3: {5, 0, 100 * ms1, 5},                   // from batch 5 (53 ms) on
		4: {0, 50 * ms1, 50 * ms1, 0},             // empty window
		5: {0, 60 * ms1, 40 * ms1, 0},             // inverted window
		6: {20, 0, 100 * ms1, 0},                  // all already sent
		7: {2, 10 * ms1, 30 * ms1, 1},             // 13 is before k=2 (23): only 23
		8: {0, time.Second, 2 * time.Second, 100}, // a second: 100 batches
	} {
		if have := s.count(tc.k, tc.lo, tc.hi); have != tc.want {
			t.Errorf("count %d: count(%d, %v, %v): have %d, want %d", i, tc.k, tc.lo, tc.hi, have, tc.want)
		}
	}
}

func TestLatencyAndSendLag(t *testing.T) {
	for i, tc := range []struct {
		due, sent, done, prevDone time.Duration
		wantLatency, wantLag      time.Duration
	}{
		// Idle connection, sent on time: the round trip.
		0: {100 * us1, 100 * us1, 130 * us1, 50 * us1, 30 * us1, 0},
		// Idle connection, the client's timer woke 900 us late: not the
		// server's fault, it is the send lag.
		1: {100 * us1, 1000 * us1, 1030 * us1, 50 * us1, 30 * us1, 900 * us1},
		// Busy connection: the previous answer came 5 ms after this was
		// due; the wait counts (no coordinated omission).
		2: {100 * us1, 5100 * us1, 5130 * us1, 5100 * us1, 5030 * us1, 0},
		// Busy, and the client then took 20 us to write: counted from due.
		3: {100 * us1, 5120 * us1, 5150 * us1, 5100 * us1, 5050 * us1, 20 * us1},
		// Previous answer exactly at the due time: idle.
		4: {100 * us1, 100 * us1, 140 * us1, 100 * us1, 40 * us1, 0},
		// The very first batch (prevDone 0, due 0).
		5: {0, 10 * us1, 50 * us1, 0, 40 * us1, 10 * us1},
		// A server stalled for a second.
		6: {ms1, ms1, time.Second + ms1, 0, time.Second, 0},
		// Clock oddities never give a negative latency.
		7: {100 * us1, 120 * us1, 110 * us1, 0, 0, 20 * us1},
	} {
		if have := latency(tc.due, tc.sent, tc.done, tc.prevDone); have != tc.wantLatency {
			t.Errorf("%d: latency: have %v, want %v", i, have, tc.wantLatency)
		}
		if have := sendLag(tc.due, tc.sent, tc.prevDone); have != tc.wantLag {
			t.Errorf("%d: sendLag: have %v, want %v", i, have, tc.wantLag)
		}
	}
}

func TestAchievedRateAndKeptUp(t *testing.T) {
	for i, tc := range []struct {
		answered     uint64
		window, last time.Duration
		offered      float64
		unanswered   uint64
		wantRate     float64
		wantKeptUp   bool
	}{
		0: {500000, 10 * time.Second, 10*time.Second - ms1, 50000, 0, 50000, true},
		1: {500000, 10 * time.Second, 10*time.Second + 30*us1, 50000, 0, 500000 / 10.00003, true},
		// The backlog was answered in the drain, a second late.
		2: {500000, 10 * time.Second, 11 * time.Second, 50000, 0, 500000 / 11.0, false},
		// Unanswered requests: not kept up whatever the rate.
		3: {499999, 10 * time.Second, 10 * time.Second, 50000, 1, 49999.9, false},
		4: {495000, 10 * time.Second, 10 * time.Second, 50000, 0, 49500, true}, // exactly 99 %
		5: {494999, 10 * time.Second, 10 * time.Second, 50000, 0, 49499.9, false},
		6: {0, 0, 0, 100, 0, 0, false},
	} {
		have := achievedRate(tc.answered, tc.window, tc.last)
		if d := have - tc.wantRate; d > 1e-6 || d < -1e-6 {
			t.Errorf("%d: achievedRate: have %v, want %v", i, have, tc.wantRate)
		}
		if k := keptUp(tc.offered, have, tc.unanswered); k != tc.wantKeptUp {
			t.Errorf("%d: keptUp(%g, %g, %d): have %v, want %v", i, tc.offered, have, tc.unanswered, k, tc.wantKeptUp)
		}
	}
}

// rateRun runs workRate on one connection against a fake server and
// returns what it recorded and how long it took.
func rateRun(t *testing.T, cfg *config, serve func(net.Conn)) (*result, time.Duration) {
	t.Helper()
	cli, srv := net.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		serve(srv)
	}()
	res := new(result)
	base := time.Now()
	c := &client{conn: cli, buf: make([]byte, 64)}
	workRate(c, workloads["ping"], cfg, 0, base, res)
	took := time.Since(base)
	cli.Close()
	srv.Close()
	wg.Wait()
	return res, took
}

func rateConfig(rate float64, warmup, duration, drain time.Duration) *config {
	return &config{conns: 1, pipeline: 1, keys: 10, dist: "uniform", seed: 1, rate: rate,
		warmup: warmup, duration: duration, drain: drain}
}

// TestWorkRateKeepsUp: an answering server gets exactly the batches due
// in the window recorded (the warm-up's are sent, not recorded).
func TestWorkRateKeepsUp(t *testing.T) {
	cfg := rateConfig(1000, 20*ms1, 100*ms1, 2*time.Second)
	var served int
	res, _ := rateRun(t, cfg, func(c net.Conn) { served = fakeServer(c, func(int) string { return "+PONG\r\n" }) })
	if res.ioErr != nil {
		t.Fatalf("io error %v", res.ioErr)
	}
	if res.ops != 100 || res.hist.total != 100 || res.dueHist.total != 100 || res.lag.total != 100 {
		t.Errorf("ops %d, histograms %d %d %d: want the 100 due in the window",
			res.ops, res.hist.total, res.dueHist.total, res.lag.total)
	}
	if served != 120 {
		t.Errorf("server answered %d, want 120 (20 warm-up, 100 measured)", served)
	}
	if res.unanswered != 0 || res.errors != 0 {
		t.Errorf("unanswered %d, errors %d, want 0", res.unanswered, res.errors)
	}
	if res.dueHist.max < res.hist.max {
		t.Errorf("from-due max %v below the recorded max %v", res.dueHist.max, res.hist.max)
	}
}

// TestWorkRateStallShows: a server that stalls once for 30 ms. A closed
// loop would record one slow request per connection; the open loop records
// every request due during the stall with the wait it had.
func TestWorkRateStallShows(t *testing.T) {
	cfg := rateConfig(1000, 0, 100*ms1, 2*time.Second)
	const stall = 30 * ms1
	res, _ := rateRun(t, cfg, func(c net.Conn) {
		fakeServer(c, func(i int) string {
			if i == 20 {
				time.Sleep(stall)
			}
			return "+PONG\r\n"
		})
	})
	if res.ioErr != nil || res.unanswered != 0 {
		t.Fatalf("io error %v, unanswered %d", res.ioErr, res.unanswered)
	}
	if res.ops != 100 {
		t.Errorf("ops %d, want 100", res.ops)
	}
	// Requests due at 20, 21, ... 49 ms waited for the one answered at
	// 50 ms: at least 25 of them waited 5 ms or more.
	var slow uint64
	for i, c := range res.hist.counts {
		if lo, _ := bucketRange(i); lo >= uint64(5*ms1) {
			slow += c
		}
	}
	if slow < 25 {
		t.Errorf("%d requests recorded at >= 5 ms, want >= 25 (coordinated omission?)", slow)
	}
	if res.hist.max < uint64(stall) {
		t.Errorf("max %v, want >= the stall %v", time.Duration(res.hist.max), stall)
	}
	if len(res.secMax) != 1 || res.secMax[0] < uint64(stall) {
		t.Errorf("timeline %v, want one second with the stall", res.secMax)
	}
}

// TestWorkRateDeadServer: a server that never answers. The run ends at the
// drain's end, and every request due in the window is recorded as
// unanswered with the wait it had by then.
func TestWorkRateDeadServer(t *testing.T) {
	cfg := rateConfig(1000, 10*ms1, 50*ms1, 50*ms1)
	res, took := rateRun(t, cfg, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	if res.ioErr != nil {
		t.Fatalf("io error %v: a timeout at the cutoff is not a connection error", res.ioErr)
	}
	if took < 110*ms1 || took > 2*time.Second {
		t.Errorf("took %v, want the 110 ms of warm-up, window and drain (and not much more)", took)
	}
	if res.ops != 0 || res.unanswered != 50 || res.hist.total != 50 || res.dueHist.total != 50 {
		t.Errorf("ops %d unanswered %d histograms %d %d: want 0, 50, 50, 50",
			res.ops, res.unanswered, res.hist.total, res.dueHist.total)
	}
	// Due at 10..59 ms, cut off at 110 ms: waited 51..100 ms.
	if lo, hi := res.hist.min, res.hist.max; lo != uint64(51*ms1) || hi != uint64(100*ms1) {
		t.Errorf("waits %v .. %v, want 51ms .. 100ms", time.Duration(lo), time.Duration(hi))
	}
	if len(res.secMax) != 1 || res.secMax[0] != uint64(100*ms1) {
		t.Errorf("timeline %v, want [100ms]", res.secMax)
	}
}

func TestRateAndFillTTLFlagsRejected(t *testing.T) {
	for i, tc := range []struct {
		args []string
		want string // in stderr
	}{
		0: {[]string{"-rate", "-1"}, "-rate must be"},
		1: {[]string{"-rate", "2e9"}, "-rate must be"},
		2: {[]string{"-rate", "NaN"}, "-rate must be"},
		3: {[]string{"-rate", "100", "-drain", "-1s"}, "-drain must be"},
		4: {[]string{"-fill", "zset", "-fill-ttl", "5s"}, "-fill-ttl needs"},
		5: {[]string{"-fill", "gcra_cell", "-fill-ttl", "-5s"}, "-fill-ttl needs"},
	} {
		var stdout, stderr strings.Builder
		// An address nothing listens on: a flag that passed would fail later
		// with exit status 1, not 2.
		code := run(append([]string{"-addr", "127.0.0.1:1"}, tc.args...), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%d: %q: exit %d, stderr %q; want 2 and %q", i, tc.args, code, stderr.String(), tc.want)
		}
	}
}

func TestSecondMax(t *testing.T) {
	var r result
	for _, n := range []struct{ at, lat time.Duration }{
		{0, 30 * us1}, {999 * ms1, 50 * us1}, {time.Second, 20 * us1}, {3500 * ms1, 7 * ms1}, {200 * ms1, 40 * us1},
	} {
		r.noteSecondMax(n.at, n.lat)
	}
	want := []uint64{uint64(50 * us1), uint64(20 * us1), 0, uint64(7 * ms1)}
	if len(r.secMax) != len(want) {
		t.Fatalf("timeline %v, want %v", r.secMax, want)
	}
	for i := range want {
		if r.secMax[i] != want[i] {
			t.Errorf("second %d: have %d, want %d", i, r.secMax[i], want[i])
		}
	}
	for i, tc := range []struct{ a, b, want []uint64 }{
		0: {nil, nil, nil},
		1: {nil, []uint64{1, 2}, []uint64{1, 2}},
		2: {[]uint64{5, 1, 9}, []uint64{1, 2}, []uint64{5, 2, 9}},
		3: {[]uint64{5}, []uint64{1, 2, 3}, []uint64{5, 2, 3}},
	} {
		have := mergeSecondMax(append([]uint64(nil), tc.a...), tc.b)
		if len(have) != len(tc.want) {
			t.Errorf("%d: have %v, want %v", i, have, tc.want)
			continue
		}
		for j := range have {
			if have[j] != tc.want[j] {
				t.Errorf("%d: have %v, want %v", i, have, tc.want)
				break
			}
		}
	}
}
