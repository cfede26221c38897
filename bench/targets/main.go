// Command targets checks the numbers of one full bench run (bench/all.sh)
// against the project's targets, and prints a markdown table: each
// target, what was measured, what it needs, and whether it is met.
//
//	go run ./bench/targets -dir bench/results
//
// It reads, from dir, the jsonl files the bench scripts write beside their
// tables: latest.jsonl (compare.sh, the workloads without persistence and
// the no-op ceiling), persist.jsonl (compare.sh with PERSIST="no everysec
// always"), memory.jsonl (memory.sh) and scale.jsonl (scale.sh). A file
// that is missing leaves its targets out, with a note. A ratio target is
// judged by the median, over the rounds in which both sides ran, of the
// ratio within each round: the servers of a round ran minutes apart at
// most, so the pair shares the machine's mood, where best-of rounds may
// come from different moods.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	dir := flag.String("dir", "bench/results", "`directory` holding the run's jsonl files")
	flag.Parse()
	rows, notes, err := evaluate(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "targets: %v\n", err)
		os.Exit(1)
	}
	write(os.Stdout, rows, notes)
}

// run is one loadgen run of compare.sh.
type run struct {
	Server      string  `json:"server"`
	Persistence string  `json:"persistence"`
	Row         string  `json:"row"`
	Round       int     `json:"round"`
	Pipeline    int     `json:"pipeline"`
	OpsPerSec   float64 `json:"ops_per_sec"`
}

// cell names one server's runs of one workload: server, persistence, row
// and pipeline.
type cell struct {
	server, mode, row string
	pipe              int
}

// rounds holds each cell's ops/s by round.
type rounds map[cell]map[int]float64

func byRound(runs []run) rounds {
	r := rounds{}
	for _, x := range runs {
		c := cell{x.Server, x.Persistence, x.Row, x.Pipeline}
		if r[c] == nil {
			r[c] = map[int]float64{}
		}
		if x.OpsPerSec > 0 {
			r[c][x.Round] = x.OpsPerSec
		}
	}
	return r
}

// ratio returns the median over the rounds both cells ran of a's ops/s
// over b's, and whether there was such a round.
func (r rounds) ratio(a, b cell) (float64, bool) {
	var v []float64
	for round, x := range r[a] {
		if y, ok := r[b][round]; ok {
			v = append(v, x/y)
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	sort.Float64s(v)
	if n := len(v); n%2 == 1 {
		return v[n/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

// memory is one line of memory.sh's jsonl.
type memory struct {
	Case      string  `json:"case"`
	Server    string  `json:"server"`
	Units     float64 `json:"units"`
	UsedBytes float64 `json:"used_bytes"`
	RSSBytes  float64 `json:"rss_bytes"`
}

// scaleCase is one line of scale.sh's jsonl: one window of a case (the
// expiry samples, which have no p999_us, are skipped).
type scaleCase struct {
	Case string   `json:"case"`
	P999 *float64 `json:"p999_us"`
}

// row is one line of the output table.
type row struct {
	Issue    int
	Target   string
	Measured float64
	Op       string // ">=" or "<="
	Need     float64
	Unit     string // "x" for ratios, "B" for bytes
}

func (r row) met() bool {
	if r.Op == ">=" {
		return r.Measured >= r.Need
	}
	return r.Measured <= r.Need
}

// readLines decodes every non-blank line of path into a new T.
func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// evaluate reads the run in dir and returns the table's rows and notes on
// what could not be checked. It fails only on a file it cannot parse.
func evaluate(dir string) ([]row, []string, error) {
	var rows []row
	var notes []string
	missing := func(file string, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			notes = append(notes, file+" missing: its targets are not checked")
			return nil
		}
		return err
	}
	ratio := func(issue int, target string, r rounds, a, b cell, need float64) {
		v, ok := r.ratio(a, b)
		if !ok {
			notes = append(notes, target+": not measured in this run")
			return
		}
		rows = append(rows, row{issue, target, v, ">=", need, "x"})
	}

	if runs, err := readLines[run](filepath.Join(dir, "latest.jsonl")); err != nil {
		if err := missing("latest.jsonl", err); err != nil {
			return nil, nil, err
		}
	} else {
		r := byRound(runs)
		pair := func(target, row string, pipe int, need float64) {
			ratio(6, target, r, cell{"ratekv", "no", row, pipe}, cell{"redis", "no", row, pipe}, need)
		}
		pair("CL.THROTTLE / redis Lua GCRA, pipeline 32", "throttle", 32, 10)
		ratio(6, "CL.THROTTLE / no-op PING, pipeline 32", r, cell{"ratekv", "no", "throttle", 32}, cell{"noop", "no", "ping", 32}, 0.5)
		ratio(6, "CL.THROTTLE / ratekv PING, pipeline 1", r, cell{"ratekv", "no", "throttle", 1}, cell{"ratekv", "no", "ping", 1}, 0.95)
		for _, w := range []string{"set", "get", "incr"} {
			pair(strings.ToUpper(w)+" / redis, pipeline 32", w, 32, 1.2)
		}
		ratio(6, "ratekv PING / no-op PING, pipeline 32", r, cell{"ratekv", "no", "ping", 32}, cell{"noop", "no", "ping", 32}, 0.95)
		pair("SL.THROTTLE / redis MULTI recipe, pipeline 32", "sliding_vs_recipe", 32, 10)
		pair("MULTI recipe, ratekv / redis, pipeline 32", "recipe", 32, 1.5)
		notes = append(notes, floorNotes(r)...)
	}

	if runs, err := readLines[run](filepath.Join(dir, "persist.jsonl")); err != nil {
		if err := missing("persist.jsonl", err); err != nil {
			return nil, nil, err
		}
	} else {
		r := byRound(runs)
		for _, w := range []string{"set", "throttle"} {
			name := map[string]string{"set": "SET", "throttle": "CL.THROTTLE"}[w]
			for _, p := range []int{1, 32} {
				ratio(5, fmt.Sprintf("%s everysec / appendonly no, pipeline %d", name, p), r,
					cell{"ratekv", "everysec", w, p}, cell{"ratekv", "no", w, p}, 0.85)
			}
		}
		for _, mode := range []string{"no", "everysec", "always"} {
			for _, w := range []string{"set", "throttle"} {
				name := map[string]string{"set": "SET", "throttle": "CL.THROTTLE vs Lua"}[w]
				for _, p := range []int{1, 32} {
					ratio(5, fmt.Sprintf("%s / redis, appendfsync %s, pipeline %d", name, mode, p), r,
						cell{"ratekv", mode, w, p}, cell{"redis", mode, w, p}, 1)
				}
			}
		}
		notes = append(notes, floorNotes(r)...)
	}

	if mems, err := readLines[memory](filepath.Join(dir, "memory.jsonl")); err != nil {
		if err := missing("memory.jsonl", err); err != nil {
			return nil, nil, err
		}
	} else {
		per := map[string]float64{} // case|server -> bytes per unit (ratekv RSS, redis used_memory)
		for _, m := range mems {
			if m.Units <= 0 {
				continue
			}
			v := m.UsedBytes
			if m.Server == "ratekv" {
				v = m.RSSBytes
			}
			per[m.Case+"|"+m.Server] = v / m.Units
		}
		perUnit := func(target, key string, need float64) {
			v, ok := per[key]
			if !ok {
				notes = append(notes, target+": not measured in this run")
				return
			}
			rows = append(rows, row{6, target, v, "<=", need, "B"})
		}
		perUnit("GCRA key, ratekv RSS per key", "gcra|ratekv", 56)
		perUnit("SL.THROTTLE entry (10k keys x 100), RSS per entry", "sl100|ratekv", 12)
		perUnit("SL.THROTTLE entry (1k keys x 1000), RSS per entry", "sl1000|ratekv", 12)
		for _, c := range []string{"zset100", "zset1000"} {
			r, rok := per[c+"|redis"]
			if !rok {
				notes = append(notes, c+": redis not measured in this run")
				continue
			}
			perUnit(fmt.Sprintf("sorted set entry (%s), ratekv RSS vs redis used_memory (%.1f B)", c, r), c+"|ratekv", r)
		}
	}

	if cases, err := readLines[scaleCase](filepath.Join(dir, "scale.jsonl")); err != nil {
		if err := missing("scale.jsonl", err); err != nil {
			return nil, nil, err
		}
	} else {
		// A case measured in several windows has a line per window;
		// scale.sh's table shows the lowest p99.9, and so does this.
		p := map[string]float64{}
		for _, c := range cases {
			if c.Case == "" || c.P999 == nil {
				continue
			}
			if v, ok := p[c.Case]; !ok || *c.P999 < v {
				p[c.Case] = *c.P999
			}
		}
		small, sok := p["small"]
		for _, c := range []struct{ name, target string }{
			{"big", "p99.9 with 10M keys resident / with 100k, same 100k called"},
			{"big_all", "p99.9 with 10M keys resident, all called / with 100k"},
			{"expiry", "p99.9 while 10M keys expire / with 100k (no latency spikes)"},
		} {
			v, ok := p[c.name]
			if !ok || !sok || small <= 0 {
				notes = append(notes, c.target+": not measured in this run")
				continue
			}
			rows = append(rows, row{6, c.target, v / small, "<=", 2, "x"})
		}
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("nothing to check in %s", dir)
	}
	return rows, notes, nil
}

// floorNotes says, for each row the floor server ran (PING, SET; not a
// target), how far each server got of the floor's rate (medians of the
// rounds): where both are near it, the load generator set the pace and
// their ratio is a tie.
func floorNotes(r rounds) []string {
	var notes []string
	for _, w := range []string{"ping", "set"} {
		for _, p := range []int{1, 32} {
			floor := cell{"floor", "no", w, p}
			rf, ok1 := r.ratio(cell{"redis", "no", w, p}, floor)
			af, ok2 := r.ratio(cell{"ratekv", "no", w, p}, floor)
			if ok1 && ok2 {
				notes = append(notes, fmt.Sprintf("%s, appendonly no, pipeline %d: against the floor server (bench/noop -loop epoll, no work), redis %.2f and ratekv %.2f (within 5 %% of 1.00: bounded by the load generator)", strings.ToUpper(w), p, rf, af))
			}
		}
	}
	return notes
}

// write prints the table, a count of the targets met, and the notes.
func write(w io.Writer, rows []row, notes []string) {
	fmt.Fprintln(w, "| issue | target | measured | needed | met |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---|")
	met := 0
	for _, r := range rows {
		mark := "no"
		if r.met() {
			mark = "yes"
			met++
		}
		format := "%.2f"
		if r.Unit == "B" {
			format = "%.1f"
		}
		fmt.Fprintf(w, "| %d | %s | "+format+"%s | %s "+format+"%s | %s |\n",
			r.Issue, r.Target, r.Measured, r.Unit, r.Op, r.Need, r.Unit, mark)
	}
	fmt.Fprintf(w, "\n%d of %d targets met.\n", met, len(rows))
	for _, n := range notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
}
