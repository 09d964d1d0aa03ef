package tmpfs_test

import (
	"fmt"
	"testing"

	"github.com/go-git/go-billy/v5/memfs"
	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/paired"
	"github.com/iovfs/iovfs/vfs"
)

// vfsBenchFile makes a process whose /tmp (tmpfs) holds a 1 MiB file and
// returns it with a descriptor open on the file, and a go-billy memfs
// handle on the same bytes.
func vfsBenchFile(b *testing.B) (p *vfs.Proc, fd int, billy func([]byte, int64) (int, error)) {
	const size = 1 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	p, err := iovfs.New()
	if err != nil {
		b.Fatal(err)
	}
	if fd, err = p.Open("/tmp/f", unix.O_RDWR|unix.O_CREAT, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close(fd) })
	if n, err := p.Pwrite(fd, data, 0); n != size {
		b.Fatal(n, err)
	}
	bfs := memfs.New()
	bf, err := bfs.Create("/f")
	if err != nil {
		b.Fatal(err)
	}
	bf.Write(data)
	bf.Close()
	if bf, err = bfs.Open("/f"); err != nil {
		b.Fatal(err)
	}
	return p, fd, bf.ReadAt
}

// BenchmarkTmpfsVFSPread reads 4 KiB at sequential offsets of a 1 MiB
// tmpfs file through pread(2) on iovfs, every goroutine on the same
// descriptor (the fd table, the open file and the inode shared, as
// BenchmarkExt4Pread does for ext4), on one goroutine and with
// b.RunParallel on GOMAXPROCS, against go-billy's memfs ReadAt on one
// shared handle. Compare the two with -cpu 1,2: ns/op of the parallel
// variant is wall time per read over all goroutines, so a read path that
// shares no written cache line halves it on two idle cores.
func BenchmarkTmpfsVFSPread(b *testing.B) {
	const size, chunk = 1 << 20, 4 << 10
	p, fd, billy := vfsBenchFile(b)
	impls := []struct {
		name  string
		pread func([]byte, int64) (int, error)
	}{
		{"iovfs", func(buf []byte, off int64) (int, error) { return p.Pread(fd, buf, off) }},
		{"billy", billy},
	}
	for _, im := range impls {
		b.Run(im.name+"/4KiB", func(b *testing.B) {
			buf := make([]byte, chunk)
			b.SetBytes(chunk)
			b.ReportAllocs()
			off := int64(0)
			for b.Loop() {
				if n, err := im.pread(buf, off); n != chunk {
					b.Fatal(n, err)
				}
				off = (off + chunk) % size
			}
		})
		b.Run(im.name+"/4KiB/parallel", func(b *testing.B) {
			b.SetBytes(chunk)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, chunk)
				off := int64(0)
				for pb.Next() {
					if n, err := im.pread(buf, off); n != chunk {
						b.Errorf("pread at %d: %d, %v", off, n, err)
						return
					}
					off = (off + chunk) % size
				}
			})
		})
	}
}

// BenchmarkTmpfsVFSPreadPaired is BenchmarkTmpfsVFSPread in interleaved
// rounds (internal/paired; -benchtime 20x for 20 rounds): per-round
// medians of ns per read (per goroutine for -parallel), iovfs/billy, and
// <impl>-parallel/<impl> (1 for perfect scaling, 2 when two goroutines
// get one core between them).
func BenchmarkTmpfsVFSPreadPaired(b *testing.B) {
	const size, chunk = 1 << 20, 4 << 10
	p, fd, billy := vfsBenchFile(b)
	reader := func(pread func([]byte, int64) (int, error)) func(*testing.B) func() error {
		return func(*testing.B) func() error {
			// The position a goroutine writes every read gets a cache
			// line of its own.
			g := &struct {
				_   [64]byte
				off int64
				_   [64]byte
			}{}
			buf := make([]byte, chunk)
			return func() error {
				if n, err := pread(buf, g.off); n != chunk {
					return fmt.Errorf("pread at %d: %d, %v", g.off, n, err)
				}
				g.off = (g.off + chunk) % size
				return nil
			}
		}
	}
	iov := reader(func(buf []byte, off int64) (int, error) { return p.Pread(fd, buf, off) })
	bil := reader(billy)
	paired.Run(b, 20000,
		paired.Variant{Name: "billy", Open: bil},
		paired.Variant{Name: "iovfs", Open: iov},
		paired.Variant{Name: "billy-parallel", Open: bil, Parallel: true, Against: "billy"},
		paired.Variant{Name: "iovfs-parallel", Open: iov, Parallel: true, Against: "iovfs"},
	)
}
