package main

import (
	"fmt"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

// line is one jsonl line as compare.sh writes it, with the loadgen fields
// the chart ignores.
func line(server, mode, row string, round, pipe int, ops, p50, p99, p999 float64) string {
	return fmt.Sprintf(`{"server":%q,"persistence":%q,"row":%q,"round":%d,"workload":"x","addr":"127.0.0.1:1","conns":50,"pipeline":%d,"ops_per_sec":%g,"p50_us":%g,"p99_us":%g,"p999_us":%g,"max_us":1,"errors":0}`,
		server, mode, row, round, pipe, ops, p50, p99, p999)
}

// got is a cell reduced to comparable text: label, then each server's
// round, ops/s and p50/p99/p99.9 ("-" when it has no run).
func got(res results) []string {
	var out []string
	for _, c := range res.Cells {
		s := c.label(res.Modes > 1)
		for i, r := range c.Best {
			if r == nil {
				s += " | " + servers[i] + " -"
				continue
			}
			s += fmt.Sprintf(" | %s r%d %g %g/%g/%g", servers[i], r.Round, r.OpsPerSec, r.P50, r.P99, r.P999)
		}
		out = append(out, s)
	}
	return out
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name   string
		lines  []string
		want   []string
		rounds int
	}{{
		name: "one round, both servers",
		lines: []string{
			line("redis", "no", "set", 1, 1, 200, 10, 20, 30),
			line("ratekv", "no", "set", 1, 1, 180, 11, 21, 31),
		},
		want:   []string{"set p1 | redis r1 200 10/20/30 | ratekv r1 180 11/21/31"},
		rounds: 1,
	}, {
		name: "the no-op ceiling's and the floor's runs are not charted",
		lines: []string{
			line("redis", "no", "ping", 1, 1, 200, 10, 20, 30),
			line("noop", "no", "ping", 1, 1, 500, 1, 2, 3),
			line("floor", "no", "ping", 1, 1, 600, 1, 2, 3),
			line("ratekv", "no", "ping", 1, 1, 180, 11, 21, 31),
		},
		want:   []string{"ping p1 | redis r1 200 10/20/30 | ratekv r1 180 11/21/31"},
		rounds: 1,
	}, {
		name: "best round per server, its latencies with it",
		lines: []string{
			line("redis", "no", "get", 1, 32, 100, 1, 2, 3),
			line("ratekv", "no", "get", 1, 32, 300, 4, 5, 6),
			line("redis", "no", "get", 2, 32, 150, 7, 8, 9),
			line("ratekv", "no", "get", 2, 32, 250, 1, 1, 1),
		},
		want:   []string{"get p32 | redis r2 150 7/8/9 | ratekv r1 300 4/5/6"},
		rounds: 2,
	}, {
		name: "a tie keeps the earlier round",
		lines: []string{
			line("redis", "no", "incr", 1, 1, 100, 1, 1, 1),
			line("redis", "no", "incr", 2, 1, 100, 2, 2, 2),
			line("redis", "no", "incr", 3, 1, 99, 3, 3, 3),
		},
		want:   []string{"incr p1 | redis r1 100 1/1/1 | ratekv -"},
		rounds: 3,
	}, {
		name: "row, then mode, then pipeline, each in order of first appearance",
		lines: []string{
			line("redis", "no", "set", 1, 32, 1, 1, 1, 1),
			line("redis", "no", "set", 1, 1, 2, 1, 1, 1),
			line("redis", "no", "throttle", 1, 32, 3, 1, 1, 1),
			line("redis", "always", "set", 1, 32, 4, 1, 1, 1),
			line("ratekv", "always", "throttle", 1, 1, 5, 1, 1, 1),
		},
		want: []string{
			"set no AOF p32 | redis r1 1 1/1/1 | ratekv -",
			"set no AOF p1 | redis r1 2 1/1/1 | ratekv -",
			"set always p32 | redis r1 4 1/1/1 | ratekv -",
			"throttle no AOF p32 | redis r1 3 1/1/1 | ratekv -",
			"throttle always p1 | redis - | ratekv r1 5 1/1/1",
		},
		rounds: 1,
	}, {
		name: "paired rows keep their name; blank lines skipped",
		lines: []string{
			line("ratekv", "no", "zset_recipe/sw_throttle", 1, 1, 10, 1, 1, 1),
			"",
			line("redis", "no", "zset_recipe/sw_throttle", 1, 1, 5, 1, 1, 1),
		},
		want:   []string{"zset_recipe/sw_throttle p1 | redis r1 5 1/1/1 | ratekv r1 10 1/1/1"},
		rounds: 1,
	}}
	for i, tt := range tests {
		runs, err := parse(strings.NewReader(strings.Join(tt.lines, "\n") + "\n"))
		if err != nil {
			t.Fatalf("%d (%s): parse: %v", i, tt.name, err)
		}
		res := summarize(runs)
		have := got(res)
		if strings.Join(have, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%d (%s):\nhave %q\nwant %q", i, tt.name, have, tt.want)
		}
		if res.Rounds != tt.rounds {
			t.Errorf("%d (%s): have %d rounds, want %d", i, tt.name, res.Rounds, tt.rounds)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"", "no runs"},
		{"\n  \n", "no runs"},
		{line("redis", "no", "set", 1, 1, 1, 1, 1, 1) + "\n{not json\n", "line 2:"},
		{line("memcached", "no", "set", 1, 1, 1, 1, 1, 1), `line 1: server "memcached"`},
		{line("redis", "no", "", 1, 1, 1, 1, 1, 1), "line 1: row, persistence or pipeline missing"},
		{line("redis", "no", "set", 1, 0, 1, 1, 1, 1), "line 1: row, persistence or pipeline missing"},
		{`{"server":"redis","persistence":"no","row":"set","pipeline":"1"}`, "line 1:"},
	}
	for i, tt := range tests {
		_, err := parse(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%d: have error %v, want one containing %q", i, err, tt.want)
		}
	}
}

func TestRatio(t *testing.T) {
	redis, ratekv, idle := &run{OpsPerSec: 200}, &run{OpsPerSec: 300}, &run{}
	tests := []struct {
		best [2]*run
		want float64
		ok   bool
	}{
		{[2]*run{redis, ratekv}, 1.5, true},
		{[2]*run{ratekv, redis}, 2.0 / 3, true},
		{[2]*run{redis, nil}, 0, false},
		{[2]*run{nil, ratekv}, 0, false},
		{[2]*run{idle, ratekv}, 0, false},
	}
	for i, tt := range tests {
		have, ok := cell{Best: tt.best}.ratio()
		if have != tt.want || ok != tt.ok {
			t.Errorf("%d: have %v, %v, want %v, %v", i, have, ok, tt.want, tt.ok)
		}
	}
}

func TestLogTicks(t *testing.T) {
	tests := []struct {
		ticker plot.Ticker
		lo, hi float64
		want   string
	}{
		{siTicks{}, 1e4, 4e6, "10k 20k 50k 100k 200k 500k 1M 2M 5M 10M"},
		{durTicks{}, 100, 6e4, "100 µs 200 µs 500 µs 1 ms 2 ms 5 ms 10 ms 20 ms 50 ms 100 ms"},
	}
	for i, tt := range tests {
		var labels []string
		seen := map[float64]bool{}
		for _, tk := range tt.ticker.Ticks(tt.lo, tt.hi) {
			if seen[tk.Value] {
				t.Errorf("%d: tick %g twice", i, tk.Value)
			}
			seen[tk.Value] = true
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if have := strings.Join(labels, " "); have != tt.want {
			t.Errorf("%d: have %q, want %q", i, have, tt.want)
		}
	}
}
