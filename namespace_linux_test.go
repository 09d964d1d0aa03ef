package iovfs_test

// A model-based differential test: random sequences of file system calls
// run on a host tmpfs through golang.org/x/sys/unix and on an iovfs tmpfs,
// and every result is compared.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// hostTmpfs mounts a private tmpfs for the test and returns its path.
func hostTmpfs(t *testing.T) string {
	testenv.RequireRoot(t, "mounting a host tmpfs to compare against")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m,mode=0755"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Fatalf("%s is not a tmpfs (statfs %v, type %#x)", dir, err, st.Type)
	}
	return dir
}

// side is one of the two systems under comparison; paths are relative to
// its sequence directory.
type side interface {
	open(p string, flags int, perm uint32) (int, error)
	close(fd int) error
	read(fd int, b []byte) (int, error)
	pread(fd int, b []byte, off int64) (int, error)
	readv(fd int, v [][]byte) (int, error)
	write(fd int, b []byte) (int, error)
	pwrite(fd int, b []byte, off int64) (int, error)
	writev(fd int, v [][]byte) (int, error)
	seek(fd int, off int64, whence int) (int64, error)
	ftruncate(fd int, size int64) error
	dup(fd int) (int, error)
	mkdir(p string, perm uint32) error
	rmdir(p string) error
	unlink(p string) error
	rename(a, b string) error
	link(a, b string) error
	symlink(target, p string) error
	readlink(p string) (string, error)
	stat(p string, follow bool) (statSummary, error)
	list(p string) ([]string, error)
}

type statSummary struct {
	typ   uint32
	perm  uint32
	size  int64
	nlink uint64
}

type hostSide struct{ root string }

func (h hostSide) p(rel string) string { return path.Join(h.root, rel) + trailing(rel) }

func trailing(rel string) string {
	if strings.HasSuffix(rel, "/") {
		return "/"
	}
	return ""
}

func (h hostSide) open(p string, flags int, perm uint32) (int, error) {
	return unix.Open(h.p(p), flags|unix.O_CLOEXEC, perm)
}
func (h hostSide) close(fd int) error                             { return unix.Close(fd) }
func (h hostSide) read(fd int, b []byte) (int, error)             { return unix.Read(fd, b) }
func (h hostSide) pread(fd int, b []byte, off int64) (int, error) { return unix.Pread(fd, b, off) }
func (h hostSide) readv(fd int, v [][]byte) (int, error)          { return unix.Readv(fd, v) }
func (h hostSide) write(fd int, b []byte) (int, error)            { return unix.Write(fd, b) }
func (h hostSide) pwrite(fd int, b []byte, off int64) (int, error) {
	return unix.Pwrite(fd, b, off)
}
func (h hostSide) writev(fd int, v [][]byte) (int, error) { return unix.Writev(fd, v) }
func (h hostSide) seek(fd int, off int64, whence int) (int64, error) {
	return unix.Seek(fd, off, whence)
}
func (h hostSide) ftruncate(fd int, size int64) error { return unix.Ftruncate(fd, size) }
func (h hostSide) dup(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}
func (h hostSide) mkdir(p string, perm uint32) error { return unix.Mkdir(h.p(p), perm) }
func (h hostSide) rmdir(p string) error              { return unix.Rmdir(h.p(p)) }
func (h hostSide) unlink(p string) error             { return unix.Unlink(h.p(p)) }
func (h hostSide) rename(a, b string) error          { return unix.Rename(h.p(a), h.p(b)) }
func (h hostSide) link(a, b string) error            { return unix.Link(h.p(a), h.p(b)) }
func (h hostSide) symlink(t, p string) error         { return unix.Symlink(t, h.p(p)) }
func (h hostSide) readlink(p string) (string, error) {
	b := make([]byte, 4096)
	n, err := unix.Readlink(h.p(p), b)
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}
func (h hostSide) stat(p string, follow bool) (statSummary, error) {
	var st unix.Stat_t
	var err error
	if follow {
		err = unix.Stat(h.p(p), &st)
	} else {
		err = unix.Lstat(h.p(p), &st)
	}
	return statSummary{st.Mode & unix.S_IFMT, st.Mode & 0o7777, st.Size, st.Nlink}, err
}
func (h hostSide) list(p string) ([]string, error) {
	ents, err := os.ReadDir(h.p(p))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

type ourSide struct {
	pr   *vfs.Proc
	root string
}

func (o ourSide) p(rel string) string { return path.Join(o.root, rel) + trailing(rel) }
func (o ourSide) open(p string, flags int, perm uint32) (int, error) {
	return o.pr.Open(o.p(p), flags, perm)
}
func (o ourSide) close(fd int) error                             { return o.pr.Close(fd) }
func (o ourSide) read(fd int, b []byte) (int, error)             { return o.pr.Read(fd, b) }
func (o ourSide) pread(fd int, b []byte, off int64) (int, error) { return o.pr.Pread(fd, b, off) }
func (o ourSide) readv(fd int, v [][]byte) (int, error)          { return o.pr.Readv(fd, v) }
func (o ourSide) write(fd int, b []byte) (int, error)            { return o.pr.Write(fd, b) }
func (o ourSide) pwrite(fd int, b []byte, off int64) (int, error) {
	return o.pr.Pwrite(fd, b, off)
}
func (o ourSide) writev(fd int, v [][]byte) (int, error) { return o.pr.Writev(fd, v) }
func (o ourSide) seek(fd int, off int64, whence int) (int64, error) {
	return o.pr.Seek(fd, off, whence)
}
func (o ourSide) ftruncate(fd int, size int64) error { return o.pr.Ftruncate(fd, size) }
func (o ourSide) dup(fd int) (int, error)            { return o.pr.Dup(fd) }
func (o ourSide) mkdir(p string, perm uint32) error  { return o.pr.Mkdir(o.p(p), perm) }
func (o ourSide) rmdir(p string) error               { return o.pr.Rmdir(o.p(p)) }
func (o ourSide) unlink(p string) error              { return o.pr.Unlink(o.p(p)) }
func (o ourSide) rename(a, b string) error           { return o.pr.Rename(o.p(a), o.p(b)) }
func (o ourSide) link(a, b string) error             { return o.pr.Link(o.p(a), o.p(b)) }
func (o ourSide) symlink(t, p string) error          { return o.pr.Symlink(t, o.p(p)) }
func (o ourSide) readlink(p string) (string, error)  { return o.pr.Readlink(o.p(p)) }
func (o ourSide) stat(p string, follow bool) (statSummary, error) {
	var st vfs.Stat
	var err error
	if follow {
		st, err = o.pr.Stat(o.p(p))
	} else {
		st, err = o.pr.Lstat(o.p(p))
	}
	return statSummary{st.Mode & unix.S_IFMT, st.Mode & 0o7777, st.Size, st.Nlink}, err
}
func (o ourSide) list(p string) ([]string, error) {
	fd, err := o.pr.Open(o.p(p), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer o.pr.Close(fd)
	var names []string
	for {
		ents, err := o.pr.Getdents(fd)
		if err != nil {
			return nil, err
		}
		if len(ents) == 0 {
			break
		}
		for _, e := range ents {
			if e.Name != "." && e.Name != ".." {
				names = append(names, e.Name)
			}
		}
	}
	return names, nil
}

// errnoOf reduces an error to its errno, or -1 for a non-errno error.
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return ^syscall.Errno(0)
}

func res(n int64, err error) string {
	if err != nil {
		return fmt.Sprintf("errno %d (%v)", int(errnoOf(err)), errnoOf(err))
	}
	return fmt.Sprintf("%d", n)
}

// The names the sequences use: few, so that collisions happen.
var names = []string{"a", "b", "c", "a", "b", "c", "a/b", "b/a", "a/b/c", "c/", "a/", "a/..", "."}

var openFlags = []int{
	unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR,
	unix.O_RDWR | unix.O_CREAT, unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC,
	unix.O_RDWR | unix.O_CREAT | unix.O_EXCL, unix.O_WRONLY | unix.O_APPEND | unix.O_CREAT,
	unix.O_RDONLY | unix.O_DIRECTORY, unix.O_RDONLY | unix.O_NOFOLLOW, unix.O_RDWR | unix.O_TRUNC,
	unix.O_RDONLY | unix.O_CREAT, unix.O_RDWR | unix.O_APPEND,
	unix.O_RDWR | unix.O_CREAT, unix.O_RDWR | unix.O_CREAT, unix.O_WRONLY | unix.O_CREAT,
}

var whences = []int{unix.SEEK_SET, unix.SEEK_CUR, unix.SEEK_END, unix.SEEK_DATA, unix.SEEK_HOLE}

// machine runs one sequence on both sides.
type machine struct {
	host, ours side
	hfds, ofds []int // open descriptors, by index, on each side
	ops, fails int   // compared results, and how many of them were errors
}

func (m *machine) fd(t *rapid.T) (int, int, bool) {
	if len(m.hfds) == 0 {
		return 0, 0, false
	}
	i := rapid.IntRange(0, len(m.hfds)-1).Draw(t, "fd")
	return m.hfds[i], m.ofds[i], true
}

func (m *machine) check(t *rapid.T, what string, want, got string) {
	m.ops++
	if strings.HasPrefix(want, "errno") {
		m.fails++
	}
	if want != got {
		t.Fatalf("%s: host %s, iovfs %s", what, want, got)
	}
}

func data(t *rapid.T) []byte {
	n := rapid.IntRange(0, 9000).Draw(t, "len")
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + n)
	}
	return b
}

func (m *machine) step(t *rapid.T) {
	name := func(label string) string { return rapid.SampledFrom(names).Draw(t, label) }
	switch op := rapid.IntRange(0, 21).Draw(t, "op"); op {
	case 0, 1: // open
		p, fl := name("path"), rapid.SampledFrom(openFlags).Draw(t, "flags")
		hfd, herr := m.host.open(p, fl, 0o640)
		ofd, oerr := m.ours.open(p, fl, 0o640)
		m.check(t, fmt.Sprintf("open(%q, %#o)", p, fl), res(0, herr), res(0, oerr))
		if herr == nil {
			m.hfds, m.ofds = append(m.hfds, hfd), append(m.ofds, ofd)
		}
	case 2: // read
		if h, o, ok := m.fd(t); ok {
			n := rapid.IntRange(0, 9000).Draw(t, "n")
			hb, ob := make([]byte, n), make([]byte, n)
			hn, herr := m.host.read(h, hb)
			on, oerr := m.ours.read(o, ob)
			m.check(t, "read", res(int64(hn), herr), res(int64(on), oerr))
			if herr == nil && !bytes.Equal(hb[:hn], ob[:on]) {
				t.Fatalf("read bytes differ")
			}
		}
	case 3: // write
		if h, o, ok := m.fd(t); ok {
			b := data(t)
			hn, herr := m.host.write(h, b)
			on, oerr := m.ours.write(o, b)
			m.check(t, "write", res(int64(hn), herr), res(int64(on), oerr))
		}
	case 4: // pread
		if h, o, ok := m.fd(t); ok {
			n, off := rapid.IntRange(0, 9000).Draw(t, "n"), rapid.Int64Range(-1, 20000).Draw(t, "off")
			hb, ob := make([]byte, n), make([]byte, n)
			hn, herr := m.host.pread(h, hb, off)
			on, oerr := m.ours.pread(o, ob, off)
			m.check(t, fmt.Sprintf("pread(%d, %d)", n, off), res(int64(hn), herr), res(int64(on), oerr))
			if herr == nil && !bytes.Equal(hb[:hn], ob[:on]) {
				t.Fatalf("pread bytes differ")
			}
		}
	case 5: // pwrite
		if h, o, ok := m.fd(t); ok {
			b, off := data(t), rapid.Int64Range(-1, 20000).Draw(t, "off")
			hn, herr := m.host.pwrite(h, b, off)
			on, oerr := m.ours.pwrite(o, b, off)
			m.check(t, fmt.Sprintf("pwrite(%d, %d)", len(b), off), res(int64(hn), herr), res(int64(on), oerr))
		}
	case 6: // readv
		if h, o, ok := m.fd(t); ok {
			lens := rapid.SliceOfN(rapid.IntRange(0, 3000), 0, 5).Draw(t, "lens")
			hv, ov := make([][]byte, len(lens)), make([][]byte, len(lens))
			for i, l := range lens {
				hv[i], ov[i] = make([]byte, l), make([]byte, l)
			}
			hn, herr := m.host.readv(h, hv)
			on, oerr := m.ours.readv(o, ov)
			m.check(t, fmt.Sprintf("readv(%v)", lens), res(int64(hn), herr), res(int64(on), oerr))
			if !bytes.Equal(bytes.Join(hv, nil), bytes.Join(ov, nil)) {
				t.Fatalf("readv bytes differ")
			}
		}
	case 7: // writev
		if h, o, ok := m.fd(t); ok {
			b := data(t)
			cut := rapid.IntRange(0, len(b)).Draw(t, "cut")
			v := [][]byte{b[:cut], {}, b[cut:]}
			hn, herr := m.host.writev(h, v)
			on, oerr := m.ours.writev(o, v)
			m.check(t, "writev", res(int64(hn), herr), res(int64(on), oerr))
		}
	case 8: // lseek
		if h, o, ok := m.fd(t); ok {
			off, wh := rapid.Int64Range(-5000, 20000).Draw(t, "off"), rapid.SampledFrom(whences).Draw(t, "whence")
			hp, herr := m.host.seek(h, off, wh)
			op, oerr := m.ours.seek(o, off, wh)
			m.check(t, fmt.Sprintf("lseek(%d, %d)", off, wh), res(hp, herr), res(op, oerr))
		}
	case 9: // ftruncate
		if h, o, ok := m.fd(t); ok {
			size := rapid.Int64Range(-1, 20000).Draw(t, "size")
			m.check(t, fmt.Sprintf("ftruncate(%d)", size), res(0, m.host.ftruncate(h, size)), res(0, m.ours.ftruncate(o, size)))
		}
	case 10: // close
		if len(m.hfds) > 0 {
			i := rapid.IntRange(0, len(m.hfds)-1).Draw(t, "fd")
			m.check(t, "close", res(0, m.host.close(m.hfds[i])), res(0, m.ours.close(m.ofds[i])))
			m.hfds = append(m.hfds[:i], m.hfds[i+1:]...)
			m.ofds = append(m.ofds[:i], m.ofds[i+1:]...)
		}
	case 11: // dup
		if h, o, ok := m.fd(t); ok {
			hd, herr := m.host.dup(h)
			od, oerr := m.ours.dup(o)
			m.check(t, "dup", res(0, herr), res(0, oerr))
			if herr == nil {
				m.hfds, m.ofds = append(m.hfds, hd), append(m.ofds, od)
			}
		}
	case 12, 13:
		p := name("path")
		m.check(t, fmt.Sprintf("mkdir(%q)", p), res(0, m.host.mkdir(p, 0o750)), res(0, m.ours.mkdir(p, 0o750)))
	case 14:
		p := name("path")
		m.check(t, fmt.Sprintf("rmdir(%q)", p), res(0, m.host.rmdir(p)), res(0, m.ours.rmdir(p)))
	case 15:
		p := name("path")
		m.check(t, fmt.Sprintf("unlink(%q)", p), res(0, m.host.unlink(p)), res(0, m.ours.unlink(p)))
	case 16:
		a, b := name("from"), name("to")
		m.check(t, fmt.Sprintf("rename(%q, %q)", a, b), res(0, m.host.rename(a, b)), res(0, m.ours.rename(a, b)))
	case 17:
		a, b := name("from"), name("to")
		m.check(t, fmt.Sprintf("link(%q, %q)", a, b), res(0, m.host.link(a, b)), res(0, m.ours.link(a, b)))
	case 18:
		target, p := rapid.SampledFrom([]string{"a", "b", "../a", "c/a", "nowhere", "b"}).Draw(t, "target"), name("path")
		m.check(t, fmt.Sprintf("symlink(%q, %q)", target, p), res(0, m.host.symlink(target, p)), res(0, m.ours.symlink(target, p)))
	case 19:
		p := name("path")
		hs, herr := m.host.readlink(p)
		our, oerr := m.ours.readlink(p)
		m.check(t, fmt.Sprintf("readlink(%q)", p), res(0, herr)+hs, res(0, oerr)+our)
	case 20, 21:
		p, follow := name("path"), rapid.Bool().Draw(t, "follow")
		hs, herr := m.host.stat(p, follow)
		our, oerr := m.ours.stat(p, follow)
		if hs.typ == unix.S_IFDIR {
			hs.size, our.size = 0, 0 // directory sizes are file-system specific
		}
		m.check(t, fmt.Sprintf("stat(%q, follow %v)", p, follow), res(0, herr)+fmt.Sprint(hs), res(0, oerr)+fmt.Sprint(our))
	}
}

// compareTrees compares the listing of every directory of both sides.
func (m *machine) compareTrees(t *rapid.T, dir string) {
	hl, herr := m.host.list(dir)
	ol, oerr := m.ours.list(dir)
	sort.Strings(hl)
	sort.Strings(ol)
	m.check(t, fmt.Sprintf("listing %q", dir), res(0, herr)+fmt.Sprint(hl), res(0, oerr)+fmt.Sprint(ol))
	for _, n := range hl {
		p := path.Join(dir, n)
		if st, err := m.host.stat(p, false); err == nil && st.typ == unix.S_IFDIR {
			m.compareTrees(t, p)
		}
	}
}

func TestDifferentialTmpfs(t *testing.T) {
	hostRoot := hostTmpfs(t)
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	mask := unix.Umask(0o022)
	unix.Umask(mask)
	p.Umask(uint32(mask))
	checks := 1000
	if testing.Short() {
		checks = 100
	}
	f := flag.Lookup("rapid.checks")
	old := f.Value.String()
	flag.Set("rapid.checks", fmt.Sprint(checks))
	defer flag.Set("rapid.checks", old)

	seq, ops, fails := 0, 0, 0
	rapid.Check(t, func(t *rapid.T) {
		seq++
		dir := fmt.Sprintf("s%d", seq)
		if err := os.Mkdir(path.Join(hostRoot, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := p.Mkdir("/tmp/"+dir, 0o755); err != nil {
			t.Fatal(err)
		}
		m := &machine{host: hostSide{path.Join(hostRoot, dir)}, ours: ourSide{p, "/tmp/" + dir}}
		defer func() {
			for i := range m.hfds {
				m.host.close(m.hfds[i])
				m.ours.close(m.ofds[i])
			}
			ops += m.ops
			fails += m.fails
		}()
		// Start from a directory and a file, so that early calls find
		// something to act on.
		m.check(t, "mkdir a", res(0, m.host.mkdir("a", 0o755)), res(0, m.ours.mkdir("a", 0o755)))
		for _, s := range []side{m.host, m.ours} {
			fd, err := s.open("b", unix.O_CREAT|unix.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			s.write(fd, []byte("some bytes"))
			s.close(fd)
		}
		n := rapid.IntRange(20, 60).Draw(t, "steps")
		for i := 0; i < n; i++ {
			m.step(t)
		}
		m.compareTrees(t, ".")
	})
	t.Logf("%d sequences, %d compared operations (%d of them errors on both sides)", seq, ops, fails)
}
