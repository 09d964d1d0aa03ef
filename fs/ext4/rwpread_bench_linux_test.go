package ext4_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/paired"
	"github.com/iovfs/iovfs/vfs"
)

// BenchmarkExt4PreadRW reads 4 KiB at random aligned offsets of a 64 MiB
// file through pread(2), on an image mounted read-write (a loop device
// over a copy of it) beside the image mounted read-only with dax, on one
// goroutine and on GOMAXPROCS goroutines sharing one descriptor, in the
// interleaved rounds of internal/paired (-benchtime 20x for 20 rounds;
// -cpu 2 for two goroutines). The metrics are per-round medians:
// <variant>-ns/op per read (per goroutine for -parallel), rw/ro-dax (what
// a read costs on a read-write mount against a read-only one) and
// rw-parallel/rw (1 when reads on a read-write mount do not serialise).
func BenchmarkExt4PreadRW(b *testing.B) {
	const fileSize = 64 << 20
	data := make([]byte, fileSize)
	rand.NewChaCha8([32]byte{24}).Read(data)
	img := mkImage(b, 80<<10, func(t testing.TB, dir string) {
		if err := os.WriteFile(filepath.Join(dir, "file"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}, "-t", "ext4", "-b", "4096")
	data = nil
	rwImg := filepath.Join(filepath.Dir(img), "rw.img")
	raw, err := os.ReadFile(img)
	if err == nil {
		err = os.WriteFile(rwImg, raw, 0o644)
	}
	if err != nil {
		b.Fatal(err)
	}
	raw = nil

	ro := mountImage(b, img, viaLoop, "dax")
	rw, dev, done := newProcRW(b, rwImg, viaLoop)
	err = rw.Mount(dev, "/mnt", "ext4", 0, "")
	done()
	if err != nil {
		b.Fatalf("mount read-write: %v", err)
	}
	b.Cleanup(func() {
		if err := rw.Unmount("/mnt", 0); err != nil {
			b.Errorf("unmount: %v", err)
		}
	})

	seed := uint64(0)
	open := func(p *vfs.Proc) func(*testing.B) func() error {
		fd, err := p.Open("/mnt/file", unix.O_RDONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close(fd) })
		return func(*testing.B) func() error {
			// One goroutine's read: its own buffer and generator, on
			// cache lines of their own.
			seed++
			g := &struct {
				_   [64]byte
				rng *rand.PCG
				buf []byte
				_   [64]byte
			}{rng: rand.NewPCG(seed, 24), buf: make([]byte, 4096)}
			return func() error {
				off := int64(g.rng.Uint64()%(fileSize/4096)) * 4096
				if n, err := p.Pread(fd, g.buf, off); n != len(g.buf) {
					return fmt.Errorf("pread at %d: %d, %v", off, n, err)
				}
				return nil
			}
		}
	}
	roOpen, rwOpen := open(ro), open(rw)
	vs := []paired.Variant{
		{Name: "ro-dax", Open: roOpen},
		{Name: "rw", Open: rwOpen},
		{Name: "ro-dax-parallel", Open: roOpen, Parallel: true, Against: "ro-dax"},
		{Name: "rw-parallel", Open: rwOpen, Parallel: true, Against: "rw"},
	}
	b.Run("4KiB", func(b *testing.B) { paired.Run(b, 5000, vs...) })
}
