package iovfs_test

import (
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/dev/mem"
	"golang.org/x/sys/unix"
)

// BenchmarkZero reads /dev/zero through each path of the read family. The
// variants are compared as ratios within one run (benchstat).
func BenchmarkZero(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1B", 1}, {"4KiB", 4096}} {
		buf := make([]byte, size.n)
		segs8 := make([][]byte, 8)
		for i := range segs8 {
			lo, hi := i*size.n/8, (i+1)*size.n/8
			if size.n < 8 { // 1 B: one byte in the last of eight segments
				lo, hi = 0, 0
				if i == 7 {
					hi = size.n
				}
			}
			segs8[i] = buf[lo:hi]
		}
		one := [][]byte{buf}
		p, err := iovfs.New(iovfs.WithDevice("zero-iter", mem.VecZero{}))
		if err != nil {
			b.Fatal(err)
		}
		zero, err := p.Open("/dev/zero", unix.O_RDONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		iter, err := p.Open("/dev/zero-iter", unix.O_RDONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("read/"+size.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size.n))
			for b.Loop() {
				p.Read(zero, buf)
			}
		})
		b.Run("iter-wrap/"+size.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size.n))
			for b.Loop() {
				p.Read(iter, buf)
			}
		})
		b.Run("readv-1seg/"+size.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size.n))
			for b.Loop() {
				p.Readv(zero, one)
			}
		})
		b.Run("readv-8seg/"+size.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size.n))
			for b.Loop() {
				p.Readv(zero, segs8)
			}
		})
		b.Run("host-syscall/"+size.name, func(b *testing.B) {
			hfd, err := unix.Open("/dev/zero", unix.O_RDONLY, 0)
			if err != nil {
				b.Skip("host /dev/zero:", err)
			}
			defer unix.Close(hfd)
			b.ReportAllocs()
			b.SetBytes(int64(size.n))
			for b.Loop() {
				unix.Read(hfd, buf)
			}
		})
	}
}
