package ext4_test

// Write benchmarks against the kernel: iovfs's read-write ext4 on a RAM
// disk (plain, and dax: file data copied into the disk's memory), and the
// kernel's ext4 on a loop device over a file on /dev/shm.
//
//	go test ./fs/ext4 -run '^$' -bench 'BenchmarkRW' -benchmem

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

// rwSide is one side of a write benchmark: open, pwrite, fsync, create.
type rwSide struct {
	open   func(path string, flags int) (int, error)
	pwrite func(fd int, b []byte, off int64) (int, error)
	pread  func(fd int, b []byte, off int64) (int, error)
	fsync  func(fd int) error
	close  func(fd int) error
	mkdir  func(path string) error
	root   string
}

func rwSides(b *testing.B) map[string]rwSide { return rwSidesOf(b, "ext4") }

// rwSidesOf is rwSides over a volume made by mke2fs -t typ, mounted as typ.
func rwSidesOf(b *testing.B, typ string) map[string]rwSide {
	needMke2fs(b)
	if os.Geteuid() != 0 {
		b.Skip("the kernel side needs root")
	}
	img := filepath.Join(b.TempDir(), "bench.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", typ, "-b", "4096", "-N", "150000", "-E", "lazy_itable_init=0,lazy_journal_init=0", img, "256M").CombinedOutput(); err != nil {
		b.Fatalf("mke2fs: %v\n%s", err, out)
	}
	p, dev, _ := newProc(b, img, viaRAM)
	if err := p.Mount(dev, "/mnt", typ, 0, ""); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Unmount("/mnt", 0) })
	pd, ddev, _ := newProc(b, img, viaRAM)
	if err := pd.Mount(ddev, "/mnt", "ext4", 0, "dax"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pd.Unmount("/mnt", 0) })
	shm, err := os.MkdirTemp("/dev/shm", "iovfs-bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(shm) })
	kimg := filepath.Join(shm, "k.img")
	data, _ := os.ReadFile(img)
	os.WriteFile(kimg, data, 0o600)
	mnt := b.TempDir()
	if out, err := testenv.Mount("-t", typ, "-o", "loop,noinit_itable", kimg, mnt); err != nil {
		b.Fatalf("mount: %v\n%s", err, out)
	}
	b.Cleanup(func() { exec.Command("umount", mnt).Run() })
	return map[string]rwSide{
		"iovfs": {
			open:   func(path string, flags int) (int, error) { return p.Open(path, flags, 0o644) },
			pwrite: p.Pwrite, pread: p.Pread, fsync: p.Fsync, close: p.Close,
			mkdir: func(path string) error { return p.Mkdir(path, 0o755) },
			root:  "/mnt",
		},
		"iovfs-dax": {
			open:   func(path string, flags int) (int, error) { return pd.Open(path, flags, 0o644) },
			pwrite: pd.Pwrite, pread: pd.Pread, fsync: pd.Fsync, close: pd.Close,
			mkdir: func(path string) error { return pd.Mkdir(path, 0o755) },
			root:  "/mnt",
		},
		"kernel": {
			open:   func(path string, flags int) (int, error) { return unix.Open(path, flags, 0o644) },
			pwrite: unix.Pwrite, pread: unix.Pread, fsync: unix.Fsync, close: unix.Close,
			mkdir: func(path string) error { return unix.Mkdir(path, 0o755) },
			root:  mnt,
		},
	}
}

var sideOrder = []string{"iovfs", "iovfs-dax", "kernel"}

// BenchmarkRWSeqWrite1M: sequential 1 MiB pwrites over a 64 MiB window
// (allocating on the first pass, overwriting after).
func BenchmarkRWSeqWrite1M(b *testing.B) {
	sides := rwSides(b)
	for _, name := range sideOrder {
		b.Run(name, func(b *testing.B) { benchSeqWrite1M(b, sides[name]) })
	}
}

func benchSeqWrite1M(b *testing.B, s rwSide) {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	fd, err := s.open(s.root+"/seq", unix.O_CREAT|unix.O_RDWR)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close(fd)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, err := s.pwrite(fd, buf, int64(i%64)<<20); n != len(buf) {
			b.Fatal(n, err)
		}
	}
	s.fsync(fd)
}

// BenchmarkRWRandWrite4K: 4 KiB overwrites at random aligned offsets of a
// 32 MiB file, with an fsync every 64 writes.
func BenchmarkRWRandWrite4K(b *testing.B) {
	sides := rwSides(b)
	for _, name := range sideOrder {
		b.Run(name, func(b *testing.B) { benchRandWrite4K(b, sides[name]) })
	}
}

func benchRandWrite4K(b *testing.B, s rwSide) {
	buf := make([]byte, 4096)
	fd, err := s.open(s.root+"/rand", unix.O_CREAT|unix.O_RDWR)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close(fd)
	big := make([]byte, 1<<20)
	for off := int64(0); off < 32<<20; off += 1 << 20 {
		s.pwrite(fd, big, off)
	}
	s.fsync(fd)
	r := rand.New(rand.NewSource(1))
	b.SetBytes(4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, err := s.pwrite(fd, buf, int64(r.Intn(8192))<<12); n != 4096 {
			b.Fatal(n, err)
		}
		if i%64 == 63 {
			if err := s.fsync(fd); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRWRead4K: 4 KiB preads at random aligned offsets of a 32 MiB
// file on a read-write mount: the dax side copies from device memory
// (FS.copyDax through Writer.readData), the plain side reads the RAM
// disk through its block path, the kernel's from its page cache.
func BenchmarkRWRead4K(b *testing.B) {
	sides := rwSides(b)
	for _, name := range sideOrder {
		b.Run(name, func(b *testing.B) { benchRead(b, sides[name], 4096) })
	}
}

// BenchmarkRWSeqRead1M: 1 MiB preads in order over the same file.
func BenchmarkRWSeqRead1M(b *testing.B) {
	sides := rwSides(b)
	for _, name := range sideOrder {
		b.Run(name, func(b *testing.B) { benchRead(b, sides[name], 1<<20) })
	}
}

func benchRead(b *testing.B, s rwSide, size int) {
	fd, err := s.open(s.root+"/read", unix.O_CREAT|unix.O_RDWR)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close(fd)
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i)
	}
	for off := int64(0); off < 32<<20; off += 1 << 20 {
		s.pwrite(fd, big, off)
	}
	s.fsync(fd)
	buf := make([]byte, size)
	r := rand.New(rand.NewSource(1))
	blocks := (32 << 20) / size
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := int64(i%blocks) * int64(size)
		if size == 4096 {
			off = int64(r.Intn(blocks)) * 4096
		}
		if n, err := s.pread(fd, buf, off); n != size {
			b.Fatal(n, err)
		}
	}
}

var createRuns int

// BenchmarkRWCreate: empty files created in one directory; ns/op is per
// file. The directory becomes an htree after its first block (rwhtree.go).
func BenchmarkRWCreate(b *testing.B) {
	sides := rwSides(b)
	for _, name := range sideOrder {
		s := sides[name]
		b.Run(name, func(b *testing.B) {
			createRuns++ // a new directory for every run (-count)
			dir := fmt.Sprintf("%s/c%d-%d", s.root, b.N, createRuns)
			if err := s.mkdir(dir); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				fd, err := s.open(fmt.Sprintf("%s/f%d", dir, i), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY)
				if err != nil {
					b.Fatal(err)
				}
				s.close(fd)
			}
		})
	}
}

var _ = vfs.Stat{}
