package bench

// The human-readable report: a header before the rounds, then a summary
// table, a verdict line per variant and the reference figures.

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Header returns the lines that open an experiment's text output: what a
// round does, how rounds are run and the machine.
func Header(e *Experiment, p Params, o Options) string {
	p, _, err := e.resolve(p)
	if err != nil {
		return e.Name + ": " + err.Error() + "\n"
	}
	var b strings.Builder
	what := fmt.Sprintf("%d %s of %d B", p.Ops, e.Unit, p.Size)
	if e.Describe != nil {
		what = e.Describe(p)
	}
	fmt.Fprintf(&b, "== %s: %s\n", e.Name, e.Summary)
	fmt.Fprintf(&b, "each round: every variant does %s\n", what)
	fmt.Fprintf(&b, "%d rounds after 1 warm-up round (round 0, discarded); the order of the variants rotates each round\n", p.Loops)
	if p.Turns > 1 {
		fmt.Fprintf(&b, "each measured round in %d turns of about %d %s per variant, the variants alternating turn by turn; a round's ratio is the median of its turn-by-turn ratios\n", p.Turns, p.Ops/p.Turns, e.Unit)
	}
	lock := "off"
	if o.LockOSThread {
		lock = "on"
	}
	clk := "wall clock"
	if o.ThreadCPU {
		lock, clk = "on", "thread CPU time"
	}
	fmt.Fprintf(&b, "machine: %s; LockOSThread %s; rounds timed by %s\n\n", ThisMachine(), lock, clk)
	return b.String()
}

// WriteSummary writes the summary table, the verdicts and the reference
// figures for res.
func WriteSummary(w io.Writer, res *Result) error {
	if res.Matrix != nil {
		return writeMatrixSummary(w, res)
	}
	var b strings.Builder
	e := res.Experiment
	for _, s := range res.Skipped {
		fmt.Fprintf(&b, "%s: %s\n", s.Variant, s.Reason)
	}
	if len(res.Variants) == 0 {
		b.WriteString("no variant ran\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	base := e.Baseline
	fmt.Fprintf(&b, "\nsummary of %d rounds (ns/op: median over rounds; 95%% CIs: bootstrap over rounds; ratio: median of per-round ratios to %s):\n", res.Params.Loops, base)
	rows := [][]string{{"variant", "ns/op", "95% CI", "min", "max", "allocs/op", "ratio to " + base, "95% CI of ratio"}}
	for _, v := range res.Variants {
		row := []string{v.Name, fmtNs(v.NsPerOp), fmtNs(v.CI.Low) + " .. " + fmtNs(v.CI.High), fmtNs(v.Min), fmtNs(v.Max), fmtCount(v.AllocsPerOp)}
		if v.Name == base {
			row = append(row, "1 (baseline)", "")
		} else if r, ok := res.Ratio(v.Name); ok {
			row = append(row, fmtRatio(r.Median), fmtRatio(r.CI.Low)+" .. "+fmtRatio(r.CI.High))
		} else {
			row = append(row, "-", "")
		}
		rows = append(rows, row)
	}
	writeTable(&b, rows, []bool{false, true, true, true, true, true, true, true})

	if len(res.Ratios) == 0 {
		fmt.Fprintf(&b, "\nno ratios: the baseline %s did not run\n", base)
	} else {
		b.WriteString("\nverdict:\n")
		for _, r := range res.Ratios {
			fmt.Fprintf(&b, "  %s\n", Verdict(r))
		}
	}
	writeReference(&b, res)
	if e.Report != nil {
		e.Report(&b, res)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Verdict says in plain words how r.A compares with r.B and whether the
// difference is beyond noise.
func Verdict(r Ratio) string {
	var how string
	switch {
	case r.Median >= 2 || r.Median <= 0.5:
		how = fmt.Sprintf("%s takes %.2fx as long as %s", r.A, r.Median, r.B)
	case r.Median >= 1:
		how = fmt.Sprintf("%s is %s slower than %s (takes %.3fx as long)", r.A, pct(r.Median-1), r.B, r.Median)
	default:
		how = fmt.Sprintf("%s is %s faster than %s (takes %.3fx as long)", r.A, pct(1-r.Median), r.B, r.Median)
	}
	ci := fmtRatio(r.CI.Low) + " to " + fmtRatio(r.CI.High)
	if r.BeyondNoise() {
		return how + ": beyond noise, the 95% CI of the ratio, " + ci + ", excludes 1.0"
	}
	return how + ": within noise, the 95% CI of the ratio, " + ci + ", includes 1.0"
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func writeReference(b *strings.Builder, res *Result) {
	e := res.Experiment
	if len(e.Reference) == 0 {
		return
	}
	b.WriteString("\nfor reference, ")
	b.WriteString(e.ReferenceNote)
	b.WriteString("\n")
	rows := [][]string{}
	var baseRef *Reference
	for i, ref := range e.Reference {
		if ref.Variant == e.Baseline {
			baseRef = &e.Reference[i]
		}
		ours := "-"
		if v := res.Variant(ref.Variant); v != nil {
			ours = fmtNs(v.NsPerOp) + " ns/op"
		}
		rows = append(rows, []string{"  " + ref.Label, fmtRef(ref.NsPerOp) + " ns/op", "ours, " + ref.Variant + ":", ours})
	}
	writeTable(b, rows, []bool{false, true, false, true})
	if baseRef == nil {
		return
	}
	for _, ref := range e.Reference {
		if ref.Variant == e.Baseline {
			continue
		}
		ours, diff := "did not run", "did not run"
		if r, ok := res.Ratio(ref.Variant); ok {
			ours = fmtRatio(r.Median)
			diff = fmtNs(res.Variant(ref.Variant).NsPerOp-res.Variant(e.Baseline).NsPerOp) + " ns"
		}
		writeTable(b, [][]string{
			{"  ratio " + ref.Variant + " / " + e.Baseline + ":", "seed " + fmt.Sprintf("%.3f", ref.NsPerOp/baseRef.NsPerOp), "(" + fmtRef(ref.NsPerOp) + "/" + fmtRef(baseRef.NsPerOp) + "),", "ours " + ours},
			{"  difference " + ref.Variant + " - " + e.Baseline + ":", "seed " + fmtRef(ref.NsPerOp-baseRef.NsPerOp) + " ns", "", "ours " + diff + " (of medians)"},
		}, nil)
	}
}

// writeTable writes rows as columns two spaces apart; right[i] aligns
// column i to the right.
func writeTable(b *strings.Builder, rows [][]string, right []bool) {
	var widths []int
	for _, row := range rows {
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, row := range rows {
		var line strings.Builder
		for i, c := range row {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-len(c))
			if i < len(right) && right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteString("\n")
	}
}

// fmtCount formats a per-operation count: exact when whole, else with
// enough digits to show that it is not zero.
func fmtCount(x float64) string {
	if x == math.Trunc(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

// fmtRef formats a published figure as published: whole numbers stay whole.
func fmtRef(ns float64) string {
	if ns == math.Trunc(ns) {
		return fmt.Sprintf("%.0f", ns)
	}
	return fmtNs(ns)
}

// fmtRatio formats a ratio with three decimals near 1 and fewer far from it.
func fmtRatio(x float64) string {
	switch {
	case x < 10:
		return fmt.Sprintf("%.3f", x)
	case x < 100:
		return fmt.Sprintf("%.2f", x)
	default:
		return fmt.Sprintf("%.1f", x)
	}
}
