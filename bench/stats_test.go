package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"one", []float64{3}, 3},
		{"odd", []float64{5, 1, 3}, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5},
		{"outlier", []float64{10, 11, 12, 1000}, 11.5},
		{"ties", []float64{2, 2, 2, 7}, 2},
	} {
		xs := append([]float64(nil), tc.xs...)
		if got := Median(xs); got != tc.want {
			t.Errorf("%s: Median(%v) = %v, want %v", tc.name, tc.xs, got, tc.want)
		}
		for i := range xs {
			if xs[i] != tc.xs[i] {
				t.Errorf("%s: Median modified its argument", tc.name)
			}
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{10, 20, 30, 40, 50}
	for _, tc := range []struct{ q, want float64 }{
		{0, 10}, {1, 50}, {0.5, 30}, {0.25, 20}, {0.1, 14}, {0.975, 49},
	} {
		if got := Quantile(s, tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestBootstrapDeterministic(t *testing.T) {
	xs := []float64{21.3, 21.9, 20.8, 22.4, 21.1, 21.0, 23.9, 21.5, 21.2, 21.7}
	a := BootstrapMedianCI(xs, 0.95, Resamples, 42)
	b := BootstrapMedianCI(xs, 0.95, Resamples, 42)
	if a != b {
		t.Fatalf("same seed, different intervals: %v and %v", a, b)
	}
	m := Median(xs)
	if !a.Contains(m) || a.Low < 20.8 || a.High > 23.9 {
		t.Errorf("interval %v: want it inside the data's range and around the median %v", a, m)
	}
	if c := BootstrapMedianCI(xs, 0.95, Resamples, 43); c == a {
		t.Logf("another seed gave the same interval %v (possible with few distinct medians)", c)
	}
}

func TestBootstrapConstant(t *testing.T) {
	iv := BootstrapMedianCI([]float64{7, 7, 7, 7}, 0.95, 1000, 1)
	if iv.Low != 7 || iv.High != 7 {
		t.Errorf("constant data: interval %v, want [7, 7]", iv)
	}
}

// The interval must cover the true median of the population most of the
// time: with 95% intervals over 50 trials, at least 40 must cover it.
func TestBootstrapCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	covered := 0
	const trials = 50
	for range trials {
		xs := make([]float64, 21)
		for i := range xs {
			xs[i] = 100 + 5*rng.NormFloat64()
		}
		if BootstrapMedianCI(xs, 0.95, 2000, 7).Contains(100) {
			covered++
		}
	}
	if covered < 40 {
		t.Errorf("the 95%% interval covered the true median in %d of %d trials", covered, trials)
	}
}

func TestPairedRatio(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// b drifts by ±30% from round to round; a is 1.25 times b, with 0.5%
	// noise of its own. Pairing must see through the drift.
	var a, b []float64
	for range 10 {
		drift := 1 + 0.3*(2*rng.Float64()-1)
		bi := 20 * drift
		b = append(b, bi)
		a = append(a, 1.25*bi*(1+0.005*(2*rng.Float64()-1)))
	}
	m, ci := PairedRatio(a, b, 0.95, Resamples, 9)
	if math.Abs(m-1.25) > 0.005 {
		t.Errorf("ratio %v, want 1.25 ± 0.005", m)
	}
	if !ci.Contains(1.25) || ci.High-ci.Low > 0.02 {
		t.Errorf("interval %v: want it to contain 1.25 and be narrower than 0.02", ci)
	}
	if !(Ratio{Median: m, CI: ci}).BeyondNoise() {
		t.Errorf("a 25%% difference is not beyond noise: %v", ci)
	}
	m2, ci2 := PairedRatio(a, b, 0.95, Resamples, 9)
	if m2 != m || ci2 != ci {
		t.Errorf("not deterministic: %v %v then %v %v", m, ci, m2, ci2)
	}
}

func TestPairedRatioNoDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var a, b []float64
	for range 15 {
		drift := 1 + 0.2*rng.Float64()
		a = append(a, 30*drift*(1+0.02*rng.NormFloat64()))
		b = append(b, 30*drift*(1+0.02*rng.NormFloat64()))
	}
	m, ci := PairedRatio(a, b, 0.95, Resamples, 11)
	if !ci.Contains(1) {
		t.Errorf("equal variants: ratio %v, interval %v excludes 1", m, ci)
	}
	if (Ratio{Median: m, CI: ci}).BeyondNoise() {
		t.Errorf("equal variants called beyond noise")
	}
}

func TestPairedRatioExact(t *testing.T) {
	a := []float64{4, 8, 6, 10}
	b := []float64{2, 4, 3, 5}
	m, ci := PairedRatio(a, b, 0.95, 500, 1)
	if m != 2 || ci.Low != 2 || ci.High != 2 {
		t.Errorf("ratio %v %v, want exactly 2 [2, 2]", m, ci)
	}
}
