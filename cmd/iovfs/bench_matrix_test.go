package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/bench"
)

// TestBenchMatrix runs a narrowed matrix through the command: the matrix
// flags reach the experiment, and the text, JSON and heat map come out.
func TestBenchMatrix(t *testing.T) {
	dir := t.TempDir()
	js, png := filepath.Join(dir, "m.json"), filepath.Join(dir, "m.png")
	code, out, errOut := runArgs("bench", "matrix", "--drivers", "zero,tmpfs", "--segments", "1,16", "--sizes", "512",
		"--cell-time", "200us", "--loops", "2", "--json", js, "--plot", png)
	if code != 0 {
		t.Fatalf("status %d\n%s", code, errOut)
	}
	for _, s := range []string{"== matrix:", "tmpfs/read/16x512B", "zero/write/1x512B", "worst cell: "} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var f bench.File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if m := f.Experiments[0].Matrix; m == nil || len(m.Cells) != 8 {
		t.Fatalf("JSON matrix: %+v", m)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("plot: %v", err)
	}
	if code, _, errOut := runArgs("bench", "zero", "--drivers", "null"); code != 2 || !strings.Contains(errOut, "--drivers is an option of matrix") {
		t.Errorf("--drivers on zero: status %d, %s", code, errOut)
	}
}
