package main

// Both charts use a log y axis: one run spans PING at pipeline 32 (millions
// of ops/s) and a Lua script at pipeline 1 (tens of thousands), and
// latencies from 100 µs to tens of ms; on a linear axis the small bars
// vanish. The ratio printed over each ratekv bar carries the comparison
// that bar lengths on a log axis do not.

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// colors of the servers' bars, indexed like servers.
var colors = [2]color.Color{
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // redis: red
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // ratekv: blue
}

// names of the servers in legends, indexed like servers.
var names = [2]string{"redis-server", "ratekv"}

// barWidth is the width of one bar; a group is two bars and a gap.
const barWidth = vg.Length(0.3 * vg.Inch)

// margin is the blank border around each image.
const margin = vg.Length(8)

// render draws throughput.png and latency.png (each name after prefix)
// into dir, creating dir if needed. suffix, when not empty, is the last
// title line (date, commit, machine).
func render(res results, dir, prefix, suffix string) error {
	if len(res.Cells) == 0 {
		return fmt.Errorf("no cells to draw")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w := max(8*vg.Inch, vg.Length(len(res.Cells))*0.9*vg.Inch+1.6*vg.Inch)

	tp, err := throughputPlot(res, suffix)
	if err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	img := vgimg.New(w, 6*vg.Inch)
	tp.Draw(draw.Crop(draw.New(img), margin, -margin, margin, -margin))
	if err := savePNG(img, filepath.Join(dir, prefix+"throughput.png")); err != nil {
		return err
	}

	lps, err := latencyPlots(res, suffix)
	if err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	img = vgimg.New(w, vg.Length(len(lps))*4.5*vg.Inch)
	grid := make([][]*plot.Plot, len(lps))
	for i, p := range lps {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(lps), Cols: 1, PadY: vg.Inch / 4,
		PadTop: margin, PadBottom: margin, PadLeft: margin, PadRight: margin}
	for i, cs := range plot.Align(grid, tiles, draw.New(img)) {
		grid[i][0].Draw(cs[0])
	}
	return savePNG(img, filepath.Join(dir, prefix+"latency.png"))
}

// savePNG writes img to path by way of path.tmp, so a reader never sees
// half a file.
func savePNG(img *vgimg.Canvas, path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// throughputPlot: per cell, each server's ops/s, with ratekv / redis over
// the ratekv bar and "n/a" where a server has no run.
func throughputPlot(res results, suffix string) (*plot.Plot, error) {
	title := "ratekv vs redis-server: throughput, ops/s (log scale; higher is better; label: ratekv / redis)"
	p := newPlot(res, title, suffix, "ops/s", siTicks{})
	vals := func(s int) []float64 { return field(res, s, func(r *run) float64 { return r.OpsPerSec }) }
	floor, top := logRange(vals(0), vals(1))
	for s := range servers {
		if err := addBars(p, s, vals(s), floor); err != nil {
			return nil, err
		}
	}
	for s := range servers {
		var ls plotter.XYLabels
		for i, c := range res.Cells {
			txt, y := "n/a", floor
			if c.Best[s] != nil {
				r, ok := c.ratio()
				if s == 0 || !ok {
					continue
				}
				txt, y = fmt.Sprintf("%.2f×", r), max(floor, c.Best[s].OpsPerSec)
			}
			ls.XYs = append(ls.XYs, plotter.XY{X: float64(i), Y: y})
			ls.Labels = append(ls.Labels, txt)
		}
		if len(ls.Labels) == 0 {
			continue
		}
		l, err := plotter.NewLabels(ls)
		if err != nil {
			return nil, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign = draw.XCenter
			l.TextStyle[i].Font.Size = vg.Points(9)
		}
		l.Offset = vg.Point{X: barOffset(s), Y: vg.Points(3)}
		p.Add(l)
	}
	// Headroom over the tallest bar for its label and the legend.
	p.Y.Min, p.Y.Max = floor, top*4
	return p, nil
}

// latencyPlots: one panel per percentile, p50, p99, p99.9, all on the
// same y range so the panels compare.
func latencyPlots(res results, suffix string) ([]*plot.Plot, error) {
	pcts := []struct {
		name string
		get  func(*run) float64
	}{
		{"p50", func(r *run) float64 { return r.P50 }},
		{"p99", func(r *run) float64 { return r.P99 }},
		{"p99.9", func(r *run) float64 { return r.P999 }},
	}
	var all [][]float64
	for _, pc := range pcts {
		for s := range servers {
			all = append(all, field(res, s, pc.get))
		}
	}
	floor, top := logRange(all...)
	var plots []*plot.Plot
	for i, pc := range pcts {
		title := ""
		if i == 0 {
			title = "ratekv vs redis-server: latency per request (log scale; lower is better)"
		} else {
			suffix = ""
		}
		p := newPlot(res, title, suffix, pc.name+" latency", durTicks{})
		for s := range servers {
			if err := addBars(p, s, all[2*i+s], floor); err != nil {
				return nil, err
			}
		}
		p.Y.Min, p.Y.Max = floor, top*3
		if i > 0 {
			p.Legend = plot.NewLegend()
		}
		plots = append(plots, p)
	}
	return plots, nil
}

// newPlot makes a plot with the cells' labels on the x axis, a log y axis
// labelled by ticks, a horizontal grid and the legend at the top left.
func newPlot(res results, title, suffix, ylabel string, ticks plot.Ticker) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	if res.Rounds > 1 && title != "" {
		p.Title.Text += fmt.Sprintf("\nbest of %d rounds per cell", res.Rounds)
	}
	if suffix != "" {
		p.Title.Text += "\n" + suffix
	}
	p.Y.Label.Text = ylabel
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = ticks
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	p.Add(grid)
	names := make([]string, len(res.Cells))
	for i, c := range res.Cells {
		names[i] = c.label(res.Modes > 1)
	}
	p.NominalX(names...)
	// Half a group of margin at each end (padding alone would put the
	// outer bars flush with the image's edges).
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.Legend.Top, p.Legend.Left = true, true
	return p
}

// addBars adds server s's bars, values vs (0: no run) drawn up from floor,
// and its legend entry.
//
// gonum's bars start at 0, which a log axis cannot place, so each bar is
// stacked on an invisible chart of height floor (never added to the plot:
// it is only asked for its heights) and carries the rest of the value.
func addBars(p *plot.Plot, s int, vs []float64, floor float64) error {
	base, rest := make(plotter.Values, len(vs)), make(plotter.Values, len(vs))
	for i, v := range vs {
		base[i] = floor
		rest[i] = max(0, v-floor)
	}
	under, err := plotter.NewBarChart(base, barWidth)
	if err != nil {
		return err
	}
	b, err := plotter.NewBarChart(rest, barWidth)
	if err != nil {
		return err
	}
	b.StackOn(under)
	b.Offset = barOffset(s)
	b.Color = colors[s]
	b.LineStyle.Width = 0
	p.Add(b)
	p.Legend.Add(names[s], b)
	return nil
}

// barOffset is the x offset of server s's bar from the middle of its group.
func barOffset(s int) vg.Length {
	return (vg.Length(s) - 0.5) * barWidth
}

// field lists get of server s's best run in every cell; 0 where it has
// none.
func field(res results, s int, get func(*run) float64) []float64 {
	vs := make([]float64, len(res.Cells))
	for i, c := range res.Cells {
		if r := c.Best[s]; r != nil {
			vs[i] = get(r)
		}
	}
	return vs
}

// logRange returns the power of ten below the smallest positive value
// (where bars start) and the largest value; 1 and 10 when there is none.
func logRange(series ...[]float64) (floor, top float64) {
	lo, hi := math.Inf(1), 0.0
	for _, vs := range series {
		for _, v := range vs {
			if v > 0 && !math.IsInf(v, 0) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if hi == 0 {
		return 1, 10
	}
	return math.Pow10(int(math.Ceil(math.Log10(lo))) - 1), hi
}

// siTicks labels a log axis at 1, 2 and 5 times each power of ten, with
// k and M: "20k", "1M".
type siTicks struct{}

// Ticks implements plot.Ticker.
func (siTicks) Ticks(lo, hi float64) []plot.Tick {
	return logTicks(lo, hi, func(v float64) string {
		switch {
		case v >= 1e6:
			return fmt.Sprintf("%gM", v/1e6)
		case v >= 1e3:
			return fmt.Sprintf("%gk", v/1e3)
		}
		return fmt.Sprintf("%g", v)
	})
}

// durTicks labels a log axis of microseconds at 1, 2 and 5 times each
// power of ten: "200 µs", "5 ms".
type durTicks struct{}

// Ticks implements plot.Ticker.
func (durTicks) Ticks(lo, hi float64) []plot.Tick {
	return logTicks(lo, hi, func(v float64) string {
		switch {
		case v >= 1e6:
			return fmt.Sprintf("%g s", v/1e6)
		case v >= 1e3:
			return fmt.Sprintf("%g ms", v/1e3)
		}
		return fmt.Sprintf("%g µs", v)
	})
}

// logTicks is plot.LogTicks with labels, made by format, on the 1, 2 and
// 5 multiples instead of only the powers of ten.
func logTicks(lo, hi float64, format func(float64) string) []plot.Tick {
	var ts []plot.Tick
	for _, t := range (plot.LogTicks{}).Ticks(lo, hi) {
		// LogTicks gives each power of ten twice, labelled and not.
		if len(ts) > 0 && ts[len(ts)-1].Value == t.Value {
			continue
		}
		t.Label = ""
		m := t.Value / math.Pow10(int(math.Floor(math.Log10(t.Value)+1e-9)))
		if r := math.Round(m); math.Abs(m-r) < 1e-6 && (r == 1 || r == 2 || r == 5) {
			t.Label = format(t.Value)
		}
		ts = append(ts, t)
	}
	return ts
}
