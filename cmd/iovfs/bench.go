package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/bench"
)

// benchFlags are the flags of "iovfs bench".
type benchFlags struct {
	loops, reads, size int
	turns              int
	variants           string
	json, plot, format string
	lock               bool
	clock              string
	help               bool
	// extra holds the experiments' own flags, by name.
	extra map[string]*string
	// owner names the experiment each extra flag belongs to.
	owner map[string]string
}

func newBenchFlagSet(f *benchFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("iovfs bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&f.loops, "loops", 0, "")
	fs.IntVar(&f.reads, "reads", 0, "")
	fs.IntVar(&f.size, "size", 0, "")
	fs.IntVar(&f.turns, "turns", 0, "")
	fs.StringVar(&f.variants, "variants", "", "")
	fs.StringVar(&f.json, "json", "", "")
	fs.StringVar(&f.plot, "plot", "", "")
	fs.StringVar(&f.format, "format", "text", "")
	fs.BoolVar(&f.lock, "lock-os-thread", false, "")
	fs.StringVar(&f.clock, "clock", "wall", "")
	fs.BoolVar(&f.help, "help", false, "")
	fs.BoolVar(&f.help, "h", false, "")
	f.extra = map[string]*string{}
	f.owner = map[string]string{}
	for _, e := range bench.Experiments() {
		for _, x := range e.Flags {
			if _, ok := f.extra[x.Name]; ok {
				// Two experiments share the flag; it reaches both.
				f.owner[x.Name] += "," + e.Name
				continue
			}
			f.extra[x.Name] = fs.String(x.Name, x.Default, x.Usage)
			f.owner[x.Name] = e.Name
		}
	}
	return fs
}

func benchUsage(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("usage: iovfs bench [experiment...] [flags]\n\n")
	p("Runs each experiment's variants in the same process, in interleaved rounds whose\n")
	p("order rotates, after one discarded warm-up round, and compares every variant\n")
	p("with the experiment's baseline as a ratio with a 95%% bootstrap confidence interval.\n")
	p("With no experiment named, runs them all.\n\n")
	p("experiments and their variants:\n")
	for _, e := range bench.Experiments() {
		p("  %s: %s\n", e.Name, e.Summary)
		w := 0
		for _, v := range e.Variants {
			w = max(w, len(v.Name))
		}
		for _, v := range e.Variants {
			base := ""
			if v.Name == e.Baseline {
				base = " (baseline)"
			}
			p("    %-*s  %s%s\n", w, v.Name, v.Doc, base)
		}
	}
	p("\nflags:\n")
	rows := [][2]string{
		{"--loops N", "measured rounds; one warm-up round more is run and discarded" + defaults(func(d bench.Params) int { return d.Loops })},
		{"--reads N", "operations per variant per round" + defaults(func(d bench.Params) int { return d.Ops })},
		{"--size N", "bytes per read" + defaults(func(d bench.Params) int { return d.Size })},
		{"--turns N", "split each measured round into N turns per variant, the variants alternating turn by turn, and pair them turn by turn: a round's ratio is the median of its turn ratios" + defaults(func(d bench.Params) int { return max(d.Turns, 1) })},
		{"--variants a,b", "run only these variants (default all); ratios need the baseline"},
		{"--format F", "stdout format: text (rounds, summary, verdict) or benchstat (Go benchmark lines, one per round)"},
		{"--json FILE", "also write the results as JSON to FILE (schema: go doc github.com/iovfs/iovfs/bench)"},
		{"--plot FILE", "also draw per-round ns/op of each variant to FILE, .svg or .png"},
		{"--lock-os-thread", "keep the measuring goroutine on one OS thread (off by default: measured, it did not make results steadier)"},
		{"--clock C", "wall (default) or thread: time rounds by the measuring thread's CPU time, which leaves out the time it spends descheduled on a busy machine (implies --lock-os-thread; not for the pipe experiments or the matrix's pipe cells, whose peer goroutine's time and waits it would miss)"},
	}
	for _, e := range bench.Experiments() {
		for _, x := range e.Flags {
			rows = append(rows, [2]string{"--" + x.Name + " V", x.Usage + " (" + e.Name + "; default " + x.Default + ")"})
		}
	}
	rows = append(rows, [2]string{"-h, --help", "show this help"})
	w2 := 0
	for _, r := range rows {
		w2 = max(w2, len(r[0]))
	}
	for _, r := range rows {
		p("  %-*s  %s\n", w2, r[0], r[1])
	}
	p("\nProgress goes to stderr when stderr is a terminal; stdout carries only results.\n")
}

// defaults describes each experiment's default for a parameter.
func defaults(get func(bench.Params) int) string {
	var s []string
	for _, e := range bench.Experiments() {
		s = append(s, fmt.Sprintf("%s %d", e.Name, get(e.Defaults)))
	}
	return " (default: " + strings.Join(s, ", ") + ")"
}

func runBench(args []string, stdout, stderr io.Writer) int {
	var f benchFlags
	fs := newBenchFlagSet(&f)
	names, err := parseInterleaved(fs, args)
	if f.help {
		benchUsage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "iovfs bench: %v\n\n", err)
		benchUsage(stderr)
		return 2
	}
	exps, params, err := f.plan(fs, names)
	if err != nil {
		fmt.Fprintf(stderr, "iovfs bench: %v\n", err)
		return 2
	}
	if err := f.checkOutputs(); err != nil {
		fmt.Fprintf(stderr, "iovfs bench: %v\n", err)
		return 1
	}

	text := f.format == "text"
	notes := stdout // where "wrote FILE" goes: not into benchstat output
	if !text {
		notes = stderr
	}
	opts := bench.Options{LockOSThread: f.lock, ThreadCPU: f.clock == "thread"}
	if isTerminal(stderr) {
		opts.Progress = stderr
	}
	if text {
		opts.Rounds = stdout
	}
	var results []*bench.Result
	for i, e := range exps {
		if text {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprint(stdout, bench.Header(e, params[i], opts))
		}
		res, err := bench.Run(e, params[i], opts)
		if err != nil {
			fmt.Fprintf(stderr, "iovfs bench: %v\n", err)
			return 1
		}
		if text {
			if err := bench.WriteSummary(stdout, res); err != nil {
				fmt.Fprintf(stderr, "iovfs bench: %v\n", err)
				return 1
			}
		}
		results = append(results, res)
	}
	if !text {
		if err := bench.WriteBenchstat(stdout, results); err != nil {
			fmt.Fprintf(stderr, "iovfs bench: %v\n", err)
			return 1
		}
	}
	status := 0
	if f.json != "" {
		var b bytes.Buffer
		if err := bench.WriteJSON(&b, results); err != nil {
			fmt.Fprintf(stderr, "iovfs bench: --json %s: %v\n", f.json, err)
			status = 1
		} else if err := os.WriteFile(f.json, b.Bytes(), 0o644); err != nil {
			fmt.Fprintf(stderr, "iovfs bench: --json: %v\n", err)
			status = 1
		} else {
			fmt.Fprintf(notes, "\nwrote JSON results to %s\n", f.json)
		}
	}
	if f.plot != "" {
		if err := bench.WritePlot(f.plot, results); err != nil {
			fmt.Fprintf(stderr, "iovfs bench: --plot: %v\n", err)
			status = 1
		} else {
			fmt.Fprintf(notes, "wrote the per-round plot to %s\n", f.plot)
		}
	}
	return status
}

// parseInterleaved parses flags and experiment names in any order:
// "bench zero --size 4096" and "bench --size 4096 zero" both work.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var names []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return names, nil
		}
		names = append(names, args[0])
		args = args[1:]
	}
}

// plan checks the flags against the experiments named (all, if none) and
// returns the experiments to run with their parameters.
func (f *benchFlags) plan(fs *flag.FlagSet, names []string) ([]*bench.Experiment, []bench.Params, error) {
	var exps []*bench.Experiment
	if len(names) == 0 {
		exps = bench.Experiments()
	}
	for _, n := range names {
		e := bench.Lookup(n)
		if e == nil {
			var have []string
			for _, e := range bench.Experiments() {
				have = append(have, e.Name)
			}
			return nil, nil, fmt.Errorf("no experiment %q (have %s)", n, strings.Join(have, ", "))
		}
		if !slices.Contains(exps, e) {
			exps = append(exps, e)
		}
	}
	if f.format != "text" && f.format != "benchstat" {
		return nil, nil, fmt.Errorf("--format %q: want text or benchstat", f.format)
	}
	if f.loops < 0 || f.reads < 0 || f.size < 0 || f.turns < 0 {
		return nil, nil, errors.New("--loops, --reads, --size and --turns must be positive")
	}
	var err error
	fs.Visit(func(fl *flag.Flag) {
		owners, ok := f.owner[fl.Name]
		if !ok || err != nil {
			return
		}
		for _, e := range exps {
			if slices.Contains(strings.Split(owners, ","), e.Name) {
				return
			}
		}
		err = fmt.Errorf("--%s is a flag of %s, which is not being run", fl.Name, owners)
	})
	if err != nil {
		return nil, nil, err
	}

	var wanted []string
	if f.variants != "" {
		wanted = strings.Split(f.variants, ",")
	}
	for _, v := range wanted {
		found := false
		for _, e := range exps {
			found = found || e.Variant(v) != nil
		}
		if !found {
			return nil, nil, fmt.Errorf("--variants: no experiment being run has a variant %q", v)
		}
	}
	var params []bench.Params
	var run []*bench.Experiment
	for _, e := range exps {
		p := bench.Params{Loops: f.loops, Ops: f.reads, Size: f.size, Turns: f.turns, Extra: map[string]string{}}
		for _, v := range wanted {
			if e.Variant(v) != nil {
				p.Variants = append(p.Variants, v)
			}
		}
		if len(wanted) > 0 && len(p.Variants) == 0 {
			continue // none of the variants asked for is this experiment's
		}
		for _, x := range e.Flags {
			p.Extra[x.Name] = *f.extra[x.Name]
		}
		run = append(run, e)
		params = append(params, p)
	}
	return run, params, nil
}

// checkOutputs fails early, before minutes of measuring, if an output file
// cannot be written.
func (f *benchFlags) checkOutputs() error {
	if f.clock != "wall" && f.clock != "thread" {
		return fmt.Errorf("--clock %q: want wall or thread", f.clock)
	}
	if f.json != "" {
		if err := checkWritable(f.json); err != nil {
			return fmt.Errorf("--json %s: %w", f.json, err)
		}
	}
	if f.plot != "" {
		ext := strings.ToLower(filepath.Ext(f.plot))
		if ext != ".svg" && ext != ".png" {
			return fmt.Errorf("--plot %s: the name must end in .svg or .png", f.plot)
		}
		if err := checkWritable(f.plot); err != nil {
			return fmt.Errorf("--plot %s: %w", f.plot, err)
		}
	}
	return nil
}

// checkWritable reports why file could not be created or overwritten. It
// tries: an existing file is opened for writing and left as it was; a new
// one is created and removed again.
func checkWritable(file string) error {
	if st, err := os.Stat(file); err == nil && st.IsDir() {
		return errors.New("is a directory")
	}
	dir := filepath.Dir(file)
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("directory %s: %w", dir, errors.Unwrap(err))
	} else if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err == nil {
		return f.Close()
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("not writable: %w", errors.Unwrap(err))
	}
	f, err = os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("cannot create it: %w", errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(file)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
