// Package difftest is the random-sequence differential test shared by the
// file systems: sequences of file system calls drawn by rapid run on two
// sides, the host kernel (HostSide) and an iovfs process (ProcSide), and
// every count, errno and byte is compared. The sides' directories are
// chosen by the caller, so the same sequences test tmpfs against a host
// tmpfs and hostfs over one host tmpfs against another.
package difftest

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

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// Side is one of the two systems under comparison; paths are relative to
// its sequence directory. Its methods are the system calls the sequences
// make.
type Side interface {
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
	stat(p string, follow bool) (StatSummary, error)
	list(p string) ([]string, error)
}

type StatSummary struct {
	typ   uint32
	perm  uint32
	size  int64
	nlink uint64
}

// HostSide runs the calls on the host kernel, under the directory Root.
type HostSide struct{ Root string }

func (h HostSide) p(rel string) string { return path.Join(h.Root, rel) + trailing(rel) }

func trailing(rel string) string {
	if strings.HasSuffix(rel, "/") {
		return "/"
	}
	return ""
}

func (h HostSide) open(p string, flags int, perm uint32) (int, error) {
	return unix.Open(h.p(p), flags|unix.O_CLOEXEC, perm)
}
func (h HostSide) close(fd int) error                             { return unix.Close(fd) }
func (h HostSide) read(fd int, b []byte) (int, error)             { return unix.Read(fd, b) }
func (h HostSide) pread(fd int, b []byte, off int64) (int, error) { return unix.Pread(fd, b, off) }
func (h HostSide) readv(fd int, v [][]byte) (int, error)          { return unix.Readv(fd, v) }
func (h HostSide) write(fd int, b []byte) (int, error)            { return unix.Write(fd, b) }
func (h HostSide) pwrite(fd int, b []byte, off int64) (int, error) {
	return unix.Pwrite(fd, b, off)
}
func (h HostSide) writev(fd int, v [][]byte) (int, error) { return unix.Writev(fd, v) }
func (h HostSide) seek(fd int, off int64, whence int) (int64, error) {
	return unix.Seek(fd, off, whence)
}
func (h HostSide) ftruncate(fd int, size int64) error { return unix.Ftruncate(fd, size) }
func (h HostSide) dup(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}
func (h HostSide) mkdir(p string, perm uint32) error { return unix.Mkdir(h.p(p), perm) }
func (h HostSide) rmdir(p string) error              { return unix.Rmdir(h.p(p)) }
func (h HostSide) unlink(p string) error             { return unix.Unlink(h.p(p)) }
func (h HostSide) rename(a, b string) error          { return unix.Rename(h.p(a), h.p(b)) }
func (h HostSide) link(a, b string) error            { return unix.Link(h.p(a), h.p(b)) }
func (h HostSide) symlink(t, p string) error         { return unix.Symlink(t, h.p(p)) }
func (h HostSide) readlink(p string) (string, error) {
	b := make([]byte, 4096)
	n, err := unix.Readlink(h.p(p), b)
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}
func (h HostSide) stat(p string, follow bool) (StatSummary, error) {
	var st unix.Stat_t
	var err error
	if follow {
		err = unix.Stat(h.p(p), &st)
	} else {
		err = unix.Lstat(h.p(p), &st)
	}
	return StatSummary{st.Mode & unix.S_IFMT, st.Mode & 0o7777, st.Size, st.Nlink}, err
}
func (h HostSide) list(p string) ([]string, error) {
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

// ProcSide runs the calls on an iovfs process, under the directory Root
// of its namespace.
type ProcSide struct {
	P    *vfs.Proc
	Root string
}

func (o ProcSide) p(rel string) string { return path.Join(o.Root, rel) + trailing(rel) }
func (o ProcSide) open(p string, flags int, perm uint32) (int, error) {
	return o.P.Open(o.p(p), flags, perm)
}
func (o ProcSide) close(fd int) error                             { return o.P.Close(fd) }
func (o ProcSide) read(fd int, b []byte) (int, error)             { return o.P.Read(fd, b) }
func (o ProcSide) pread(fd int, b []byte, off int64) (int, error) { return o.P.Pread(fd, b, off) }
func (o ProcSide) readv(fd int, v [][]byte) (int, error)          { return o.P.Readv(fd, v) }
func (o ProcSide) write(fd int, b []byte) (int, error)            { return o.P.Write(fd, b) }
func (o ProcSide) pwrite(fd int, b []byte, off int64) (int, error) {
	return o.P.Pwrite(fd, b, off)
}
func (o ProcSide) writev(fd int, v [][]byte) (int, error) { return o.P.Writev(fd, v) }
func (o ProcSide) seek(fd int, off int64, whence int) (int64, error) {
	return o.P.Seek(fd, off, whence)
}
func (o ProcSide) ftruncate(fd int, size int64) error { return o.P.Ftruncate(fd, size) }
func (o ProcSide) dup(fd int) (int, error)            { return o.P.Dup(fd) }
func (o ProcSide) mkdir(p string, perm uint32) error  { return o.P.Mkdir(o.p(p), perm) }
func (o ProcSide) rmdir(p string) error               { return o.P.Rmdir(o.p(p)) }
func (o ProcSide) unlink(p string) error              { return o.P.Unlink(o.p(p)) }
func (o ProcSide) rename(a, b string) error           { return o.P.Rename(o.p(a), o.p(b)) }
func (o ProcSide) link(a, b string) error             { return o.P.Link(o.p(a), o.p(b)) }
func (o ProcSide) symlink(t, p string) error          { return o.P.Symlink(t, o.p(p)) }
func (o ProcSide) readlink(p string) (string, error)  { return o.P.Readlink(o.p(p)) }
func (o ProcSide) stat(p string, follow bool) (StatSummary, error) {
	var st vfs.Stat
	var err error
	if follow {
		st, err = o.P.Stat(o.p(p))
	} else {
		st, err = o.P.Lstat(o.p(p))
	}
	return StatSummary{st.Mode & unix.S_IFMT, st.Mode & 0o7777, st.Size, st.Nlink}, err
}
func (o ProcSide) list(p string) ([]string, error) {
	fd, err := o.P.Open(o.p(p), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer o.P.Close(fd)
	var names []string
	for {
		ents, err := o.P.Getdents(fd)
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
	host, ours Side
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

// Counts are what a Run compared.
type Counts struct {
	Sequences int
	Ops       int // compared results
	Fails     int // of which errors on both sides
}

// Run runs checks random sequences. For each, newSeq makes a fresh empty
// directory on both sides and returns the sides rooted there. The first
// divergence fails t with the sequence rapid shrank it to.
func Run(t *testing.T, checks int, newSeq func(t *rapid.T, seq int) (host, ours Side)) Counts {
	f := flag.Lookup("rapid.checks")
	old := f.Value.String()
	flag.Set("rapid.checks", fmt.Sprint(checks))
	defer flag.Set("rapid.checks", old)

	var c Counts
	rapid.Check(t, func(t *rapid.T) {
		c.Sequences++
		host, ours := newSeq(t, c.Sequences)
		m := &machine{host: host, ours: ours}
		defer func() {
			for i := range m.hfds {
				m.host.close(m.hfds[i])
				m.ours.close(m.ofds[i])
			}
			c.Ops += m.ops
			c.Fails += m.fails
		}()
		// Start from a directory and a file, so that early calls find
		// something to act on.
		m.check(t, "mkdir a", res(0, m.host.mkdir("a", 0o755)), res(0, m.ours.mkdir("a", 0o755)))
		for _, s := range []Side{m.host, m.ours} {
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
	return c
}
