package ext4_test

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

// TestDaxReadSameBytes reads the populate tree's files at offsets and
// sizes that start and end inside blocks, cross extents, holes and the
// end of file, through pread and through preadv of one and of three
// segments, on a dax mount (over a loop device's mapping and over a RAM
// disk) and on the default mount of the same image, and requires the same
// counts, bytes and errors: the dax fast path (the whole read inside the
// cached run) and the per-run loop must agree with the block path.
func TestDaxReadSameBytes(t *testing.T) {
	for _, bs := range []string{"1024", "4096"} {
		img := mkImage(t, 8192, populate, "-t", "ext4", "-b", bs)
		plain := mountImage(t, img, viaLoop, "")
		for _, src := range []source{viaLoop, viaRAM} {
			t.Run(bs+"/"+src.String(), func(t *testing.T) {
				dax := mountImage(t, img, src, "dax")
				for _, name := range []string{"big", "sparse", "odd", "page", "tiny.txt", "tailhole", "empty"} {
					compareReads(t, plain, dax, "/mnt/"+name)
				}
			})
		}
	}
}

// compareReads reads path on two mounts of one image (want: the default
// mount) at the same offsets and sizes and reports any difference.
func compareReads(t *testing.T, want, got *vfs.Proc, path string) {
	t.Helper()
	wfd, err := want.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close(wfd)
	gfd, err := got.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close(gfd)
	offs := []int64{0, 1, 1000, 1023, 1024, 4095, 4096, 4097, 5000, 12000, 65536 - 3, 1 << 20, 1<<20 + 50, 1<<20 + 777, 3<<20 - 20, 3 << 20, 5 << 20}
	sizes := []int{1, 100, 1024, 3000, 4096, 4097, 8192, 70000, 1 << 20}
	for _, off := range offs {
		for _, n := range sizes {
			wb, gb := make([]byte, n), make([]byte, n)
			wn, werr := want.Pread(wfd, wb, off)
			gn, gerr := got.Pread(gfd, gb, off)
			if wn != gn || !errors.Is(gerr, werr) || !bytes.Equal(wb[:wn], gb[:gn]) {
				t.Errorf("%s: pread %d at %d: dax %d, %v; default %d, %v (bytes equal: %v)", path, n, off, gn, gerr, wn, werr, bytes.Equal(wb[:max(wn, 0)], gb[:max(gn, 0)]))
			}
			for _, segs := range []int{1, 3} {
				clear(gb)
				vec := make([][]byte, segs)
				for i := range vec {
					vec[i] = gb[i*n/segs : (i+1)*n/segs]
				}
				gn, gerr := got.Preadv(gfd, vec, off)
				if wn != gn || !errors.Is(gerr, werr) || !bytes.Equal(wb[:wn], gb[:gn]) {
					t.Errorf("%s: preadv %d segments, %d at %d: dax %d, %v; default %d, %v", path, segs, n, off, gn, gerr, wn, werr)
				}
			}
		}
	}
}

// TestDaxReadFault: a dax mount of a loop device over an imported host
// file reads file data from the file's mapping; when another process
// truncates the host file under it, the reads that reach the vanished
// pages give EIO (block.Copy's and block.CopyOut's guard turns the
// SIGBUS into an error) instead of crashing the program, on the fast
// path (a read inside the cached run), the per-run loop (a read across
// runs or past the cache) and the vectored read.
func TestDaxReadFault(t *testing.T) {
	img := mkImage(t, 8192, populate, "-t", "ext4", "-b", "1024")
	p := mountImage(t, img, viaLoop, "dax")
	fd, err := p.Open("/mnt/big", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(fd)
	buf := make([]byte, 4096)
	if n, err := p.Pread(fd, buf, 4096); n != len(buf) {
		t.Fatalf("pread before the truncation: %d, %v", n, err)
	}
	// Another process shrinks the image under the mapping.
	if err := os.Truncate(img, 4096); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		read func() (int, error)
	}{
		{"pread, cached run", func() (int, error) { return p.Pread(fd, buf, 4096) }},
		{"preadv, 2 segments, cached run", func() (int, error) { return p.Preadv(fd, [][]byte{buf[:100], buf[100:]}, 4096) }},
		{"pread, other offset", func() (int, error) { return p.Pread(fd, buf, 1<<20-100) }},
		{"preadv, 1 segment", func() (int, error) { return p.Preadv(fd, [][]byte{buf}, 8192) }},
		{"preadv, 2 segments", func() (int, error) { return p.Preadv(fd, [][]byte{buf[:100], buf[100:]}, 12288) }},
	} {
		if n, err := c.read(); n != 0 || !errors.Is(err, syscall.EIO) {
			t.Errorf("%s of a truncated image: %d, %v; want 0, EIO", c.name, n, err)
		}
	}
}
