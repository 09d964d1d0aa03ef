package ext4_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkVFSPread reads 4 KiB at sequential offsets of an 8 MiB file
// through pread(2) on iovfs, per read path (the x-iovfs-read= shapes of
// the dax experiment) in default and dax mode; Parallel has every
// goroutine read the same descriptor, which is where the handle's
// lock-free mapping cache matters.
func BenchmarkVFSPread(b *testing.B) {
	const fileSize = 8 << 20
	img := mkImage(b, 16<<10, func(t testing.TB, dir string) {
		data := make([]byte, fileSize)
		rand.NewChaCha8([32]byte{2}).Read(data)
		os.WriteFile(filepath.Join(dir, "file"), data, 0o644)
	}, "-t", "ext4", "-b", "4096")
	for _, mode := range modes[:2] {
		for _, path := range []string{"read", "iter-1seg", "iter-wrap", "iomap"} {
			b.Run(mode.name+"/"+path, func(b *testing.B) {
				opts := "x-iovfs-read=" + path
				if mode.opts != "" {
					opts += "," + mode.opts
				}
				p := mountImage(b, img, mode.src, opts)
				fd, err := p.Open("/mnt/file", unix.O_RDONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close(fd)
				buf := make([]byte, 4096)
				b.SetBytes(4096)
				b.ReportAllocs()
				off := int64(0)
				for b.Loop() {
					if n, err := p.Pread(fd, buf, off); n != len(buf) {
						b.Fatal(n, err)
					}
					if off += 4096; off == fileSize {
						off = 0
					}
				}
			})
		}
		b.Run(mode.name+"/parallel", func(b *testing.B) {
			p := mountImage(b, img, mode.src, mode.opts)
			fd, err := p.Open("/mnt/file", unix.O_RDONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(fd)
			b.SetBytes(4096)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 4096)
				off := rand.Int64N(fileSize/4096) * 4096
				for pb.Next() {
					if n, err := p.Pread(fd, buf, off); n != len(buf) {
						b.Fatal(n, err)
					}
					if off += 4096; off == fileSize {
						off = 0
					}
				}
			})
		})
	}
}
