package bench

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
)

func TestDax(t *testing.T) {
	if _, err := exec.LookPath("mke2fs"); err != nil {
		t.Skip("mke2fs (e2fsprogs) is not installed")
	}
	e := Lookup("dax")
	if e == nil {
		t.Fatal("dax is not registered")
	}
	// The host variant's mount point is made under TMPDIR: a directory of
	// this test's own, so the check below sees only its mounts, not those
	// of other processes on the machine (bench walk makes the same names).
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, pattern := range []string{"seq", "rand"} {
		var rounds bytes.Buffer
		res, err := Run(e, Params{Loops: 2, Ops: 500, Extra: map[string]string{"file-size": "2M", "pattern": pattern}}, Options{Rounds: &rounds})
		if err != nil {
			t.Fatal(err)
		}
		names := []string{"iomap", "iter-wrap", "iter-1seg", "read", "memcpy", "host"}
		for _, name := range names {
			v := res.Variant(name)
			if v == nil {
				if name == "host" && os.Geteuid() != 0 && !testenv.Privileged() {
					continue
				}
				t.Errorf("%s: variant %s missing (skipped: %v)", pattern, name, res.Skipped)
				continue
			}
			if len(v.Rounds) != 2 || v.NsPerOp <= 0 {
				t.Errorf("%s: %s: %d rounds, %v ns/op", pattern, name, len(v.Rounds), v.NsPerOp)
			}
			if name != "host" && allocates(v.AllocsPerOp) {
				t.Errorf("%s: %s: %v allocs/op, want 0", pattern, name, v.AllocsPerOp)
			}
		}
		var sum bytes.Buffer
		if err := WriteSummary(&sum, res); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"36.477 s", "26.899 s", "+35.6%", "ours: gap to read", "ratios to memcpy", "scaled to 2^26"} {
			if !strings.Contains(sum.String(), s) {
				t.Errorf("summary lacks %q:\n%s", s, sum.String())
			}
		}
		var j bytes.Buffer
		if err := WriteJSON(&j, []*Result{res}); err != nil {
			t.Fatal(err)
		}
		checkJSONSchema(t, j.Bytes())
	}
	// Nothing is left mounted: the host variant's mount point is gone.
	if out, _ := exec.Command("sh", "-c", "mount | grep -F "+tmp+" || true").Output(); len(out) != 0 {
		t.Errorf("left mounted:\n%s", out)
	}
}

func TestDaxFlags(t *testing.T) {
	e := Lookup("dax")
	for _, c := range []struct{ k, v, want string }{
		{"file-size", "abc", "--file-size"},
		{"file-size", "0", "--file-size"},
		{"pattern", "zigzag", "--pattern"},
	} {
		_, err := Run(e, Params{Loops: 1, Ops: 1, Extra: map[string]string{c.k: c.v}}, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%s: %v, want an error naming %s", c.k, c.v, err, c.want)
		}
	}
	for s, want := range map[string]int64{"4096": 4096, "64M": 64 << 20, "1g": 1 << 30, "3K": 3072} {
		if got, err := parseSize(s); got != want || err != nil {
			t.Errorf("parseSize(%q) = %d, %v", s, got, err)
		}
	}
}

// BenchmarkDax runs the dax experiment's variants (the same Setup and Run
// as iovfs bench dax) as Go benchmarks, for benchstat and for callgrind's
// instruction counts: 4 KiB sequential preads of a 1 MiB file (cached) and
// a 64 MiB one.
func BenchmarkDax(b *testing.B) {
	if _, err := exec.LookPath("mke2fs"); err != nil {
		b.Skip("mke2fs (e2fsprogs) is not installed")
	}
	e := Lookup("dax")
	for _, size := range []string{"1M", "64M"} {
		b.Run(size, func(b *testing.B) {
			p, _, err := e.resolve(Params{Extra: map[string]string{"file-size": size}})
			if err != nil {
				b.Fatal(err)
			}
			env, cleanup, err := e.Setup(p)
			if err != nil {
				b.Fatal(err)
			}
			defer cleanup()
			for _, v := range e.Variants {
				if v.Name == "host" {
					continue
				}
				b.Run(v.Name, func(b *testing.B) {
					op, err := v.Setup(p, env)
					if err != nil {
						b.Fatal(err)
					}
					defer op.Close()
					b.SetBytes(int64(p.Size))
					b.ReportAllocs()
					b.ResetTimer()
					if err := op.Run(b.N); err != nil {
						b.Fatal(err)
					}
				})
			}
		})
	}
}
