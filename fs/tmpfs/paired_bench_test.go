package tmpfs

import (
	"fmt"
	"io"
	"testing"

	"github.com/iovfs/iovfs/internal/paired"
	"github.com/iovfs/iovfs/iov"
)

// BenchmarkTmpfsPreadPaired is BenchmarkTmpfsPread in interleaved rounds
// (internal/paired): each of b.N rounds (-benchtime 20x for 20) reads the
// 1 MiB file with every implementation in turn, on one goroutine and on
// GOMAXPROCS goroutines each with its own handle, and the metrics are
// per-round medians: <impl>-ns/op per read (per goroutine for
// -parallel), <impl>/iovfs, and <impl>-parallel/<impl> (1 for perfect
// scaling).
func BenchmarkTmpfsPreadPaired(b *testing.B) {
	data := pattern(benchFileSize, 1)
	for _, size := range []struct {
		name string
		n    int
		ops  int // per round
	}{{"4KiB", 4 << 10, 20000}, {"64KiB", 64 << 10, 1500}} {
		b.Run(size.name, func(b *testing.B) {
			var vs []paired.Variant
			for _, parallel := range []bool{false, true} {
				for _, impl := range impls {
					open := impl.make(b, data)
					v := paired.Variant{Name: impl.name, Parallel: parallel, Open: func(b *testing.B) func() error {
						// The position a goroutine writes every read gets a
						// cache line of its own.
						g := &struct {
							_   [64]byte
							off int64
							_   [64]byte
						}{}
						pread := open(b)
						buf := make([]byte, size.n)
						return func() error {
							if n, err := pread(buf, g.off); n != len(buf) || (err != nil && err != io.EOF) {
								return fmt.Errorf("pread at %d: %d, %v", g.off, n, err)
							}
							g.off = (g.off + int64(size.n)) % benchFileSize
							return nil
						}
					}}
					if parallel {
						v.Against, v.Name = v.Name, v.Name+"-parallel"
					}
					vs = append(vs, v)
				}
			}
			paired.Run(b, size.ops, vs...)
		})
	}
}

// BenchmarkTmpfsPreadvPaired is BenchmarkTmpfsPreadv in interleaved
// rounds: one ReadIter of 16 x 4 KiB against 16 Reads of the same ranges;
// the metric readiter/16pread is the per-round median ratio.
func BenchmarkTmpfsPreadvPaired(b *testing.B) {
	const segs, seg = 16, 4 << 10
	_, _, h := newFile(b, Options{})
	mustWrite(b, h, pattern(benchFileSize, 1), 0)
	variant := func(name string, read func(vec [][]byte, off int64) int) paired.Variant {
		return paired.Variant{Name: name, Open: func(*testing.B) func() error {
			buf := make([]byte, segs*seg)
			vec := make([][]byte, segs)
			for i := range vec {
				vec[i] = buf[i*seg : (i+1)*seg]
			}
			off := int64(0)
			return func() error {
				if n := read(vec, off); n != segs*seg {
					return fmt.Errorf("read at %d: %d bytes", off, n)
				}
				off = (off + segs*seg) % benchFileSize
				return nil
			}
		}}
	}
	paired.Run(b, 1000,
		variant("16pread", func(vec [][]byte, off int64) int {
			t := 0
			for _, v := range vec {
				n, _ := h.Read(v, off+int64(t))
				t += n
			}
			return t
		}),
		variant("readiter", func(vec [][]byte, off int64) int {
			n, _ := h.ReadIter(iov.Vec(vec), off)
			return n
		}),
	)
}
