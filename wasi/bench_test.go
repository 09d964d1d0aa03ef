package wasi

import (
	"context"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkFdRead is the host side of fd_read alone (no guest-to-host
// call): the rights check, the iovec gather and one Readv.
func BenchmarkFdRead(b *testing.B) {
	w, g := instanceOn(b, Config{})
	zero, _ := w.p.Open("/dev/zero", unix.O_RDONLY, 0)
	file, _ := w.p.Open("/tmp/f", unix.O_RDWR|unix.O_CREAT, 0o644)
	w.p.Write(file, make([]byte, 64<<10))
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		fd      int
		segs    int
		segSize uint32
	}{{"zero-1B", zero, 1, 1}, {"tmpfs-16x4K", file, 16, 4096}} {
		segs := make([][2]uint32, c.segs)
		for i := range segs {
			segs[i] = [2]uint32{65536 + uint32(i)*c.segSize, c.segSize}
		}
		g.iovecs(1024, segs...)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var stack [4]uint64
			for b.Loop() {
				if c.fd == file {
					w.p.Seek(file, 0, unix.SEEK_SET)
				}
				stack = [4]uint64{uint64(c.fd), 1024, uint64(c.segs), 2048}
				w.fdRead(ctx, g.mod, stack[:])
			}
			if stack[0] != 0 {
				b.Fatalf("errno %d", stack[0])
			}
		})
	}
}
