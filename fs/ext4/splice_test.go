package ext4_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

// TestSpliceDax splices the files of the populate tree (several extents,
// holes inside and at the end, small files) into a pipe, from odd
// offsets and in odd lengths, on a dax mount (references to the device's
// memory, copies where the data is a hole) and without dax (copies), and
// checks the bytes the pipe gives back, through read and through a
// splice into a tmpfs file. A pipe holding a dax file's memory keeps the
// file open: the mount is busy until the pipe lets go of it.
func TestSpliceDax(t *testing.T) {
	dir := t.TempDir()
	populate(t, dir)
	img := mkImage(t, 8192, func(t testing.TB, d string) { populate(t, d) }, "-t", "ext4", "-b", "1024")
	files := []string{"big", "sparse", "odd", "tiny.txt", "page", "empty"}
	for _, c := range []struct {
		src  source
		opts string
	}{{viaLoop, "dax"}, {viaRAM, "dax"}, {viaLoop, ""}} {
		t.Run(c.src.String()+"/"+c.opts, func(t *testing.T) {
			p := mountImage(t, img, c.src, c.opts)
			r, w, err := p.Pipe2(0)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(r)
			defer p.Close(w)
			for _, name := range files {
				want, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				fd, err := p.Open("/mnt/"+name, unix.O_RDONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, step := range []int{65536, 4095, 1000} {
					got := spliceAll(t, p, fd, r, w, 7, step)
					if len(want) < 7 {
						want7 := []byte{}
						if !bytes.Equal(got, want7) {
							t.Errorf("%s from 7: %d bytes, want none", name, len(got))
						}
						continue
					}
					if !bytes.Equal(got, want[7:]) {
						t.Errorf("%s from 7 in %d-byte splices: %d bytes that differ from the file's %d", name, step, len(got), len(want)-7)
					}
				}
				// Through a splice into a tmpfs file (one vectored write).
				off := int64(0)
				out, err := p.Open("/tmp/"+name, unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				for {
					n, err := p.Splice(fd, &off, w, nil, 65536, 0)
					if err != nil {
						t.Fatalf("%s: splice in: %v", name, err)
					}
					if n == 0 {
						break
					}
					if m, err := p.Splice(r, nil, out, nil, int(n), 0); m != n || err != nil {
						t.Fatalf("%s: splice out: %d of %d, %v", name, m, n, err)
					}
				}
				got := make([]byte, len(want)+10)
				n, _ := p.Pread(out, got, 0)
				if !bytes.Equal(got[:n], want) {
					t.Errorf("%s through a tmpfs file: %d bytes that differ from the file's %d", name, n, len(want))
				}
				p.Close(out)
				p.Close(fd)
			}
			if c.opts != "dax" {
				return
			}
			// The pipe keeps the file (and the mount) while it holds the
			// file's memory.
			fd, err := p.Open("/mnt/big", unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			off := int64(0)
			if n, err := p.Splice(fd, &off, w, nil, 8192, 0); n != 8192 || err != nil {
				t.Fatalf("splice: %d, %v", n, err)
			}
			p.Close(fd)
			if err := p.Unmount("/mnt", 0); !errors.Is(err, syscall.EBUSY) {
				t.Errorf("unmount while a pipe holds a dax file's memory: %v, want EBUSY", err)
			}
			if n, err := p.Read(r, make([]byte, 8192)); n != 8192 || err != nil {
				t.Fatalf("read: %d, %v", n, err)
			}
		})
	}
}

// spliceAll splices fd from off to its end through the pipe r/w, step
// bytes at a time, and returns what the pipe gives back.
func spliceAll(t *testing.T, p *vfs.Proc, fd, r, w int, off int64, step int) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, 65536)
	for {
		n, err := p.Splice(fd, &off, w, nil, step, 0)
		if err != nil {
			t.Fatalf("splice at %d: %v", off, err)
		}
		if n == 0 {
			return out
		}
		for got := int64(0); got < n; {
			k, err := p.Read(r, buf)
			if err != nil || k == 0 {
				t.Fatalf("read: %d, %v", k, err)
			}
			out = append(out, buf[:k]...)
			got += int64(k)
		}
	}
}
