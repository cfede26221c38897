package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRender draws both charts, with two persistence modes, a cell where
// ratekv did not run and one where redis did no work (bars at 0 must not
// break the log axis), and checks the PNGs decode at a sensible size.
func TestRender(t *testing.T) {
	lines := []string{
		line("redis", "no", "ping", 1, 1, 230000, 200, 420, 1200),
		line("ratekv", "no", "ping", 1, 1, 237000, 190, 390, 640),
		line("redis", "no", "ping", 1, 32, 3.2e6, 500, 820, 1700),
		line("ratekv", "no", "ping", 1, 32, 3.9e6, 400, 860, 1745),
		line("redis", "always", "throttle", 1, 1, 35000, 1300, 3400, 4300),
		line("redis", "always", "set", 1, 1, 0, 0, 0, 0),
		line("ratekv", "always", "set", 1, 1, 46000, 900, 1966, 5177),
	}
	runs, err := parse(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "results")
	if err := render(summarize(runs), dir, "x-", "2026-01-01, commit abc"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x-throughput.png", "x-latency.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b := img.Bounds()
		if st.Size() < 10000 || b.Dx() < 700 || b.Dy() < 500 {
			t.Errorf("%s: %d bytes, %dx%d pixels: want at least 10000 bytes, 700x500", name, st.Size(), b.Dx(), b.Dy())
		}
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) > 0 {
		t.Errorf("left behind %v", tmps)
	}
}

func TestRenderNothing(t *testing.T) {
	if err := render(results{}, t.TempDir(), "", ""); err == nil {
		t.Error("have no error for no cells, want one")
	}
}
