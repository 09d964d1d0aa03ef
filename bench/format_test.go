package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// checkJSONSchema decodes b strictly against the documented schema and
// checks that every documented key is present.
func checkJSONSchema(t *testing.T, b []byte) File {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("JSON does not match the schema: %v\n%s", err, b)
	}
	if f.Schema != SchemaVersion {
		t.Errorf("schema %q, want %q", f.Schema, SchemaVersion)
	}
	// Presence of every key, which decoding into a struct cannot show.
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	need := func(obj any, where string, keys ...string) {
		m, ok := obj.(map[string]any)
		if !ok {
			t.Fatalf("%s is not an object", where)
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Errorf("%s lacks %q", where, k)
			}
		}
	}
	need(raw, "top level", "schema", "machine", "experiments")
	need(raw["machine"], "machine", "cpu", "cores", "gomaxprocs", "go", "goos", "goarch", "kernel")
	for _, e := range raw["experiments"].([]any) {
		need(e, "experiment", "name", "baseline", "loops", "ops_per_round", "size", "lock_os_thread", "variants", "ratios", "skipped", "reference")
		em := e.(map[string]any)
		for _, v := range em["variants"].([]any) {
			need(v, "variant", "name", "ns_per_op", "ci95_low", "ci95_high", "min_ns_per_op", "max_ns_per_op", "allocs_per_op", "bytes_per_op", "warmup_seconds", "round_seconds")
		}
		for _, r := range em["ratios"].([]any) {
			need(r, "ratio", "a", "b", "median", "ci95_low", "ci95_high", "beyond_noise")
		}
	}
	for _, e := range f.Experiments {
		for _, v := range e.Variants {
			if len(v.RoundSeconds) != e.Loops {
				t.Errorf("%s/%s: %d round_seconds, want %d", e.Name, v.Name, len(v.RoundSeconds), e.Loops)
			}
			if !(v.CI95Low <= v.NsPerOp && v.NsPerOp <= v.CI95High) {
				t.Errorf("%s/%s: ns_per_op %v outside its CI [%v, %v]", e.Name, v.Name, v.NsPerOp, v.CI95Low, v.CI95High)
			}
		}
		for _, r := range e.Ratios {
			if r.B != e.Baseline {
				t.Errorf("%s: ratio %s/%s is not to the baseline %s", e.Name, r.A, r.B, e.Baseline)
			}
		}
	}
	return f
}

// The Go benchmark format (golang.org/design/14313-benchmark-format):
// configuration lines "key: value" with a lower-case key, and result lines
// "BenchmarkName iterations value unit [value unit...]" where the name
// continues with a non-lower-case character.
var (
	benchConfigLine = regexp.MustCompile(`^[a-z][^\s:]*: .*$`)
	benchResultLine = regexp.MustCompile(`^Benchmark[^a-z\s]\S*\s+([0-9]+)((?:\s+\S+\s+\S+)+)$`)
)

// checkBenchstat checks out against the benchmark-format grammar and
// returns the result lines per benchmark name.
func checkBenchstat(t *testing.T, out string) map[string]int {
	t.Helper()
	names := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if benchConfigLine.MatchString(l) {
			continue
		}
		m := benchResultLine.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("line %q is neither configuration nor a result", l)
			continue
		}
		f := strings.Fields(m[2])
		units := map[string]bool{}
		for i := 0; i < len(f); i += 2 {
			if _, err := strconv.ParseFloat(f[i], 64); err != nil {
				t.Errorf("line %q: value %q: %v", l, f[i], err)
			}
			units[f[i+1]] = true
		}
		for _, u := range []string{"ns/op", "B/op", "allocs/op"} {
			if !units[u] {
				t.Errorf("line %q lacks %s", l, u)
			}
		}
		names[strings.Fields(l)[0]]++
	}
	return names
}

// benchstatBinary finds the benchstat command, if it is installed.
func benchstatBinary() string {
	if p, err := exec.LookPath("benchstat"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "benchstat")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func TestFormatsToy(t *testing.T) {
	var order []string
	res, err := Run(toyExperiment(&order), Params{Loops: 3}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var j bytes.Buffer
	if err := WriteJSON(&j, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	f := checkJSONSchema(t, j.Bytes())
	if len(f.Experiments) != 1 || f.Experiments[0].Extra["pattern"] != "seq" || len(f.Experiments[0].Skipped) != 1 {
		t.Errorf("unexpected content: %+v", f.Experiments)
	}
	var b bytes.Buffer
	if err := WriteBenchstat(&b, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	names := checkBenchstat(t, b.String())
	for _, v := range []string{"one", "four", "alloc"} {
		if n := names["BenchmarkToyExp/"+v+"/64B"]; n != 3 {
			t.Errorf("%s: %d result lines, want 3:\n%s", v, n, b.String())
		}
	}
}

// If benchstat is installed, it must read the output and summarise every
// variant.
func TestBenchstatReadsOutput(t *testing.T) {
	bin := benchstatBinary()
	if bin == "" {
		t.Skip("benchstat not installed (go install golang.org/x/perf/cmd/benchstat@latest)")
	}
	var order []string
	res, err := Run(toyExperiment(&order), Params{Loops: 3}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "new.txt")
	var b bytes.Buffer
	if err := WriteBenchstat(&b, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, file).CombinedOutput()
	if err != nil {
		t.Fatalf("benchstat: %v\n%s", err, out)
	}
	for _, s := range []string{"ToyExp/one/64B", "ToyExp/four/64B", "ToyExp/alloc/64B", "sec/op", "allocs/op"} {
		if !bytes.Contains(out, []byte(s)) {
			t.Errorf("benchstat output lacks %q:\n%s", s, out)
		}
	}
}
