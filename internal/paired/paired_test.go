package paired

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// TestMeasure checks that every goroutine of a variant does the round's
// count, and that an operation's error comes back.
func TestMeasure(t *testing.T) {
	var calls atomic.Int64
	op := func() error { calls.Add(1); return nil }
	ops := make([]func() error, runtime.GOMAXPROCS(0)+1)
	for i := range ops {
		ops[i] = op
	}
	if _, err := measure(ops, 100); err != nil || calls.Load() != int64(100*len(ops)) {
		t.Fatalf("measure: %d calls, %v; want %d", calls.Load(), err, 100*len(ops))
	}
	errBad := errors.New("bad")
	if _, err := measure([]func() error{op, func() error { return errBad }}, 3); err != errBad {
		t.Fatalf("measure: %v, want %v", err, errBad)
	}
}
