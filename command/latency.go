package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/ratekv/ratekv/config"
)

// The latency monitor, as Redis's latency.c: per event, the last 160
// samples of at least latency-monitor-threshold ms (one per second, the
// highest) and the all-time maximum. The events ratekv has:
//
//   - command, fast-command: a command (FlagFast or not) took that long;
//   - expire-cycle: an active-expiry pass;
//   - eviction-cycle: a command's eviction before it ran;
//   - aof-write, aof-fsync-always: the append-only log's write, and its
//     fsync under appendfsync always;
//   - rdb-save: writing a snapshot (SAVE, BGSAVE, a save rule).
//
// Other packages report their events through LatencyEvent (persist
// through its Options.Latency hook, which main connects).

const latencySamples = 160

type latencySample struct{ unix, ms int64 }

type latencySeries struct {
	samples [latencySamples]latencySample
	idx     int
	max     int64
}

// LatencyEvent records that event took d, when latency-monitor-threshold
// is set and d reaches it. Safe for concurrent use; cheap when off.
func (e *Engine) LatencyEvent(event string, d time.Duration) {
	t := e.obs.threshold.Load()
	if t == 0 || d.Milliseconds() < t {
		return
	}
	e.addLatencySample(event, time.Now().Unix(), d.Milliseconds())
}

// LatencyOn reports whether latency-monitor-threshold is set.
func (e *Engine) LatencyOn() bool { return e.obs.threshold.Load() != 0 }

// addLatencySample is Redis's latencyAddSample.
func (e *Engine) addLatencySample(event string, now, ms int64) {
	o := &e.obs
	o.eventMu.Lock()
	defer o.eventMu.Unlock()
	ts := o.events[event]
	if ts == nil {
		if o.events == nil {
			o.events = map[string]*latencySeries{}
		}
		ts = &latencySeries{}
		o.events[event] = ts
		o.order = append(o.order, event)
	}
	ts.max = max(ts.max, ms)
	prev := &ts.samples[(ts.idx+latencySamples-1)%latencySamples]
	if prev.unix == now {
		prev.ms = max(prev.ms, ms)
		return
	}
	ts.samples[ts.idx] = latencySample{now, ms}
	ts.idx = (ts.idx + 1) % latencySamples
}

// noteCommandLatency records a command's duration as the command or
// fast-command event.
func (c *Client) noteCommandLatency(cmd *Command, ns int64) {
	t := c.eng.obs.threshold.Load()
	if t == 0 || ns/1e6 < t || c.replaying {
		return
	}
	event := "command"
	if cmd.Flags&FlagFast != 0 {
		event = "fast-command"
	}
	c.eng.addLatencySample(event, c.nowMs/1000, ns/1e6)
}

// LATENCY subcommand [argument ...]
func cmdLatency(c *Client, args [][]byte) { runSubcommand(c, "latency", args) }

// LATENCY LATEST
func cmdLatencyLatest(c *Client, args [][]byte) {
	o := &c.eng.obs
	o.eventMu.Lock()
	defer o.eventMu.Unlock()
	c.WriteArray(len(o.order))
	for _, ev := range o.order {
		ts := o.events[ev]
		last := ts.samples[(ts.idx+latencySamples-1)%latencySamples]
		c.WriteArray(4)
		c.WriteBulkString(ev)
		c.WriteInt(last.unix)
		c.WriteInt(last.ms)
		c.WriteInt(ts.max)
	}
}

// LATENCY HISTORY event
func cmdLatencyHistory(c *Client, args [][]byte) {
	o := &c.eng.obs
	o.eventMu.Lock()
	defer o.eventMu.Unlock()
	ts := o.events[string(args[2])]
	if ts == nil {
		c.WriteArray(0)
		return
	}
	n := 0
	for _, s := range ts.samples {
		if s.unix != 0 {
			n++
		}
	}
	c.WriteArray(n)
	for j := range latencySamples {
		s := ts.samples[(ts.idx+j)%latencySamples]
		if s.unix == 0 {
			continue
		}
		c.WriteArray(2)
		c.WriteInt(s.unix)
		c.WriteInt(s.ms)
	}
}

// LATENCY RESET [event ...]
func cmdLatencyReset(c *Client, args [][]byte) {
	o := &c.eng.obs
	o.eventMu.Lock()
	defer o.eventMu.Unlock()
	resets := 0
	drop := func(match func(string) bool) {
		kept := o.order[:0]
		for _, ev := range o.order {
			if match(ev) {
				delete(o.events, ev)
				resets++
			} else {
				kept = append(kept, ev)
			}
		}
		o.order = kept
	}
	if len(args) == 2 {
		drop(func(string) bool { return true })
	} else {
		for _, a := range args[2:] {
			drop(func(ev string) bool { return strings.EqualFold(ev, string(a)) })
		}
	}
	c.WriteInt(int64(resets))
}

// LATENCY GRAPH event
func cmdLatencyGraph(c *Client, args [][]byte) {
	o := &c.eng.obs
	o.eventMu.Lock()
	ts := o.events[string(args[2])]
	var copyTs latencySeries
	if ts != nil {
		copyTs = *ts
	}
	o.eventMu.Unlock()
	if ts == nil {
		c.WriteError(sprintf(errLatencyNoSamples, errArg(args[2])))
		return
	}
	c.WriteVerbatim(latencyGraph(string(args[2]), &copyTs, time.Now().Unix()))
}

// latencyGraph draws ts as Redis's latencyCommandGenSparkeline does: a
// title, 80 dashes, and a sparkline of 4 rows with the samples' ages as
// labels.
func latencyGraph(event string, ts *latencySeries, now int64) string {
	type sample struct {
		v     int64
		label string
	}
	var seq []sample
	var lo, hi int64 // the samples' range, as Redis's sequence keeps it
	for j := range latencySamples {
		s := ts.samples[(ts.idx+j)%latencySamples]
		if s.unix == 0 {
			continue
		}
		if len(seq) == 0 {
			lo, hi = s.ms, s.ms
		} else {
			lo, hi = min(lo, s.ms), max(hi, s.ms)
		}
		el := now - s.unix
		var label string
		switch {
		case el < 60:
			label = fmt.Sprintf("%ds", el)
		case el < 3600:
			label = fmt.Sprintf("%dm", el/60)
		case el < 86400:
			label = fmt.Sprintf("%dh", el/3600)
		default:
			label = fmt.Sprintf("%dd", el/86400)
		}
		seq = append(seq, sample{s.ms, label})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", event, hi, lo, ts.max)
	b.WriteString(strings.Repeat("-", 80) + "\n")
	// Redis's sparklineRender with SPARKLINE_FILL: 80 columns, 4 rows of
	// 3 steps, then a blank line and the labels written downwards.
	const rows, fill = 4, "_o#"
	steps := rows * len(fill)
	rel := float64(hi - lo)
	if rel == 0 {
		rel = 1
	}
	for off := 0; off < len(seq); off += 80 {
		if off != 0 {
			b.WriteByte('\n')
		}
		part := seq[off:min(off+80, len(seq))]
		line := make([]byte, len(part))
		for row := range rows {
			for i, s := range part {
				step := min(max(int(float64(int(float64(s.v-lo)*float64(steps)))/rel), 0), steps-1)
				switch idx := step - (rows-row-1)*len(fill); {
				case idx >= len(fill):
					line[i] = '|'
				case idx >= 0:
					line[i] = fill[idx]
				default:
					line[i] = ' '
				}
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		b.WriteString(strings.Repeat(" ", len(part)) + "\n")
		for l := 0; ; l++ {
			more := false
			for i, s := range part {
				line[i] = ' '
				if l < len(s.label) {
					line[i], more = s.label[l], true
				}
			}
			if !more {
				break
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// LATENCY HISTOGRAM [command ...]
func cmdLatencyHistogram(c *Client, args [][]byte) {
	type entry struct {
		name string
		h    *latencyHist
	}
	var list []entry
	if len(args) == 2 {
		for _, cmd := range sortedCommands() {
			if h := cmd.hist.Load(); h != nil {
				list = append(list, entry{cmd.Name, h})
			}
		}
	} else {
		seen := map[string]bool{}
		for _, a := range args[2:] {
			cmd := lookupCommandPath(a)
			if cmd == nil || seen[cmd.Name] {
				continue
			}
			seen[cmd.Name] = true
			if h := cmd.hist.Load(); h != nil {
				list = append(list, entry{cmd.Name, h})
			}
		}
	}
	c.WriteMap(len(list))
	for _, en := range list {
		c.WriteBulkString(en.name)
		c.writeLatencyHistogram(en.h)
	}
}

// LATENCY DOCTOR
func cmdLatencyDoctor(c *Client, args [][]byte) {
	c.WriteVerbatim(c.eng.latencyReport())
}

// latencyReport is Redis's createLatencyReport for the events ratekv has.
func (e *Engine) latencyReport() string {
	o := &e.obs
	o.eventMu.Lock()
	defer o.eventMu.Unlock()
	if len(o.order) == 0 && o.threshold.Load() == 0 {
		return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"
	}
	var b strings.Builder
	var slowEnable, slowTune, slowInspect, scheduler, largeObjects, relaxFsync, hz, massEviction, disk bool
	advices := 0
	now := time.Now().Unix()
	for n, ev := range o.order {
		ts := o.events[ev]
		if n == 0 {
			b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		}
		var samples, sum, mad, oldest int64
		for _, s := range ts.samples {
			if s.unix == 0 {
				continue
			}
			samples++
			sum += s.ms
			if oldest == 0 || s.unix < oldest {
				oldest = s.unix
			}
		}
		var avg, period int64
		if samples > 0 {
			avg = sum / samples
			period = max(now-oldest, 1)
			for _, s := range ts.samples {
				if s.unix != 0 {
					d := avg - s.ms
					mad += max(d, -d)
				}
			}
			mad /= samples
		}
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.",
			n+1, ev, samples, avg, mad, float64(period)/float64(samples), ts.max)
		switch ev {
		case "command":
			if t := o.slowerThan.Load(); t < 0 {
				slowEnable = true
				advices++
			} else if t/1000 > o.threshold.Load() {
				slowTune = true
				advices++
			}
			slowInspect, largeObjects = true, true
			advices += 2
		case "fast-command":
			scheduler = true
			advices++
		case "aof-write":
			disk = true
			advices++
		case "aof-fsync-always":
			relaxFsync = true
			advices++
		case "expire-cycle":
			hz, largeObjects = true, true
			advices += 2
		case "eviction-cycle":
			massEviction = true
			advices++
		}
		b.WriteByte('\n')
	}
	switch {
	case len(o.order) == 0 && advices == 0:
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
	case advices == 0:
		b.WriteString("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n")
	default:
		t := o.threshold.Load() * 1000
		b.WriteString("\nI have a few advices for you:\n\n")
		if slowEnable {
			fmt.Fprintf(&b, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %d'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", t)
		}
		if slowTune {
			fmt.Fprintf(&b, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %d'.\n", t)
		}
		if slowInspect {
			b.WriteString("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n")
		}
		if scheduler {
			b.WriteString("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n" +
				"  1) Lower the system load.\n" +
				"  2) Use a computer / VM just for Redis if you are running other software in the same system.\n" +
				"  3) Check if you have a \"noisy neighbour\" problem.\n" +
				"  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n")
		}
		if disk {
			b.WriteString("- It is strongly advised to use local disks for persistence, especially if you are using AOF. Remote disks provided by platform-as-a-service providers are known to be slow.\n")
			b.WriteString("- Try to lower the disk contention. This is often caused by other disk intensive processes running in the same computer (including other Redis instances).\n")
		}
		if relaxFsync && e.cfg.Fsync() == config.FsyncAlways {
			b.WriteString("- Your fsync policy is set to 'always'. It is very hard to get good performances with such a setup, if possible try to relax the fsync policy to 'onesec'.\n")
		}
		if hz {
			b.WriteString("- ratekv's active expiry runs every 100 ms for at most a few ms per pass; a long expire-cycle means many keys expired at once.\n")
		}
		if largeObjects {
			b.WriteString("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n")
		}
		if massEviction {
			b.WriteString("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects, may create sudden memory pressure forcing the server to block trying to evict keys. \n")
		}
	}
	return b.String()
}

// LATENCY HELP
func cmdLatencyHelp(c *Client, args [][]byte) {
	c.writeHelp(args[0], []string{
		"DOCTOR",
		"    Return a human readable latency analysis report.",
		"GRAPH <event>",
		"    Return an ASCII latency graph for the <event> class.",
		"HISTORY <event>",
		"    Return time-latency samples for the <event> class.",
		"LATEST",
		"    Return the latest latency samples for all events.",
		"RESET [<event> ...]",
		"    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
		"HISTOGRAM [COMMAND ...]",
		"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
		"    If no commands are specified then all histograms are replied.",
	})
}
