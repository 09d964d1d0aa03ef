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

// TestReadDirect reads files of the populate tree (one of several
// extents' worth of blocks, a sparse one with holes inside and at the
// end, small ones) through Proc.ReadDirect, falling back to Pread where
// it answers EOPNOTSUPP, and checks that the bytes are the host file's,
// that a dax mount hands out views of the device (not copies into a
// buffer) for data and EOPNOTSUPP exactly for holes, that a mount
// without dax answers EOPNOTSUPP, the end of file is an empty view, and
// the descriptor checks are Pread's.
func TestReadDirect(t *testing.T) {
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
			for _, name := range files {
				want, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				fd, err := p.Open("/mnt/"+name, unix.O_RDONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				got, views := readDirectAll(t, p, fd, len(want), c.opts == "dax")
				p.Close(fd)
				if !bytes.Equal(got, want) {
					t.Errorf("%s: ReadDirect/Pread gave %d bytes that differ from the file's %d", name, len(got), len(want))
				}
				if c.opts == "dax" && len(want) > 0 && views == 0 && name != "empty" {
					t.Errorf("%s: no direct view on a dax mount", name)
				}
			}
		})
	}
	p := mountImage(t, img, viaLoop, "dax")
	fd, err := p.Open("/mnt/big", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(fd)
	if _, err := p.ReadDirect(fd, -1, 10); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ReadDirect at -1: %v, want EINVAL", err)
	}
	if _, err := p.ReadDirect(fd, 0, -1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ReadDirect of -1 bytes: %v, want EINVAL", err)
	}
	if _, err := p.ReadDirect(fd+100, 0, 10); !errors.Is(err, syscall.EBADF) {
		t.Errorf("ReadDirect of a bad descriptor: %v, want EBADF", err)
	}
	if v, err := p.ReadDirect(fd, 1<<30, 10); len(v) != 0 || err != nil {
		t.Errorf("ReadDirect past the end: %d bytes, %v; want 0, nil", len(v), err)
	}
	if v, err := p.ReadDirect(fd, 0, 0); len(v) != 0 || err != nil {
		t.Errorf("ReadDirect of 0 bytes: %d bytes, %v; want 0, nil", len(v), err)
	}
	pfd, err := p.Open("/mnt/big", unix.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(pfd)
	if _, err := p.ReadDirect(pfd, 0, 10); !errors.Is(err, syscall.EBADF) {
		t.Errorf("ReadDirect of an O_PATH descriptor: %v, want EBADF", err)
	}
	// A view costs no allocation.
	if a := testing.AllocsPerRun(100, func() {
		if v, err := p.ReadDirect(fd, 4096, 65536); err != nil || len(v) == 0 {
			t.Fatal(len(v), err)
		}
	}); a != 0 && !raceEnabled {
		t.Errorf("ReadDirect: %v allocations, want 0", a)
	}
}

// readDirectAll reads size bytes of fd with ReadDirect in 64 KiB asks,
// using Pread where it answers EOPNOTSUPP (which must not happen for
// data when dax is set, and must always happen otherwise), and returns
// the bytes and the number of non-empty views.
func readDirectAll(t *testing.T, p *vfs.Proc, fd int, size int, dax bool) ([]byte, int) {
	t.Helper()
	var out []byte
	views := 0
	buf := make([]byte, 65536)
	for off := 0; off < size; {
		v, err := p.ReadDirect(fd, int64(off), 65536)
		switch {
		case err == nil:
			if len(v) == 0 {
				t.Fatalf("ReadDirect at %d of %d: empty view before the end", off, size)
			}
			if !dax {
				t.Fatalf("ReadDirect without dax gave a view")
			}
			if len(v) != cap(v) {
				t.Fatalf("ReadDirect at %d: len %d != cap %d", off, len(v), cap(v))
			}
			views++
			out = append(out, v...)
			off += len(v)
		case errors.Is(err, syscall.EOPNOTSUPP):
			n, err := p.Pread(fd, buf, int64(off))
			if err != nil || n == 0 {
				t.Fatalf("Pread at %d: %d, %v", off, n, err)
			}
			// Advance to the next block boundary only, so the next
			// ask may find data again.
			k := min(n, 1024-off%1024)
			if dax && !bytes.Equal(buf[:k], make([]byte, k)) {
				// On dax only holes and unwritten extents, which
				// read as zeros, have no view.
				t.Errorf("ReadDirect at %d: EOPNOTSUPP where Pread finds data", off)
			}
			out = append(out, buf[:k]...)
			off += k
		default:
			t.Fatalf("ReadDirect at %d: %v", off, err)
		}
	}
	if v, err := p.ReadDirect(fd, int64(size), 10); len(v) != 0 || (err != nil && !errors.Is(err, syscall.EOPNOTSUPP)) {
		t.Errorf("ReadDirect at the end: %d bytes, %v", len(v), err)
	}
	return out, views
}
