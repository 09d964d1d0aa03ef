package overlay_test

// The two sides of the kernel differentials: the host kernel through
// golang.org/x/sys/unix, and iovfs through a vfs.Proc, behind one
// interface, and a walk that records a tree as the comparisons need it.

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// fstat is the part of a file's status the comparisons use.
type fstat struct {
	mode, uid, gid uint32
	size           int64
	nlink          uint64
	ino, dev, rdev uint64
	mtime          time.Time
}

// side is one implementation of the calls the differential makes, on
// paths relative to its root.
type side interface {
	open(p string, flags int, mode uint32) (int, error)
	pwrite(fd int, b []byte, off int64) (int, error)
	write(fd int, b []byte) (int, error)
	read(fd int, b []byte) (int, error)
	close(fd int) error
	truncate(p string, size int64) error
	unlink(p string) error
	rmdir(p string) error
	rename(o, n string, flags uint) error
	link(o, n string) error
	symlink(target, p string) error
	chmod(p string, mode uint32) error
	lchown(p string, uid, gid int) error
	utimes(p string, t time.Time) error
	lsetxattr(p, name string, v []byte) error
	lremovexattr(p, name string) error
	mkdir(p string, mode uint32) error
	mkfifo(p string) error
	lstat(p string) (fstat, error)
	readdir(p string) ([]string, error)
	readlink(p string) (string, error)
	listxattr(p string) ([]string, error)
	getxattr(p, name string) ([]byte, error)
}

// host is the host kernel, at root; as a user other than root when uid
// is set: each call runs on a thread of its own with that fsuid, fsgid
// and group list, thrown away after it (the thread never unlocks).
type host struct {
	root string
	uid  int // 0: root
}

func (h host) at(p string) string { return path.Join(h.root, p) }

func (h host) do(fn func() error) error {
	if h.uid == 0 {
		return fn()
	}
	ch := make(chan error)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setgroups([]int{h.uid}); err != nil {
			ch <- err
			return
		}
		unix.Setfsgid(h.uid)
		unix.Setfsuid(h.uid)
		ch <- fn()
	}()
	return <-ch
}

func (h host) open(p string, flags int, mode uint32) (fd int, err error) {
	err = h.do(func() error {
		var e error
		fd, e = unix.Open(h.at(p), flags|unix.O_CLOEXEC, mode)
		return e
	})
	return fd, err
}

// The calls on descriptors run with the side's credentials too: a write
// clears set-ID bits by the writer's (file_remove_privs).
func (h host) pwrite(fd int, b []byte, off int64) (n int, err error) {
	err = h.do(func() error { n, err = unix.Pwrite(fd, b, off); return err })
	return n, err
}
func (h host) write(fd int, b []byte) (n int, err error) {
	err = h.do(func() error { n, err = unix.Write(fd, b); return err })
	return n, err
}
func (h host) read(fd int, b []byte) (int, error) { return unix.Read(fd, b) }
func (h host) close(fd int) error                 { return unix.Close(fd) }
func (h host) truncate(p string, size int64) error {
	return h.do(func() error { return unix.Truncate(h.at(p), size) })
}
func (h host) unlink(p string) error { return h.do(func() error { return unix.Unlink(h.at(p)) }) }
func (h host) rmdir(p string) error  { return h.do(func() error { return unix.Rmdir(h.at(p)) }) }
func (h host) rename(o, n string, flags uint) error {
	return h.do(func() error { return unix.Renameat2(unix.AT_FDCWD, h.at(o), unix.AT_FDCWD, h.at(n), flags) })
}
func (h host) link(o, n string) error {
	return h.do(func() error { return unix.Link(h.at(o), h.at(n)) })
}
func (h host) symlink(t, p string) error {
	return h.do(func() error { return unix.Symlink(t, h.at(p)) })
}
func (h host) chmod(p string, mode uint32) error {
	return h.do(func() error { return unix.Chmod(h.at(p), mode) })
}
func (h host) lchown(p string, uid, gid int) error {
	return h.do(func() error { return unix.Lchown(h.at(p), uid, gid) })
}
func (h host) utimes(p string, t time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	return h.do(func() error { return unix.UtimesNanoAt(unix.AT_FDCWD, h.at(p), ts, unix.AT_SYMLINK_NOFOLLOW) })
}
func (h host) lsetxattr(p, name string, v []byte) error {
	return h.do(func() error { return unix.Lsetxattr(h.at(p), name, v, 0) })
}
func (h host) lremovexattr(p, name string) error {
	return h.do(func() error { return unix.Lremovexattr(h.at(p), name) })
}
func (h host) mkdir(p string, mode uint32) error {
	return h.do(func() error { return unix.Mkdir(h.at(p), mode) })
}
func (h host) mkfifo(p string) error {
	return h.do(func() error { return unix.Mknod(h.at(p), unix.S_IFIFO|0o644, 0) })
}
func (h host) lstat(p string) (fstat, error) {
	var st unix.Stat_t
	err := h.do(func() error { return unix.Lstat(h.at(p), &st) })
	return fstat{st.Mode, st.Uid, st.Gid, st.Size, st.Nlink, st.Ino, st.Dev, st.Rdev,
		time.Unix(st.Mtim.Unix())}, err
}
func (h host) readdir(p string) (names []string, err error) {
	err = h.do(func() error {
		fd, err := unix.Open(h.at(p), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), p)
		defer f.Close()
		names, err = f.Readdirnames(-1)
		return err
	})
	return names, err
}
func (h host) readlink(p string) (string, error) { return os.Readlink(h.at(p)) }
func (h host) listxattr(p string) ([]string, error) {
	var buf [4096]byte
	n, err := unix.Llistxattr(h.at(p), buf[:])
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range strings.Split(string(buf[:n]), "\x00") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}
func (h host) getxattr(p, name string) ([]byte, error) {
	var buf [4096]byte
	n, err := unix.Lgetxattr(h.at(p), name, buf[:])
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), buf[:n]...), nil
}

// ivs is iovfs: a process, at root in its namespace.
type ivs struct {
	p    *vfs.Proc
	root string
}

func (s ivs) at(p string) string { return path.Join(s.root, p) }
func (s ivs) open(p string, flags int, mode uint32) (int, error) {
	return s.p.Open(s.at(p), flags, mode)
}
func (s ivs) pwrite(fd int, b []byte, off int64) (int, error) { return s.p.Pwrite(fd, b, off) }
func (s ivs) write(fd int, b []byte) (int, error)             { return s.p.Write(fd, b) }
func (s ivs) read(fd int, b []byte) (int, error)              { return s.p.Read(fd, b) }
func (s ivs) close(fd int) error                              { return s.p.Close(fd) }
func (s ivs) truncate(p string, size int64) error             { return s.p.Truncate(s.at(p), size) }
func (s ivs) unlink(p string) error                           { return s.p.Unlink(s.at(p)) }
func (s ivs) rmdir(p string) error                            { return s.p.Rmdir(s.at(p)) }
func (s ivs) rename(o, n string, flags uint) error {
	return s.p.Renameat2(unix.AT_FDCWD, s.at(o), unix.AT_FDCWD, s.at(n), flags)
}
func (s ivs) link(o, n string) error            { return s.p.Link(s.at(o), s.at(n)) }
func (s ivs) symlink(t, p string) error         { return s.p.Symlink(t, s.at(p)) }
func (s ivs) chmod(p string, mode uint32) error { return s.p.Chmod(s.at(p), mode) }
func (s ivs) lchown(p string, uid, gid int) error {
	return s.p.Lchown(s.at(p), uint32(uid), uint32(gid))
}
func (s ivs) lsetxattr(p, name string, v []byte) error { return s.p.Lsetxattr(s.at(p), name, v, 0) }
func (s ivs) lremovexattr(p, name string) error        { return s.p.Lremovexattr(s.at(p), name) }
func (s ivs) mkdir(p string, mode uint32) error        { return s.p.Mkdir(s.at(p), mode) }
func (s ivs) mkfifo(p string) error                    { return s.p.Mknod(s.at(p), unix.S_IFIFO|0o644, 0) }
func (s ivs) utimes(p string, t time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	return s.p.Utimensat(unix.AT_FDCWD, s.at(p), ts, unix.AT_SYMLINK_NOFOLLOW)
}
func (s ivs) lstat(p string) (fstat, error) {
	st, err := s.p.Lstat(s.at(p))
	return fstat{st.Mode, st.Uid, st.Gid, st.Size, st.Nlink, st.Ino, st.Dev, st.Rdev, st.Mtime}, err
}
func (s ivs) readdir(p string) ([]string, error) {
	fd, err := s.p.Open(s.at(p), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer s.p.Close(fd)
	var names []string
	for {
		ents, err := s.p.Getdents(fd)
		if err != nil {
			return nil, err
		}
		if len(ents) == 0 {
			return names, nil
		}
		for _, e := range ents {
			if e.Name != "." && e.Name != ".." {
				names = append(names, e.Name)
			}
		}
	}
}
func (s ivs) readlink(p string) (string, error)       { return s.p.Readlink(s.at(p)) }
func (s ivs) listxattr(p string) ([]string, error)    { return s.p.Llistxattr(s.at(p)) }
func (s ivs) getxattr(p, name string) ([]byte, error) { return s.p.Lgetxattr(s.at(p), name) }

// errnoOf returns the errno err carries, 0 for nil.
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return syscall.Errno(0xffff)
}

// entry is one object of a walked tree.
type entry struct {
	st      fstat
	content string // a regular file's hash, a symlink's target
	xattrs  string
}

// tree is a walked tree, by path relative to its root ("" is the root).
type tree map[string]entry

// oldTime divides explicit timestamps, which the tests set before it,
// from those set by the calls, which are after it.
var oldTime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// walk records the tree under s. skip names the entries of the root
// left out (the work directory's leftovers), and keepXattr says which
// extended attributes are compared.
func walk(t *testing.T, s side, keepXattr func(string) bool) tree {
	t.Helper()
	out := tree{}
	buf := make([]byte, 65536)
	var rec func(p string)
	rec = func(p string) {
		st, err := s.lstat(p)
		if err != nil {
			t.Fatalf("walk: lstat %q: %v", p, err)
		}
		e := entry{st: st}
		switch st.mode & unix.S_IFMT {
		case unix.S_IFREG:
			fd, err := s.open(p, unix.O_RDONLY, 0)
			if err != nil {
				t.Fatalf("walk: open %q: %v", p, err)
			}
			h := sha256.New()
			for {
				n, err := s.read(fd, buf)
				if err != nil {
					t.Fatalf("walk: read %q: %v", p, err)
				}
				if n == 0 {
					break
				}
				h.Write(buf[:n])
			}
			s.close(fd)
			e.content = fmt.Sprintf("%x", h.Sum(nil)[:8])
		case unix.S_IFLNK:
			e.content, err = s.readlink(p)
			if err != nil {
				t.Fatalf("walk: readlink %q: %v", p, err)
			}
		}
		names, err := s.listxattr(p)
		if err != nil {
			t.Fatalf("walk: listxattr %q: %v", p, err)
		}
		sort.Strings(names)
		var xs []string
		for _, n := range names {
			if !keepXattr(n) {
				continue
			}
			v, err := s.getxattr(p, n)
			if err != nil {
				t.Fatalf("walk: getxattr %q %s: %v", p, n, err)
			}
			xs = append(xs, n+"="+string(v))
		}
		e.xattrs = strings.Join(xs, ",")
		out[p] = e
		if st.mode&unix.S_IFMT == unix.S_IFDIR {
			names, err := s.readdir(p)
			if err != nil {
				t.Fatalf("walk: readdir %q: %v", p, err)
			}
			for _, n := range names {
				rec(path.Join(p, n))
			}
		}
	}
	rec("")
	return out
}

// diff lists how trees a and b differ: the set of paths, each object's
// type, mode, owner, size, link count (with links), device number,
// contents and extended attributes, whether its mtime is one a test set
// or one a call set (and then the same one), which objects share an
// inode number, and which share the root's st_dev.
func diff(a, b tree, links bool) []string { return diffOpts(a, b, links, true) }

// diffOpts is diff, which compares the inode numbers shared and the
// directories' times only with whole.
func diffOpts(a, b tree, links, whole bool) []string {
	var out []string
	keys := func(t tree) []string {
		var k []string
		for p := range t {
			k = append(k, p)
		}
		sort.Strings(k)
		return k
	}
	for _, p := range keys(a) {
		x, ok := a[p]
		y, ok2 := b[p]
		if !ok2 {
			out = append(out, fmt.Sprintf("%q only in the first", p))
			continue
		}
		_ = ok
		sx, sy := x.st, y.st
		isDir := sx.mode&unix.S_IFMT == unix.S_IFDIR
		if sx.mode != sy.mode || sx.uid != sy.uid || sx.gid != sy.gid || sx.rdev != sy.rdev {
			out = append(out, fmt.Sprintf("%q: mode %o %d:%d rdev %x, vs %o %d:%d rdev %x", p, sx.mode, sx.uid, sx.gid, sx.rdev, sy.mode, sy.uid, sy.gid, sy.rdev))
		}
		if !isDir && sx.size != sy.size {
			out = append(out, fmt.Sprintf("%q: size %d vs %d", p, sx.size, sy.size))
		}
		if links && sx.nlink != sy.nlink {
			out = append(out, fmt.Sprintf("%q: nlink %d vs %d", p, sx.nlink, sy.nlink))
		}
		if x.content != y.content {
			out = append(out, fmt.Sprintf("%q: contents %q vs %q", p, x.content, y.content))
		}
		if x.xattrs != y.xattrs {
			out = append(out, fmt.Sprintf("%q: xattrs %q vs %q", p, x.xattrs, y.xattrs))
		}
		ox, oy := sx.mtime.Before(oldTime), sy.mtime.Before(oldTime)
		if (whole || !isDir) && (ox != oy || ox && !sx.mtime.Equal(sy.mtime)) {
			out = append(out, fmt.Sprintf("%q: mtime %v vs %v", p, sx.mtime, sy.mtime))
		}
		if (sx.dev == a[""].st.dev) != (sy.dev == b[""].st.dev) {
			out = append(out, fmt.Sprintf("%q: st_dev is the root's: %v vs %v", p, sx.dev == a[""].st.dev, sy.dev == b[""].st.dev))
		}
	}
	for _, p := range keys(b) {
		if _, ok := a[p]; !ok {
			out = append(out, fmt.Sprintf("%q only in the second", p))
		}
	}
	if ga, gb := inoGroups(a), inoGroups(b); whole && ga != gb {
		out = append(out, fmt.Sprintf("objects sharing an inode number: %s vs %s", ga, gb))
	}
	return out
}

// inoGroups lists the sets of paths that share a (st_dev, st_ino).
func inoGroups(t tree) string {
	g := map[[2]uint64][]string{}
	for p, e := range t {
		k := [2]uint64{e.st.dev, e.st.ino}
		g[k] = append(g[k], p)
	}
	var out []string
	for _, ps := range g {
		if len(ps) > 1 {
			sort.Strings(ps)
			out = append(out, "{"+strings.Join(ps, " ")+"}")
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
