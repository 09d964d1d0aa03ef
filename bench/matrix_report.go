package bench

// The matrix experiment's output: the text tables and summary line, its
// part of the JSON document and of the benchstat lines, and the heat map.

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// ratioMark tags a ratio: "+" when its CI lies above 1.0 (the vectored
// call is slower beyond noise), "" otherwise.
func ratioMark(r Ratio) string {
	if r.CI.Low > 1 {
		return "+"
	}
	return ""
}

// writeMatrix writes the matrix's tables: a grid of ratios (rows: driver
// and operation; columns: segments x size), the per-cell detail, and the
// summary line naming the worst cell.
func writeMatrix(b *strings.Builder, res *Result) {
	m := res.Matrix
	for _, s := range res.Skipped {
		fmt.Fprintf(b, "driver %s skipped: %s\n", s.Variant, s.Reason)
	}
	if len(m.Cells) == 0 {
		b.WriteString("no cell ran\n")
		return
	}
	again := ""
	if m.Confirm > 0 {
		again = fmt.Sprintf("; a cell above 1.0 beyond noise was measured again in %d fresh rounds, which give its ratio", m.Confirm)
	}
	fmt.Fprintf(b, "\nratio vectored / scalar loop (median of %d per-round ratios; + marks a 95%% CI above 1.0, the vectored call slower beyond noise%s):\n", res.Params.Loops, again)
	type col struct{ segs, size int }
	var cols []col
	for _, segs := range m.Segments {
		for _, size := range m.Sizes {
			if segs*size <= matrixFileSize {
				cols = append(cols, col{segs, size})
			}
		}
	}
	head := []string{"driver", "op"}
	for _, c := range cols {
		head = append(head, fmt.Sprintf("%dx%s", c.segs, fmtSize(c.size)))
	}
	rows := [][]string{head}
	for _, d := range m.Drivers {
		for _, o := range matrixOps {
			row := []string{d, o.name}
			any := false
			for _, c := range cols {
				x := m.Cell(d, o.name, c.segs, c.size)
				if x == nil {
					row = append(row, "-")
					continue
				}
				any = true
				row = append(row, fmtRatio(x.Ratio.Median)+ratioMark(x.Ratio))
			}
			if any {
				rows = append(rows, row)
			}
		}
	}
	right := make([]bool, len(head))
	for i := 2; i < len(right); i++ {
		right[i] = true
	}
	writeTable(b, rows, right)

	b.WriteString("\nevery cell (ns/op: per vectored call, and per loop of N scalar calls; allocs/op likewise):\n")
	rows = [][]string{{"cell", "native", "calls/round", "vectored ns/op", "scalar ns/op", "ratio", "95% CI", "allocs/op v", "allocs/op s", "first pass"}}
	for _, c := range m.Cells {
		native := "yes"
		if !c.Native {
			native = "no"
		}
		first := ""
		if f := c.FirstPass; f != nil {
			first = fmtRatio(f.Median) + " (" + fmtRatio(f.CI.Low) + " .. " + fmtRatio(f.CI.High) + ")"
		}
		rows = append(rows, []string{c.Name(), native, strconv.Itoa(c.Ops), fmtNs(c.Vectored.NsPerOp), fmtNs(c.Scalar.NsPerOp),
			fmtRatio(c.Ratio.Median) + ratioMark(c.Ratio), fmtRatio(c.Ratio.CI.Low) + " .. " + fmtRatio(c.Ratio.CI.High),
			fmtCount(c.Vectored.AllocsPerOp), fmtCount(c.Scalar.AllocsPerOp), first})
	}
	writeTable(b, rows, []bool{false, false, true, true, true, true, true, true, true, false})
	b.WriteString("\n" + MatrixSummary(m) + "\n")
}

// MatrixSummary is the matrix's one-line verdict: the worst cell, how
// many cells are slower vectored beyond noise, and the cells that
// allocate.
func MatrixSummary(m *Matrix) string {
	w := m.Worst()
	if w == nil {
		return "matrix: no cell ran"
	}
	above, first, allocs := 0, 0, 0
	for _, c := range m.Cells {
		if c.Ratio.CI.Low > 1 {
			above++
		}
		if c.FirstPass != nil {
			first++
		}
		if c.Vectored.AllocsPerOp != 0 || c.Scalar.AllocsPerOp != 0 {
			allocs++
		}
	}
	beyond := "within noise"
	if w.Ratio.CI.Low > 1 {
		beyond = "beyond noise"
	}
	again := ""
	if m.Confirm > 0 {
		again = fmt.Sprintf(" (%d in the first pass, measured again in %d rounds)", first, m.Confirm)
	}
	return fmt.Sprintf("worst cell: %s, vectored/scalar %s (95%% CI %s .. %s, %s); %d of %d cells slower vectored beyond noise%s; %d cells allocate",
		w.Name(), fmtRatio(w.Ratio.Median), fmtRatio(w.Ratio.CI.Low), fmtRatio(w.Ratio.CI.High), beyond, above, len(m.Cells), again, allocs)
}

// MatrixJSON is the matrix part of an ExperimentJSON.
type MatrixJSON struct {
	Drivers         []string         `json:"drivers"`
	Segments        []int            `json:"segments"`
	Sizes           []int            `json:"sizes"`
	CellTimeSeconds float64          `json:"cell_time_seconds"`
	Window          int              `json:"window"`
	Cells           []MatrixCellJSON `json:"cells"`
	Summary         string           `json:"summary"`
}

// MatrixCellJSON is one cell.
type MatrixCellJSON struct {
	Driver      string      `json:"driver"`
	Op          string      `json:"op"`
	Segments    int         `json:"segments"`
	Size        int         `json:"size"`
	Native      bool        `json:"native"`
	OpsPerRound int         `json:"ops_per_round"`
	Vectored    VariantJSON `json:"vectored"`
	Scalar      VariantJSON `json:"scalar"`
	Ratio       RatioJSON   `json:"ratio"`
	// FirstPass is the first pass's ratio of a cell measured again
	// because it was above 1.0 beyond noise; Vectored, Scalar and Ratio
	// are then the second pass's.
	FirstPass *RatioJSON `json:"first_pass,omitempty"`
}

func (m *Matrix) json() *MatrixJSON {
	x := &MatrixJSON{Drivers: m.Drivers, Segments: m.Segments, Sizes: m.Sizes, CellTimeSeconds: m.CellTime.Seconds(), Window: m.Window, Cells: []MatrixCellJSON{}, Summary: MatrixSummary(m)}
	for _, c := range m.Cells {
		r := c.Ratio
		cell := MatrixCellJSON{
			Driver: c.Driver, Op: c.Op, Segments: c.Segments, Size: c.Size, Native: c.Native, OpsPerRound: c.Ops,
			Vectored: c.Vectored.json(), Scalar: c.Scalar.json(),
			Ratio: RatioJSON{r.A, r.B, r.Median, r.CI.Low, r.CI.High, r.BeyondNoise()},
		}
		if f := c.FirstPass; f != nil {
			cell.FirstPass = &RatioJSON{f.A, f.B, f.Median, f.CI.Low, f.CI.High, f.BeyondNoise()}
		}
		x.Cells = append(x.Cells, cell)
	}
	return x
}

// writeMatrixBenchstat writes one line per variant per cell per round:
// BenchmarkMatrix/tmpfs/read/16x4KiB/preadv.
func writeMatrixBenchstat(b *strings.Builder, res *Result) {
	for _, c := range res.Matrix.Cells {
		for _, v := range []*VariantResult{c.Vectored, c.Scalar} {
			name := fmt.Sprintf("Benchmark%s/%s/%s", res.Experiment.BenchName(), c.Name(), v.Name)
			for i, d := range v.Rounds {
				ops := float64(c.Ops)
				fmt.Fprintf(b, "%s\t%8d\t%12s ns/op\t%8s B/op\t%8s allocs/op\n", name, c.Ops,
					strconv.FormatFloat(float64(d.Nanoseconds())/ops, 'f', 2, 64),
					strconv.FormatFloat(float64(v.Bytes[i])/ops, 'g', -1, 64),
					strconv.FormatFloat(float64(v.Allocs[i])/ops, 'g', -1, 64))
			}
		}
	}
}

// matrixGrid is the heat map's grid for one operation: columns are the
// vector shapes, rows the drivers; Z is log2 of the ratio (NaN: no cell).
type matrixGrid struct {
	z          [][]float64 // [row][col]
	cols, rows int
}

func (g *matrixGrid) Dims() (int, int)   { return g.cols, g.rows }
func (g *matrixGrid) Z(c, r int) float64 { return g.z[r][c] }
func (g *matrixGrid) X(c int) float64    { return float64(c) }
func (g *matrixGrid) Y(r int) float64    { return float64(r) }

// matrixPlots returns one heat map per operation that ran: log2 of
// vectored/scalar per cell, blue where the vectored call wins, red where
// it loses, each cell labelled with its ratio.
func matrixPlots(res *Result) ([]*plot.Plot, error) {
	m := res.Matrix
	type col struct{ segs, size int }
	var cols []col
	for _, segs := range m.Segments {
		for _, size := range m.Sizes {
			if segs*size <= matrixFileSize {
				cols = append(cols, col{segs, size})
			}
		}
	}
	var plots []*plot.Plot
	for _, o := range matrixOps {
		var drivers []string
		for _, d := range m.Drivers {
			for _, c := range m.Cells {
				if c.Driver == d && c.Op == o.name {
					drivers = append(drivers, d)
					break
				}
			}
		}
		if len(drivers) == 0 {
			continue
		}
		g := &matrixGrid{cols: len(cols), rows: len(drivers)}
		var labels plotter.XYLabels
		// The colour scale is log2 of the ratio, clamped to 1/4 .. 4, so
		// that a cell a little above 1.0 still shows red.
		const lim = 2.0
		for r, d := range drivers {
			row := make([]float64, len(cols))
			for ci, cc := range cols {
				row[ci] = math.NaN()
				if c := m.Cell(d, o.name, cc.segs, cc.size); c != nil {
					row[ci] = max(-lim, min(lim, math.Log2(c.Ratio.Median)))
					labels.XYs = append(labels.XYs, plotter.XY{X: float64(ci), Y: float64(r)})
					labels.Labels = append(labels.Labels, strconv.FormatFloat(c.Ratio.Median, 'f', 2, 64)+ratioMark(c.Ratio))
				}
			}
			g.z = append(g.z, row)
		}
		pal := moreland.SmoothBlueRed()
		pal.SetMin(-lim)
		pal.SetMax(lim)
		hm := plotter.NewHeatMap(g, pal.Palette(255))
		hm.Min, hm.Max = -lim, lim
		hm.NaN = color.Gray{Y: 230}
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s / %s per cell (blue: vectored faster, red: slower; + CI above 1); %s", o.vectored, o.scalar, res.Machine.CPU)
		p.Add(hm)
		lab, err := plotter.NewLabels(labels)
		if err != nil {
			return nil, err
		}
		for i := range lab.TextStyle {
			lab.TextStyle[i].Font.Size = vg.Points(6.5)
			lab.TextStyle[i].XAlign = -0.5
			lab.TextStyle[i].YAlign = -0.5
		}
		p.Add(lab)
		var xt, yt []plot.Tick
		for i, c := range cols {
			xt = append(xt, plot.Tick{Value: float64(i), Label: fmt.Sprintf("%dx%s", c.segs, fmtSize(c.size))})
		}
		for i, d := range drivers {
			yt = append(yt, plot.Tick{Value: float64(i), Label: d})
		}
		p.X.Tick.Marker = plot.ConstantTicks(xt)
		p.Y.Tick.Marker = plot.ConstantTicks(yt)
		p.X.Tick.Label.Rotation = math.Pi / 3
		p.X.Tick.Label.XAlign = -1
		p.X.Tick.Label.YAlign = -0.5
		p.X.Label.Text = "segments x segment size"
		p.X.Min, p.X.Max = -0.5, float64(len(cols))-0.5
		p.Y.Min, p.Y.Max = -0.5, float64(len(drivers))-0.5
		plots = append(plots, p)
	}
	return plots, nil
}

// Print the matrix in the summary, after the rows of an ordinary
// experiment's table would have been.
func writeMatrixSummary(w io.Writer, res *Result) error {
	var b strings.Builder
	writeMatrix(&b, res)
	_, err := io.WriteString(w, b.String())
	return err
}
