package ext4_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-billy/v5/memfs"
	"golang.org/x/sys/unix"
)

// BenchmarkExt4Pread reads 4 KiB at sequential offsets of a 1 MiB ext4
// file through pread(2) on iovfs, on one goroutine and on GOMAXPROCS
// goroutines sharing one descriptor, with the file system on a loop device
// over the imported image (default: one host pread per read; dax: a copy
// out of the device's mapping) or on a RAM disk, against go-billy's memfs
// ReadAt of the same bytes: the shape of the tmpfs package's
// BenchmarkTmpfsPread, so the two compare. ns/op of a parallel variant is
// wall time over all goroutines' reads: one goroutine's time per read is
// that times GOMAXPROCS.
func BenchmarkExt4Pread(b *testing.B) {
	const fileSize = 1 << 20
	data := make([]byte, fileSize)
	rand.NewChaCha8([32]byte{4}).Read(data)
	img := mkImage(b, 8<<10, func(t testing.TB, dir string) {
		if err := os.WriteFile(filepath.Join(dir, "file"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}, "-t", "ext4", "-b", "4096")
	bench := func(b *testing.B, open func(b *testing.B) func([]byte, int64) (int, error)) {
		b.Run("4KiB", func(b *testing.B) {
			pread := open(b)
			buf := make([]byte, 4096)
			b.SetBytes(4096)
			b.ReportAllocs()
			off := int64(0)
			for b.Loop() {
				if n, err := pread(buf, off); n != len(buf) {
					b.Fatal(n, err)
				}
				off = (off + 4096) % fileSize
			}
		})
		b.Run("4KiB/parallel", func(b *testing.B) {
			pread := open(b)
			b.SetBytes(4096)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 4096)
				off := int64(0)
				for pb.Next() {
					if n, err := pread(buf, off); n != len(buf) {
						b.Error(n, err)
						return
					}
					off = (off + 4096) % fileSize
				}
			})
		})
	}
	for _, mode := range []struct {
		name string
		src  source
		opts string
	}{
		{"default-loop", viaLoop, ""},
		{"default-ram", viaRAM, ""},
		{"dax-loop", viaLoop, "dax"},
		{"dax-ram", viaRAM, "dax"},
	} {
		b.Run(mode.name, func(b *testing.B) {
			p := mountImage(b, img, mode.src, mode.opts)
			fd, err := p.Open("/mnt/file", unix.O_RDONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { p.Close(fd) })
			bench(b, func(*testing.B) func([]byte, int64) (int, error) {
				return func(buf []byte, off int64) (int, error) { return p.Pread(fd, buf, off) }
			})
		})
	}
	b.Run("billy", func(b *testing.B) {
		fs := memfs.New()
		f, err := fs.Create("/f")
		if err != nil {
			b.Fatal(err)
		}
		f.Write(data)
		f.Close()
		// One handle for all goroutines, as the descriptor above is.
		if f, err = fs.Open("/f"); err != nil {
			b.Fatal(err)
		}
		bench(b, func(*testing.B) func([]byte, int64) (int, error) { return f.ReadAt })
	})
}
