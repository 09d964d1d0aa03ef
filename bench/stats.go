package bench

// Statistics over rounds. A run has few rounds (ten by default), so the
// estimates are medians, which one disturbed round cannot drag, and the
// intervals are percentile bootstraps, which assume nothing about the shape
// of the distribution. The resampling RNG has a fixed seed, so the same data
// always give the same intervals.

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Resamples is the number of bootstrap resamples behind every interval.
const Resamples = 10000

// bootstrapSeed seeds the resampling RNG; fixed so results repeat.
const bootstrapSeed = 0x10f5_2025

// Interval is a confidence interval [Low, High].
type Interval struct {
	Low, High float64
}

// Contains reports whether x lies in the interval, ends included.
func (iv Interval) Contains(x float64) bool {
	return iv.Low <= x && x <= iv.High
}

// Median returns the median of xs (the mean of the middle two for an even
// count), or NaN for no data. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return sortedMedian(s)
}

func sortedMedian(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Quantile returns the q-quantile (0 <= q <= 1) of sorted data, interpolating
// linearly between order statistics (Hyndman and Fan's type 7, the default
// of R and NumPy).
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// MinMax returns the smallest and largest of xs.
func MinMax(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	return slices.Min(xs), slices.Max(xs)
}

// BootstrapMedianCI returns a percentile-bootstrap confidence interval, at
// the given level (0.95 for 95%), for the median of xs. It draws resamples
// sets of len(xs) values from xs with replacement, takes the median of
// each, and returns the (1-level)/2 and (1+level)/2 quantiles of those
// medians. The RNG is seeded with seed, so the result depends only on the
// arguments.
func BootstrapMedianCI(xs []float64, level float64, resamples int, seed uint64) Interval {
	if len(xs) == 0 {
		return Interval{math.NaN(), math.NaN()}
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(xs))))
	meds := make([]float64, resamples)
	buf := make([]float64, len(xs))
	for i := range meds {
		for j := range buf {
			buf[j] = xs[rng.IntN(len(xs))]
		}
		slices.Sort(buf)
		meds[i] = sortedMedian(buf)
	}
	slices.Sort(meds)
	return Interval{
		Low:  Quantile(meds, (1-level)/2),
		High: Quantile(meds, (1+level)/2),
	}
}

// PairedRatio estimates how long a takes relative to b when a[i] and b[i]
// were measured in the same round i. It returns the median of the per-round
// ratios a[i]/b[i] and a percentile-bootstrap interval for that median,
// resampling whole rounds. Pairing by round cancels drift that hits both
// variants of a round alike, which interleaving makes the common case, so
// the interval is narrower than one built from the two samples apart.
func PairedRatio(a, b []float64, level float64, resamples int, seed uint64) (float64, Interval) {
	n := min(len(a), len(b))
	r := make([]float64, 0, n)
	for i := range n {
		r = append(r, a[i]/b[i])
	}
	return Median(r), BootstrapMedianCI(r, level, resamples, seed)
}
