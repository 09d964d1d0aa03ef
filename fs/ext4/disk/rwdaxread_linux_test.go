package disk

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// daxCountDev is a Writer device over memory that also offers direct
// access, and counts the ReadAt calls that reach bytes in [lo, hi).
type daxCountDev struct {
	b       []byte
	lo, hi  int64
	touched int
}

func (d *daxCountDev) Size() int64 { return int64(len(d.b)) }

func (d *daxCountDev) ReadAt(p []byte, off int64) (int, error) {
	if off < d.hi && off+int64(len(p)) > d.lo {
		d.touched++
	}
	return copy(p, d.b[off:]), nil
}

func (d *daxCountDev) WriteAt(p []byte, off int64) (int, error) { return copy(d.b[off:], p), nil }

func (d *daxCountDev) DirectAccess(off int64, n int) ([]byte, error) {
	return d.b[off : off+int64(n)], nil
}

// TestWriterDaxRead: on a Writer set up as a dax mount's (UseDAX), ReadAt
// copies file data from device memory, never through the device's ReadAt
// (counted over the file's data blocks), allocates nothing, and gives the
// bytes the plain Writer gives; a plain Writer reads the same blocks
// through the device (so the count can fail). Holes, unwritten extents
// and a punched block read as zeros, and a truncate is seen at once.
func TestWriterDaxRead(t *testing.T) {
	needMke2fs(t)
	img := filepath.Join(t.TempDir(), "d.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	orig, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 256<<10)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	for _, dax := range []bool{true, false} {
		dev := &daxCountDev{b: bytes.Clone(orig)}
		w, err := OpenWriter(dev, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if dax {
			w.UseDAX(dev, dev.b)
		}
		ino, err := w.Create(rootIno, "f", 0o644, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := w.WriteAt(ino, data, 0); n != len(data) {
			t.Fatal(n, err)
		}
		in, err := w.Volume().Inode(ino)
		if err != nil {
			t.Fatal(err)
		}
		m, err := w.Volume().MapBlocks(in, nil, 0)
		if err != nil || m.Len < 64 {
			t.Fatalf("mapping %+v, %v: want one extent of the file's 64 blocks", m, err)
		}
		dev.lo, dev.hi = int64(m.Physical*w.v.bs), int64((m.Physical+64)*w.v.bs)
		buf := make([]byte, 4096)
		off := int64(0)
		read := func() {
			if n, err := w.ReadAt(ino, buf, off); n != len(buf) || err != nil {
				t.Fatal(n, err)
			}
			if !bytes.Equal(buf, data[off:off+4096]) {
				t.Fatalf("dax=%v: bytes at %d differ", dax, off)
			}
			off = (off + 4096*13 + 100) % (int64(len(data)) - 4096)
		}
		read()
		dev.touched = 0
		allocs := testing.AllocsPerRun(200, read)
		switch {
		case dax && dev.touched != 0:
			t.Errorf("dax: %d device reads of file data in 201 preads, want 0", dev.touched)
		case !dax && dev.touched == 0:
			t.Errorf("plain: no device read of file data: the count cannot tell the paths apart")
		}
		if allocs != 0 && !rwRace {
			t.Errorf("dax=%v: %.1f allocations per read, want 0", dax, allocs)
		}
		// Coherence: a punch, preallocation past the end, a truncate.
		if err := w.Fallocate(ino, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 8192, 4096); err != nil {
			t.Fatal(err)
		}
		if err := w.Fallocate(ino, unix.FALLOC_FL_ZERO_RANGE, 40960, 6000); err != nil {
			t.Fatal(err)
		}
		if err := w.Truncate(ino, 100000); err != nil {
			t.Fatal(err)
		}
		if err := w.Fallocate(ino, 0, 100000, 8192); err != nil {
			t.Fatal(err)
		}
		want := bytes.Clone(data[:108192])
		clear(want[8192:12288])
		clear(want[40960:46960])
		clear(want[100000:])
		got := make([]byte, 200000)
		if n, err := w.ReadAt(ino, got, 0); n != len(want) || err != nil {
			t.Fatalf("dax=%v: read %d, %v; want %d", dax, n, err, len(want))
		}
		if !bytes.Equal(got[:len(want)], want) {
			t.Errorf("dax=%v: bytes after punch, zero range, truncate and preallocation differ", dax)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
