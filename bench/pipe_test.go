package bench

import "testing"

// BenchmarkPipe runs the pipe experiment's variants as Go benchmarks:
// BenchmarkPipe/tput-<transport>/64KiB (b.SetBytes gives MB/s) and
// BenchmarkPipe/pingpong-<transport>/1B (ns per round trip).
func BenchmarkPipe(b *testing.B) {
	prm := pipeExperiment.Defaults
	for _, v := range pipeExperiment.Variants {
		unit := "1B"
		if v.Name[:5] == "tput-" {
			unit = "64KiB"
		}
		b.Run(v.Name+"/"+unit, func(b *testing.B) {
			op, err := v.Setup(prm, nil)
			if err != nil {
				b.Fatal(err)
			}
			if unit == "64KiB" {
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

// TestPipeExperiment runs every variant briefly and checks that each
// moves its bytes and closes cleanly.
func TestPipeExperiment(t *testing.T) {
	prm := pipeExperiment.Defaults
	for _, v := range pipeExperiment.Variants {
		op, err := v.Setup(prm, nil)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		for _, n := range []int{1, 50} {
			if err := op.Run(n); err != nil {
				t.Fatalf("%s: Run(%d): %v", v.Name, n, err)
			}
		}
		if err := op.Close(); err != nil {
			t.Fatalf("%s: Close: %v", v.Name, err)
		}
	}
}
