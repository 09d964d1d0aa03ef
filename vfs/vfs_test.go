package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// testFS is a root directory holding test files, each a driver with the
// methods a test asks for.
type testFS struct{ root *testDir }

func (f *testFS) Root() vfs.Node { return f.root }

type testDir struct{ kids map[string]vfs.Node }

func (d *testDir) Stat() (vfs.Stat, error) {
	return vfs.Stat{Mode: unix.S_IFDIR | 0o755, Nlink: 2}, nil
}
func (d *testDir) Lookup(name string) (vfs.Node, error) {
	if name == ".." {
		return d, nil
	}
	if n, ok := d.kids[name]; ok {
		return n, nil
	}
	return nil, syscall.ENOENT
}

// memFile is a regular file in memory; it records the driver calls made.
type memFile struct {
	mu    sync.Mutex
	data  []byte
	calls []string
	// short, when > 0, caps every transfer at that many bytes.
	short int
	// failAt, when >= 0, makes calls at or past that offset fail with EIO.
	failAt int64
}

func newMemFile(data string) *memFile { return &memFile{data: []byte(data), failAt: -1} }

func (f *memFile) Stat() (vfs.Stat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return vfs.Stat{Mode: unix.S_IFREG | 0o644, Nlink: 1, Size: int64(len(f.data))}, nil
}

func (f *memFile) readLocked(p []byte, off int64) (int, error) {
	if f.failAt >= 0 && off >= f.failAt {
		return 0, syscall.EIO
	}
	if off >= int64(len(f.data)) {
		return 0, nil
	}
	n := copy(p, f.data[off:])
	if f.short > 0 && n > f.short {
		n = f.short
	}
	return n, nil
}

func (f *memFile) writeLocked(p []byte, off int64) (int, error) {
	if f.failAt >= 0 && off >= f.failAt {
		return 0, syscall.EIO
	}
	if f.short > 0 && len(p) > f.short {
		p = p[:f.short]
	}
	if end := off + int64(len(p)); end > int64(len(f.data)) {
		f.data = append(f.data, make([]byte, end-int64(len(f.data)))...)
	}
	return copy(f.data[off:], p), nil
}

// scalarFile has only the scalar methods.
type scalarFile struct{ *memFile }

func (f scalarFile) Open(int, vfs.Cred) (vfs.Handle, error) { return f, nil }
func (f scalarFile) Read(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "read")
	return f.readLocked(p, off)
}
func (f scalarFile) Write(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "write")
	return f.writeLocked(p, off)
}
func (f scalarFile) Append(src iov.Iter) (int64, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	off := int64(len(f.data))
	buf := make([]byte, src.Len())
	src.CopyIn(buf)
	n, err := f.writeLocked(buf, off)
	return off, n, err
}

// iterFile has only the vectored methods.
type iterFile struct{ *memFile }

func (f iterFile) Open(int, vfs.Cred) (vfs.Handle, error) { return f, nil }
func (f iterFile) ReadIter(dst iov.Iter, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "read_iter")
	buf := make([]byte, dst.Len())
	n, err := f.readLocked(buf, off)
	return dst.CopyOut(buf[:n]), err
}
func (f iterFile) WriteIter(src iov.Iter, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "write_iter")
	buf := make([]byte, src.Len())
	src.CopyIn(buf)
	return f.writeLocked(buf, off)
}

// bothFile has both.
type bothFile struct{ *memFile }

func (f bothFile) Open(int, vfs.Cred) (vfs.Handle, error) { return f, nil }
func (f bothFile) Read(p []byte, off int64) (int, error) {
	return scalarFile(f).Read(p, off)
}
func (f bothFile) ReadIter(dst iov.Iter, off int64) (int, error) {
	return iterFile(f).ReadIter(dst, off)
}
func (f bothFile) Write(p []byte, off int64) (int, error) {
	return scalarFile(f).Write(p, off)
}
func (f bothFile) WriteIter(src iov.Iter, off int64) (int, error) {
	return iterFile(f).WriteIter(src, off)
}
func (f bothFile) Append(src iov.Iter) (int64, int, error) {
	return scalarFile(f).Append(src)
}

// streamFile cannot seek.
type streamFile struct{ scalarFile }

func (f streamFile) Open(int, vfs.Cred) (vfs.Handle, error) { return f, nil }
func (streamFile) Stream()                                  {}

type setup struct {
	p                  *vfs.Proc
	scalar, iter, both *memFile
}

func newProc(t testing.TB) setup {
	s := setup{scalar: newMemFile("0123456789"), iter: newMemFile("abcdefghij"), both: newMemFile("ABCDEFGHIJ")}
	root := &testDir{kids: map[string]vfs.Node{
		"scalar": scalarFile{s.scalar},
		"iter":   iterFile{s.iter},
		"both":   bothFile{s.both},
		"stream": streamFile{scalarFile{newMemFile("stream")}},
		"dir":    &testDir{kids: map[string]vfs.Node{}},
	}}
	s.p = vfs.NewProc(vfs.NewNamespace(&testFS{root}))
	return s
}

func mustOpen(t testing.TB, p *vfs.Proc, path string, flags int) int {
	t.Helper()
	fd, err := p.Open(path, flags, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func TestDispatchChosenAtOpen(t *testing.T) {
	s := newProc(t)
	buf := make([]byte, 4)
	two := [][]byte{make([]byte, 2), make([]byte, 2)}
	one := [][]byte{{}, make([]byte, 3), {}}
	cases := []struct {
		name  string
		file  *memFile
		path  string
		call  func(fd int) (int, error)
		calls []string
	}{
		{"read on a scalar driver calls read", s.scalar, "/scalar", func(fd int) (int, error) { return s.p.Read(fd, buf) }, []string{"read"}},
		{"read on a vectored-only driver wraps the buffer", s.iter, "/iter", func(fd int) (int, error) { return s.p.Read(fd, buf) }, []string{"read_iter"}},
		{"one-segment readv takes the scalar path", s.both, "/both", func(fd int) (int, error) { return s.p.Readv(fd, one) }, []string{"read"}},
		{"two-segment readv takes read_iter", s.both, "/both", func(fd int) (int, error) { return s.p.Readv(fd, two) }, []string{"read_iter"}},
		{"two-segment readv on a scalar driver loops", s.scalar, "/scalar", func(fd int) (int, error) { return s.p.Readv(fd, two) }, []string{"read", "read"}},
		{"zero segments never reach the driver", s.both, "/both", func(fd int) (int, error) { return s.p.Readv(fd, nil) }, nil},
		{"only empty segments never reach the driver", s.scalar, "/scalar", func(fd int) (int, error) { return s.p.Preadv(fd, [][]byte{{}, {}}, 0) }, nil},
		{"one empty segment never reaches the driver (readv)", s.both, "/both", func(fd int) (int, error) { return s.p.Readv(fd, [][]byte{{}}) }, nil},
		{"one empty segment never reaches the driver (preadv)", s.both, "/both", func(fd int) (int, error) { return s.p.Preadv(fd, [][]byte{{}}, 0) }, nil},
		{"one-segment preadv takes the scalar path", s.both, "/both", func(fd int) (int, error) { return s.p.Preadv(fd, [][]byte{buf}, 0) }, []string{"read"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fd := mustOpen(t, s.p, c.path, unix.O_RDONLY)
			defer s.p.Close(fd)
			c.file.calls = nil
			if _, err := c.call(fd); err != nil {
				t.Fatal(err)
			}
			if !equal(c.file.calls, c.calls) {
				t.Fatalf("driver calls %v, want %v", c.file.calls, c.calls)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCompatLoop checks Linux's do_loop_readv_writev rules: one call per
// non-empty segment, stop at the first short transfer, an error only when
// nothing moved.
func TestCompatLoop(t *testing.T) {
	s := newProc(t)
	fd := mustOpen(t, s.p, "/scalar", unix.O_RDWR)

	v := [][]byte{make([]byte, 3), {}, make([]byte, 3), make([]byte, 3)}
	s.scalar.short = 0
	n, err := s.p.Preadv(fd, v, 0)
	if n != 9 || err != nil || string(bytes.Join(v, nil)) != "012345678" {
		t.Fatalf("Preadv = %d, %v, %q", n, err, bytes.Join(v, nil))
	}

	// A short transfer in the middle stops the loop.
	s.scalar.calls, s.scalar.short = nil, 2
	n, err = s.p.Preadv(fd, v, 0)
	if n != 2 || err != nil || len(s.scalar.calls) != 1 {
		t.Fatalf("short: Preadv = %d, %v after %v; want 2 after one call", n, err, s.scalar.calls)
	}
	s.scalar.short = 0

	// An error after progress returns the progress.
	s.scalar.failAt = 5
	n, err = s.p.Preadv(fd, v, 0)
	if n != 6 || err != nil {
		t.Fatalf("error after progress: Preadv = %d, %v; want 6, nil", n, err)
	}
	// An error before any progress is the error.
	n, err = s.p.Preadv(fd, v, 6)
	if n != 0 || !errors.Is(err, syscall.EIO) {
		t.Fatalf("error first: Preadv = %d, %v; want 0, EIO", n, err)
	}
	s.scalar.failAt = -1

	// End of file in the middle: the loop stops at the short read.
	n, err = s.p.Preadv(fd, v, 7)
	if n != 3 || err != nil {
		t.Fatalf("at EOF: Preadv = %d, %v; want 3", n, err)
	}

	// Writes follow the same rules.
	s.scalar.calls = nil
	n, err = s.p.Pwritev(fd, [][]byte{[]byte("ab"), {}, []byte("cd")}, 1)
	if n != 4 || err != nil || !equal(s.scalar.calls, []string{"write", "write"}) {
		t.Fatalf("Pwritev = %d, %v, calls %v", n, err, s.scalar.calls)
	}
	if got := string(s.scalar.data); got != "0abcd56789" {
		t.Fatalf("data %q", got)
	}
}

func TestAccessModesAndBadFds(t *testing.T) {
	s := newProc(t)
	ro := mustOpen(t, s.p, "/both", unix.O_RDONLY)
	wo := mustOpen(t, s.p, "/scalar", unix.O_WRONLY)
	closed := mustOpen(t, s.p, "/scalar", unix.O_RDWR)
	s.p.Close(closed)
	b := make([]byte, 4)
	v := [][]byte{b, b}
	cases := []struct {
		name string
		err  error
		call func() (int, error)
	}{
		{"read on O_WRONLY: EBADF", syscall.EBADF, func() (int, error) { return s.p.Read(wo, b) }},
		{"pread on O_WRONLY: EBADF", syscall.EBADF, func() (int, error) { return s.p.Pread(wo, b, 0) }},
		{"readv on O_WRONLY: EBADF", syscall.EBADF, func() (int, error) { return s.p.Readv(wo, v) }},
		{"preadv2 -1 on O_WRONLY: EBADF", syscall.EBADF, func() (int, error) { return s.p.Preadv2(wo, v, -1, 0) }},
		{"write on O_RDONLY: EBADF", syscall.EBADF, func() (int, error) { return s.p.Write(ro, b) }},
		{"pwrite on O_RDONLY: EBADF", syscall.EBADF, func() (int, error) { return s.p.Pwrite(ro, b, 0) }},
		{"writev on O_RDONLY: EBADF", syscall.EBADF, func() (int, error) { return s.p.Writev(ro, v) }},
		{"read on a closed fd: EBADF", syscall.EBADF, func() (int, error) { return s.p.Read(closed, b) }},
		{"write on a never-opened fd: EBADF", syscall.EBADF, func() (int, error) { return s.p.Write(999, b) }},
		{"read on fd -1: EBADF", syscall.EBADF, func() (int, error) { return s.p.Read(-1, b) }},
		{"pread at a negative offset: EINVAL", syscall.EINVAL, func() (int, error) { return s.p.Pread(ro, b, -1) }},
		{"pread with a negative offset on a bad fd: EINVAL first", syscall.EINVAL, func() (int, error) { return s.p.Pread(999, b, -1) }},
		{"preadv2 at -2: EINVAL", syscall.EINVAL, func() (int, error) { return s.p.Preadv2(ro, v, -2, 0) }},
		{"1025 segments: EINVAL", syscall.EINVAL, func() (int, error) { return s.p.Readv(ro, make([][]byte, 1025)) }},
		{"unknown RWF flag: EOPNOTSUPP", syscall.EOPNOTSUPP, func() (int, error) { return s.p.Preadv2(ro, v, 0, 0x100) }},
		{"RWF_NOWAIT without FMODE_NOWAIT: EOPNOTSUPP", syscall.EOPNOTSUPP, func() (int, error) { return s.p.Preadv2(ro, v, 0, unix.RWF_NOWAIT) }},
		{"RWF_DSYNC on the compat loop: EOPNOTSUPP", syscall.EOPNOTSUPP, func() (int, error) { return s.p.Pwritev2(wo, v, 0, unix.RWF_DSYNC) }},
		{"pread past the largest offset: EINVAL", syscall.EINVAL, func() (int, error) { return s.p.Pread(ro, b, 1<<63-2) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := c.call()
			if n != 0 || !errors.Is(err, c.err) {
				t.Fatalf("got %d, %v; want 0, %v", n, err, c.err)
			}
		})
	}
}

func TestPositions(t *testing.T) {
	s := newProc(t)
	fd := mustOpen(t, s.p, "/scalar", unix.O_RDWR)
	b := make([]byte, 3)
	if n, _ := s.p.Read(fd, b); n != 3 || string(b) != "012" {
		t.Fatalf("Read %q", b[:n])
	}
	if n, _ := s.p.Pread(fd, b, 7); n != 3 || string(b) != "789" {
		t.Fatalf("Pread %q", b[:n])
	}
	if n, _ := s.p.Preadv(fd, [][]byte{b}, 4); n != 3 || string(b) != "456" {
		t.Fatalf("Preadv %q", b[:n])
	}
	if pos, _ := s.p.Seek(fd, 0, unix.SEEK_CUR); pos != 3 {
		t.Fatalf("pread moved the position to %d", pos)
	}
	// preadv2 at -1 uses and moves the position.
	if n, _ := s.p.Preadv2(fd, [][]byte{b[:1], b[1:]}, -1, unix.RWF_HIPRI); n != 3 || string(b) != "345" {
		t.Fatalf("Preadv2 -1 %q", b[:n])
	}
	if pos, _ := s.p.Seek(fd, 0, unix.SEEK_CUR); pos != 6 {
		t.Fatalf("preadv2 -1 left the position at %d, want 6", pos)
	}
	// Dup shares the position.
	d, err := s.p.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	s.p.Read(d, b)
	if pos, _ := s.p.Seek(fd, 0, unix.SEEK_CUR); pos != 9 {
		t.Fatalf("dup does not share the position: %d", pos)
	}
	if n, err := s.p.Read(fd, b); n != 1 || err != nil {
		t.Fatalf("short read at the end: %d, %v", n, err)
	}
	if n, err := s.p.Read(fd, b); n != 0 || err != nil {
		t.Fatalf("read at EOF: %d, %v; want 0, nil", n, err)
	}
	if pos, err := s.p.Seek(fd, -2, unix.SEEK_END); pos != 8 || err != nil {
		t.Fatalf("SEEK_END -2 = %d, %v", pos, err)
	}
	if _, err := s.p.Seek(fd, -20, unix.SEEK_CUR); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("negative position: %v, want EINVAL", err)
	}
	if pos, err := s.p.Seek(fd, 3, unix.SEEK_DATA); pos != 3 || err != nil {
		t.Fatalf("SEEK_DATA = %d, %v", pos, err)
	}
	if pos, err := s.p.Seek(fd, 3, unix.SEEK_HOLE); pos != 10 || err != nil {
		t.Fatalf("SEEK_HOLE = %d, %v", pos, err)
	}
	if _, err := s.p.Seek(fd, 10, unix.SEEK_DATA); !errors.Is(err, syscall.ENXIO) {
		t.Fatalf("SEEK_DATA at EOF: %v, want ENXIO", err)
	}
}

func TestAppend(t *testing.T) {
	s := newProc(t)
	fd := mustOpen(t, s.p, "/both", unix.O_RDWR|unix.O_APPEND)
	if n, err := s.p.Write(fd, []byte("ab")); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	if pos, _ := s.p.Seek(fd, 0, unix.SEEK_CUR); pos != 12 {
		t.Fatalf("position after O_APPEND write = %d, want 12", pos)
	}
	// Linux: pwrite on an O_APPEND file appends, whatever the offset.
	if n, err := s.p.Pwrite(fd, []byte("c"), 0); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	// RWF_NOAPPEND writes at the offset.
	if n, err := s.p.Pwritev2(fd, [][]byte{[]byte("Z")}, 0, unix.RWF_NOAPPEND|unix.RWF_HIPRI); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	if got := string(s.both.data); got != "ZBCDEFGHIJabc" {
		t.Fatalf("data %q", got)
	}
}

func TestStreamGivesESPIPE(t *testing.T) {
	s := newProc(t)
	fd := mustOpen(t, s.p, "/stream", unix.O_RDONLY)
	b := make([]byte, 2)
	if _, err := s.p.Pread(fd, b, 0); !errors.Is(err, syscall.ESPIPE) {
		t.Fatalf("pread: %v", err)
	}
	if _, err := s.p.Preadv(fd, [][]byte{b}, 0); !errors.Is(err, syscall.ESPIPE) {
		t.Fatalf("preadv: %v", err)
	}
	if _, err := s.p.Seek(fd, 0, unix.SEEK_SET); !errors.Is(err, syscall.ESPIPE) {
		t.Fatalf("lseek: %v", err)
	}
	if n, err := s.p.Preadv2(fd, [][]byte{b}, -1, 0); n != 2 || err != nil {
		t.Fatalf("preadv2 -1 on a stream: %d, %v", n, err)
	}
}

func TestOpenErrors(t *testing.T) {
	s := newProc(t)
	cases := []struct {
		path  string
		flags int
		err   error
	}{
		{"/missing", unix.O_RDONLY, syscall.ENOENT},
		{"/scalar/x", unix.O_RDONLY, syscall.ENOTDIR},
		{"/dir", unix.O_WRONLY, syscall.EISDIR},
		{"/dir", unix.O_RDWR, syscall.EISDIR},
		{"/scalar", unix.O_RDONLY | unix.O_DIRECTORY, syscall.ENOTDIR},
		{"", unix.O_RDONLY, syscall.ENOENT},
	}
	for _, c := range cases {
		_, err := s.p.Open(c.path, c.flags, 0)
		var pe *fs.PathError
		if !errors.Is(err, c.err) || !errors.As(err, &pe) || pe.Path != c.path {
			t.Errorf("Open(%q, %#x) = %v, want *fs.PathError wrapping %v", c.path, c.flags, err, c.err)
		}
	}
	if _, err := s.p.Open("/missing", unix.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(err, fs.ErrNotExist) is false for %v", err)
	}
}

func TestLowestFreeFd(t *testing.T) {
	s := newProc(t)
	var fds []int
	for i := 0; i < 5; i++ {
		fds = append(fds, mustOpen(t, s.p, "/scalar", unix.O_RDONLY))
	}
	for i, fd := range fds {
		if fd != i {
			t.Fatalf("fds %v, want 0..4", fds)
		}
	}
	s.p.Close(3)
	s.p.Close(1)
	if fd := mustOpen(t, s.p, "/scalar", unix.O_RDONLY); fd != 1 {
		t.Fatalf("got fd %d, want the lowest free, 1", fd)
	}
	if fd, _ := s.p.Dup(0); fd != 3 {
		t.Fatalf("dup got %d, want 3", fd)
	}
	if fd, err := s.p.Dup2(0, 100); fd != 100 || err != nil {
		t.Fatalf("dup2 = %d, %v", fd, err)
	}
	if fd := mustOpen(t, s.p, "/scalar", unix.O_RDONLY); fd != 5 {
		t.Fatalf("got fd %d after dup2 to 100, want 5", fd)
	}
	if fd, err := s.p.Dup2(2, 2); fd != 2 || err != nil {
		t.Fatalf("dup2 onto itself = %d, %v", fd, err)
	}
	if _, err := s.p.Dup2(77, 2); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("dup2 of a bad fd: %v", err)
	}
	if _, err := s.p.Dup2(0, -1); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("dup2 to -1: %v", err)
	}
	if err := s.p.Close(100); err != nil {
		t.Fatal(err)
	}
	if err := s.p.Close(100); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("second close: %v", err)
	}
}

func TestFileHandle(t *testing.T) {
	s := newProc(t)
	f, err := s.p.OpenFile("/scalar", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(f)
	if err != nil || string(all) != "0123456789" {
		t.Fatalf("ReadAll = %q, %v", all, err)
	}
	b := make([]byte, 4)
	if n, err := f.ReadAt(b, 8); n != 2 || err != io.EOF {
		t.Fatalf("ReadAt across EOF = %d, %v; want 2, io.EOF", n, err)
	}
	if n, err := f.ReadAt(b, 2); n != 4 || err != nil || string(b) != "2345" {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Write([]byte("xy")); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	if n, err := f.WriteAt([]byte("Q"), 9); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	s.scalar.short = 1 // Write must retry short writes
	if n, err := f.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	s.scalar.short = 0
	if got := string(s.scalar.data); got != "xyabc5678Q" {
		t.Fatalf("data %q", got)
	}
	st, err := f.Stat()
	if err != nil || st.Size != 10 || !st.IsRegular() {
		t.Fatalf("Stat = %+v, %v", st, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	err = f.Close()
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(err, syscall.EBADF) || pe.Path != "/scalar" {
		t.Fatalf("second Close = %v", err)
	}
	var (
		_ io.Reader   = f
		_ io.Writer   = f
		_ io.ReaderAt = f
		_ io.WriterAt = f
		_ io.Seeker   = f
		_ io.Closer   = f
	)
}

// TestConcurrentFdTable runs reads, writes, seeks, dups and closes on one
// table from several goroutines; run it with -race.
func TestConcurrentFdTable(t *testing.T) {
	s := newProc(t)
	base := mustOpen(t, s.p, "/scalar", unix.O_RDWR)
	var wg sync.WaitGroup
	deadline := time.Now().Add(200 * time.Millisecond)
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := make([]byte, 3)
			for i := 0; time.Now().Before(deadline); i++ {
				switch i % 6 {
				case 0:
					s.p.Read(base, b)
				case 1:
					s.p.Pwrite(base, b, int64(i%7))
				case 2:
					s.p.Seek(base, int64(i%5), unix.SEEK_SET)
				case 3:
					if fd, err := s.p.Dup(base); err == nil {
						s.p.Readv(fd, [][]byte{b[:1], b[1:]})
						s.p.Close(fd)
					}
				case 4:
					fd, err := s.p.Open("/both", unix.O_RDONLY, 0)
					if err == nil {
						go s.p.Close(fd) // close while others look it up
						s.p.Read(fd, b)
					}
				case 5:
					s.p.Dup2(base, 50+i%3)
					s.p.Read(50+i%3, b)
					s.p.Close(50 + i%3)
				}
			}
		}()
	}
	wg.Wait()
	if _, err := s.p.Fstat(base); err != nil {
		t.Fatal(err)
	}
}
