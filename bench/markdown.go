package bench

// The Markdown report: one section per experiment with the summary table
// and the verdicts, for a document of current figures (docs/benchmarks.md
// is this output).

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// A MarkdownRun says how the results of WriteMarkdown were produced.
type MarkdownRun struct {
	// Command is the command line that produced the results.
	Command string
	// Revision names the code measured (a VCS revision, a version).
	Revision string
	// Start and End bound the run.
	Start, End time.Time
	// Load is the machine's load average at the start, if known.
	Load string
}

// WriteMarkdown writes results as a Markdown document: how they were
// produced (command, machine, date, revision), then for each experiment
// what a round does, the summary table (median ns/op over rounds, its 95%
// bootstrap interval, allocations, the median per-round ratio to the
// baseline and its interval) and the verdicts.
func WriteMarkdown(w io.Writer, results []*Result, run MarkdownRun) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Benchmark figures\n\n")
	p("Produced by `%s`; regenerate this file with the same command. ", run.Command)
	p("Every figure compares variants measured in the same process, in interleaved rounds: ")
	p("absolute times move with the machine's load, ratios much less.\n\n")
	if len(results) > 0 {
		p("- Machine: %s\n", results[0].Machine)
	}
	p("- Date: %s (%s)\n", run.Start.UTC().Format("2006-01-02 15:04 MST"), run.End.Sub(run.Start).Round(time.Second))
	if run.Revision != "" {
		p("- Code: %s\n", run.Revision)
	}
	if run.Load != "" {
		p("- Load average at the start: %s\n", run.Load)
	}
	for _, res := range results {
		e := res.Experiment
		p("\n## %s\n\n%s.\n\n", e.Name, e.Summary)
		pr := res.Params
		what := fmt.Sprintf("%d %s of %d B", pr.Ops, e.Unit, pr.Size)
		if e.Describe != nil {
			what = e.Describe(pr)
		}
		if res.Matrix == nil {
			p("Each round, every variant does %s; %d rounds after a discarded warm-up round.\n\n", what, pr.Loops)
		}
		for _, s := range res.Skipped {
			p("- skipped %s: %s\n", s.Variant, s.Reason)
		}
		if len(res.Skipped) > 0 {
			p("\n")
		}
		if res.Matrix != nil {
			var m strings.Builder
			writeMatrix(&m, res)
			p("```\n%s```\n", m.String())
			continue
		}
		if len(res.Variants) == 0 {
			p("No variant ran.\n")
			continue
		}
		base := e.Baseline
		p("| variant | ns/op | 95%% CI | allocs/op | ratio to %s | 95%% CI of ratio |\n", base)
		p("| --- | ---: | ---: | ---: | ---: | ---: |\n")
		for _, v := range res.Variants {
			ratio, ci := "-", ""
			if v.Name == base {
				ratio = "1 (baseline)"
			} else if r, ok := res.Ratio(v.Name); ok {
				ratio, ci = fmtRatio(r.Median), fmtRatio(r.CI.Low)+" .. "+fmtRatio(r.CI.High)
			}
			p("| %s | %s | %s .. %s | %s | %s | %s |\n", v.Name, fmtNs(v.NsPerOp), fmtNs(v.CI.Low), fmtNs(v.CI.High), fmtCount(v.AllocsPerOp), ratio, ci)
		}
		if len(res.Ratios) > 0 {
			p("\n")
			for _, r := range res.Ratios {
				p("- %s\n", Verdict(r))
			}
		}
		if e.Report != nil {
			var extra strings.Builder
			e.Report(&extra, res)
			if s := strings.TrimSpace(extra.String()); s != "" {
				p("\n```\n%s\n```\n", s)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
