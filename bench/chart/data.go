package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// run is one line of compare.sh's jsonl: one loadgen run against one
// server. Other fields (the loadgen's ops, max_us, errors, …) are ignored.
type run struct {
	Server      string  `json:"server"`      // "redis" or "ratekv"
	Persistence string  `json:"persistence"` // "no", "everysec", "always"
	Row         string  `json:"row"`         // the WORKLOADS entry: "set", "throttle", "A/B"
	Round       int     `json:"round"`       // 1 … ROUNDS
	Pipeline    int     `json:"pipeline"`    // requests per batch
	OpsPerSec   float64 `json:"ops_per_sec"` // requests per second
	P50         float64 `json:"p50_us"`      // latency percentiles, µs
	P99         float64 `json:"p99_us"`
	P999        float64 `json:"p999_us"`
}

// servers are the two bars of every group, in drawing order; cell.Best is
// indexed like it.
var servers = [2]string{"redis", "ratekv"}

// cell is one group of bars, one line of compare.sh's table: a row at one
// persistence mode and pipeline depth, with each server's best round.
type cell struct {
	Row         string
	Persistence string
	Pipeline    int
	Best        [2]*run // indexed like servers; nil when the server has no run
}

// results is what the charts draw: the cells in table order, how many
// rounds were run and how many persistence modes occur.
type results struct {
	Cells  []cell
	Rounds int
	Modes  int
}

// parse reads compare.sh's jsonl, one run per line; blank lines are
// skipped. It fails on a line that is not a run, naming the line.
func parse(r io.Reader) ([]run, error) {
	var runs []run
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ru run
		if err := json.Unmarshal(line, &ru); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		switch {
		case ru.Server == "noop" || ru.Server == "floor":
			continue // the no-op ceiling and the floor have tables of their own (compare.sh)
		case !slices.Contains(servers[:], ru.Server):
			return nil, fmt.Errorf("line %d: server %q, want redis, ratekv, noop or floor", n, ru.Server)
		case ru.Row == "" || ru.Persistence == "" || ru.Pipeline < 1:
			return nil, fmt.Errorf("line %d: row, persistence or pipeline missing", n)
		}
		runs = append(runs, ru)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	if len(runs) == 0 {
		return nil, errors.New("no runs")
	}
	return runs, nil
}

// summarize keeps each server's best round of each cell, the rule of
// compare.sh's table: the highest ops/s, the earlier round on a tie (noise
// on a shared machine only ever slows a run down). All of a cell's numbers
// come from that one round. Cells are ordered like the table, row, then
// persistence, then pipeline, each in order of first appearance in runs.
func summarize(runs []run) results {
	var rows, modes []string
	var pipes []int
	type key struct {
		row, mode string
		pipe      int
	}
	cells := map[key]*cell{}
	res := results{}
	for i := range runs {
		ru := &runs[i]
		if !slices.Contains(rows, ru.Row) {
			rows = append(rows, ru.Row)
		}
		if !slices.Contains(modes, ru.Persistence) {
			modes = append(modes, ru.Persistence)
		}
		if !slices.Contains(pipes, ru.Pipeline) {
			pipes = append(pipes, ru.Pipeline)
		}
		res.Rounds = max(res.Rounds, ru.Round)
		k := key{ru.Row, ru.Persistence, ru.Pipeline}
		c := cells[k]
		if c == nil {
			c = &cell{Row: ru.Row, Persistence: ru.Persistence, Pipeline: ru.Pipeline}
			cells[k] = c
		}
		s := slices.Index(servers[:], ru.Server)
		if c.Best[s] == nil || ru.OpsPerSec > c.Best[s].OpsPerSec {
			c.Best[s] = ru
		}
	}
	for _, r := range rows {
		for _, m := range modes {
			for _, p := range pipes {
				if c := cells[key{r, m, p}]; c != nil {
					res.Cells = append(res.Cells, *c)
				}
			}
		}
	}
	res.Modes = len(modes)
	return res
}

// label names c under its bars, "set p32", or with the persistence mode
// when the results hold more than one: "set everysec p32", "set no AOF p32".
func (c cell) label(withMode bool) string {
	s := c.Row
	switch {
	case !withMode:
	case c.Persistence == "no":
		s += " no AOF"
	default:
		s += " " + c.Persistence
	}
	return s + " p" + strconv.Itoa(c.Pipeline)
}

// ratio is ratekv's ops/s over redis's; ok is false unless both ran and
// redis did some work.
func (c cell) ratio() (r float64, ok bool) {
	redis, ratekv := c.Best[0], c.Best[1]
	if redis == nil || ratekv == nil || redis.OpsPerSec <= 0 {
		return 0, false
	}
	return ratekv.OpsPerSec / redis.OpsPerSec, true
}
