package ext4_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-git/go-billy/v5/memfs"
	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/paired"
)

// BenchmarkExt4Pread reads 4 KiB at sequential offsets of a 1 MiB ext4
// file through pread(2) on iovfs, on one goroutine and on GOMAXPROCS
// goroutines sharing one descriptor, with the file system on a loop device
// over the imported image (default: one host pread per read; dax-loop: a
// copy out of the device's mapping) or on a RAM disk, against go-billy's memfs
// ReadAt of the same bytes: the shape of the tmpfs package's
// BenchmarkTmpfsPreadPaired, in the same interleaved rounds
// (internal/paired; -benchtime 20x for 20 rounds). The metrics are
// per-round medians: <variant>-ns/op per read (per goroutine for
// -parallel), <variant>/billy, and <variant>-parallel/<variant> (1 for
// perfect scaling).
func BenchmarkExt4Pread(b *testing.B) {
	const fileSize = 1 << 20
	data := make([]byte, fileSize)
	rand.NewChaCha8([32]byte{4}).Read(data)
	img := mkImage(b, 8<<10, func(t testing.TB, dir string) {
		if err := os.WriteFile(filepath.Join(dir, "file"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}, "-t", "ext4", "-b", "4096")
	// reader returns one goroutine's read: its own buffer and position,
	// the position on a cache line of its own.
	reader := func(pread func([]byte, int64) (int, error)) func() error {
		g := &struct {
			_   [64]byte
			off int64
			_   [64]byte
		}{}
		buf := make([]byte, 4096)
		return func() error {
			if n, err := pread(buf, g.off); n != len(buf) {
				return fmt.Errorf("pread at %d: %d, %v", g.off, n, err)
			}
			g.off = (g.off + 4096) % fileSize
			return nil
		}
	}
	type impl struct {
		name  string
		pread func([]byte, int64) (int, error)
	}
	bfs := memfs.New()
	bf, err := bfs.Create("/f")
	if err != nil {
		b.Fatal(err)
	}
	bf.Write(data)
	bf.Close()
	// One handle for all goroutines, as the descriptor below is.
	if bf, err = bfs.Open("/f"); err != nil {
		b.Fatal(err)
	}
	impls := []impl{{"billy", bf.ReadAt}}
	ram := modes[0] // default, from a RAM disk
	ram.name, ram.src = "default-ram", viaRAM
	for _, mode := range append(slices.Clone(modes), ram) {
		p := mountImage(b, img, mode.src, mode.opts)
		fd, err := p.Open("/mnt/file", unix.O_RDONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close(fd) })
		impls = append(impls, impl{mode.name, func(buf []byte, off int64) (int, error) { return p.Pread(fd, buf, off) }})
	}
	var vs []paired.Variant
	for _, parallel := range []bool{false, true} {
		for _, im := range impls {
			v := paired.Variant{Name: im.name, Parallel: parallel, Open: func(*testing.B) func() error { return reader(im.pread) }}
			if parallel {
				v.Against, v.Name = v.Name, v.Name+"-parallel"
			}
			vs = append(vs, v)
		}
	}
	b.Run("4KiB", func(b *testing.B) { paired.Run(b, 5000, vs...) })
}
