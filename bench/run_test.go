package bench

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var sink []byte

// toyExperiment has variants whose costs and allocations are known, and
// records the order in which they ran.
func toyExperiment(order *[]string) *Experiment {
	spin := func(name string, work int) Variant {
		return Variant{Name: name, Doc: name, Setup: func(p Params, env any) (Op, error) {
			if env != "env" {
				return Op{}, errors.New("experiment Setup's env did not arrive")
			}
			buf := make([]byte, p.Size)
			return Op{Run: func(n int) error {
				*order = append(*order, name)
				for range n * work {
					for i := range buf {
						buf[i]++
					}
				}
				return nil
			}}, nil
		}}
	}
	return &Experiment{
		Name:     "toy-exp",
		Summary:  "toy",
		Baseline: "one",
		Defaults: Params{Loops: 3, Ops: 10, Size: 64},
		Unit:     "ops",
		Setup: func(p Params) (any, func() error, error) {
			return "env", nil, nil
		},
		Flags: []Flag{{Name: "pattern", Default: "seq", Usage: "toy flag"}},
		Variants: []Variant{
			spin("one", 1),
			spin("four", 4),
			{Name: "alloc", Doc: "allocates once per op", Setup: func(p Params, _ any) (Op, error) {
				return Op{Run: func(n int) error {
					*order = append(*order, "alloc")
					for range n {
						sink = make([]byte, 4096)
					}
					return nil
				}}, nil
			}},
			{Name: "absent", Doc: "always skipped", Setup: func(Params, any) (Op, error) {
				return Op{}, Skip("not here")
			}},
		},
		Reference: []Reference{{Label: "theirs, one", Variant: "one", NsPerOp: 100}, {Label: "theirs, four", Variant: "four", NsPerOp: 400}},
	}
}

func TestRunToy(t *testing.T) {
	var order []string
	e := toyExperiment(&order)
	var rounds bytes.Buffer
	res, err := Run(e, Params{Ops: 2000}, Options{Rounds: &rounds})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Variant != "absent" || !strings.Contains(res.Skipped[0].Reason, "not here") {
		t.Errorf("skipped = %+v", res.Skipped)
	}
	if res.Params.Extra["pattern"] != "seq" {
		t.Errorf("extra flag default not filled: %v", res.Params.Extra)
	}
	// Warm-up plus 3 rounds of 3 variants, each round starting one later.
	want := "one four alloc four alloc one alloc one four one four alloc"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("order\n got %s\nwant %s", got, want)
	}
	for _, v := range res.Variants {
		if len(v.Rounds) != 3 || v.Warmup == 0 {
			t.Errorf("%s: %d rounds, warm-up %v", v.Name, len(v.Rounds), v.Warmup)
		}
	}
	if a := res.Variant("alloc").AllocsPerOp; a < 0.99 || a > 1.01 {
		t.Errorf("alloc: %v allocs/op, want 1", a)
	}
	if a := res.Variant("one").AllocsPerOp; allocates(a) {
		t.Errorf("one: %v allocs/op, want 0", a)
	}
	// The ratio's value is a timing and belongs to benchmarks; here only
	// that it exists and is ordered (a shared machine can make it anything).
	r, ok := res.Ratio("four")
	if !ok || !(r.Median > 0) || r.CI.Low > r.Median || r.Median > r.CI.High {
		t.Errorf("four/one ratio %+v: missing or not ordered", r)
	}
	lines := strings.Split(strings.TrimSpace(rounds.String()), "\n")
	if len(lines) != 12 {
		t.Fatalf("%d round lines, want 12:\n%s", len(lines), rounds.String())
	}
	re := regexp.MustCompile(`^(one|four|alloc) +([0-9]+):spending [0-9]+\.[0-9]{9}s  \([0-9.]+ ns/op(, warm-up, discarded)?\)$`)
	for _, l := range lines {
		if !re.MatchString(l) {
			t.Errorf("round line %q does not match %s", l, re)
		}
	}

	var sum bytes.Buffer
	if err := WriteSummary(&sum, res); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"absent: skipped: not here", "ratio to one", "as long as one", "1 (baseline)", "theirs, four", "seed 4.000"} {
		if !strings.Contains(sum.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, sum.String())
		}
	}
	// A verdict on four: its wording depends on the timing ("four takes
	// 4x as long", or "four is 60% slower ... within noise" when the
	// machine is busy).
	if !regexp.MustCompile(`(?m)^ +four (takes [0-9.]+x as long|is [0-9.]+% (slower|faster))`).MatchString(sum.String()) {
		t.Errorf("summary lacks a verdict on four:\n%s", sum.String())
	}
}

// TestRunWarm checks Experiment.Warm: before each timed batch a variant
// does a quarter of its operations untimed, and their allocations are not
// counted.
func TestRunWarm(t *testing.T) {
	var order []string
	e := toyExperiment(&order)
	e.Warm = true
	var ns []int
	for i, v := range e.Variants {
		if v.Name == "alloc" {
			e.Variants[i].Setup = func(Params, any) (Op, error) {
				return Op{Run: func(n int) error {
					ns = append(ns, n)
					for range n {
						sink = make([]byte, 4096)
					}
					return nil
				}}, nil
			}
		}
	}
	res, err := Run(e, Params{Ops: 400, Loops: 2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{100, 400, 100, 400, 100, 400}; !slices.Equal(ns, want) {
		t.Errorf("alloc ran batches of %v, want %v", ns, want)
	}
	if a := res.Variant("alloc").AllocsPerOp; a < 0.99 || a > 1.01 {
		t.Errorf("alloc: %v allocs/op counted, want 1 (the warm-up's left out)", a)
	}
}

func TestSeedSeconds(t *testing.T) {
	for ns, want := range map[int64]string{
		28245015:   "0.028245015s",
		1:          "0.000000001s",
		1390446540: "1.390446540s",
	} {
		if got := seedSeconds(timeNs(ns)); got != want {
			t.Errorf("seedSeconds(%d) = %q, want %q", ns, got, want)
		}
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		r    Ratio
		want []string
	}{
		{Ratio{"a", "read", 1.131, Interval{1.12, 1.14}}, []string{"a is 13.1% slower than read", "beyond noise", "excludes 1.0"}},
		{Ratio{"a", "read", 0.8, Interval{0.79, 0.81}}, []string{"a is 20.0% faster than read", "beyond noise"}},
		{Ratio{"a", "read", 1.004, Interval{0.99, 1.02}}, []string{"a is 0.4% slower", "within noise", "includes 1.0"}},
		{Ratio{"host", "read", 7.5, Interval{7.4, 7.6}}, []string{"host takes 7.50x as long as read", "beyond noise"}},
		{Ratio{"a", "read", 1.8, Interval{1.7, 1.9}}, []string{"a is 80.0% slower than read"}},
	} {
		got := Verdict(tc.r)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("Verdict(%+v) = %q, lacks %q", tc.r, got, w)
			}
		}
	}
}

func TestResolveErrors(t *testing.T) {
	var order []string
	e := toyExperiment(&order)
	if _, err := Run(e, Params{Variants: []string{"one", "nosuch"}}, Options{}); err == nil || !strings.Contains(err.Error(), `no variant "nosuch"`) {
		t.Errorf("unknown variant: err = %v", err)
	}
	if _, err := Run(e, Params{Loops: -1}, Options{}); err == nil {
		t.Errorf("negative loops accepted")
	}
}

func TestSubsetWithoutBaseline(t *testing.T) {
	var order []string
	res, err := Run(toyExperiment(&order), Params{Loops: 1, Variants: []string{"four"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Variants) != 1 || len(res.Ratios) != 0 {
		t.Errorf("variants %d, ratios %d; want 1 and 0", len(res.Variants), len(res.Ratios))
	}
	var sum bytes.Buffer
	if err := WriteSummary(&sum, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.String(), "baseline one did not run") {
		t.Errorf("summary does not say the baseline is missing:\n%s", sum.String())
	}
}

func TestPlot(t *testing.T) {
	var order []string
	res, err := Run(toyExperiment(&order), Params{Loops: 4}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"p.svg", "p.png"} {
		file := filepath.Join(dir, name)
		if err := WritePlot(file, []*Result{res, res}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if name == "p.svg" && !bytes.Contains(b[:200], []byte("<svg")) || name == "p.png" && !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s: not an image: %q", name, b[:min(len(b), 40)])
		}
	}
	if err := WritePlot(filepath.Join(dir, "p.gif"), []*Result{res}); err == nil || !strings.Contains(err.Error(), ".svg or .png") {
		t.Errorf("gif: err = %v", err)
	}
	if err := WritePlot(filepath.Join(dir, "nodir", "p.svg"), []*Result{res}); err == nil || !strings.Contains(err.Error(), "nodir") {
		t.Errorf("missing directory: err = %v", err)
	}
}

func TestBenchName(t *testing.T) {
	for in, want := range map[string]string{"zero": "Zero", "dax": "Dax", "toy-exp": "ToyExp"} {
		if got := (&Experiment{Name: in}).BenchName(); got != want {
			t.Errorf("BenchName(%q) = %q, want %q", in, got, want)
		}
	}
}

func timeNs(ns int64) time.Duration { return time.Duration(ns) }

// TestThreadCPUClock: with Options.ThreadCPU the rounds are timed by the
// thread's CPU time, which a variant that sleeps does not consume, and the
// header and JSON say which clock timed them.
func TestThreadCPUClock(t *testing.T) {
	e := &Experiment{
		Name: "toy-clock", Summary: "toy", Baseline: "spin", Defaults: Params{Loops: 2, Ops: 1, Size: 1}, Unit: "ops",
		Variants: []Variant{
			{Name: "spin", Doc: "spins 2 ms", Setup: func(Params, any) (Op, error) {
				return Op{Run: func(n int) error {
					for start := time.Now(); time.Since(start) < 2*time.Millisecond; {
					}
					return nil
				}}, nil
			}},
			{Name: "sleep", Doc: "sleeps 20 ms", Setup: func(Params, any) (Op, error) {
				return Op{Run: func(n int) error { time.Sleep(20 * time.Millisecond); return nil }}, nil
			}},
		},
	}
	for _, cpu := range []bool{false, true} {
		res, err := Run(e, Params{}, Options{ThreadCPU: cpu})
		if err != nil {
			t.Fatal(err)
		}
		spin, sleep := res.Variant("spin").NsPerOp, res.Variant("sleep").NsPerOp
		// The wall clock charges the sleep its 20 ms; the thread's CPU
		// clock charges it far less than the 2 ms spin, which is CPU
		// time through and through.
		if !cpu && sleep < 20e6 {
			t.Errorf("wall clock: sleep measured %v ns, want at least 20 ms", sleep)
		}
		if cpu && sleep >= spin {
			t.Errorf("thread CPU time: sleep %v ns, spin %v ns; want the sleep cheaper", sleep, spin)
		}
		if !res.LockOSThread && cpu {
			t.Error("ThreadCPU did not lock the OS thread")
		}
		var j bytes.Buffer
		if err := WriteJSON(&j, []*Result{res}); err != nil {
			t.Fatal(err)
		}
		f := checkJSONSchema(t, j.Bytes())
		want := map[bool]string{false: "wall", true: "thread-cpu"}[cpu]
		if got := f.Experiments[0].Clock; got != want {
			t.Errorf("JSON clock %q, want %q", got, want)
		}
		if h := Header(e, res.Params, Options{ThreadCPU: cpu}); !strings.Contains(h, map[bool]string{false: "wall clock", true: "thread CPU time"}[cpu]) {
			t.Errorf("header does not name the clock:\n%s", h)
		}
	}
}

// TestRunTurns: with Params.Turns, a measured round is done in turns that
// alternate between the variants in the round's order, each variant's
// round is the sum of its turns, the operations add up to Ops, the
// allocations are the allocating variant's alone, and a round's ratio is
// the median of its turn ratios.
func TestRunTurns(t *testing.T) {
	order := make([]string, 0, 64) // the recording must not allocate in a turn
	e := toyExperiment(&order)
	res, err := Run(e, Params{Ops: 103, Turns: 5, Variants: []string{"one", "four", "alloc"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Warm-up: each variant once; then per round 5 turns of the 3.
	if len(order) != 3+3*5*3 {
		t.Fatalf("%d runs, want %d: %v", len(order), 3+3*5*3, order)
	}
	round1 := strings.Join(order[3:9], " ")
	if want := "four alloc one four alloc one"; round1 != want {
		t.Errorf("round 1 begins %q, want %q", round1, want)
	}
	for _, v := range res.Variants {
		if len(v.Turns) != 3 || len(v.TurnOps) != 5 {
			t.Fatalf("%s: %d rounds of turns, %d turns", v.Name, len(v.Turns), len(v.TurnOps))
		}
		ops := 0
		for _, k := range v.TurnOps {
			ops += k
		}
		if ops != 103 || v.TurnOps[0] != 21 || v.TurnOps[4] != 20 {
			t.Errorf("%s: turns of %v ops", v.Name, v.TurnOps)
		}
		for i, ts := range v.Turns {
			var sum time.Duration
			for _, d := range ts {
				sum += d
			}
			if sum != v.Rounds[i] {
				t.Errorf("%s: round %d is %v, its turns add up to %v", v.Name, i, v.Rounds[i], sum)
			}
		}
	}
	if a := res.Variant("alloc").AllocsPerOp; a < 0.99 || a > 1.01 {
		t.Errorf("alloc: %v allocs/op, want 1", a)
	}
	for _, name := range []string{"one", "four"} {
		if a := res.Variant(name).AllocsPerOp; allocates(a) {
			t.Errorf("%s: %v allocs/op, want 0 (another variant's allocations counted?)", name, a)
		}
	}
	// The ratio is computed from the turns: made-up turn times give a
	// known median.
	a := &VariantResult{Turns: [][]time.Duration{{2, 2, 30}, {3, 3, 3}}, TurnOps: []int{1, 1, 1}, Rounds: []time.Duration{34, 9}, ops: 3}
	b := &VariantResult{Turns: [][]time.Duration{{1, 1, 1}, {1, 1, 1}}, TurnOps: []int{1, 1, 1}, Rounds: []time.Duration{3, 3}, ops: 3}
	if m, _ := RoundRatios(a, b, Level, 100, 1); m != 2.5 {
		t.Errorf("RoundRatios = %v, want 2.5 (the median of the per-round medians 2 and 3)", m)
	}
}
