package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteBenchstat writes results in the Go benchmark format that benchstat
// reads: configuration lines (goos, goarch, pkg, cpu), then one line per
// variant per measured round, such as
//
//	BenchmarkZero/read/1B  100000  21.30 ns/op  0 B/op  0 allocs/op
//
// The warm-up round is left out.
func WriteBenchstat(w io.Writer, results []*Result) error {
	var b strings.Builder
	m := ThisMachine()
	fmt.Fprintf(&b, "goos: %s\ngoarch: %s\npkg: github.com/iovfs/iovfs/bench\ncpu: %s\n", m.GOOS, m.GOARCH, m.CPU)
	for _, res := range results {
		if res.Matrix != nil {
			writeMatrixBenchstat(&b, res)
			continue
		}
		for _, v := range res.Variants {
			name := fmt.Sprintf("Benchmark%s/%s/%dB", res.Experiment.BenchName(), v.Name, res.Params.Size)
			for i, d := range v.Rounds {
				ops := float64(res.Params.Ops)
				fmt.Fprintf(&b, "%s\t%8d\t%12s ns/op\t%8s B/op\t%8s allocs/op\n", name, res.Params.Ops,
					strconv.FormatFloat(float64(d.Nanoseconds())/ops, 'f', 2, 64),
					strconv.FormatFloat(float64(v.Bytes[i])/ops, 'g', -1, 64),
					strconv.FormatFloat(float64(v.Allocs[i])/ops, 'g', -1, 64))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
