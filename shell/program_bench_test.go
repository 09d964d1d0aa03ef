package shell

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// BenchmarkProgramStart starts the test tool (a 2.8 MiB Go wasip1
// program, compiled once and cached) and waits for it to exit:
// "tool exit 0" in iovfs sh. The figure to hold is at most 20 ms.
func BenchmarkProgramStart(b *testing.B) {
	sh, _, _, errb := progShell(b)
	f, err := sh.Parse(strings.NewReader("tool exit 0"), "")
	if err != nil {
		b.Fatal(err)
	}
	if st, _ := sh.Run(context.Background(), f); st != 0 {
		b.Fatalf("status %d: %s", st, errb)
	}
	for b.Loop() {
		sh.Run(context.Background(), f)
	}
}

// BenchmarkProgramPipeline streams a 256 MiB file through a program
// between two builtins, "cat big | tool PROG | wc -c" in iovfs sh (the
// file on tmpfs, iovfs pipes), against the same program under wazero's
// own CLI between host pipes, "cat big | wazero run tool.wasm PROG |
// wc -c" in the host's sh (the file on the host's /dev/shm, GNU cat and
// wc, wazero's compilation cache warm). Each round runs both, in
// alternating order; the metrics are the medians and their ratio,
// iovfs/host (below 1: iovfs is faster). PROG is cat (io.Copy: the pipes
// and WASI calls) and upper (a loop over every byte: the program's own
// code, which both run as wazero compiles it).
//
// The host side needs wazero's CLI: it is built from the module cache
// into a temporary directory (set IOVFS_WAZERO to use another binary).
func BenchmarkProgramPipeline(b *testing.B) {
	const size = 256 << 20
	wazero := os.Getenv("IOVFS_WAZERO")
	if wazero == "" {
		wazero = filepath.Join(b.TempDir(), "wazero")
		cmd := exec.Command("go", "build", "-o", wazero, "github.com/tetratelabs/wazero/cmd/wazero")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Skipf("building wazero's CLI: %v\n%s", err, out)
		}
	}
	bin := buildGo(b, "tool")
	hostDir, err := os.MkdirTemp("/dev/shm", "iovfs-bench-")
	if err != nil {
		hostDir = b.TempDir()
	}
	defer os.RemoveAll(hostDir)
	toolPath := filepath.Join(hostDir, "tool.wasm")
	bigPath := filepath.Join(hostDir, "big")
	if err := os.WriteFile(toolPath, bin, 0o755); err != nil {
		b.Fatal(err)
	}
	big := bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz012345"), size/32)
	if err := os.WriteFile(bigPath, big, 0o644); err != nil {
		b.Fatal(err)
	}
	cacheDir := filepath.Join(hostDir, "cache")
	sh, p, out, errb := progShell(b)
	writeFile(b, p, "/tmp/big", big)
	big = nil
	want := strconv.Itoa(size)
	for _, prog := range []string{"cat", "upper"} {
		b.Run(prog, func(b *testing.B) {
			iovfsRun := func() time.Duration {
				start := time.Now()
				o, e, st := runSh(b, sh, out, errb, "cat /tmp/big | tool "+prog+" | wc -c")
				d := time.Since(start)
				if st != 0 || strings.TrimSpace(o) != want {
					b.Fatalf("iovfs: status %d, stdout %q, stderr %q", st, o, e)
				}
				return d
			}
			hostRun := func() time.Duration {
				cmd := exec.Command("sh", "-c", "cat "+bigPath+" | "+wazero+" run -cachedir "+cacheDir+" "+toolPath+" "+prog+" | wc -c")
				start := time.Now()
				o, err := cmd.Output()
				d := time.Since(start)
				if err != nil || strings.TrimSpace(string(o)) != want {
					b.Fatalf("host: %v, stdout %q", err, o)
				}
				return d
			}
			hostRun() // fills wazero's cache
			iovfsRun()
			var iv, hv []float64
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					iv = append(iv, float64(iovfsRun()))
					hv = append(hv, float64(hostRun()))
				} else {
					hv = append(hv, float64(hostRun()))
					iv = append(iv, float64(iovfsRun()))
				}
			}
			mi, mh := median(iv), median(hv)
			b.ReportMetric(mi, "iovfs-ns")
			b.ReportMetric(mh, "host-ns")
			b.ReportMetric(mi/mh, "iovfs/host")
			b.ReportMetric(float64(size)/(mi/1e9)/(1<<20), "iovfs-MiB/s")
		})
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// writeFile creates name in p's namespace holding data.
func writeFile(t testing.TB, p *vfs.Proc, name string, data []byte) {
	t.Helper()
	f, err := p.OpenFile(name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}
