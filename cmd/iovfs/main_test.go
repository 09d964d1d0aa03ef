package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/bench"
)

func runArgs(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestHelp(t *testing.T) {
	code, out, _ := runArgs("--help")
	if code != 0 || !strings.Contains(out, "bench") || !strings.Contains(out, "usage: iovfs") {
		t.Errorf("iovfs --help: status %d\n%s", code, out)
	}
	if code, _, errOut := runArgs(); code != 2 || errOut != "iovfs: missing command\nTry 'iovfs --help'.\n" {
		t.Errorf("iovfs with no arguments: status %d\n%s", code, errOut)
	}
	if code, _, errOut := runArgs("frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: status %d\n%s", code, errOut)
	}
	for _, args := range [][]string{{"bench", "--help"}, {"bench", "-h"}, {"help", "bench"}} {
		code, out, _ := runArgs(args...)
		if code != 0 {
			t.Errorf("%v: status %d", args, code)
		}
		want := []string{"--loops", "--reads", "--size", "--variants", "--json", "--format", "--plot", "--lock-os-thread"}
		for _, e := range bench.Experiments() {
			want = append(want, e.Name+":")
			for _, v := range e.Variants {
				want = append(want, v.Name+" ")
			}
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%v lacks %q:\n%s", args, w, out)
			}
		}
	}
}

func TestBenchZero(t *testing.T) {
	dir := t.TempDir()
	js, svg := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.svg")
	code, out, errOut := runArgs("bench", "--size", "4096", "zero", "--loops", "2", "--reads", "300", "--json", js, "--plot", svg)
	if code != 0 {
		t.Fatalf("status %d\n%s\n%s", code, out, errOut)
	}
	for _, w := range []string{"== zero", "read        1:spending 0.", "host", "summary", "verdict:", "282 ns/op", "machine:", "wrote JSON results to " + js} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
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
	if len(f.Experiments) != 1 || f.Experiments[0].Size != 4096 || len(f.Experiments[0].Variants) != 4 {
		t.Errorf("JSON: %+v", f.Experiments)
	}
	if st, err := os.Stat(svg); err != nil || st.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
}

func TestBenchFormatBenchstat(t *testing.T) {
	code, out, errOut := runArgs("bench", "zero", "--format", "benchstat", "--loops", "2", "--reads", "100", "--variants", "read,iter-wrap")
	if code != 0 {
		t.Fatalf("status %d\n%s", code, errOut)
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		switch {
		case strings.HasPrefix(l, "BenchmarkZero/read/1B\t"), strings.HasPrefix(l, "BenchmarkZero/iter-wrap/1B\t"):
			n++
		case strings.Contains(l, ": ") && !strings.HasPrefix(l, "Benchmark"):
		default:
			t.Errorf("stray line on stdout: %q", l)
		}
	}
	if n != 4 {
		t.Errorf("%d result lines, want 4:\n%s", n, out)
	}
}

// TestBenchQuick: "iovfs bench" alone plans the quick suite: every
// experiment, the seeds at their defaults, the others shortened, the
// user's own options kept; --full and "all" plan every experiment at its
// defaults.
func TestBenchQuick(t *testing.T) {
	_, exps, params, quick, err := parseBench(nil)
	if err != nil || !quick || len(exps) != len(bench.Experiments()) {
		t.Fatalf("bench: %v, quick %v, %d experiments", err, quick, len(exps))
	}
	for i, e := range exps {
		q, ok := quickSuite[e.Name]
		if !ok {
			t.Errorf("%s has no quick version", e.Name)
			continue
		}
		switch e.Name {
		case "zero", "dax":
			if params[i].Loops != 0 || params[i].Ops != 0 || params[i].Extra["file-size"] != "" && params[i].Extra["file-size"] != "64M" {
				t.Errorf("%s is not at full strength: %+v", e.Name, params[i])
			}
		default:
			if params[i].Loops != q.loops {
				t.Errorf("%s: loops %d, want %d", e.Name, params[i].Loops, q.loops)
			}
		}
	}
	_, _, params, _, _ = parseBench([]string{"--loops", "2", "--tree", "flat"})
	for i, e := range bench.Experiments() {
		if params[i].Loops != 2 || e.Name == "walk" && params[i].Extra["tree"] != "flat" {
			t.Errorf("quick with --loops 2 --tree flat: %s %+v", e.Name, params[i])
		}
	}
	for _, args := range [][]string{{"--full"}, {"all"}} {
		_, exps, params, quick, err := parseBench(args)
		if err != nil || quick || len(exps) != len(bench.Experiments()) || params[len(params)-1].Loops != 0 {
			t.Errorf("%v: %v, quick %v, %d experiments", args, err, quick, len(exps))
		}
	}
	code, out, _ := runArgs("bench", "--help")
	if code != 0 || !strings.Contains(out, quickTime) || !strings.Contains(out, fullTime) {
		t.Errorf("bench --help does not state the suites' time and memory:\n%s", out)
	}
}

func TestBenchAll(t *testing.T) {
	if raceEnabled {
		// Every experiment at its smallest still takes minutes under the
		// race detector; the run without it covers this, and bench's own
		// tests run each experiment's code under -race.
		t.Skip("bench all runs without the race detector")
	}
	// The matrix is narrowed to two cells: bench's own tests cover its drivers.
	code, out, errOut := runArgs("bench", "all", "--loops", "1", "--reads", "10", "--dirs", "200", "--files", "200", "--drivers", "null", "--segments", "2", "--sizes", "1", "--copy-size", "4M", "--file-size", "8M")
	if code != 0 {
		t.Fatalf("status %d\n%s", code, errOut)
	}
	for _, e := range bench.Experiments() {
		if !strings.Contains(out, "== "+e.Name+":") {
			t.Errorf("experiment %s did not run:\n%s", e.Name, out)
		}
	}
}

func TestBenchErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"bench", "nosuch"}, 2, []string{`no experiment "nosuch"`, "zero"}},
		{[]string{"bench", "zero", "--variants", "read,nosuch"}, 2, []string{`variant "nosuch"`}},
		{[]string{"bench", "zero", "--format", "csv"}, 2, []string{`--format "csv"`, "text, benchstat or markdown"}},
		{[]string{"bench", "zero", "--loops", "-1"}, 2, []string{"--loops -1: must be at least 1"}},
		{[]string{"bench", "zero", "--loops", "0"}, 2, []string{"--loops 0: must be at least 1"}},
		{[]string{"bench", "zero", "--clock", "bogus"}, 2, []string{`--clock "bogus"`}},
		{[]string{"bench", "zero", "--bogus"}, 2, []string{"unknown option --bogus", "Try 'iovfs bench --help'."}},
		{[]string{"bench", "zero", "--json", filepath.Join(dir, "missing", "r.json")}, 1, []string{"--json " + filepath.Join(dir, "missing", "r.json"), "no such file or directory"}},
		{[]string{"bench", "zero", "--json", dir}, 1, []string{"--json " + dir, "is a directory"}},
		{[]string{"bench", "zero", "--plot", filepath.Join(dir, "r.gif")}, 1, []string{"r.gif", ".svg or .png"}},
	} {
		code, out, errOut := runArgs(tc.args...)
		if code != tc.code {
			t.Errorf("%v: status %d, want %d", tc.args, code, tc.code)
		}
		if out != "" {
			t.Errorf("%v: ran anyway:\n%s", tc.args, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: error lacks %q:\n%s", tc.args, w, errOut)
			}
		}
	}
}
