package command

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/redisnum"
)

// SLOWLOG, as Redis's slowlog.c: the commands that took at least
// slowlog-log-slower-than µs, newest first, at most slowlog-max-len of
// them. A command's duration is the one INFO commandstats charges it (see
// Client.settle): the one clock reading per command ends the previous
// command's time, so that a connection records a slow command when its
// next command starts or its batch ends. The arguments are kept from the
// request as Redis keeps them: at most 32, each at most 128 bytes.

const (
	slowlogMaxArgc   = 32
	slowlogMaxString = 128
)

func init() {
	register(
		&Command{Name: "slowlog", Arity: -2, Handler: cmdSlowlog,
			Summary: "A container for slow log commands.", Group: "server"},
		&Command{Name: "latency", Arity: -2, Handler: cmdLatency,
			Summary: "A container for latency diagnostics commands.", Group: "server"},
	)
	registerSubcommands("slowlog",
		&Command{Name: "slowlog|get", Arity: -2, Flags: FlagAdmin | FlagLoading | FlagStale, Handler: cmdSlowlogGet,
			Summary: "Returns the slow log's entries.", Group: "server"},
		&Command{Name: "slowlog|len", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Handler: cmdSlowlogLen,
			Summary: "Returns the number of entries in the slow log.", Group: "server"},
		&Command{Name: "slowlog|reset", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Handler: cmdSlowlogReset,
			Summary: "Clears all entries from the slow log.", Group: "server"},
		&Command{Name: "slowlog|help", Arity: 2, Flags: FlagLoading | FlagStale, Handler: cmdSlowlogHelp,
			Summary: "Show helpful text about the different subcommands", Group: "server"},
	)
	registerSubcommands("latency",
		&Command{Name: "latency|latest", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Handler: cmdLatencyLatest,
			Summary: "Returns the latest latency samples for all events.", Group: "server"},
		&Command{Name: "latency|history", Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Handler: cmdLatencyHistory,
			Summary: "Returns timestamp-latency samples for an event.", Group: "server"},
		&Command{Name: "latency|reset", Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Handler: cmdLatencyReset,
			Summary: "Resets the latency data for one or more events.", Group: "server"},
		&Command{Name: "latency|doctor", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Handler: cmdLatencyDoctor,
			Summary: "Returns a human-readable latency analysis report.", Group: "server"},
		&Command{Name: "latency|graph", Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Handler: cmdLatencyGraph,
			Summary: "Returns a latency graph for an event.", Group: "server"},
		&Command{Name: "latency|histogram", Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Handler: cmdLatencyHistogram,
			Summary: "Returns the cumulative distribution of latencies of a subset or all commands.", Group: "server"},
		&Command{Name: "latency|help", Arity: 2, Flags: FlagLoading | FlagStale, Handler: cmdLatencyHelp,
			Summary: "Returns helpful text about the different subcommands.", Group: "server"},
	)
}

// observability is the engine's SLOWLOG, LATENCY events and the settings
// of latency tracking; safe for concurrent use.
type observability struct {
	slowerThan  atomic.Int64 // slowlog-log-slower-than, µs (negative: off)
	slowMaxLen  atomic.Int64
	tracking    atomic.Bool               // latency-tracking
	percentiles atomic.Pointer[[]float64] // latency-tracking-info-percentiles
	threshold   atomic.Int64              // latency-monitor-threshold, ms (0: off)

	slowMu  sync.Mutex
	slow    []slowEntry // oldest first
	slowID  int64
	eventMu sync.Mutex
	events  map[string]*latencySeries
	order   []string // event names in the order they were first seen
}

// slowEntry is one SLOWLOG entry.
type slowEntry struct {
	id, unix, usec int64
	args           []string
	addr, name     string
}

// watchObservability loads the parameters and keeps them current.
func (e *Engine) watchObservability() {
	cfg := e.cfg
	for _, w := range []struct {
		key   config.Key
		apply func()
	}{
		{config.SlowlogLogSlowerThan, func() { e.obs.slowerThan.Store(cfg.Int(config.SlowlogLogSlowerThan)) }},
		{config.SlowlogMaxLen, func() { e.obs.slowMaxLen.Store(cfg.Int(config.SlowlogMaxLen)) }},
		{config.LatencyMonitorThreshold, func() { e.obs.threshold.Store(cfg.Int(config.LatencyMonitorThreshold)) }},
		{config.LatencyTracking, func() { e.obs.tracking.Store(cfg.Bool(config.LatencyTracking)) }},
		{config.LatencyTrackingPercentiles, func() {
			ps := config.Percentiles(cfg.String(config.LatencyTrackingPercentiles))
			e.obs.percentiles.Store(&ps)
		}},
	} {
		w.apply()
		cfg.OnChange(w.key, func(string) { w.apply() })
	}
}

// keepSlowArgs keeps the arguments of the command being timed, for SLOWLOG:
// the slice headers only (the bytes stay in the read buffer until the
// batch ends, when the last command is settled).
func (c *Client) keepSlowArgs(args [][]byte) {
	n := min(len(args), slowlogMaxArgc)
	c.slowArgs = append(c.slowArgs[:0], args[:n]...)
	c.slowArgc = len(args)
}

// noteSlow records the command c.slowArgs holds, which took usec, at
// least slowlog-log-slower-than (settle checks).
func (c *Client) noteSlow(usec int64) {
	if c.replaying {
		return
	}
	o := &c.eng.obs
	args := make([]string, len(c.slowArgs))
	for i, a := range c.slowArgs {
		switch {
		case i == slowlogMaxArgc-1 && c.slowArgc > slowlogMaxArgc:
			args[i] = "... (" + strconv.Itoa(c.slowArgc-slowlogMaxArgc+1) + " more arguments)"
		case len(a) > slowlogMaxString:
			args[i] = string(a[:slowlogMaxString]) + "... (" + strconv.Itoa(len(a)-slowlogMaxString) + " more bytes)"
		default:
			args[i] = string(a)
		}
	}
	for _, i := range redactions(c.slowArgs) {
		if i < len(args) {
			args[i] = "(redacted)"
		}
	}
	name := c.Name()
	o.slowMu.Lock()
	o.slowID++
	o.slow = append(o.slow, slowEntry{id: o.slowID - 1, unix: c.nowMs / 1000, usec: usec, args: args, addr: c.Addr, name: name})
	if over := len(o.slow) - int(min(o.slowMaxLen.Load(), int64(len(o.slow)))); over > 0 {
		clear(o.slow[:over])
		o.slow = o.slow[over:]
	}
	o.slowMu.Unlock()
}

// redactions returns the indices of the arguments SLOWLOG and MONITOR
// hide, nil when none: the credentials of AUTH, HELLO ... AUTH and
// MIGRATE ... AUTH|AUTH2, where Redis's commands call
// redactClientCommandArgument (a malformed AUTH shows its arguments, as
// Redis's does, because it fails before redacting).
func redactions(args [][]byte) []int {
	var hide []int
	switch strings.ToLower(string(args[0])) {
	case "auth":
		if len(args) <= 3 {
			for i := 1; i < len(args); i++ {
				hide = append(hide, i)
			}
		}
	case "hello":
		for j := 2; j < len(args); j++ {
			more := len(args) - 1 - j
			switch opt := string(args[j]); {
			case strings.EqualFold(opt, "auth") && more >= 2:
				hide = append(hide, j+1, j+2)
				j += 2
			case strings.EqualFold(opt, "setname") && more >= 1:
				j++
			default:
				return hide
			}
		}
	case "migrate":
		for j := 6; j < len(args); j++ {
			more := len(args) - 1 - j
			switch opt := string(args[j]); {
			case strings.EqualFold(opt, "copy"), strings.EqualFold(opt, "replace"):
			case strings.EqualFold(opt, "auth") && more >= 1:
				hide = append(hide, j+1)
				j++
			case strings.EqualFold(opt, "auth2") && more >= 2:
				hide = append(hide, j+1, j+2)
				j += 2
			default:
				return hide
			}
		}
	}
	return hide
}

// SLOWLOG subcommand [argument]
func cmdSlowlog(c *Client, args [][]byte) { runSubcommand(c, "slowlog", args) }

// SLOWLOG GET [count]
func cmdSlowlogGet(c *Client, args [][]byte) {
	count := int64(10)
	if len(args) > 3 {
		c.WriteError(sprintf(errSubcmdSyntax, errArg(args[1]), "SLOWLOG"))
		return
	}
	if len(args) == 3 {
		n, ok := redisnum.ParseInt(args[2])
		if !ok || n < -1 {
			c.WriteError(errSlowlogCount)
			return
		}
		count = n
	}
	o := &c.eng.obs
	o.slowMu.Lock()
	n := int64(len(o.slow))
	if count >= 0 && count < n {
		n = count
	}
	entries := make([]slowEntry, n)
	for i := range entries {
		entries[i] = o.slow[len(o.slow)-1-i]
	}
	o.slowMu.Unlock()
	c.WriteArray(len(entries))
	for _, en := range entries {
		c.WriteArray(6)
		c.WriteInt(en.id)
		c.WriteInt(en.unix)
		c.WriteInt(en.usec)
		c.WriteArray(len(en.args))
		for _, a := range en.args {
			c.WriteBulkString(a)
		}
		c.WriteBulkString(en.addr)
		c.WriteBulkString(en.name)
	}
}

// SLOWLOG LEN
func cmdSlowlogLen(c *Client, args [][]byte) {
	o := &c.eng.obs
	o.slowMu.Lock()
	n := len(o.slow)
	o.slowMu.Unlock()
	c.WriteInt(int64(n))
}

// SLOWLOG RESET
func cmdSlowlogReset(c *Client, args [][]byte) {
	o := &c.eng.obs
	o.slowMu.Lock()
	o.slow = nil
	o.slowMu.Unlock()
	c.WriteOK()
}

// SLOWLOG HELP
func cmdSlowlogHelp(c *Client, args [][]byte) {
	c.writeHelp(args[0], []string{
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN",
		"    Return the length of the slowlog.",
		"RESET",
		"    Reset the slowlog.",
	})
}
