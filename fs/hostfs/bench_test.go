package hostfs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// benchDir returns a directory on a host tmpfs when there is one
// (/dev/shm), so that the figures measure the call path and not a disk.
func benchDir(tb testing.TB) string {
	tb.Helper()
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC {
		if dir, err := os.MkdirTemp("/dev/shm", "iovfs-hostfs-"); err == nil {
			tb.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return tb.TempDir()
}

// dataFile makes a 1 MiB host file and opens it through hostfs (fd) and
// directly (hfd).
func dataFile(tb testing.TB) (p *vfs.Proc, fd, hfd int) {
	tb.Helper()
	dir := benchDir(tb)
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), data, 0o644); err != nil {
		tb.Fatal(err)
	}
	p = mountHost(tb, dir, 0, "")
	fd, err := p.Open("/mnt/h/data", unix.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	hfd, err = unix.Open(filepath.Join(dir, "data"), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(hfd); p.Close(fd) })
	return p, fd, hfd
}

func segments(n, size int) [][]byte {
	v := make([][]byte, n)
	for i := range v {
		v[i] = make([]byte, size)
	}
	return v
}

// TestNoAllocs: the data path allocates nothing (ARCHITECTURE.md, the hot
// path rule 5).
func TestNoAllocs(t *testing.T) {
	p, fd, _ := dataFile(t)
	buf := make([]byte, 4096)
	vec := segments(16, 4096)
	for _, c := range []struct {
		name string
		fn   func()
	}{
		{"Pread", func() { p.Pread(fd, buf, 4096) }},
		{"Preadv16", func() { p.Preadv(fd, vec, 0) }},
		{"Pwrite", func() { p.Pwrite(fd, buf, 8192) }},
		{"Pwritev16", func() { p.Pwritev(fd, vec, 0) }},
		{"Read", func() { p.Seek(fd, 0, unix.SEEK_SET); p.Read(fd, buf) }},
	} {
		if a := testing.AllocsPerRun(200, c.fn); a != 0 {
			t.Errorf("%s: %v allocations per call, want 0", c.name, a)
		}
	}
	// And it moved the bytes: the checks above must not pass on a failing
	// call.
	if n, err := p.Preadv(fd, vec, 0); n != 16*4096 || err != nil {
		t.Fatalf("preadv: %d, %v", n, err)
	}
	if n, err := p.Pread(fd, buf, 4096); n != 4096 || err != nil {
		t.Fatalf("pread: %d, %v", n, err)
	}
}

// BenchmarkPread4K compares a 4 KiB pread through hostfs with the host's
// own pread of the same file (target: at most 1.10x).
func BenchmarkPread4K(b *testing.B) {
	p, fd, hfd := dataFile(b)
	buf := make([]byte, 4096)
	b.Run("hostfs", func(b *testing.B) {
		b.SetBytes(4096)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if n, err := p.Pread(fd, buf, int64(i%256)*4096); n != 4096 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("host", func(b *testing.B) {
		b.SetBytes(4096)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if n, err := unix.Pread(hfd, buf, int64(i%256)*4096); n != 4096 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("interleaved", func(b *testing.B) {
		interleave(b, "hostfs", "host",
			func(i int) { p.Pread(fd, buf, int64(i%256)*4096) },
			func(i int) { unix.Pread(hfd, buf, int64(i%256)*4096) })
	})
}

// interleave runs a and c alternately in batches of 32 calls (b.N counts
// pairs of batches) and reports the ratio of their total times, aName/cName,
// and each one's time per call: a load that drifts during the run affects
// this ratio less than one taken from two separate sub-benchmarks.
func interleave(b *testing.B, aName, cName string, a, c func(i int)) {
	var ta, tc time.Duration
	i := 0
	batch := func(fn func(int), i int) time.Duration {
		t0 := time.Now()
		for k := 0; k < 32; k++ {
			fn(i + k)
		}
		return time.Since(t0)
	}
	for b.Loop() {
		// Alternate which goes first, so neither gains from the other's
		// warm-up.
		if i/32%2 == 0 {
			ta += batch(a, i)
			tc += batch(c, i)
		} else {
			tc += batch(c, i)
			ta += batch(a, i)
		}
		i += 32
	}
	b.ReportMetric(float64(ta)/float64(tc), aName+"/"+cName)
	b.ReportMetric(float64(ta)/float64(32*b.N), aName+"-ns/op")
	b.ReportMetric(float64(tc)/float64(32*b.N), cName+"-ns/op")
}

// BenchmarkRead16x4K compares one preadv of 16 segments of 4 KiB through
// hostfs with 16 preads through hostfs (target: at most 0.7x), and the
// host's own preadv.
func BenchmarkRead16x4K(b *testing.B) {
	p, fd, hfd := dataFile(b)
	vec := segments(16, 4096)
	b.Run("preadv", func(b *testing.B) {
		b.SetBytes(16 * 4096)
		b.ReportAllocs()
		for b.Loop() {
			if n, err := p.Preadv(fd, vec, 0); n != 16*4096 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("16-preads", func(b *testing.B) {
		b.SetBytes(16 * 4096)
		b.ReportAllocs()
		for b.Loop() {
			for i, s := range vec {
				if n, err := p.Pread(fd, s, int64(i)*4096); n != 4096 || err != nil {
					b.Fatal(n, err)
				}
			}
		}
	})
	b.Run("interleaved", func(b *testing.B) {
		interleave(b, "preadv", "16preads",
			func(int) { p.Preadv(fd, vec, 0) },
			func(int) {
				for i, s := range vec {
					p.Pread(fd, s, int64(i)*4096)
				}
			})
	})
	b.Run("host-preadv", func(b *testing.B) {
		b.SetBytes(16 * 4096)
		b.ReportAllocs()
		for b.Loop() {
			if n, err := unix.Preadv(hfd, vec, 0); n != 16*4096 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
}

// BenchmarkWalk6 opens and closes a file at the end of a 6-component path
// through hostfs, against the host's open of the same path.
func BenchmarkWalk6(b *testing.B) {
	dir := benchDir(b)
	rel := "a/b/c/d/e/f"
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rel), []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	if strings.Count(rel, "/") != 5 {
		b.Fatal("not 6 components")
	}
	p := mountHost(b, dir, 0, "")
	b.Run("hostfs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fd, err := p.Open("/mnt/h/"+rel, unix.O_RDONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			p.Close(fd)
		}
	})
	full := filepath.Join(dir, rel)
	b.Run("interleaved", func(b *testing.B) {
		interleave(b, "hostfs", "host",
			func(int) {
				if fd, err := p.Open("/mnt/h/"+rel, unix.O_RDONLY, 0); err == nil {
					p.Close(fd)
				}
			},
			func(int) {
				if fd, err := unix.Open(full, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
					unix.Close(fd)
				}
			})
	})
	b.Run("host", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fd, err := unix.Open(full, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			unix.Close(fd)
		}
	})
}
