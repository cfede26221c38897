package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, dir, name string, lines ...string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

func find(t *testing.T, rows []row, target string) row {
	t.Helper()
	for _, r := range rows {
		if r.Target == target {
			return r
		}
	}
	t.Fatalf("no row %q", target)
	return row{}
}

func TestEvaluateJudgesMediansOfPairedRounds(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "latest.jsonl",
		`{"server":"redis","persistence":"no","row":"set","round":1,"pipeline":32,"ops_per_sec":800000}`,
		`{"server":"ratekv","persistence":"no","row":"set","round":1,"pipeline":32,"ops_per_sec":1200000}`,
		`{"server":"redis","persistence":"no","row":"set","round":2,"pipeline":32,"ops_per_sec":1000000}`,
		`{"server":"ratekv","persistence":"no","row":"set","round":2,"pipeline":32,"ops_per_sec":900000}`,
		`{"server":"redis","persistence":"no","row":"set","round":3,"pipeline":32,"ops_per_sec":500000}`,
		`{"server":"ratekv","persistence":"no","row":"set","round":3,"pipeline":32,"ops_per_sec":800000}`,
		`{"server":"ratekv","persistence":"no","row":"set","round":4,"pipeline":32,"ops_per_sec":5000000}`,
		``,
		`{"server":"redis","persistence":"no","row":"get","round":1,"pipeline":32,"ops_per_sec":1000000}`,
		`{"server":"ratekv","persistence":"no","row":"get","round":1,"pipeline":32,"ops_per_sec":1100000}`,
	)
	writeFile(t, dir, "scale.jsonl",
		`{"case":"small","window":1,"p999_us":1800}`,
		`{"case":"small","window":2,"p999_us":1000}`,
		`{"case":"small","window":3,"p999_us":1200}`,
		`{"case":"big","window":1,"p999_us":1500}`,
		`{"case":"big","window":2,"p999_us":2500}`,
		`{"t_s":1.0,"dbsize":5}`,
		`{"case":"expiry","p999_us":5000}`,
	)
	rows, notes, err := evaluate(dir)
	require.NoError(t, err)

	set := find(t, rows, "SET / redis, pipeline 32")
	require.InDelta(t, 1.5, set.Measured, 1e-9, "the median of 1.5, 0.9 and 1.6; round 4 has no pair")
	require.True(t, set.met())
	get := find(t, rows, "GET / redis, pipeline 32")
	require.InDelta(t, 1.1, get.Measured, 1e-9)
	require.False(t, get.met())
	big := find(t, rows, "p99.9 with 10M keys resident / with 100k, same 100k called")
	require.InDelta(t, 1.5, big.Measured, 1e-9, "the lowest p99.9 of each case's windows")
	require.True(t, big.met())
	require.False(t, find(t, rows, "p99.9 while 10M keys expire / with 100k (no latency spikes)").met())

	joined := strings.Join(notes, "\n")
	require.Contains(t, joined, "persist.jsonl missing")
	require.Contains(t, joined, "memory.jsonl missing")
	require.Contains(t, joined, "INCR / redis, pipeline 32: not measured")
	require.Contains(t, joined, "all called / with 100k: not measured")

	var out bytes.Buffer
	write(&out, rows, notes)
	require.Contains(t, out.String(), "| 6 | SET / redis, pipeline 32 | 1.50x | >= 1.20x | yes |")
	require.Contains(t, out.String(), "| 6 | GET / redis, pipeline 32 | 1.10x | >= 1.20x | no |")
}

func TestEvaluateMemory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "memory.jsonl",
		`{"case":"gcra","server":"redis","units":1000,"used_bytes":113000,"rss_bytes":116000}`,
		`{"case":"gcra","server":"ratekv","units":1000,"used_bytes":40000,"rss_bytes":47000}`,
		`{"case":"zset100","server":"redis","units":100,"used_bytes":5000,"rss_bytes":9000}`,
		`{"case":"zset100","server":"ratekv","units":100,"used_bytes":4000,"rss_bytes":6000}`,
	)
	rows, _, err := evaluate(dir)
	require.NoError(t, err)
	g := find(t, rows, "GCRA key, ratekv RSS per key")
	require.InDelta(t, 47, g.Measured, 1e-9, "ratekv is judged by RSS")
	require.True(t, g.met())
	z := find(t, rows, "sorted set entry (zset100), ratekv RSS vs redis used_memory (50.0 B)")
	require.InDelta(t, 60, z.Measured, 1e-9)
	require.False(t, z.met(), "60 B of RSS against Redis's 50 B of used_memory")
}

func TestEvaluateRejectsGarbageAndEmpty(t *testing.T) {
	dir := t.TempDir()
	_, _, err := evaluate(dir)
	require.ErrorContains(t, err, "nothing to check")
	writeFile(t, dir, "latest.jsonl", `{"server":`)
	_, _, err = evaluate(dir)
	require.ErrorContains(t, err, "latest.jsonl line 1")
}

func TestEvaluatePersistNotesTheFloor(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "persist.jsonl",
		`{"server":"redis","persistence":"no","row":"set","round":1,"pipeline":1,"ops_per_sec":140000}`,
		`{"server":"ratekv","persistence":"no","row":"set","round":1,"pipeline":1,"ops_per_sec":126000}`,
		`{"server":"floor","persistence":"no","row":"set","round":1,"pipeline":1,"ops_per_sec":100000}`,
		`{"server":"floor","persistence":"no","row":"set","round":2,"pipeline":1,"ops_per_sec":140000}`,
	)
	rows, notes, err := evaluate(dir)
	require.NoError(t, err)
	require.False(t, find(t, rows, "SET / redis, appendfsync no, pipeline 1").met())
	require.Contains(t, strings.Join(notes, "\n"),
		"SET, appendonly no, pipeline 1: against the floor server (bench/noop -loop epoll, no work), redis 1.40 and ratekv 1.26", "round 1's pair; round 2 has no servers")
	for _, r := range rows {
		require.NotContains(t, r.Target, "floor", "the floor is a note, not a target")
	}
}

func TestEvaluateLatestNotesTheFloor(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "latest.jsonl",
		`{"server":"redis","persistence":"no","row":"ping","round":1,"pipeline":1,"ops_per_sec":150000}`,
		`{"server":"ratekv","persistence":"no","row":"ping","round":1,"pipeline":1,"ops_per_sec":135000}`,
		`{"server":"floor","persistence":"no","row":"ping","round":1,"pipeline":1,"ops_per_sec":150000}`,
		`{"server":"ratekv","persistence":"no","row":"throttle","round":1,"pipeline":1,"ops_per_sec":120000}`,
	)
	_, notes, err := evaluate(dir)
	require.NoError(t, err)
	require.Contains(t, strings.Join(notes, "\n"),
		"PING, appendonly no, pipeline 1: against the floor server (bench/noop -loop epoll, no work), redis 1.00 and ratekv 0.90")
}
