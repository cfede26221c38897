// Command loadgen is ratekv's load generator: pipelined RESP over N
// connections against any Redis-protocol server, reporting throughput and
// latency percentiles.
//
// Each connection has one goroutine. It writes a batch of -pipeline requests
// in one write, then reads exactly -pipeline replies, and records the batch's
// latency once for each request in it. Latencies go to a per-connection
// log-linear histogram (no allocation per request); the histograms are
// merged at the end. Any error reply ('-' or RESP3 '!') counts as an error;
// the first few error texts are printed.
//
// That is a closed loop: the next batch leaves when the previous one is
// answered. With -rate N the load is an open loop instead: N requests/s on
// a fixed schedule, each request timed from when it was due, so a stalled
// server shows in the percentiles (rate.go).
//
// Usage:
//
//	loadgen -addr 127.0.0.1:6379 -workload set -conns 50 -pipeline 32 -duration 5s
//	loadgen -addr 127.0.0.1:6379 -workload throttle_cell -conns 50 -rate 50000 -duration 10s
//	loadgen -addr 127.0.0.1:7000 -cluster -workload throttle_cell -pipeline 32
//	loadgen -list
//
// Workloads are listed by -list and defined in workloads.go.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// config is the parsed command line plus what workload setup derives from
// it.
type config struct {
	addr     string
	workload string
	conns    int
	pipeline int
	duration time.Duration
	warmup   time.Duration
	keys     uint64
	dist     string
	zipfS    float64
	seed     uint64
	datasize int
	populate bool
	jsonOut  bool
	rate     float64       // -rate: offered requests/s over all connections; 0: closed loop
	drain    time.Duration // -rate: how long past the window a backlog may still be answered

	burst, count, period, quantity int64
	scriptPath                     string
	max, window                    int64         // sliding workloads: max per window, window in ms
	recipeRange                    bool          // zset_recipe: ZRANGE WITHSCORES instead of ZCARD
	cluster                        bool          // -cluster: spread over the primaries by slot (cluster.go)
	fillEntries                    uint64        // -fill: entries per key
	fillTTL                        time.Duration // -fill gcra_*: the keys' lifetime (0: an hour)

	// derived
	cmap         *clusterMap // -cluster: the slot map
	value        string      // SET payload
	script       string      // Lua source for throttle_lua, sl_lua
	evalHead     []byte      // "*N EVALSHA <sha> 1" prefix
	throttleTail []byte      // "<burst> <count> <period> <quantity>" suffix
	windowTail   []byte      // "<max> <window_ms>" (zset_recipe: "<window_ms>") suffix
}

// result is what one connection measured.
type result struct {
	hist     histogram
	ops      uint64 // requests whose batch completed inside the measured window
	errors   uint64 // error replies, warm-up included
	limited  uint64 // throttle replies with limited = 1 (measured window)
	errTexts []string
	ioErr    error

	// open loop (-rate) only
	dueHist    histogram     // latency from the due time, client lateness included
	lag        histogram     // send lag: the client's own delay in writing (rate.go)
	unanswered uint64        // due in the window, unanswered at the cutoff
	lastDone   time.Duration // last answer recorded, after the window's start
	secMax     []uint64      // [i]: highest latency from the due time of the requests due in second i
}

// report is the -json output.
type report struct {
	Workload    string   `json:"workload"`
	Addr        string   `json:"addr"`
	Conns       int      `json:"conns"`
	Pipeline    int      `json:"pipeline"`
	DurationS   float64  `json:"duration_s"`
	WarmupS     float64  `json:"warmup_s"`
	Dist        string   `json:"dist"`
	Keys        uint64   `json:"keys"`
	Ops         uint64   `json:"ops"`
	OpsPerSec   float64  `json:"ops_per_sec"`
	P50us       float64  `json:"p50_us"`
	P99us       float64  `json:"p99_us"`
	P999us      float64  `json:"p999_us"`
	MaxUs       float64  `json:"max_us"`
	MeanUs      float64  `json:"mean_us"`
	Errors      uint64   `json:"errors"`
	Limited     uint64   `json:"limited"`
	ConnErrors  int      `json:"conn_errors"`
	FirstErrors []string `json:"first_errors,omitempty"`

	// open loop (-rate) only; see rate.go
	OfferedRate  float64   `json:"offered_rate,omitempty"`  // requests/s
	AchievedRate float64   `json:"achieved_rate,omitempty"` // requests/s answered
	KeptUp       *bool     `json:"kept_up,omitempty"`
	Unanswered   uint64    `json:"unanswered,omitempty"` // due in the window, unanswered after the drain
	DrainS       float64   `json:"drain_s,omitempty"`
	DueP99us     float64   `json:"due_p99_us,omitempty"` // latency from the due time, client lateness included
	DueP999us    float64   `json:"due_p999_us,omitempty"`
	DueMaxUs     float64   `json:"due_max_us,omitempty"`
	LagP99us     float64   `json:"send_lag_p99_us,omitempty"` // the client's own delay in writing (rate.go)
	LagMaxUs     float64   `json:"send_lag_max_us,omitempty"`
	MaxUsPerSec  []float64 `json:"max_us_per_s,omitempty"` // [i]: highest from-due latency of the requests due in second i
}

const maxErrTexts = 5

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	var cfg config
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:6379", "server `host:port`")
	fs.StringVar(&cfg.workload, "workload", "ping", "workload `name` (see -list)")
	fs.IntVar(&cfg.conns, "conns", 50, "number of connections")
	fs.IntVar(&cfg.pipeline, "pipeline", 1, "requests per batch (pipeline depth)")
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "measured duration")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "warm-up before measuring (not counted)")
	fs.Uint64Var(&cfg.keys, "keys", 100000, "keyspace size")
	fs.StringVar(&cfg.dist, "dist", "uniform", "key distribution: uniform|zipf")
	fs.Float64Var(&cfg.zipfS, "zipf-s", 1.1, "zipf exponent s (> 1)")
	fs.Uint64Var(&cfg.seed, "seed", 0, "random seed (0: from the clock)")
	fs.IntVar(&cfg.datasize, "datasize", 3, "SET value size in bytes")
	fs.BoolVar(&cfg.populate, "populate", true, "write all keys first for workloads that read them (get)")
	fs.BoolVar(&cfg.jsonOut, "json", false, "print one JSON object instead of text")
	fs.Float64Var(&cfg.rate, "rate", 0, "open loop: offer `N` requests/s in total on a fixed schedule, latency from each request's due time (0: closed loop; see rate.go)")
	fs.DurationVar(&cfg.drain, "drain", 2*time.Second, "-rate: after -duration, how long requests due in the window may still be sent and answered")
	fs.Int64Var(&cfg.burst, "burst", 100, "throttle: max_burst")
	fs.Int64Var(&cfg.count, "count", 1000, "throttle: count per period")
	fs.Int64Var(&cfg.period, "period", 60, "throttle: period in seconds")
	fs.Int64Var(&cfg.quantity, "quantity", 1, "throttle: quantity")
	fs.StringVar(&cfg.scriptPath, "script", "", "throttle_lua, sl_lua: Lua file to load (default: the embedded bench/gcra.lua, bench/sliding.lua)")
	fs.Int64Var(&cfg.max, "max", 100, "sl_throttle, sw_throttle, sl_lua: max calls per window (zset_recipe: count above which a call is \"limited\")")
	fs.Int64Var(&cfg.window, "window", 60000, "sl_throttle, sw_throttle, sl_lua, zset_recipe: window in milliseconds")
	fs.BoolVar(&cfg.cluster, "cluster", false, "Redis Cluster: read CLUSTER NODES from -addr, spread the connections over the primaries and send each only keys of its node's slots")
	fs.BoolVar(&cfg.recipeRange, "recipe-range", false, "zset_recipe: read the log with ZRANGE key 0 -1 WITHSCORES instead of ZCARD")
	user := fs.String("user", "", "AUTH as this ACL `user` on every connection (with -pass)")
	pass := fs.String("pass", "", "AUTH with this `password` on every connection")
	list := fs.Bool("list", false, "list workloads and exit")
	freePort := fs.Bool("free-port", false, "print a free TCP port on 127.0.0.1 and exit")
	fill := fs.String("fill", "", "write -keys keys of state of this `kind` (gcra_cell, gcra_lua, zset, sl; see fill.go), at most -duration, print a JSON line and exit")
	fs.Uint64Var(&cfg.fillEntries, "fill-entries", 100, "-fill zset, sl: entries per key")
	fs.DurationVar(&cfg.fillTTL, "fill-ttl", 0, "-fill gcra_cell, gcra_lua: each key expires this long (whole seconds) after its call (0: an hour)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "loadgen: unexpected arguments %q\n", fs.Args())
		return 2
	}
	switch {
	case *user != "":
		dialAuth = []string{"AUTH", *user, *pass}
	case *pass != "":
		dialAuth = []string{"AUTH", *pass}
	}
	if *list {
		for _, name := range workloadNames() {
			fmt.Fprintf(stdout, "%-14s %s\n", name, workloads[name].desc)
		}
		return 0
	}
	if *freePort {
		port, err := pickFreePort()
		if err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
		fmt.Fprintln(stdout, port)
		return 0
	}
	if *fill != "" {
		if cfg.seed == 0 {
			cfg.seed = uint64(time.Now().UnixNano())
		}
		hard := cfg.duration + 30*time.Second
		killer := time.AfterFunc(hard, func() {
			fmt.Fprintf(stderr, "loadgen: hard timeout after %s\n", hard)
			os.Exit(3)
		})
		defer killer.Stop()
		return runFill(&cfg, *fill, stdout, stderr)
	}
	wl, err := prepare(&cfg)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 2
	}

	// Whatever happens, stop by ourselves.
	hard := cfg.warmup + cfg.duration + 30*time.Second + populateAllowance(&cfg, wl)
	if cfg.rate > 0 {
		hard += cfg.drain
	}
	killer := time.AfterFunc(hard, func() {
		fmt.Fprintf(stderr, "loadgen: hard timeout after %s\n", hard)
		os.Exit(3)
	})
	defer killer.Stop()

	rep, err := load(&cfg, wl, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	if cfg.jsonOut {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
	} else {
		printText(stdout, rep, wl)
	}
	if rep.ConnErrors > 0 {
		return 1
	}
	return 0
}

// prepare validates cfg and fills in the derived fields.
func prepare(cfg *config) (workload, error) {
	wl, ok := workloads[cfg.workload]
	if !ok {
		return workload{}, fmt.Errorf("unknown workload %q (have %s)", cfg.workload, strings.Join(workloadNames(), ", "))
	}
	switch {
	case cfg.conns < 1:
		return wl, errors.New("-conns must be >= 1")
	case cfg.pipeline < 1:
		return wl, errors.New("-pipeline must be >= 1")
	case cfg.duration <= 0:
		return wl, errors.New("-duration must be > 0")
	case cfg.warmup < 0:
		return wl, errors.New("-warmup must be >= 0")
	case cfg.keys < 1:
		return wl, errors.New("-keys must be >= 1")
	case cfg.datasize < 0:
		return wl, errors.New("-datasize must be >= 0")
	case cfg.dist != "uniform" && cfg.dist != "zipf":
		return wl, fmt.Errorf("-dist must be uniform or zipf, not %q", cfg.dist)
	case cfg.dist == "zipf" && !(cfg.zipfS > 1):
		return wl, errors.New("-zipf-s must be > 1")
	case cfg.max < 1:
		return wl, errors.New("-max must be >= 1")
	case cfg.window < 1 || cfg.window > 1<<40:
		return wl, errors.New("-window must be between 1 and 2^40 ms")
	case !(cfg.rate >= 0 && cfg.rate <= 1e9):
		return wl, errors.New("-rate must be between 0 and 1e9 requests/s")
	case cfg.drain < 0:
		return wl, errors.New("-drain must be >= 0")
	case cfg.cluster && wl.key == "":
		return wl, fmt.Errorf("-cluster: workload %s names no key", cfg.workload)
	case cfg.cluster && wl.populate && cfg.populate:
		return wl, errors.New("-cluster: populating is not supported; use -populate=false")
	}
	if cfg.seed == 0 {
		cfg.seed = uint64(time.Now().UnixNano())
	}
	cfg.value = strings.Repeat("x", cfg.datasize)
	cfg.script = wl.lua
	if cfg.scriptPath != "" {
		b, err := os.ReadFile(cfg.scriptPath)
		if err != nil {
			return wl, err
		}
		cfg.script = string(b)
	}
	return wl, nil
}

// dialTimeout bounds every connection's dial.
const dialTimeout = 3 * time.Second

// load runs setup, populate, warm-up and the measured window, and summarises.
func load(cfg *config, wl workload, stderr io.Writer) (*report, error) {
	setupDeadline := time.Now().Add(20*time.Second + populateAllowance(cfg, wl))

	addrs := []string{cfg.addr}
	if cfg.cluster {
		m, err := readClusterMap(cfg.addr)
		if err != nil {
			return nil, err
		}
		cfg.cmap, addrs = m, m.addrs
	}
	for _, addr := range addrs {
		if wl.setup == nil && !(wl.populate && cfg.populate) {
			break
		}
		c, err := dial(addr, dialTimeout)
		if err != nil {
			return nil, err
		}
		_ = c.conn.SetDeadline(setupDeadline)
		if wl.setup != nil {
			if err := wl.setup(c, cfg); err != nil {
				c.Close()
				return nil, fmt.Errorf("%s setup: %w", cfg.workload, err)
			}
		}
		if wl.populate && cfg.populate {
			if err := populate(c, cfg); err != nil {
				c.Close()
				return nil, fmt.Errorf("populate: %w", err)
			}
		}
		c.Close()
	}

	clients := make([]*client, cfg.conns)
	for i := range clients {
		c, err := dial(addrs[i%len(addrs)], dialTimeout)
		if err != nil {
			for _, c := range clients[:i] {
				c.Close()
			}
			return nil, fmt.Errorf("connection %d: %w", i, err)
		}
		clients[i] = c
	}

	base := time.Now()
	measureStart := base.Add(cfg.warmup)
	end := measureStart.Add(cfg.duration)
	results := make([]*result, cfg.conns)
	var wg sync.WaitGroup
	for i, c := range clients {
		results[i] = new(result)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			if cfg.rate > 0 {
				workRate(c, wl, cfg, i, base, results[i])
			} else {
				work(c, wl, cfg, i, measureStart, end, results[i])
			}
		}()
	}
	wg.Wait()

	var total result
	for _, r := range results {
		total.hist.merge(&r.hist)
		total.ops += r.ops
		total.errors += r.errors
		total.limited += r.limited
		total.dueHist.merge(&r.dueHist)
		total.lag.merge(&r.lag)
		total.unanswered += r.unanswered
		total.lastDone = max(total.lastDone, r.lastDone)
		total.secMax = mergeSecondMax(total.secMax, r.secMax)
		for _, t := range r.errTexts {
			if len(total.errTexts) < maxErrTexts && !contains(total.errTexts, t) {
				total.errTexts = append(total.errTexts, t)
			}
		}
	}
	rep := &report{
		Workload:    cfg.workload,
		Addr:        strings.Join(addrs, ","),
		Conns:       cfg.conns,
		Pipeline:    cfg.pipeline,
		DurationS:   cfg.duration.Seconds(),
		WarmupS:     cfg.warmup.Seconds(),
		Dist:        cfg.dist,
		Keys:        cfg.keys,
		Ops:         total.ops,
		OpsPerSec:   round1(float64(total.ops) / cfg.duration.Seconds()),
		P50us:       us(total.hist.percentile(50)),
		P99us:       us(total.hist.percentile(99)),
		P999us:      us(total.hist.percentile(99.9)),
		MaxUs:       us(total.hist.max),
		MeanUs:      round1(total.hist.mean() / 1e3),
		Errors:      total.errors,
		Limited:     total.limited,
		FirstErrors: total.errTexts,
	}
	var ioErrs []string
	for i, r := range results {
		if r.ioErr != nil {
			rep.ConnErrors++
			if len(ioErrs) < 3 {
				ioErrs = append(ioErrs, fmt.Sprintf("conn %d: %v", i, r.ioErr))
			}
		}
	}
	if cfg.rate > 0 {
		achieved := achievedRate(total.ops, cfg.duration, total.lastDone)
		kept := keptUp(cfg.rate, achieved, total.unanswered) && rep.ConnErrors == 0
		rep.OpsPerSec = round1(achieved)
		rep.OfferedRate = cfg.rate
		rep.AchievedRate = round1(achieved)
		rep.KeptUp = &kept
		rep.Unanswered = total.unanswered
		rep.DrainS = cfg.drain.Seconds()
		rep.DueP99us = us(total.dueHist.percentile(99))
		rep.DueP999us = us(total.dueHist.percentile(99.9))
		rep.DueMaxUs = us(total.dueHist.max)
		rep.LagP99us = us(total.lag.percentile(99))
		rep.LagMaxUs = us(total.lag.max)
		for _, v := range total.secMax {
			rep.MaxUsPerSec = append(rep.MaxUsPerSec, us(v))
		}
		if !kept {
			fmt.Fprintf(stderr, "loadgen: did not keep up: achieved %.1f/s of -rate %g, %d requests unanswered %s after the window\n",
				achieved, cfg.rate, total.unanswered, cfg.drain)
		}
	}
	for _, e := range ioErrs {
		fmt.Fprintln(stderr, "loadgen: connection error:", e)
	}
	for _, t := range total.errTexts {
		fmt.Fprintf(stderr, "loadgen: error reply: %s\n", t)
	}
	return rep, nil
}

// work is one connection's loop: build a batch, write it, read the replies,
// record, until the window ends. A batch belongs to the window in which its
// last reply arrives: batches completing during the warm-up or after the end
// are not counted (error replies are, wherever they arrive).
func work(c *client, wl workload, cfg *config, id int, measureStart, end time.Time, res *result) {
	w := newWorker(c, wl, cfg, id, res)
	// Reads and writes can't hang past the end of the run.
	_ = c.conn.SetDeadline(end.Add(5 * time.Second))
	p := uint64(cfg.pipeline)
	for {
		w.build()
		start := time.Now()
		limited, err := w.exchange()
		if err != nil {
			res.ioErr = err
			return
		}
		now := time.Now()
		if now.After(end) {
			return // finished after the window: not counted
		}
		if now.Before(measureStart) {
			continue // warm-up
		}
		res.hist.recordN(uint64(now.Sub(start)), p)
		res.ops += p
		res.limited += limited
	}
}

// worker is what one connection's loop needs to build and exchange
// batches: the workload, its random keys and the reusable write buffer. It
// is not safe for concurrent use.
type worker struct {
	c    *client
	wl   workload
	cfg  *config
	rng  *rand.Rand
	zipf *rand.Zipf // nil: uniform keys
	st   *reqState
	per  int // replies per request
	wbuf []byte
	res  *result
	node int16  // -cluster: the index of this connection's node in cfg.cmap
	kbuf []byte // -cluster: scratch for a key's slot
}

func newWorker(c *client, wl workload, cfg *config, id int, res *result) *worker {
	rng := rand.New(rand.NewPCG(cfg.seed, uint64(id)))
	w := &worker{c: c, wl: wl, cfg: cfg, rng: rng, st: &reqState{rng: rng}, per: wl.repliesPerRequest(),
		wbuf: make([]byte, 0, 256*cfg.pipeline), res: res}
	if cfg.cmap != nil {
		w.node = int16(id % len(cfg.cmap.addrs))
	}
	if cfg.dist == "zipf" {
		w.zipf = rand.NewZipf(rng, cfg.zipfS, 1, cfg.keys-1)
	}
	return w
}

// build fills the write buffer with one batch of -pipeline requests.
func (w *worker) build() {
	w.wbuf = w.wbuf[:0]
	w.st.nowUs = time.Now().UnixMicro()
	for i := 0; i < w.cfg.pipeline; i++ {
		n := w.key()
		for w.cfg.cmap != nil && len(w.cfg.cmap.addrs) > 1 && w.cfg.cmap.owner[w.keySlotOf(n)] != w.node {
			n = w.key()
		}
		w.wbuf = w.wl.build(w.wbuf, n, w.cfg, w.st)
	}
}

// key draws a key number from the distribution.
func (w *worker) key() uint64 {
	if w.zipf != nil {
		return w.zipf.Uint64()
	}
	return w.rng.Uint64N(w.cfg.keys)
}

// exchange writes the batch and reads every reply. It returns how many
// requests were limited; error replies are counted in res.errors.
func (w *worker) exchange() (limited uint64, err error) {
	if _, err := w.c.conn.Write(w.wbuf); err != nil {
		return 0, err
	}
	for i := 0; i < w.cfg.pipeline; i++ {
		var errText []byte
		for j := 0; j < w.per; j++ {
			reply, kind, err := w.c.readReply()
			if err != nil {
				return limited, err
			}
			switch {
			case isErrorKind(kind):
				if errText == nil {
					errText = errorText(reply)
					w.res.noteError(string(errText)) // copy: reply is reused
				}
			case j == w.per-1 && errText == nil && w.wl.check != nil:
				lim, et := w.wl.check(reply, w.cfg)
				if et != nil {
					errText = et
					w.res.noteError(string(et))
				} else if lim {
					limited++
				}
			}
		}
		if errText != nil {
			w.res.errors++
		}
	}
	return limited, nil
}

// noteError keeps the first few distinct error texts.
func (r *result) noteError(t string) {
	if len(r.errTexts) < maxErrTexts && !contains(r.errTexts, t) {
		r.errTexts = append(r.errTexts, t)
	}
}

// populateAllowance is the extra time allowed for populating the keyspace:
// 20 us per key, far more than a healthy server needs.
func populateAllowance(cfg *config, wl workload) time.Duration {
	if !wl.populate || !cfg.populate {
		return 0
	}
	return time.Duration(cfg.keys) * 20 * time.Microsecond
}

// populate writes every key the get workload reads, in pipelined batches.
func populate(c *client, cfg *config) error {
	const batch = 1000
	var b []byte
	for lo := uint64(0); lo < cfg.keys; lo += batch {
		hi := min(lo+batch, cfg.keys)
		b = b[:0]
		for n := lo; n < hi; n++ {
			b = append(b, "*3\r\n$3\r\nSET\r\n"...)
			b = appendKey(b, "key:", n)
			b = appendBulk(b, cfg.value)
		}
		if _, err := c.conn.Write(b); err != nil {
			return err
		}
		for n := lo; n < hi; n++ {
			reply, kind, err := c.readReply()
			if err != nil {
				return err
			}
			if isErrorKind(kind) {
				return fmt.Errorf("SET key:%d: %s", n, errorText(reply))
			}
		}
	}
	return nil
}

func printText(w io.Writer, r *report, wl workload) {
	fmt.Fprintf(w, "workload   %s: %s\n", r.Workload, wl.desc)
	fmt.Fprintf(w, "target     %s  conns %d  pipeline %d  keys %d (%s)\n", r.Addr, r.Conns, r.Pipeline, r.Keys, r.Dist)
	fmt.Fprintf(w, "duration   %gs (+%gs warm-up)\n", r.DurationS, r.WarmupS)
	fmt.Fprintf(w, "ops/s      %.0f  (%d ops)\n", r.OpsPerSec, r.Ops)
	fmt.Fprintf(w, "latency us p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  mean %.1f\n", r.P50us, r.P99us, r.P999us, r.MaxUs, r.MeanUs)
	fmt.Fprintf(w, "errors     %d\n", r.Errors)
	if wl.throttle {
		pct := 0.0
		if r.Ops > 0 {
			pct = 100 * float64(r.Limited) / float64(r.Ops)
		}
		fmt.Fprintf(w, "limited    %d (%.2f%%)\n", r.Limited, pct)
	}
	if r.ConnErrors > 0 {
		fmt.Fprintf(w, "conn errs  %d\n", r.ConnErrors)
	}
	if r.KeptUp != nil {
		fmt.Fprintf(w, "rate       offered %g/s  achieved %.1f/s  (open loop, %gs drain)\n", r.OfferedRate, r.AchievedRate, r.DrainS)
		fmt.Fprintf(w, "from due   p99 %.1f  p99.9 %.1f  max %.1f  (us, the client's own lateness included)\n", r.DueP99us, r.DueP999us, r.DueMaxUs)
		fmt.Fprintf(w, "send lag   p99 %.1f  max %.1f  (us)\n", r.LagP99us, r.LagMaxUs)
		if !*r.KeptUp {
			fmt.Fprintf(w, "NOT KEPT UP: achieved below %g%% of the offered rate, or %d requests unanswered %gs after the window (counted with the wait they had then)\n",
				100*keptUpShare, r.Unanswered, r.DrainS)
		}
	}
}

// pickFreePort asks the kernel for a free loopback port. Another process may
// take it before the caller binds it; callers retry on failure.
func pickFreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func us(ns uint64) float64 { return round1(float64(ns) / 1e3) }

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
