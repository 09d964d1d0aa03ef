package bench

import "testing"

// BenchmarkPipe runs the pipe experiments' variants as Go benchmarks:
// BenchmarkPipe/throughput/<transport>/64KiB (b.SetBytes gives MB/s) and
// BenchmarkPipe/pingpong/<transport>/1B (ns per round trip).
func BenchmarkPipe(b *testing.B) {
	for _, e := range []*Experiment{pipeExperiment, pipePingPongExperiment} {
		prm := e.Defaults
		mode, unit := "throughput", "64KiB"
		if e == pipePingPongExperiment {
			mode, unit = "pingpong", "1B"
		}
		for _, v := range e.Variants {
			b.Run(mode+"/"+v.Name+"/"+unit, func(b *testing.B) {
				op, err := v.Setup(prm, nil)
				if err != nil {
					b.Fatal(err)
				}
				if e == pipeExperiment {
					b.SetBytes(int64(prm.Size))
				}
				b.ReportAllocs()
				b.ResetTimer()
				if err := op.Run(b.N); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := op.Close(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// TestPipeExperiments runs every variant briefly and checks that each
// moves its bytes and closes cleanly.
func TestPipeExperiments(t *testing.T) {
	for _, e := range []*Experiment{pipeExperiment, pipePingPongExperiment} {
		for _, v := range e.Variants {
			op, err := v.Setup(e.Defaults, nil)
			if err != nil {
				t.Fatalf("%s/%s: %v", e.Name, v.Name, err)
			}
			for _, n := range []int{1, 50} {
				if err := op.Run(n); err != nil {
					t.Fatalf("%s/%s: Run(%d): %v", e.Name, v.Name, n, err)
				}
			}
			if err := op.Close(); err != nil {
				t.Fatalf("%s/%s: Close: %v", e.Name, v.Name, err)
			}
		}
	}
}
