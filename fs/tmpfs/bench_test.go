package tmpfs

import (
	"io"
	"testing"

	"github.com/go-git/go-billy/v5/memfs"
	"github.com/iovfs/iovfs/iov"
	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// benchFileSize is the size of the file every Pread benchmark reads, in
// turn from its start to its end.
const benchFileSize = 1 << 20

// preader opens a handle for one goroutine and returns its pread.
type preader func(b *testing.B) func(p []byte, off int64) (int, error)

func iovfsPreader(b *testing.B, data []byte) preader {
	_, f, h := newFile(b, Options{})
	mustWrite(b, h, data, 0)
	return func(b *testing.B) func([]byte, int64) (int, error) {
		return mustOpen(b, f, unix.O_RDONLY).Read
	}
}

func aferoPreader(b *testing.B, data []byte) preader {
	fs := afero.NewMemMapFs()
	if err := afero.WriteFile(fs, "/f", data, 0o644); err != nil {
		b.Fatal(err)
	}
	// afero's ReadAt moves the shared file position: one handle per
	// goroutine.
	return func(b *testing.B) func([]byte, int64) (int, error) {
		f, err := fs.Open("/f")
		if err != nil {
			b.Fatal(err)
		}
		return f.ReadAt
	}
}

func billyPreader(b *testing.B, data []byte) preader {
	fs := memfs.New()
	f, err := fs.Create("/f")
	if err != nil {
		b.Fatal(err)
	}
	f.Write(data)
	f.Close()
	return func(b *testing.B) func([]byte, int64) (int, error) {
		f, err := fs.Open("/f")
		if err != nil {
			b.Fatal(err)
		}
		return f.ReadAt
	}
}

var impls = []struct {
	name string
	make func(*testing.B, []byte) preader
}{
	{"iovfs", iovfsPreader},
	{"afero", aferoPreader},
	{"billy", billyPreader},
}

// BenchmarkTmpfsPread compares a pread of 4 KiB and 64 KiB from iovfs's
// tmpfs handle with afero's MemMapFs and go-billy's memfs ReadAt, on one
// goroutine and on GOMAXPROCS goroutines reading one file.
func BenchmarkTmpfsPread(b *testing.B) {
	data := pattern(benchFileSize, 1)
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			open := impl.make(b, data)
			for _, size := range []struct {
				name string
				n    int
			}{{"4KiB", 4 << 10}, {"64KiB", 64 << 10}} {
				b.Run(size.name, func(b *testing.B) {
					pread := open(b)
					buf := make([]byte, size.n)
					b.SetBytes(int64(size.n))
					b.ReportAllocs()
					off := int64(0)
					for b.Loop() {
						if n, err := pread(buf, off); n != len(buf) || (err != nil && err != io.EOF) {
							b.Fatalf("pread: %d, %v", n, err)
						}
						off = (off + int64(size.n)) % benchFileSize
					}
				})
				b.Run(size.name+"/parallel", func(b *testing.B) {
					b.SetBytes(int64(size.n))
					b.ReportAllocs()
					b.RunParallel(func(pb *testing.PB) {
						pread := open(b)
						buf := make([]byte, size.n)
						off := int64(0)
						for pb.Next() {
							if n, err := pread(buf, off); n != len(buf) || (err != nil && err != io.EOF) {
								b.Errorf("pread: %d, %v", n, err)
								return
							}
							off = (off + int64(size.n)) % benchFileSize
						}
					})
				})
			}
		})
	}
}

// BenchmarkTmpfsPreadv compares one vectored read of 16 segments of 4 KiB
// (ReadIter, walking segments and pages together) with 16 scalar reads of
// the same ranges, as a preadv against a loop of pread.
func BenchmarkTmpfsPreadv(b *testing.B) {
	data := pattern(benchFileSize, 1)
	const segs, seg = 16, 4 << 10
	_, _, h := newFile(b, Options{})
	mustWrite(b, h, data, 0)
	buf := make([]byte, segs*seg)
	vec := make([][]byte, segs)
	for i := range vec {
		vec[i] = buf[i*seg : (i+1)*seg]
	}
	b.Run("16x4KiB/readiter", func(b *testing.B) {
		b.SetBytes(segs * seg)
		b.ReportAllocs()
		off := int64(0)
		for b.Loop() {
			if n, _ := h.ReadIter(iov.Vec(vec), off); n != segs*seg {
				b.Fatalf("readiter: %d", n)
			}
			off = (off + segs*seg) % benchFileSize
		}
	})
	b.Run("16x4KiB/16pread", func(b *testing.B) {
		b.SetBytes(segs * seg)
		b.ReportAllocs()
		off := int64(0)
		for b.Loop() {
			for _, v := range vec {
				if n, _ := h.Read(v, off); n != seg {
					b.Fatalf("read: %d", n)
				}
				off += seg
			}
			off %= benchFileSize
		}
	})
}

// BenchmarkTmpfsPwrite compares a 4 KiB pwrite that overwrites bytes the
// file holds, the write path that must not allocate.
func BenchmarkTmpfsPwrite(b *testing.B) {
	data := pattern(benchFileSize, 1)
	buf := pattern(4<<10, 2)
	_, _, h := newFile(b, Options{})
	mustWrite(b, h, data, 0)
	afs := afero.NewMemMapFs()
	afero.WriteFile(afs, "/f", data, 0o644)
	af, _ := afs.OpenFile("/f", unix.O_RDWR, 0)
	bfs := memfs.New()
	bf, _ := bfs.Create("/f")
	bf.Write(data)
	for _, impl := range []struct {
		name  string
		write func([]byte, int64) (int, error)
	}{
		{"iovfs", h.Write},
		{"afero", af.WriteAt},
		// billy's chroot file has no WriteAt: seek, then write.
		{"billy", func(p []byte, off int64) (int, error) {
			bf.Seek(off, io.SeekStart)
			return bf.Write(p)
		}},
	} {
		b.Run(impl.name+"/4KiB", func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			off := int64(0)
			for b.Loop() {
				if n, err := impl.write(buf, off); n != len(buf) || err != nil {
					b.Fatalf("pwrite: %d, %v", n, err)
				}
				off = (off + int64(len(buf))) % benchFileSize
			}
		})
	}
}
