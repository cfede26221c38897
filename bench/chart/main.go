// Command chart draws PNG charts of a bench/compare.sh run: ratekv against
// redis-server, from the jsonl compare.sh writes beside its table.
//
//	go run . -in ../results/latest.jsonl -out-dir ../results
//
// It writes throughput.png (ops/s of each server in every cell of the
// table, with ratekv / redis over the ratekv bar) and latency.png (p50,
// p99 and p99.9, one panel each), keeping each cell's best round by ops/s
// as the table does. Cells are labelled like "set p32", with the
// persistence mode added ("set everysec p32") when the file holds several.
//
// It is a module of its own (bench/chart/go.mod) so that gonum/plot and
// its font and image dependencies stay out of the server's go.mod; the
// parsing and best-round selection (data.go) are separate from the drawing
// (chart.go) so they can be tested without images.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	in := flag.String("in", "bench/results/latest.jsonl", "compare.sh's jsonl `file`")
	dir := flag.String("out-dir", "bench/results", "`directory` for the PNG files")
	prefix := flag.String("prefix", "", "prefix of the file names, e.g. persist- for persist-throughput.png")
	suffix := flag.String("title-suffix", "", "second title line, e.g. the date, commit and machine")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "chart: unexpected arguments %q\n", flag.Args())
		flag.Usage()
		os.Exit(2)
	}
	if err := chart(*in, *dir, *prefix, *suffix); err != nil {
		fmt.Fprintf(os.Stderr, "chart: %v\n", err)
		os.Exit(1)
	}
}

// chart reads the jsonl at in and renders its charts into dir.
func chart(in, dir, prefix, suffix string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	runs, err := parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return render(summarize(runs), dir, prefix, suffix)
}
