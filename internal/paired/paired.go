// Package paired runs go test benchmarks that compare implementations in
// interleaved rounds, as iovfs bench does, so that a shared machine's load
// weighs on every implementation alike: each round runs every variant for
// the same number of operations, one after another in an order that
// rotates, and the figures are medians over rounds of per-round times and
// of per-round ratios. go test's own ns/op, one sub-benchmark after
// another, drifts by more than the differences measured here on a busy
// machine.
package paired

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// Variant is one implementation under comparison.
type Variant struct {
	Name string
	// Open returns the operation of one goroutine (a read with its own
	// buffer and position, say); it is called once per goroutine, before
	// the rounds.
	Open func(b *testing.B) func() error
	// Parallel runs the operation on GOMAXPROCS goroutines at once, each
	// doing the round's count; its time per operation is one goroutine's.
	Parallel bool
	// Against names another variant to report a ratio to as well, besides
	// the first (a parallel variant's serial one, say).
	Against string
}

// Run measures vs in b.N rounds of ops operations per variant (after one
// discarded warm-up round) and reports, for each variant, the median of
// its per-round ns per operation as "<name>-ns/op", and for each variant
// but the first the median of its per-round ratio to the first as
// "<name>/<first>", to its Against variant likewise, and for each
// parallel variant but the first parallel one, to that one (billy's
// parallel reads against iovfs's parallel reads, say). It fails b if an
// operation fails.
func Run(b *testing.B, ops int, vs ...Variant) {
	type state struct {
		ops []func() error // one per goroutine
		ns  []float64      // per round
	}
	st := make([]state, len(vs))
	for i, v := range vs {
		n := 1
		if v.Parallel {
			n = runtime.GOMAXPROCS(0)
		}
		for range n {
			st[i].ops = append(st[i].ops, v.Open(b))
		}
	}
	round := func(r int, keep bool) {
		for j := range vs {
			i := (r + j) % len(vs)
			d, err := measure(st[i].ops, ops)
			if err != nil {
				b.Fatalf("%s: %v", vs[i].Name, err)
			}
			if keep {
				st[i].ns = append(st[i].ns, float64(d.Nanoseconds())/float64(ops))
			}
		}
	}
	round(0, false)
	b.ResetTimer()
	for r := range b.N {
		round(r+1, true)
	}
	b.StopTimer()
	ratio := func(i, k int) {
		ratios := make([]float64, len(st[i].ns))
		for r := range ratios {
			ratios[r] = st[i].ns[r] / st[k].ns[r]
		}
		b.ReportMetric(median(ratios), vs[i].Name+"/"+vs[k].Name)
	}
	firstParallel := slices.IndexFunc(vs, func(w Variant) bool { return w.Parallel })
	for i, v := range vs {
		b.ReportMetric(median(st[i].ns), v.Name+"-ns/op")
		if i != 0 {
			ratio(i, 0)
		}
		if k := firstParallel; v.Parallel && k > 0 && i != k {
			ratio(i, k)
		}
		if k := slices.IndexFunc(vs, func(w Variant) bool { return w.Name == v.Against }); k > 0 {
			ratio(i, k)
		} else if v.Against != "" && k < 0 {
			b.Fatalf("%s: no variant %q", v.Name, v.Against)
		}
	}
}

// measure runs n operations on each of ops's goroutines (on the calling
// one if there is one) and returns the wall time.
func measure(ops []func() error, n int) (time.Duration, error) {
	loop := func(op func() error) error {
		for range n {
			if err := op(); err != nil {
				return err
			}
		}
		return nil
	}
	if len(ops) == 1 {
		start := time.Now()
		err := loop(ops[0])
		return time.Since(start), err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ops))
	start := time.Now()
	for g, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = loop(op)
		}()
	}
	wg.Wait()
	d := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return d, err
		}
	}
	return d, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
