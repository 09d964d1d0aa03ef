package ext4_test

// go-diskfs's ext4 reader beside iovfs's, reading 4 KiB at random
// offsets of the same file in the same image (go-diskfs is a test-only
// dependency).

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	dfile "github.com/diskfs/go-diskfs/backend/file"
	dext4 "github.com/diskfs/go-diskfs/filesystem/ext4"
	"golang.org/x/sys/unix"
)

func BenchmarkRandRead4K(b *testing.B) {
	const fileSize = 16 << 20
	var want []byte
	img := mkImage(b, 32<<10, func(t testing.TB, dir string) {
		want = make([]byte, fileSize)
		rand.NewChaCha8([32]byte{1}).Read(want)
		if err := os.WriteFile(filepath.Join(dir, "file"), want, 0o644); err != nil {
			t.Fatal(err)
		}
	}, "-t", "ext4", "-b", "4096")
	r := rand.New(rand.NewPCG(3, 4))
	offs := make([]int64, 4096)
	for i := range offs {
		offs[i] = r.Int64N(fileSize/4096) * 4096
	}
	buf := make([]byte, 4096)
	check := func(b *testing.B, i int) {
		if !bytes.Equal(buf, want[offs[i]:offs[i]+4096]) {
			b.Fatalf("read at %d: wrong bytes", offs[i])
		}
	}

	for _, m := range modes[:2] {
		b.Run("iovfs-"+m.name, func(b *testing.B) {
			p := mountImage(b, img, m.src, m.opts)
			fd, err := p.Open("/mnt/file", unix.O_RDONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(fd)
			p.Pread(fd, buf, offs[0])
			check(b, 0)
			b.SetBytes(4096)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if n, err := p.Pread(fd, buf, offs[i&4095]); n != 4096 {
					b.Fatal(n, err)
				}
				i++
			}
		})
	}
	b.Run("go-diskfs", func(b *testing.B) {
		f, err := os.Open(img)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		st, _ := f.Stat()
		fs, err := dext4.Read(dfile.New(f, true), st.Size(), 0, 512)
		if err != nil {
			b.Fatal(err)
		}
		file, err := fs.OpenFile("/file", os.O_RDONLY)
		if err != nil {
			b.Fatal(err)
		}
		read := func(off int64) {
			if _, err := file.Seek(off, io.SeekStart); err != nil {
				b.Fatal(err)
			}
			if n, err := io.ReadFull(file, buf); n != 4096 {
				b.Fatal(n, err)
			}
		}
		read(offs[0])
		check(b, 0)
		b.SetBytes(4096)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			read(offs[i&4095])
			i++
		}
	})
}
