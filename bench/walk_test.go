package bench

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// walkBenchEnv builds the walk experiment's image for tree at the issue's
// sizes (65,000 subdirectories; 20,000 files), or smaller with -short.
func walkBenchEnv(tb testing.TB, tree string) *walkEnv {
	tb.Helper()
	if _, err := exec.LookPath("mke2fs"); err != nil {
		tb.Skip("mke2fs (e2fsprogs) is not installed")
	}
	dirs, files := 65000, 20000
	if testing.Short() {
		dirs, files = 500, 500
		walkImageCache = false // small images are quick to make; leave nothing behind
	}
	p := Params{Extra: map[string]string{"tree": tree, "dirs": strconv.Itoa(dirs), "files": strconv.Itoa(files)}}
	env, cleanup, err := walkSetup(p)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cleanup() })
	return env.(*walkEnv)
}

// BenchmarkWalk is the go-test twin of "iovfs bench walk": one op is one
// walk of the tree (open, getdents until empty, lstat of every entry by
// full path, recursively), for each variant of the experiment. Compare
// the variants as ratios within one run.
func BenchmarkWalk(b *testing.B) {
	for _, tree := range []string{"flat", "nested"} {
		b.Run(tree, func(b *testing.B) {
			env := walkBenchEnv(b, tree)
			for _, v := range walkExperiment.Variants {
				b.Run(v.Name, func(b *testing.B) {
					op, err := v.Setup(Params{}, env)
					if errors.Is(err, ErrSkip) {
						b.Skip(err)
					}
					if err != nil {
						b.Fatal(err)
					}
					if op.Close != nil {
						defer op.Close()
					}
					if err := op.Run(1); err != nil { // the warm variants' first walk
						b.Fatal(err)
					}
					b.ReportAllocs()
					for b.Loop() {
						if err := op.Run(1); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(env.entries+1), "entries/op")
				})
			}
		})
	}
}

// TestWalkExperiment runs every variant of the walk experiment on small
// trees: each walk must see every entry of the source tree, through iovfs
// (cached, dax, uncached) and through the kernel alike.
func TestWalkExperiment(t *testing.T) {
	if _, err := exec.LookPath("mke2fs"); err != nil {
		t.Skip("mke2fs (e2fsprogs) is not installed")
	}
	walkImageCache = false
	defer func() { walkImageCache = true }()
	for _, tree := range []string{"flat", "nested"} {
		p := Params{Loops: 1, Ops: 2, Size: 1, Extra: map[string]string{"tree": tree, "dirs": "300", "files": "300"}}
		res, err := Run(walkExperiment, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 && len(res.Skipped) != 0 {
			t.Errorf("%s: skipped as root: %v", tree, res.Skipped)
		}
		if len(res.Variants)+len(res.Skipped) != len(walkExperiment.Variants) {
			t.Errorf("%s: %d variants ran, %d skipped, of %d", tree, len(res.Variants), len(res.Skipped), len(walkExperiment.Variants))
		}
		for _, name := range []string{"iovfs-warm", "iovfs-cold", "dax-warm"} {
			if _, ok := lastWalkEnv.stats[name]; !ok {
				t.Errorf("%s: no cache figures recorded for %s", tree, name)
			}
		}
	}
}
