package overlay_test

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iovfs/iovfs/fs/overlay"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// countFS is a read-only file system of one file, /f, whose handle counts
// the read calls it gets.
type countFS struct {
	root countDir
}

type countDir struct{}

type countFile struct {
	data        []byte
	reads, iter atomic.Int64
}

func (c *countFS) Root() vfs.Node { return &c.root }

var countedFile = &countFile{data: bytes.Repeat([]byte("0123456789abcdef"), 1024)}

func (d *countDir) Stat() (vfs.Stat, error) {
	return vfs.Stat{Ino: 1, Mode: unix.S_IFDIR | 0o755, Nlink: 2, Mtime: time.Unix(1, 0)}, nil
}
func (d *countDir) Lookup(name string) (vfs.Node, error) {
	switch name {
	case "f":
		return countedFile, nil
	case "..":
		return d, nil
	}
	return nil, unix.ENOENT
}
func (f *countFile) Stat() (vfs.Stat, error) {
	return vfs.Stat{Ino: 2, Mode: unix.S_IFREG | 0o644, Nlink: 1, Size: int64(len(f.data)), Mtime: time.Unix(1, 0)}, nil
}
func (f *countFile) Open(flags int, c vfs.Cred) (vfs.Handle, error) { return f, nil }
func (f *countFile) Read(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	if off >= int64(len(f.data)) {
		return 0, nil
	}
	return copy(p, f.data[off:]), nil
}
func (f *countFile) ReadIter(dst iov.Iter, off int64) (int, error) {
	f.iter.Add(1)
	n := 0
	for dst.Len() > 0 && off < int64(len(f.data)) {
		k := copy(dst.Segment(), f.data[off:])
		dst.Advance(k)
		n += k
		off += int64(k)
	}
	return n, nil
}

var (
	_ vfs.Lookuper   = (*countDir)(nil)
	_ vfs.Node       = (*countDir)(nil)
	_ vfs.IterReader = (*countFile)(nil)
	_ vfs.Node       = (*countFile)(nil)
	_ vfs.Opener     = (*countFile)(nil)
	_ vfs.Reader     = (*countFile)(nil)
)

// TestReadThrough checks that reads of a lower file go to the lower
// file's own handle: a pread is one Read of it, a preadv of three
// segments one ReadIter, with the bytes of the file; and that neither,
// nor a cached lstat, allocates.
func TestReadThrough(t *testing.T) {
	ns := vfs.NewNamespace(tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}))
	p := vfs.NewProc(ns)
	for _, d := range []string{"/l", "/u", "/w", "/m"} {
		if err := p.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := ns.MountFS("/l", &countFS{}, true); err != nil {
		t.Fatal(err)
	}
	fs, err := overlay.New(p, overlay.Options{Lower: []string{"/l"}, Upper: "/u", Work: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.MountFS("/m", fs, false); err != nil {
		t.Fatal(err)
	}
	fd, err := p.Open("/m/f", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := countedFile
	r0, i0 := f.reads.Load(), f.iter.Load()
	buf := make([]byte, 100)
	if n, err := p.Pread(fd, buf, 16); err != nil || n != 100 || !bytes.Equal(buf, f.data[16:116]) {
		t.Fatalf("pread: %d, %v, %q", n, err, buf)
	}
	if r, i := f.reads.Load()-r0, f.iter.Load()-i0; r != 1 || i != 0 {
		t.Errorf("a pread made %d reads and %d vectored reads of the lower file, want 1 and 0", r, i)
	}
	a, b, c := make([]byte, 10), make([]byte, 20), make([]byte, 30)
	r0, i0 = f.reads.Load(), f.iter.Load()
	if n, err := p.Preadv(fd, [][]byte{a, b, c}, 5); err != nil || n != 60 ||
		!bytes.Equal(append(append(a, b...), c...), f.data[5:65]) {
		t.Fatalf("preadv: %d, %v", n, err)
	}
	if r, i := f.reads.Load()-r0, f.iter.Load()-i0; r != 0 || i != 1 {
		t.Errorf("a preadv of 3 segments made %d reads and %d vectored reads of the lower file, want 0 and 1", r, i)
	}
	iovs := [][]byte{a, b, c}
	if n := testing.AllocsPerRun(100, func() { p.Pread(fd, buf, 0) }); n != 0 {
		t.Errorf("pread allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { p.Preadv(fd, iovs, 0) }); n != 0 {
		t.Errorf("preadv allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { p.Lstat("/m/f") }); n != 0 {
		t.Errorf("a cached lstat allocates %v times", n)
	}
	p.Close(fd)
}
