package bench

// The harness. Measurement discipline, in the order a round applies it:
// rotate the variant order, settle the heap, run the untimed warm-up calls
// (Experiment.Warm), read the allocation counters,
// time Op.Run(Ops) as a whole, read the counters again. Nothing else runs
// on the measuring goroutine between the two counter reads, and the harness
// starts no goroutines, so the allocations counted are the variant's.

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Level is the confidence level of every interval the harness reports.
const Level = 0.95

// Options control how a run is carried out, not what it measures.
type Options struct {
	// LockOSThread keeps the measuring goroutine on one OS thread for the
	// whole run (runtime.LockOSThread).
	LockOSThread bool
	// ThreadCPU times each round by the measuring thread's CPU time
	// (CLOCK_THREAD_CPUTIME_ID) instead of the wall clock, and implies
	// LockOSThread. On a machine shared with other busy processes it leaves
	// out the time the thread spends descheduled, which the wall clock
	// charges to whichever variant was running; it still counts what the
	// neighbours do to caches and memory bandwidth. It suits experiments
	// whose variants run on the measuring goroutine alone (zero, dax), not
	// those with a peer goroutine (pipe, the matrix's pipe cells).
	ThreadCPU bool
	// Rounds, if not nil, receives one line per variant per round as it is
	// measured, in the seed's format.
	Rounds io.Writer
	// Progress, if not nil, receives a one-line progress display that is
	// redrawn with carriage returns; meant for a terminal.
	Progress io.Writer
}

// Result is what one run of an experiment measured.
type Result struct {
	Experiment   *Experiment
	Params       Params
	LockOSThread bool
	ThreadCPU    bool
	Machine      Machine
	// Variants that ran, in display order.
	Variants []*VariantResult
	// Ratios of each variant to the baseline, in display order; empty if
	// the baseline did not run.
	Ratios []Ratio
	// Skipped lists the variants that Setup skipped, with the reason
	// (for the matrix: the drivers that could not run).
	Skipped []Skipped
	// Matrix holds the matrix experiment's cells; nil for the others.
	Matrix *Matrix
}

// VariantResult is one variant's measurements and their statistics.
type VariantResult struct {
	Name string
	// Warmup is the discarded warm-up round's time.
	Warmup time.Duration
	// Rounds are the measured rounds' times, in round order.
	Rounds []time.Duration
	// Allocs and Bytes are the heap allocations (count and bytes) made
	// during each measured round.
	Allocs, Bytes []uint64
	// Turns holds, when Params.Turns > 1, each measured round's turns'
	// times (Rounds[i] is the sum of Turns[i]), and TurnOps the
	// operations of each turn (the same in every round).
	Turns   [][]time.Duration
	TurnOps []int

	// NsPerOp is the median over rounds of the time per operation, CI its
	// bootstrap interval, and Min and Max the extreme rounds.
	NsPerOp, Min, Max float64
	CI                Interval
	// AllocsPerOp and BytesPerOp are totals over the measured rounds
	// divided by the operations done in them.
	AllocsPerOp, BytesPerOp float64

	ops int
}

// Ratio is variant A's time per operation divided by variant B's: the
// median of the per-round ratios with its bootstrap interval.
type Ratio struct {
	A, B   string
	Median float64
	CI     Interval
}

// BeyondNoise reports whether the interval excludes 1.0, that is whether
// A and B differ at the harness's confidence level.
func (r Ratio) BeyondNoise() bool { return !r.CI.Contains(1) }

// Skipped is a variant left out of a run.
type Skipped struct {
	Variant, Reason string
}

// NsPerOpRounds returns each measured round's time per operation.
func (v *VariantResult) NsPerOpRounds() []float64 {
	xs := make([]float64, len(v.Rounds))
	for i, d := range v.Rounds {
		xs[i] = float64(d.Nanoseconds()) / float64(v.ops)
	}
	return xs
}

// Run runs experiment e with parameters p: Setup, then one warm-up round and
// p.Loops measured rounds, in each of which every variant does p.Ops
// operations in turn, starting one variant later each round.
func Run(e *Experiment, p Params, o Options) (res *Result, err error) {
	p, vs, err := e.resolve(p)
	if err != nil {
		return nil, err
	}
	if o.ThreadCPU {
		o.LockOSThread = true
		clock = threadClock
		defer func() { clock = time.Now }()
	}
	res = &Result{Experiment: e, Params: p, LockOSThread: o.LockOSThread, ThreadCPU: o.ThreadCPU, Machine: ThisMachine()}
	if e.Runner != nil {
		if o.LockOSThread {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
		}
		if err := e.Runner(p, o, res); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name, err)
		}
		return res, nil
	}

	var env any
	if e.Setup != nil {
		var cleanup func() error
		env, cleanup, err = e.Setup(p)
		if err != nil {
			return nil, fmt.Errorf("%s: set-up: %w", e.Name, err)
		}
		if cleanup != nil {
			defer func() {
				if cerr := cleanup(); cerr != nil && err == nil {
					err = fmt.Errorf("%s: clean-up: %w", e.Name, cerr)
				}
			}()
		}
	}

	type running struct {
		v  *Variant
		op Op
		r  *VariantResult
	}
	var rs []running
	defer func() {
		for _, x := range rs {
			if x.op.Close == nil {
				continue
			}
			if cerr := x.op.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("%s/%s: close: %w", e.Name, x.v.Name, cerr)
			}
		}
	}()
	for _, v := range vs {
		op, err := v.Setup(p, env)
		if errors.Is(err, ErrSkip) {
			res.Skipped = append(res.Skipped, Skipped{v.Name, err.Error()})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s/%s: set-up: %w", e.Name, v.Name, err)
		}
		r := &VariantResult{Name: v.Name, ops: p.Ops}
		rs = append(rs, running{v, op, r})
		res.Variants = append(res.Variants, r)
	}
	if len(rs) == 0 {
		return res, nil
	}

	if o.LockOSThread {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	width := 0
	for _, x := range rs {
		width = max(width, len(x.v.Name))
	}
	rwidth := len(fmt.Sprint(p.Loops))
	total := (p.Loops + 1) * len(rs)
	for round := 0; round <= p.Loops; round++ {
		if round > 0 && p.Turns > 1 {
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "\r\033[K%s: %s, %d turns (%d%%)", e.Name, roundName(round, p.Loops), p.Turns, 100*round*len(rs)/total)
			}
			vrs := make([]*VariantResult, len(rs))
			ops := make([]func(int) error, len(rs))
			for j := range rs {
				x := rs[(round+j)%len(rs)]
				vrs[j], ops[j] = x.r, x.op.Run
			}
			if err := measureTurns(vrs, ops, p.Ops, p.Turns); err != nil {
				return nil, fmt.Errorf("%s: round %d: %w", e.Name, round, err)
			}
			if o.Progress != nil {
				fmt.Fprint(o.Progress, "\r\033[K")
			}
			if o.Rounds != nil {
				for _, r := range vrs {
					d := r.Rounds[len(r.Rounds)-1]
					fmt.Fprintf(o.Rounds, "%-*s  %*d:spending %s  (%s ns/op, %d turns)\n", width, r.Name, rwidth, round, seedSeconds(d), fmtNs(float64(d.Nanoseconds())/float64(p.Ops)), p.Turns)
				}
			}
			continue
		}
		for j := range rs {
			x := rs[(round+j)%len(rs)]
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "\r\033[K%s: %s, %s (%d%%)", e.Name, roundName(round, p.Loops), x.v.Name, 100*(round*len(rs)+j)/total)
			}
			warm := 0
			if e.Warm {
				warm = max(1, p.Ops/4)
			}
			d, allocs, bytes, err := measure(x.op.Run, p.Ops, warm)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: round %d: %w", e.Name, x.v.Name, round, err)
			}
			if round == 0 {
				x.r.Warmup = d
			} else {
				x.r.Rounds = append(x.r.Rounds, d)
				x.r.Allocs = append(x.r.Allocs, allocs)
				x.r.Bytes = append(x.r.Bytes, bytes)
			}
			if o.Progress != nil {
				fmt.Fprint(o.Progress, "\r\033[K")
			}
			if o.Rounds != nil {
				note := ""
				if round == 0 {
					note = ", warm-up, discarded"
				}
				fmt.Fprintf(o.Rounds, "%-*s  %*d:spending %s  (%s ns/op%s)\n", width, x.v.Name, rwidth, round, seedSeconds(d), fmtNs(float64(d.Nanoseconds())/float64(p.Ops)), note)
			}
		}
	}
	for _, x := range rs {
		x.r.summarize()
	}
	res.ratios()
	return res, nil
}

// measure settles the heap, runs run(warm) untimed if warm > 0, then
// times run(n) and counts the heap allocations it makes.
func measure(run func(int) error, n, warm int) (d time.Duration, allocs, bytes uint64, err error) {
	settle()
	if warm > 0 {
		if err := run(warm); err != nil {
			return 0, 0, 0, err
		}
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := clock()
	err = run(n)
	d = clock().Sub(start)
	runtime.ReadMemStats(&m1)
	return d, m1.Mallocs - m0.Mallocs, m1.TotalAlloc - m0.TotalAlloc, err
}

// measureTurns runs one measured round in turns: after settling the
// heap, the variants (vrs, in the round's order, with their ops) take
// turns of ops/turns operations, the first ops%turns turns one more, and
// each turn is timed alone. The allocation counters are read between
// turns, outside the timed spans, so each turn's allocations are its
// variant's. It appends each variant's round (the sum of its turns), its
// turns and its allocations.
func measureTurns(vrs []*VariantResult, ops []func(int) error, n, turns int) error {
	// Everything the loop stores into is allocated here, before the
	// counters are first read.
	ds := make([][]time.Duration, len(vrs))
	for j := range ds {
		ds[j] = make([]time.Duration, turns)
	}
	allocs, bytes := make([]uint64, len(vrs)), make([]uint64, len(vrs))
	turnOps := make([]int, turns)
	for t := range turnOps {
		turnOps[t] = n / turns
		if t < n%turns {
			turnOps[t]++
		}
	}
	settle()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	mallocs, total := m.Mallocs, m.TotalAlloc
	for t, k := range turnOps {
		for j, run := range ops {
			start := clock()
			err := run(k)
			d := clock().Sub(start)
			runtime.ReadMemStats(&m)
			if err != nil {
				return fmt.Errorf("%s: turn %d: %w", vrs[j].Name, t, err)
			}
			ds[j][t] = d
			allocs[j] += m.Mallocs - mallocs
			bytes[j] += m.TotalAlloc - total
			mallocs, total = m.Mallocs, m.TotalAlloc
		}
	}
	for j, r := range vrs {
		var sum time.Duration
		for _, d := range ds[j] {
			sum += d
		}
		r.Rounds = append(r.Rounds, sum)
		r.Turns = append(r.Turns, ds[j])
		r.TurnOps = turnOps
		r.Allocs = append(r.Allocs, allocs[j])
		r.Bytes = append(r.Bytes, bytes[j])
	}
	return nil
}

// clock is what measure and measureQuick time rounds with: the wall
// clock, or threadClock while a run with Options.ThreadCPU is under way
// (one run at a time: Run is not called concurrently).
var clock = time.Now

// threadClock returns the CPU time of the calling OS thread as a Time
// (only differences between two readings mean anything). The goroutine
// must be locked to its thread.
func threadClock() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(fmt.Sprintf("bench: CLOCK_THREAD_CPUTIME_ID: %v", err))
	}
	return time.Unix(0, ts.Nano())
}

// settle forces garbage collections until the live heap stops shrinking
// (at most a few), so no collection work left over from set-up or an
// earlier variant lands in the next timed round.
func settle() {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	last := m.HeapAlloc
	for range 3 {
		runtime.GC()
		runtime.ReadMemStats(&m)
		if m.HeapAlloc >= last {
			return
		}
		last = m.HeapAlloc
	}
}

func (v *VariantResult) summarize() {
	xs := v.NsPerOpRounds()
	v.NsPerOp = Median(xs)
	v.CI = BootstrapMedianCI(xs, Level, Resamples, bootstrapSeed)
	v.Min, v.Max = MinMax(xs)
	var allocs, bytes uint64
	for i := range v.Allocs {
		allocs += v.Allocs[i]
		bytes += v.Bytes[i]
	}
	ops := float64(v.ops) * float64(len(v.Rounds))
	v.AllocsPerOp = float64(allocs) / ops
	v.BytesPerOp = float64(bytes) / ops
}

func (res *Result) ratios() {
	base := res.Variant(res.Experiment.Baseline)
	if base == nil {
		return
	}
	for _, v := range res.Variants {
		if v == base {
			continue
		}
		m, ci := RoundRatios(v, base, Level, Resamples, bootstrapSeed)
		res.Ratios = append(res.Ratios, Ratio{A: v.Name, B: base.Name, Median: m, CI: ci})
	}
}

// RoundRatios is [PairedRatio] of a's rounds to b's: the median of the
// per-round ratios and its bootstrap interval over rounds. A round run in
// turns contributes the median of its turn-by-turn ratios, not the ratio
// of its totals.
func RoundRatios(a, b *VariantResult, level float64, resamples int, seed uint64) (float64, Interval) {
	n := min(len(a.Turns), len(b.Turns))
	if n == 0 || len(a.TurnOps) != len(b.TurnOps) {
		return PairedRatio(a.NsPerOpRounds(), b.NsPerOpRounds(), level, resamples, seed)
	}
	per := make([]float64, n)
	r := make([]float64, len(a.TurnOps))
	for i := range n {
		for t := range r {
			r[t] = float64(a.Turns[i][t]) / float64(b.Turns[i][t]) * float64(b.TurnOps[t]) / float64(a.TurnOps[t])
		}
		per[i] = Median(r)
	}
	return Median(per), BootstrapMedianCI(per, level, resamples, seed)
}

// Variant returns the named variant's result, or nil if it did not run.
func (res *Result) Variant(name string) *VariantResult {
	for _, v := range res.Variants {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// Ratio returns the ratio of the named variant to the baseline, if any.
func (res *Result) Ratio(name string) (Ratio, bool) {
	for _, r := range res.Ratios {
		if r.A == name {
			return r, true
		}
	}
	return Ratio{}, false
}

// seedSeconds formats d as the seed program prints a timespec, "%d.%ld",
// but with the nanoseconds zero-padded to nine digits, so that the
// seconds read correctly.
func seedSeconds(d time.Duration) string {
	ns := d.Nanoseconds()
	return fmt.Sprintf("%d.%09ds", ns/1e9, ns%1e9)
}

// fmtNs formats a time per operation with about four significant digits.
func fmtNs(ns float64) string {
	switch {
	case ns < 10:
		return fmt.Sprintf("%.3f", ns)
	case ns < 100:
		return fmt.Sprintf("%.2f", ns)
	case ns < 1000:
		return fmt.Sprintf("%.1f", ns)
	default:
		return fmt.Sprintf("%.0f", ns)
	}
}

func roundName(round, loops int) string {
	if round == 0 {
		return "warm-up round"
	}
	return fmt.Sprintf("round %d/%d", round, loops)
}
