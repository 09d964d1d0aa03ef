package bench

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func TestZero(t *testing.T) {
	e := Lookup("zero")
	if e == nil {
		t.Fatal("zero is not registered")
	}
	for _, size := range []int{1, 4096} {
		var rounds bytes.Buffer
		res, err := Run(e, Params{Loops: 3, Ops: 2000, Size: size}, Options{Rounds: &rounds})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"read", "iter-wrap", "readv-1seg", "host"} {
			v := res.Variant(name)
			if v == nil {
				t.Errorf("size %d: variant %s missing", size, name)
				continue
			}
			if len(v.Rounds) != 3 || v.NsPerOp <= 0 {
				t.Errorf("size %d: %s: %d rounds, %v ns/op", size, name, len(v.Rounds), v.NsPerOp)
			}
			if name != "host" && allocates(v.AllocsPerOp) {
				t.Errorf("size %d: %s: %v allocs/op (%v B/op), want 0", size, name, v.AllocsPerOp, v.BytesPerOp)
			}
			if !strings.Contains(rounds.String(), name+" ") {
				t.Errorf("size %d: no round line for %s", size, name)
			}
		}
		if len(res.Ratios) != 3 {
			t.Errorf("size %d: %d ratios, want 3", size, len(res.Ratios))
		}

		var j bytes.Buffer
		if err := WriteJSON(&j, []*Result{res}); err != nil {
			t.Fatal(err)
		}
		f := checkJSONSchema(t, j.Bytes())
		if got := len(f.Experiments[0].Variants); got != 4 {
			t.Errorf("size %d: JSON has %d variants, want 4", size, got)
		}

		var b bytes.Buffer
		if err := WriteBenchstat(&b, []*Result{res}); err != nil {
			t.Fatal(err)
		}
		names := checkBenchstat(t, b.String())
		for _, name := range []string{"read", "iter-wrap", "readv-1seg", "host"} {
			bn := "BenchmarkZero/" + name + "/" + strconv.Itoa(size) + "B"
			if names[bn] != 3 {
				t.Errorf("%s: %d benchstat lines, want 3", bn, names[bn])
			}
		}

		var sum bytes.Buffer
		if err := WriteSummary(&sum, res); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"282 ns/op", "227 ns/op", "ratio iter-wrap / read:", "seed 1.242", "difference iter-wrap - read:", "seed 55 ns"} {
			if !strings.Contains(sum.String(), s) {
				t.Errorf("summary lacks %q:\n%s", s, sum.String())
			}
		}
	}
}

func TestZeroSubset(t *testing.T) {
	res, err := Run(Lookup("zero"), Params{Loops: 1, Ops: 100, Variants: []string{"iter-wrap", "read"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Variants) != 2 || res.Variants[0].Name != "read" || res.Variants[1].Name != "iter-wrap" {
		t.Errorf("variants %v, want read and iter-wrap in display order", res.Variants)
	}
}
