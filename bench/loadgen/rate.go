package main

// Open loop (-rate N).
//
// The closed loop (the default) sends a connection's next batch as soon as
// the previous one is answered: a server that stalls for 100 ms is simply
// sent less during those 100 ms, and the requests that would have waited
// never reach the percentiles ("coordinated omission"). With -rate N the
// offered load is fixed instead: connection i of C sends a batch of
// -pipeline requests every C*pipeline/N seconds, the connections staggered
// by 1/C of that interval, whatever the server does. -pipeline 1 is the
// intended use; with more, the schedule is per batch and every request of a
// batch is timed from the batch's due time.
//
// A connection still has one batch in flight at a time. When its previous
// batch is answered after the next one was due, the next one goes out at
// once and its latency counts from its due time: the wait behind a slow
// server is in the percentiles. When the connection was idle at the due
// time, the latency counts from the actual write: an idle Go process's
// timers fire up to ~1 ms late, and that lateness is the client's, not the
// server's. Both are reported anyway: the send lag (the client's own delay:
// write time minus the due time or the previous answer, whichever is later)
// and the plain due-to-reply latency.
//
// Only batches due inside the measured window are recorded. Batches due
// inside it are still sent after it ends (a backlog) until the drain
// (-drain) is over; whatever is unanswered then is recorded with the latency
// it had at least, cutoff minus due time, and counted as unanswered, and the
// report says the server did not keep up.

import (
	"errors"
	"math"
	"os"
	"time"
)

// keptUpShare is the share of the offered rate that must be achieved, with
// nothing unanswered, for a run to count as keeping up.
const keptUpShare = 0.99

// schedule gives one connection's due times as offsets from the start of
// the run: batch k is due at phase + k*interval. The zero value is not
// useful; newSchedule makes one.
type schedule struct {
	phase, interval time.Duration
}

// newSchedule returns the schedule of connection id (0 <= id < conns) when
// conns connections together send rate requests/s in batches of pipeline.
func newSchedule(rate float64, conns, pipeline, id int) schedule {
	iv := float64(conns) * float64(pipeline) / rate * 1e9
	return schedule{
		phase:    time.Duration(math.Round(iv * float64(id) / float64(conns))),
		interval: max(time.Duration(math.Round(iv)), 1),
	}
}

// at returns when batch k is due.
func (s schedule) at(k int64) time.Duration { return s.phase + time.Duration(k)*s.interval }

// first returns the number of the first batch due at or after t.
func (s schedule) first(t time.Duration) int64 {
	if t <= s.phase {
		return 0
	}
	return int64((t - s.phase + s.interval - 1) / s.interval)
}

// count returns how many batches numbered k or more are due in [lo, hi).
func (s schedule) count(k int64, lo, hi time.Duration) int64 {
	return max(s.first(hi)-max(k, s.first(lo)), 0)
}

// latency returns what is recorded for a batch due at due, written at sent
// and answered at done, on a connection whose previous batch was answered
// at prevDone (all offsets from the same start): from the due time when the
// connection was still busy then (the batch had to wait for the server),
// else from the write (the client's own lateness does not count).
func latency(due, sent, done, prevDone time.Duration) time.Duration {
	start := sent
	if prevDone > due {
		start = due
	}
	return max(done-start, 0)
}

// sendLag returns the client's own delay in writing a batch due at due:
// from the due time, or from the previous answer when that came later, to
// the write.
func sendLag(due, sent, prevDone time.Duration) time.Duration {
	return max(sent-max(due, prevDone), 0)
}

// achievedRate returns the requests answered per second: answered requests
// over the measured window, or over the time until the last answer when
// that came later.
func achievedRate(answered uint64, window, lastDone time.Duration) float64 {
	d := max(window, lastDone)
	if d <= 0 {
		return 0
	}
	return float64(answered) / d.Seconds()
}

// keptUp reports whether an open-loop run kept up with its offered rate:
// nothing unanswered and at least keptUpShare of the rate achieved.
func keptUp(offered, achieved float64, unanswered uint64) bool {
	return unanswered == 0 && achieved >= keptUpShare*offered
}

// noteSecondMax records lat in the timeline: the highest latency from the
// due time among the requests due in each second of the window (at is the
// due time's offset into the window).
func (r *result) noteSecondMax(at, lat time.Duration) {
	i := int(at / time.Second)
	for len(r.secMax) <= i {
		r.secMax = append(r.secMax, 0)
	}
	r.secMax[i] = max(r.secMax[i], uint64(lat))
}

// mergeSecondMax merges timeline o into dst and returns it.
func mergeSecondMax(dst, o []uint64) []uint64 {
	for i, v := range o {
		if i == len(dst) {
			dst = append(dst, 0)
		}
		dst[i] = max(dst[i], v)
	}
	return dst
}

// workRate is one connection's open loop. base is the start of the run;
// the warm-up, the measured window and the drain follow it.
func workRate(c *client, wl workload, cfg *config, id int, base time.Time, res *result) {
	w := newWorker(c, wl, cfg, id, res)
	s := newSchedule(cfg.rate, cfg.conns, cfg.pipeline, id)
	from := cfg.warmup
	to := from + cfg.duration
	cutoff := to + cfg.drain
	_ = c.conn.SetDeadline(base.Add(cutoff))
	p := uint64(cfg.pipeline)
	var prevDone time.Duration
	k := int64(0)
	for ; s.at(k) < to; k++ {
		due := s.at(k)
		now := time.Since(base)
		if now >= cutoff {
			break
		}
		if due > now {
			time.Sleep(due - now)
		}
		w.build()
		sent := time.Since(base)
		limited, err := w.exchange()
		done := time.Since(base)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break // the drain is over: batch k is unanswered
		}
		if err != nil {
			res.ioErr = err
			return
		}
		if due >= from {
			res.hist.recordN(uint64(latency(due, sent, done, prevDone)), p)
			res.dueHist.recordN(uint64(done-due), p)
			res.lag.recordN(uint64(sendLag(due, sent, prevDone)), p)
			res.ops += p
			res.limited += limited
			res.lastDone = max(res.lastDone, done-from)
			res.noteSecondMax(due-from, done-due)
		}
		prevDone = done
	}
	// What was due in the window and is unanswered at the cutoff waited at
	// least until then.
	for j := max(k, s.first(from)); s.at(j) < to; j++ {
		wait := uint64(cutoff - s.at(j))
		res.hist.recordN(wait, p)
		res.dueHist.recordN(wait, p)
		res.unanswered += p
		res.noteSecondMax(s.at(j)-from, time.Duration(wait))
	}
}
