package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestWASI runs the wasi experiment briefly: every variant runs, the
// iovfs variants allocate nothing per call, and the report has a row per
// operation.
func TestWASI(t *testing.T) {
	e := Lookup("wasi")
	if e == nil {
		t.Fatal("wasi is not registered")
	}
	res, err := Run(e, Params{Loops: 2, Ops: 500, Size: 1}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range wasiCases {
		for _, side := range []string{"iovfs/", "wazero/"} {
			v := res.Variant(side + c.name)
			if v == nil || len(v.Rounds) != 2 || v.NsPerOp <= 0 {
				t.Fatalf("%s%s did not run", side, c.name)
			}
			if side == "iovfs/" && allocates(v.AllocsPerOp) {
				t.Errorf("%s: %v allocs per call, want 0", v.Name, v.AllocsPerOp)
			}
		}
	}
	var b bytes.Buffer
	e.Report(&b, res)
	for _, c := range wasiCases {
		if !strings.Contains(b.String(), c.name) {
			t.Errorf("report has no row for %s:\n%s", c.name, b.String())
		}
	}
}
