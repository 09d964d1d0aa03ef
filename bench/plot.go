package bench

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WritePlot draws each variant's time per operation, round by round, one
// panel per variant (each with its own scale, so spread and drift show),
// stacked in one image. The format comes from the file name's extension:
// .svg or .png.
func WritePlot(file string, results []*Result) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(file)), ".")
	if format != "svg" && format != "png" {
		return fmt.Errorf("plot %s: the name must end in .svg or .png", file)
	}
	var panels [][]*plot.Plot
	for _, res := range results {
		if res.Matrix != nil {
			ps, err := matrixPlots(res)
			if err != nil {
				return fmt.Errorf("plot %s: %w", file, err)
			}
			for _, p := range ps {
				panels = append(panels, []*plot.Plot{p})
			}
			continue
		}
		for _, v := range res.Variants {
			p, err := variantPlot(res, v)
			if err != nil {
				return fmt.Errorf("plot %s: %w", file, err)
			}
			panels = append(panels, []*plot.Plot{p})
		}
	}
	if len(panels) == 0 {
		return fmt.Errorf("plot %s: no variant ran", file)
	}
	w, h := 8*vg.Inch, vg.Length(len(panels))*2*vg.Inch
	for _, res := range results {
		if res.Matrix != nil { // heat maps: wide, and tall enough for a row per driver
			w, h = 9.5*vg.Inch, vg.Length(len(panels))*2.9*vg.Inch
		}
	}
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return fmt.Errorf("plot %s: %w", file, err)
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(10)}
	canvases := plot.Align(panels, tiles, draw.New(c))
	for i := range panels {
		panels[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", file, err)
	}
	return f.Close()
}

func variantPlot(res *Result, v *VariantResult) (*plot.Plot, error) {
	p := plot.New()
	title := fmt.Sprintf("%s / %s: median %s ns/op", res.Experiment.Name, v.Name, fmtNs(v.NsPerOp))
	if r, ok := res.Ratio(v.Name); ok {
		title += fmt.Sprintf(", %sx %s [95%% CI %s, %s]", fmtRatio(r.Median), r.B, fmtRatio(r.CI.Low), fmtRatio(r.CI.High))
	} else if v.Name == res.Experiment.Baseline {
		title += " (baseline)"
	}
	p.Title.Text = title
	p.X.Label.Text = "round (dashed: median; dotted: its 95% CI)"
	p.Y.Label.Text = "ns/op"
	xs := v.NsPerOpRounds()
	pts := make(plotter.XYs, len(xs))
	for i, y := range xs {
		pts[i] = plotter.XY{X: float64(i + 1), Y: y}
	}
	line, scatter, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	med := plotter.NewFunction(func(float64) float64 { return v.NsPerOp })
	med.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	med.Color = color.Gray{Y: 128}
	ci := plotter.NewFunction(func(float64) float64 { return v.CI.Low })
	ci.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
	ci.Color = color.Gray{Y: 160}
	ci2 := plotter.NewFunction(func(float64) float64 { return v.CI.High })
	ci2.Dashes = ci.Dashes
	ci2.Color = ci.Color
	p.Add(plotter.NewGrid(), med, ci, ci2, line, scatter)
	p.X.Min, p.X.Max = 0.5, float64(len(xs))+0.5
	lo, hi := v.Min, v.Max
	pad := (hi - lo) * 0.1
	if pad == 0 {
		pad = hi * 0.01
	}
	p.Y.Min, p.Y.Max = lo-pad, hi+pad
	return p, nil
}
