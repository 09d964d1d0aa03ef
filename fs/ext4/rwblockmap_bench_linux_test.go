package ext4_test

import (
	"math/rand"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkRWBlockMap: the write benchmarks on block-mapped files (an ext3
// volume with 4 KiB blocks, mounted as ext3 on both sides): sequential
// 1 MiB pwrites over a 64 MiB window, and 4 KiB overwrites at random
// offsets of a 32 MiB file with an fsync every 64.
//
//	go test ./fs/ext4 -run '^$' -bench BenchmarkRWBlockMap -benchmem
func BenchmarkRWBlockMap(b *testing.B) {
	sides := rwSidesOf(b, "ext3")
	seq := make([]byte, 1<<20)
	for i := range seq {
		seq[i] = byte(i)
	}
	page := make([]byte, 4096)
	for _, name := range sideOrder {
		s := sides[name]
		b.Run("SeqWrite1M/"+name, func(b *testing.B) {
			fd, err := s.open(s.root+"/seq", unix.O_CREAT|unix.O_RDWR)
			if err != nil {
				b.Fatal(err)
			}
			defer s.close(fd)
			b.SetBytes(int64(len(seq)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if n, err := s.pwrite(fd, seq, int64(i%64)<<20); n != len(seq) {
					b.Fatal(n, err)
				}
			}
			s.fsync(fd)
		})
	}
	for _, name := range sideOrder {
		s := sides[name]
		b.Run("RandWrite4K/"+name, func(b *testing.B) {
			fd, err := s.open(s.root+"/rand", unix.O_CREAT|unix.O_RDWR)
			if err != nil {
				b.Fatal(err)
			}
			defer s.close(fd)
			for off := int64(0); off < 32<<20; off += 1 << 20 {
				s.pwrite(fd, seq, off)
			}
			s.fsync(fd)
			r := rand.New(rand.NewSource(1))
			b.SetBytes(4096)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if n, err := s.pwrite(fd, page, int64(r.Intn(8192))<<12); n != len(page) {
					b.Fatal(n, err)
				}
				if i%64 == 63 {
					if err := s.fsync(fd); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
