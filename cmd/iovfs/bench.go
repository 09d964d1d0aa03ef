package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

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
	full, markdown     bool
	// extra holds the experiments' own flags, by name.
	extra map[string]*string
	// owner names the experiment each extra flag belongs to.
	owner map[string]string
}

func newBenchFlagSet(f *benchFlags) *flag.FlagSet {
	fs := newFlagSet("bench")
	fs.IntVar(&f.loops, "loops", 0, "")
	fs.IntVar(&f.reads, "reads", 0, "")
	fs.IntVar(&f.size, "size", 0, "")
	fs.IntVar(&f.turns, "turns", 0, "")
	fs.StringVar(&f.variants, "variants", "", "")
	fs.StringVar(&f.json, "json", "", "")
	fs.StringVar(&f.plot, "plot", "", "")
	fs.StringVar(&f.format, "format", "text", "")
	fs.BoolVar(&f.markdown, "markdown", false, "")
	fs.BoolVar(&f.lock, "lock-os-thread", false, "")
	fs.StringVar(&f.clock, "clock", "wall", "")
	fs.BoolVar(&f.full, "full", false, "")
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

// A quickRun is how the quick suite runs one experiment: the parameters
// and experiment flags it sets, where the user sets none.
type quickRun struct {
	loops, reads int
	extra        map[string]string
}

// quickSuite is "iovfs bench" without arguments: both seed experiments
// (zero, dax) at full strength, short versions of the others. It takes
// about a minute on a 2-core VM at rest (quickTime).
var quickSuite = map[string]quickRun{
	"zero":          {},
	"dax":           {},
	"wasi":          {loops: 5, reads: 10000},
	"pipe":          {loops: 5, reads: 2000},
	"pipe-pingpong": {loops: 5, reads: 5000},
	"walk":          {loops: 3, extra: map[string]string{"tree": "nested", "files": "2000"}},
	"matrix": {loops: 5, extra: map[string]string{"drivers": "null,zero,tmpfs,ram,ext4-dax,hostfs,pipe",
		"segments": "1,8,64", "sizes": "512,4K", "confirm": "5"}},
	"fuse":   {loops: 3, extra: map[string]string{"file-size": "32M"}},
	"splice": {loops: 3, extra: map[string]string{"copy-size": "32M"}},
	"copy":   {loops: 3, extra: map[string]string{"copy-size": "32M"}},
}

// What the help says the two suites cost, measured with /usr/bin/time on
// a 2-vCPU VM at rest, as root (the fuse and kernel variants run).
const (
	quickTime = "about a minute and 400 MB of memory"
	fullTime  = "4 to 6 minutes and 2 GB of memory (the first walk also builds a 65,000-directory image, kept in the user's cache directory)"
)

func benchUsage(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("usage: iovfs bench [--full | all | EXPERIMENT...] [OPTIONS]\n\n")
	p("Runs each experiment's variants in the same process, in interleaved rounds whose\n")
	p("order rotates, after one discarded warm-up round, and compares every variant\n")
	p("with the experiment's baseline as a ratio with a 95%% bootstrap confidence interval.\n\n")
	p("Without arguments it runs the quick suite: the two seed experiments (zero, dax)\n")
	p("at full strength and short versions of the others, %s\n", quickTime)
	p("on a 2-core machine at rest. --full, or \"all\", runs every experiment at full size:\n")
	p("%s.\n", fullTime)
	p("Naming experiments runs those, at full size. Variants that need root (the\n")
	p("kernel's side of walk and dax, and fuse) are skipped, with the reason, without it.\n\n")
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
	p("\noptions:\n")
	rows := [][2]string{
		{"--full", "every experiment at full size (as \"all\")"},
		{"--loops N", "measured rounds; one warm-up round more is run and discarded" + defaults(func(d bench.Params) int { return d.Loops })},
		{"--reads N", "operations per variant per round" + defaults(func(d bench.Params) int { return d.Ops })},
		{"--size N", "bytes per read" + defaults(func(d bench.Params) int { return d.Size })},
		{"--turns N", "split each measured round into N turns per variant, the variants alternating turn by turn, and pair them turn by turn: a round's ratio is the median of its turn ratios" + defaults(func(d bench.Params) int { return max(d.Turns, 1) })},
		{"--variants a,b", "run only these variants (default all); ratios need the baseline"},
		{"--format F", "stdout format: text (rounds, summary, verdict), benchstat (Go benchmark lines, one per round) or markdown (the summaries as a document, as docs/benchmarks.md)"},
		{"--markdown", "as --format markdown"},
		{"--json FILE", "also write the results as JSON to FILE (schema: go doc github.com/iovfs/iovfs/bench)"},
		{"--plot FILE", "also draw per-round ns/op of each variant to FILE, .svg or .png"},
		{"--lock-os-thread", "keep the measuring goroutine on one OS thread"},
		{"--clock C", "wall (default) or thread: time rounds by the measuring thread's CPU time, which leaves out the time it spends descheduled on a busy machine (implies --lock-os-thread; not for the pipe experiments or the matrix's pipe cells)"},
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
	p("\nexamples:\n")
	p("  iovfs bench                            # the quick suite\n")
	p("  iovfs bench --full --markdown > docs/benchmarks.md\n")
	p("  iovfs bench zero dax                   # the two seed experiments\n")
	p("  iovfs bench dax --file-size 1M --clock thread\n")
	p("  iovfs bench matrix --drivers tmpfs,ext4 --json m.json --plot m.png\n")
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
	c := &cli{name: "bench", stdout: stdout, stderr: stderr}
	if wantsHelp(args, false) {
		benchUsage(stdout)
		return 0
	}
	f, exps, params, quick, err := parseBench(args)
	if err != nil {
		return c.usageError("%v", err)
	}
	if err := f.checkOutputs(); err != nil {
		return c.fail("%v", err)
	}

	start := time.Now()
	load := loadAverage()
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
			return c.fail("%s: %v", e.Name, err)
		}
		if text {
			if err := bench.WriteSummary(stdout, res); err != nil {
				return c.fail("%v", err)
			}
		}
		results = append(results, res)
	}
	switch f.format {
	case "benchstat":
		if err := bench.WriteBenchstat(stdout, results); err != nil {
			return c.fail("%v", err)
		}
	case "markdown":
		run := bench.MarkdownRun{Command: "iovfs " + strings.Join(append([]string{"bench"}, args...), " "),
			Revision: revision(), Start: start, End: time.Now(), Load: load}
		if err := bench.WriteMarkdown(stdout, results, run); err != nil {
			return c.fail("%v", err)
		}
	}
	status := 0
	if f.json != "" {
		var b bytes.Buffer
		if err := bench.WriteJSON(&b, results); err != nil {
			status = c.fail("--json %s: %v", f.json, err)
		} else if err := os.WriteFile(f.json, b.Bytes(), 0o644); err != nil {
			status = c.fail("--json %s: %s", f.json, errText(err))
		} else {
			fmt.Fprintf(notes, "\nwrote JSON results to %s\n", f.json)
		}
	}
	if f.plot != "" {
		if err := bench.WritePlot(f.plot, results); err != nil {
			status = c.fail("--plot %s: %v", f.plot, err)
		} else {
			fmt.Fprintf(notes, "wrote the per-round plot to %s\n", f.plot)
		}
	}
	if quick {
		fmt.Fprintf(notes, "\nThis was the quick suite (%s). \"iovfs bench --full\" (or \"iovfs bench all\") runs every experiment at full size: %s.\n",
			time.Since(start).Round(time.Second), fullTime)
	}
	return status
}

// parseBench parses the arguments of "iovfs bench" and plans the run.
func parseBench(args []string) (*benchFlags, []*bench.Experiment, []bench.Params, bool, error) {
	f := new(benchFlags)
	fs := newBenchFlagSet(f)
	names, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, nil, nil, false, errors.New(flagError(err, args))
	}
	exps, params, quick, err := f.plan(fs, names)
	return f, exps, params, quick, err
}

// loadAverage is the first three fields of /proc/loadavg, or "".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], ", ")
}

// revision names the code this binary was built from, for reports.
func revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	line := versionLine(bi, ok)
	return strings.TrimPrefix(line, "iovfs ")
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

// plan checks the flags against the experiments named (the quick suite,
// if none and no --full) and returns the experiments to run with their
// parameters, and whether that is the quick suite.
func (f *benchFlags) plan(fs *flag.FlagSet, names []string) ([]*bench.Experiment, []bench.Params, bool, error) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var exps []*bench.Experiment
	quick := len(names) == 0 && !f.full
	if len(names) == 0 {
		exps = bench.Experiments()
	}
	for _, n := range names {
		if n == "all" {
			for _, e := range bench.Experiments() {
				if !slices.Contains(exps, e) {
					exps = append(exps, e)
				}
			}
			continue
		}
		e := bench.Lookup(n)
		if e == nil {
			var have []string
			for _, e := range bench.Experiments() {
				have = append(have, e.Name)
			}
			return nil, nil, false, fmt.Errorf("no experiment %q (have %s, or all)", n, strings.Join(have, ", "))
		}
		if !slices.Contains(exps, e) {
			exps = append(exps, e)
		}
	}
	if f.full && len(names) > 0 {
		return nil, nil, false, errors.New("--full runs every experiment: name none, or leave --full out")
	}
	if f.markdown {
		if set["format"] && f.format != "markdown" {
			return nil, nil, false, fmt.Errorf("--markdown and --format %s: choose one", f.format)
		}
		f.format = "markdown"
	}
	if f.format != "text" && f.format != "benchstat" && f.format != "markdown" {
		return nil, nil, false, fmt.Errorf("--format %q: want text, benchstat or markdown", f.format)
	}
	if f.clock != "wall" && f.clock != "thread" {
		return nil, nil, false, fmt.Errorf("--clock %q: want wall or thread", f.clock)
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"loops", f.loops}, {"reads", f.reads}, {"size", f.size}, {"turns", f.turns}} {
		if set[n.name] {
			if err := positive(n.name, n.v); err != nil {
				return nil, nil, false, err
			}
		}
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
		err = fmt.Errorf("--%s is an option of %s, which is not being run", fl.Name, owners)
	})
	if err != nil {
		return nil, nil, false, err
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
			return nil, nil, false, fmt.Errorf("--variants: no experiment being run has a variant %q", v)
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
		if quick {
			q := quickSuite[e.Name]
			if !set["loops"] && q.loops > 0 {
				p.Loops = q.loops
			}
			if !set["reads"] && q.reads > 0 {
				p.Ops = q.reads
			}
			for k, v := range q.extra {
				if !set[k] {
					p.Extra[k] = v
				}
			}
		}
		if err := e.CheckFlags(p.Extra); err != nil {
			return nil, nil, false, err
		}
		run = append(run, e)
		params = append(params, p)
	}
	return run, params, quick, nil
}

// checkOutputs fails early, before minutes of measuring, if an output file
// cannot be written.
func (f *benchFlags) checkOutputs() error {
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
