package iovfs_test

// The unprivileged differential test: random sequences of path calls run
// as uid 1000 (groups 1001 and 1002) on a host tmpfs and on iovfs, after a
// set-up as root that plants the cases Linux's permission rules turn on:
// a sticky directory, setgid directories in and out of the caller's
// groups, files whose group bits deny what their other bits allow,
// set-ID files, a directory the caller may not search. Each step's errno
// and result, and then the whole tree's types, modes, owners, sizes, link
// counts and time changes are compared.
//
// The host side runs in a child process started with the credentials
// (Go's Setresuid changes every thread of the test process), which reads
// steps as JSON on stdin and answers on stdout.

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

const (
	credUid = 1000
	credGid = 1000
)

var credGroups = []int{1001, 1002}

// credStep is one call, relative to a sequence directory.
type credStep struct {
	Op    string
	A, B  string
	Flags int
	Mode  uint32
	Uid   int
	Gid   int
	Size  int64
	Dev   int
	TS    []unix.Timespec
	Sub   string // the descriptor call of an "fdop"
}

type credResult struct {
	Errno int
	Out   string
}

type credRequest struct {
	Dir  string
	Step credStep
}

// TestCredHelper is the host side's child process; run by itself it does
// nothing.
func TestCredHelper(t *testing.T) {
	if os.Getenv("IOVFS_CRED_HELPER") != "1" {
		t.Skip("the child process of TestCredDifferential")
	}
	unix.Umask(0o022)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req credRequest
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		out.Encode(hostCredStep(req.Dir, req.Step))
	}
	os.Exit(0)
}

// credSys is what a step needs of a system: *at calls on a directory
// descriptor.
type credSys interface {
	openDir(dir string) (int, error)
	openat(dirfd int, p string, flags int, mode uint32) (int, error)
	openat2(dirfd int, p string, how *unix.OpenHow) (int, error)
	close(fd int) error
	read(fd int, b []byte) (int, error)
	write(fd int, b []byte) (int, error)
	mkdirat(dirfd int, p string, mode uint32) error
	unlinkat(dirfd int, p string, flags int) error
	renameat2(dirfd int, a, b string, flags uint) error
	linkat(dirfd int, a, b string, flags int) error
	linkat2(olddirfd int, a string, newdirfd int, b string, flags int) error
	symlinkat(target string, dirfd int, p string) error
	readlinkat(dirfd int, p string) (string, error)
	fstatat(dirfd int, p string, flags int) (string, error)
	statx(dirfd int, p string, flags int) (string, error)
	fchmodat(dirfd int, p string, mode uint32, flags int) error
	fchownat(dirfd int, p string, uid, gid, flags int) error
	utimensat(dirfd int, p string, ts []unix.Timespec, flags int) error
	faccessat2(dirfd int, p string, mode uint32, flags int) error
	truncate(p string, size int64) error
	mknodat(dirfd int, p string, mode uint32, dev int) error
	fchmod(fd int, mode uint32) error
	fchown(fd int, uid, gid int) error
	futimens(fd int, ts []unix.Timespec) error
	ftruncate(fd int, size int64) error
}

func credErr(err error) credResult { return credResult{Errno: int(errnoOf(err))} }

// runCredStep runs s on sys in the directory dir.
func runCredStep(sys credSys, dir string, s credStep) credResult {
	dfd, err := sys.openDir(dir)
	if err != nil {
		return credResult{Errno: -1000 - int(errnoOf(err))}
	}
	defer sys.close(dfd)
	switch s.Op {
	case "open":
		fd, err := sys.openat(dfd, s.A, s.Flags|unix.O_NONBLOCK, s.Mode)
		if err != nil {
			return credErr(err)
		}
		defer sys.close(fd)
		if acc := s.Flags & unix.O_ACCMODE; acc == unix.O_WRONLY || acc == unix.O_RDWR {
			n, err := sys.write(fd, []byte("xyz"))
			return credResult{Out: fmt.Sprintf("write %d %d", n, errnoOf(err))}
		}
		return credResult{}
	case "openat2":
		how := unix.OpenHow{Flags: uint64(s.Flags | unix.O_NONBLOCK | unix.O_CLOEXEC), Resolve: uint64(s.Dev)}
		if s.Flags&unix.O_CREAT != 0 {
			how.Mode = uint64(s.Mode)
		}
		fd, err := sys.openat2(dfd, s.A, &how)
		if err != nil {
			return credErr(err)
		}
		sys.close(fd)
		return credResult{}
	case "read":
		fd, err := sys.openat(dfd, s.A, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return credErr(err)
		}
		defer sys.close(fd)
		b := make([]byte, 64)
		n, err := sys.read(fd, b)
		if err != nil {
			return credResult{Out: fmt.Sprintf("read errno %d", errnoOf(err))}
		}
		return credResult{Out: fmt.Sprintf("read %q", b[:n])}
	case "mkdir":
		return credErr(sys.mkdirat(dfd, s.A, s.Mode))
	case "unlink":
		return credErr(sys.unlinkat(dfd, s.A, s.Flags))
	case "rename":
		return credErr(sys.renameat2(dfd, s.A, s.B, uint(s.Flags)))
	case "link":
		return credErr(sys.linkat(dfd, s.A, s.B, s.Flags))
	case "symlink":
		return credErr(sys.symlinkat(s.A, dfd, s.B))
	case "readlink":
		t, err := sys.readlinkat(dfd, s.A)
		return credResult{Errno: int(errnoOf(err)), Out: t}
	case "stat":
		o, err := sys.fstatat(dfd, s.A, s.Flags)
		return credResult{Errno: int(errnoOf(err)), Out: o}
	case "statx":
		o, err := sys.statx(dfd, s.A, s.Flags)
		return credResult{Errno: int(errnoOf(err)), Out: o}
	case "chmod":
		return credErr(sys.fchmodat(dfd, s.A, s.Mode, s.Flags))
	case "chown":
		return credErr(sys.fchownat(dfd, s.A, s.Uid, s.Gid, s.Flags))
	case "utimens":
		return credErr(sys.utimensat(dfd, s.A, s.TS, s.Flags))
	case "access":
		return credErr(sys.faccessat2(dfd, s.A, s.Mode, s.Flags))
	case "truncate":
		return credErr(sys.truncate(dir+"/"+s.A, s.Size)) // truncate(2) has no *at form
	case "mknod":
		return credErr(sys.mknodat(dfd, s.A, s.Mode, s.Dev))
	case "flink":
		fd, err := sys.openat(dfd, s.A, s.Flags|unix.O_NONBLOCK, 0)
		if err != nil {
			return credErr(err)
		}
		defer sys.close(fd)
		return credResult{Out: fmt.Sprintf("flink %d", errnoOf(sys.linkat2(fd, "", dfd, s.B, unix.AT_EMPTY_PATH)))}
	case "fdop":
		fd, err := sys.openat(dfd, s.A, s.Flags|unix.O_NONBLOCK, 0)
		if err != nil {
			return credErr(err)
		}
		defer sys.close(fd)
		switch s.Sub {
		case "fchmod":
			err = sys.fchmod(fd, s.Mode)
		case "fchown":
			err = sys.fchown(fd, s.Uid, s.Gid)
		case "futimens":
			err = sys.futimens(fd, s.TS)
		case "ftruncate":
			err = sys.ftruncate(fd, s.Size)
		}
		return credResult{Out: fmt.Sprintf("%s %d", s.Sub, errnoOf(err))}
	}
	return credResult{Errno: -1}
}

// ---- the host's calls, in the child process

type hostCred struct{}

func hostCredStep(dir string, s credStep) credResult { return runCredStep(hostCred{}, dir, s) }

func (hostCred) openDir(dir string) (int, error) {
	return unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
}
func (hostCred) openat(d int, p string, fl int, m uint32) (int, error) {
	return unix.Openat(d, p, fl|unix.O_CLOEXEC, m)
}
func (hostCred) openat2(d int, p string, how *unix.OpenHow) (int, error) {
	return unix.Openat2(d, p, how)
}
func (hostCred) close(fd int) error                      { return unix.Close(fd) }
func (hostCred) read(fd int, b []byte) (int, error)      { return unix.Read(fd, b) }
func (hostCred) write(fd int, b []byte) (int, error)     { return unix.Write(fd, b) }
func (hostCred) mkdirat(d int, p string, m uint32) error { return unix.Mkdirat(d, p, m) }
func (hostCred) unlinkat(d int, p string, fl int) error  { return unix.Unlinkat(d, p, fl) }
func (hostCred) linkat(d int, a, b string, fl int) error { return unix.Linkat(d, a, d, b, fl) }
func (hostCred) linkat2(od int, a string, nd int, b string, fl int) error {
	return unix.Linkat(od, a, nd, b, fl)
}
func (hostCred) symlinkat(t string, d int, p string) error { return unix.Symlinkat(t, d, p) }
func (hostCred) renameat2(d int, a, b string, fl uint) error {
	return unix.Renameat2(d, a, d, b, fl)
}
func (hostCred) readlinkat(d int, p string) (string, error) {
	b := make([]byte, 4096)
	n, err := unix.Readlinkat(d, p, b)
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}
func (hostCred) fstatat(d int, p string, fl int) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d, p, &st, fl); err != nil {
		return "", err
	}
	return statLine(st.Mode, st.Uid, st.Gid, st.Size, uint64(st.Nlink), st.Rdev), nil
}
func (hostCred) statx(d int, p string, fl int) (string, error) {
	var st unix.Statx_t
	if err := unix.Statx(d, p, fl, unix.STATX_BASIC_STATS, &st); err != nil {
		return "", err
	}
	return statxLine(st), nil
}
func (hostCred) fchmodat(d int, p string, m uint32, fl int) error { return unix.Fchmodat(d, p, m, fl) }
func (hostCred) fchownat(d int, p string, u, g, fl int) error     { return unix.Fchownat(d, p, u, g, fl) }
func (hostCred) utimensat(d int, p string, ts []unix.Timespec, fl int) error {
	b, err := unix.BytePtrFromString(p)
	if err != nil {
		return err
	}
	return utimensatRaw(d, b, ts, fl)
}
func (hostCred) faccessat2(d int, p string, m uint32, fl int) error {
	return unix.Faccessat2(d, p, m, fl)
}
func (hostCred) truncate(p string, size int64) error              { return unix.Truncate(p, size) }
func (hostCred) mknodat(d int, p string, m uint32, dev int) error { return unix.Mknodat(d, p, m, dev) }
func (hostCred) fchmod(fd int, m uint32) error                    { return unix.Fchmod(fd, m) }
func (hostCred) fchown(fd int, u, g int) error                    { return unix.Fchown(fd, u, g) }
func (hostCred) futimens(fd int, ts []unix.Timespec) error        { return utimensatRaw(fd, nil, ts, 0) }

// utimensatRaw is utimensat(2) with a NULL times pointer for a nil ts and a
// NULL path for a nil p (futimens), which x/sys's wrappers cannot pass.
func utimensatRaw(d int, p *byte, ts []unix.Timespec, fl int) error {
	var tp unsafe.Pointer
	if ts != nil {
		tp = unsafe.Pointer(&ts[0])
	}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(d), uintptr(unsafe.Pointer(p)), uintptr(tp), uintptr(fl), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
func (hostCred) ftruncate(fd int, size int64) error { return unix.Ftruncate(fd, size) }

// ---- iovfs's calls

type ovfsCred struct{ p *vfs.Proc }

func (o ovfsCred) openDir(dir string) (int, error) {
	return o.p.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
}
func (o ovfsCred) openat(d int, p string, fl int, m uint32) (int, error) {
	return o.p.Openat(d, p, fl|unix.O_CLOEXEC, m)
}
func (o ovfsCred) openat2(d int, p string, how *unix.OpenHow) (int, error) {
	return o.p.Openat2(d, p, how)
}
func (o ovfsCred) close(fd int) error                      { return o.p.Close(fd) }
func (o ovfsCred) read(fd int, b []byte) (int, error)      { return o.p.Read(fd, b) }
func (o ovfsCred) write(fd int, b []byte) (int, error)     { return o.p.Write(fd, b) }
func (o ovfsCred) mkdirat(d int, p string, m uint32) error { return o.p.Mkdirat(d, p, m) }
func (o ovfsCred) unlinkat(d int, p string, fl int) error  { return o.p.Unlinkat(d, p, fl) }
func (o ovfsCred) linkat(d int, a, b string, fl int) error { return o.p.Linkat(d, a, d, b, fl) }
func (o ovfsCred) linkat2(od int, a string, nd int, b string, fl int) error {
	return o.p.Linkat(od, a, nd, b, fl)
}
func (o ovfsCred) symlinkat(t string, d int, p string) error {
	return o.p.Symlinkat(t, d, p)
}
func (o ovfsCred) renameat2(d int, a, b string, fl uint) error {
	return o.p.Renameat2(d, a, d, b, fl)
}
func (o ovfsCred) readlinkat(d int, p string) (string, error) { return o.p.Readlinkat(d, p) }
func (o ovfsCred) fstatat(d int, p string, fl int) (string, error) {
	st, err := o.p.Fstatat(d, p, fl)
	if err != nil {
		return "", err
	}
	return statLine(st.Mode, st.Uid, st.Gid, st.Size, st.Nlink, st.Rdev), nil
}
func (o ovfsCred) statx(d int, p string, fl int) (string, error) {
	st, err := o.p.Statx(d, p, fl, unix.STATX_BASIC_STATS)
	if err != nil {
		return "", err
	}
	return statxLine(st), nil
}
func (o ovfsCred) fchmodat(d int, p string, m uint32, fl int) error {
	return o.p.Fchmodat(d, p, m, fl)
}
func (o ovfsCred) fchownat(d int, p string, u, g, fl int) error {
	return o.p.Fchownat(d, p, u, g, fl)
}
func (o ovfsCred) utimensat(d int, p string, ts []unix.Timespec, fl int) error {
	return o.p.Utimensat(d, p, ts, fl)
}
func (o ovfsCred) faccessat2(d int, p string, m uint32, fl int) error {
	return o.p.Faccessat2(d, p, m, fl)
}
func (o ovfsCred) truncate(p string, size int64) error { return o.p.Truncate(p, size) }
func (o ovfsCred) mknodat(d int, p string, m uint32, dev int) error {
	return o.p.Mknodat(d, p, m, dev)
}
func (o ovfsCred) fchmod(fd int, m uint32) error { return o.p.Fchmod(fd, m) }
func (o ovfsCred) fchown(fd int, u, g int) error { return o.p.Fchown(fd, u, g) }
func (o ovfsCred) futimens(fd int, ts []unix.Timespec) error {
	return o.p.Futimens(fd, ts)
}
func (o ovfsCred) ftruncate(fd int, size int64) error { return o.p.Ftruncate(fd, size) }

func statLine(mode, uid, gid uint32, size int64, nlink, rdev uint64) string {
	return fmt.Sprintf("mode %o uid %d gid %d size %d nlink %d rdev %#x", mode, uid, gid, size, nlink, rdev)
}

func statxLine(st unix.Statx_t) string {
	return fmt.Sprintf("mask-basic %v mode %o uid %d gid %d size %d nlink %d rdev %d:%d",
		st.Mask&unix.STATX_BASIC_STATS == unix.STATX_BASIC_STATS, st.Mode, st.Uid, st.Gid, st.Size, st.Nlink, st.Rdev_major, st.Rdev_minor)
}

// ---- the set-up, as root

// fatalfer is what both *testing.T and *rapid.T offer.
type fatalfer interface {
	Fatalf(format string, args ...any)
}

// plant is one entry of a sequence's starting tree, made as root.
type plant struct {
	path     string
	kind     byte // 'f' file, 'd' directory, 'l' symlink, 'c' character device
	uid, gid int
	mode     uint32
	target   string // symlink target
	dev      int
}

// credTree is the starting tree of every sequence: the cases the
// permission rules turn on, each planted on purpose.
var credTree = []plant{
	{path: "own", kind: 'f', uid: 1000, gid: 1000, mode: 0o644},
	{path: "own_ro", kind: 'f', uid: 1000, gid: 1000, mode: 0o444},
	{path: "root_ro", kind: 'f', mode: 0o644},
	{path: "root_rw", kind: 'f', mode: 0o666},
	{path: "gdeny", kind: 'f', gid: 1001, mode: 0o604},  // my group denies reading that other allows
	{path: "gdenyw", kind: 'f', gid: 1002, mode: 0o646}, // my group denies writing that other allows
	{path: "suid", kind: 'f', uid: 1000, gid: 1000, mode: 0o4755},
	{path: "sgidx", kind: 'f', uid: 1000, gid: 1001, mode: 0o2775},
	{path: "sgidnx", kind: 'f', uid: 1000, gid: 3000, mode: 0o2664},
	{path: "rootsuid", kind: 'f', mode: 0o4777},
	{path: "other", kind: 'f', uid: 2000, gid: 2000, mode: 0o666},
	{path: "priv", kind: 'd', mode: 0o700},
	{path: "priv/secret", kind: 'f', mode: 0o644},
	{path: "pub", kind: 'd', mode: 0o777},
	{path: "pub/f", kind: 'f', mode: 0o666},
	{path: "pub/mine", kind: 'f', uid: 1000, gid: 1000, mode: 0o644},
	{path: "sticky", kind: 'd', mode: 0o1777},
	{path: "sticky/rootf", kind: 'f', mode: 0o666},
	{path: "sticky/mine", kind: 'f', uid: 1000, gid: 1000, mode: 0o644},
	{path: "sticky/other", kind: 'f', uid: 2000, gid: 2000, mode: 0o666},
	{path: "sticky/sub", kind: 'd', uid: 2000, gid: 2000, mode: 0o777},
	{path: "sticky_mine", kind: 'd', uid: 1000, gid: 1000, mode: 0o1777},
	{path: "sticky_mine/other", kind: 'f', uid: 2000, gid: 2000, mode: 0o644},
	{path: "sgid", kind: 'd', gid: 1001, mode: 0o2777},
	{path: "sgid_other", kind: 'd', gid: 3000, mode: 0o2777},
	{path: "gdenydir", kind: 'd', gid: 1002, mode: 0o707}, // my group may not search; other may
	{path: "gdenydir/f", kind: 'f', mode: 0o666},
	{path: "ronly", kind: 'd', mode: 0o755},
	{path: "ronly/f", kind: 'f', mode: 0o666},
	{path: "mine", kind: 'd', uid: 1000, gid: 1000, mode: 0o755},
	{path: "mine/f", kind: 'f', uid: 1000, gid: 1000, mode: 0o644},
	{path: "mine/rootf", kind: 'f', mode: 0o644},
	{path: "lnk", kind: 'l', target: "own"},
	{path: "lnk_priv", kind: 'l', target: "priv/secret"},
	{path: "dangling", kind: 'l', target: "nothing"},
	{path: "nulldev", kind: 'c', mode: 0o666, dev: int(unix.Mkdev(1, 3))},
}

func plantHost(t fatalfer, dir string, tree ...plant) {
	for _, e := range tree {
		p := path.Join(dir, e.path)
		var err error
		switch e.kind {
		case 'f':
			err = os.WriteFile(p, []byte("data"), 0o600)
		case 'd':
			err = unix.Mkdir(p, 0o700)
		case 'l':
			err = unix.Symlink(e.target, p)
		case 'c':
			err = unix.Mknod(p, unix.S_IFCHR|0o600, e.dev)
		}
		if err == nil && e.kind != 'l' {
			if err = unix.Chown(p, e.uid, e.gid); err == nil {
				err = unix.Chmod(p, e.mode)
			}
		}
		if err != nil {
			t.Fatalf("plant %s on the host: %v", e.path, err)
		}
	}
}

func plantOurs(t fatalfer, p *vfs.Proc, dir string, tree ...plant) {
	for _, e := range tree {
		q := path.Join(dir, e.path)
		var err error
		switch e.kind {
		case 'f':
			var fd int
			if fd, err = p.Open(q, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600); err == nil {
				_, err = p.Write(fd, []byte("data"))
				p.Close(fd)
			}
		case 'd':
			err = p.Mkdir(q, 0o700)
		case 'l':
			err = p.Symlink(e.target, q)
		case 'c':
			err = p.Mknod(q, unix.S_IFCHR|0o600, uint64(e.dev))
		}
		if err == nil && e.kind != 'l' {
			if err = p.Chown(q, uint32(e.uid), uint32(e.gid)); err == nil {
				err = p.Chmod(q, e.mode)
			}
		}
		if err != nil {
			t.Fatalf("plant %s on iovfs: %v", e.path, err)
		}
	}
}

// ---- the state compared after every step

type snapEntry struct {
	line                string
	ino                 uint64
	atime, mtime, ctime int64
}

// explicitTime reports whether t (Unix ns) is one the steps set on
// purpose (the 1970s), so that its exact value is compared.
func explicitTime(t int64) bool { return t >= 0 && t < 2*presetBase*1e9 }

func snapHost(t fatalfer, dir string) map[string]snapEntry {
	out := map[string]snapEntry{}
	var walk func(rel string)
	walk = func(rel string) {
		var st unix.Stat_t
		if err := unix.Lstat(path.Join(dir, rel), &st); err != nil {
			t.Fatalf("lstat %s: %v", rel, err)
		}
		line := statLine(st.Mode, st.Uid, st.Gid, st.Size, uint64(st.Nlink), st.Rdev)
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, _ := os.Readlink(path.Join(dir, rel))
			line += " -> " + target
		}
		out[rel] = snapEntry{line, st.Ino, st.Atim.Nano(), st.Mtim.Nano(), st.Ctim.Nano()}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			ents, err := os.ReadDir(path.Join(dir, rel))
			if err != nil {
				t.Fatalf("readdir %s: %v", rel, err)
			}
			for _, e := range ents {
				walk(path.Join(rel, e.Name()))
			}
		}
	}
	walk(".")
	return out
}

func snapOurs(t fatalfer, p *vfs.Proc, dir string) map[string]snapEntry {
	out := map[string]snapEntry{}
	var walk func(rel string)
	walk = func(rel string) {
		full := path.Join(dir, rel)
		st, err := p.Lstat(full)
		if err != nil {
			t.Fatalf("lstat %s: %v", rel, err)
		}
		line := statLine(st.Mode, st.Uid, st.Gid, st.Size, st.Nlink, st.Rdev)
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, _ := p.Readlink(full)
			line += " -> " + target
		}
		out[rel] = snapEntry{line, st.Ino, st.Atime.UnixNano(), st.Mtime.UnixNano(), st.Ctime.UnixNano()}
		if st.IsDir() {
			fd, err := p.Open(full, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatalf("open %s: %v", rel, err)
			}
			defer p.Close(fd)
			for {
				ents, err := p.Getdents(fd)
				if err != nil {
					t.Fatalf("getdents %s: %v", rel, err)
				}
				if len(ents) == 0 {
					break
				}
				for _, e := range ents {
					if e.Name != "." && e.Name != ".." {
						walk(path.Join(rel, e.Name))
					}
				}
			}
		}
	}
	walk(".")
	return out
}

// presetBase is where the times set before each step start: in the range
// explicitTime reports exactly, and above the times steps set (at most
// 300e6 s), so a step's change is always visible.
const presetBase = 350e6

// presetHost sets the access and modification times of every entry of
// snap to distinct values, as root, so that a step's change of either is
// seen exactly: comparing "changed or not" on Linux's coarse, multigrain
// clock is not reliable (shmem_unlink gives the directory the victim's
// ctime, which can equal the directory's own).
func presetHost(t fatalfer, dir string, snap map[string]snapEntry) {
	for _, k := range sortedKeys(snap) {
		ts := presetTimes(k)
		b, _ := unix.BytePtrFromString(path.Join(dir, k))
		if err := utimensatRaw(unix.AT_FDCWD, b, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatalf("preset %s: %v", k, err)
		}
	}
}

func presetOurs(t fatalfer, p *vfs.Proc, dir string, snap map[string]snapEntry) {
	for _, k := range sortedKeys(snap) {
		if err := p.Utimensat(unix.AT_FDCWD, path.Join(dir, k), presetTimes(k), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatalf("preset %s: %v", k, err)
		}
	}
}

// presetTimes derives an entry's preset times from its name.
func presetTimes(name string) []unix.Timespec {
	h := int64(0)
	for _, c := range name {
		h = h*31 + int64(c)
	}
	h &= 0xffffff
	return []unix.Timespec{{Sec: presetBase + h, Nsec: h}, {Sec: presetBase + h, Nsec: 2 * h}}
}

func sortedKeys(m map[string]snapEntry) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describe renders a snapshot after a step, with each entry's time changes
// against the snapshot before it.
func describe(before, after map[string]snapEntry) string {
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		e := after[k]
		fmt.Fprintf(&b, "%s: %s", k, e.line)
		if old, ok := before[k]; ok && old.ino != e.ino {
			b.WriteString(" another inode")
		}
		if explicitTime(e.mtime) {
			fmt.Fprintf(&b, " mtime %d", e.mtime)
		}
		if explicitTime(e.atime) {
			fmt.Fprintf(&b, " atime %d", e.atime)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ---- the steps

// credPaths are the names the steps use: every planted entry, new names in
// each kind of directory, and a few trailing slashes.
var credPaths = func() []string {
	var ps []string
	for _, e := range credTree {
		ps = append(ps, e.path)
	}
	for _, d := range []string{"", "pub/", "sticky/", "sticky_mine/", "sgid/", "sgid_other/", "priv/", "gdenydir/", "ronly/", "mine/", "sticky/sub/"} {
		ps = append(ps, d+"n1", d+"n2")
	}
	return append(ps, "own/", "pub/", "sticky/", "nothing/x", "own/x")
}()

func drawTS(t *rapid.T) []unix.Timespec {
	exp := func(label string) unix.Timespec {
		return unix.Timespec{Sec: int64(rapid.IntRange(1, 300e6).Draw(t, label)), Nsec: int64(rapid.IntRange(0, 999999999).Draw(t, label+"ns"))}
	}
	now := unix.Timespec{Nsec: unix.UTIME_NOW}
	omit := unix.Timespec{Nsec: unix.UTIME_OMIT}
	switch rapid.IntRange(0, 7).Draw(t, "ts") {
	case 0:
		return nil
	case 1:
		return []unix.Timespec{now, now}
	case 2:
		return []unix.Timespec{omit, omit}
	case 3:
		return []unix.Timespec{exp("at"), omit}
	case 4:
		return []unix.Timespec{now, omit}
	case 5:
		return []unix.Timespec{omit, exp("mt")}
	case 6:
		return []unix.Timespec{exp("at"), exp("mt")}
	}
	return []unix.Timespec{{Sec: 1, Nsec: 1e9}, now} // out of range: EINVAL
}

var (
	credUids = []int{-1, credUid, 0, 2000}
	credGids = []int{-1, credGid, 1001, 1002, 3000}
	credOpen = []int{
		unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR, unix.O_WRONLY | unix.O_TRUNC, unix.O_RDONLY | unix.O_TRUNC,
		unix.O_CREAT | unix.O_WRONLY, unix.O_CREAT | unix.O_EXCL | unix.O_RDWR, unix.O_RDONLY | unix.O_NOATIME,
		unix.O_RDONLY | unix.O_DIRECTORY, unix.O_RDONLY | unix.O_NOFOLLOW, unix.O_WRONLY | unix.O_APPEND,
		unix.O_PATH, unix.O_CREAT | unix.O_RDONLY,
	}
	credModes = []uint32{0o644, 0o600, 0o2755, 0o4755, 0o777, 0o1777, 0o7777, 0o2644, 0}
)

func drawCredStep(t *rapid.T) credStep {
	pth := func(label string) string { return rapid.SampledFrom(credPaths).Draw(t, label) }
	mode := func() uint32 { return rapid.SampledFrom(credModes).Draw(t, "mode") }
	s := credStep{}
	ops := []string{"open", "open", "open", "read", "mkdir", "unlink", "rename", "link", "symlink", "readlink",
		"stat", "statx", "chmod", "chown", "chown", "utimens", "utimens", "access", "truncate", "mknod", "fdop", "fdop", "flink", "openat2", "openat2"}
	s.Op = rapid.SampledFrom(ops).Draw(t, "op")
	switch s.Op {
	case "open":
		s.A, s.Flags, s.Mode = pth("a"), rapid.SampledFrom(credOpen).Draw(t, "flags"), mode()
	case "openat2":
		s.A, s.Flags, s.Mode = pth("a"), rapid.SampledFrom(credOpen).Draw(t, "flags"), mode()&0o7777
		s.Dev = rapid.SampledFrom([]int{0, unix.RESOLVE_BENEATH, unix.RESOLVE_IN_ROOT, unix.RESOLVE_NO_SYMLINKS,
			unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS, unix.RESOLVE_BENEATH | unix.RESOLVE_NO_XDEV}).Draw(t, "resolve")
	case "read", "readlink":
		s.A = pth("a")
	case "mkdir":
		s.A, s.Mode = pth("a"), mode()
	case "unlink":
		s.A, s.Flags = pth("a"), rapid.SampledFrom([]int{0, 0, unix.AT_REMOVEDIR, unix.AT_REMOVEDIR, 0x1}).Draw(t, "flags")
	case "rename":
		s.A, s.B = pth("a"), pth("b")
		s.Flags = rapid.SampledFrom([]int{0, 0, 0, unix.RENAME_NOREPLACE, unix.RENAME_EXCHANGE, unix.RENAME_EXCHANGE,
			unix.RENAME_WHITEOUT, unix.RENAME_WHITEOUT | unix.RENAME_NOREPLACE, unix.RENAME_EXCHANGE | unix.RENAME_NOREPLACE, 0x10}).Draw(t, "flags")
	case "link":
		s.A, s.B, s.Flags = pth("a"), pth("b"), rapid.SampledFrom([]int{0, 0, unix.AT_SYMLINK_FOLLOW, unix.AT_SYMLINK_FOLLOW, unix.AT_REMOVEDIR}).Draw(t, "flags")
	case "symlink":
		s.A, s.B = rapid.SampledFrom(append([]string{"../x", "nothing"}, credPaths...)).Draw(t, "target"), pth("b")
	case "stat", "statx":
		s.A, s.Flags = pth("a"), rapid.SampledFrom([]int{0, unix.AT_SYMLINK_NOFOLLOW}).Draw(t, "flags")
	case "chmod":
		s.A, s.Mode = pth("a"), mode()
		s.Flags = rapid.SampledFrom([]int{0, 0, unix.AT_SYMLINK_NOFOLLOW}).Draw(t, "flags")
	case "chown":
		s.A, s.Uid, s.Gid = pth("a"), rapid.SampledFrom(credUids).Draw(t, "uid"), rapid.SampledFrom(credGids).Draw(t, "gid")
		s.Flags = rapid.SampledFrom([]int{0, unix.AT_SYMLINK_NOFOLLOW}).Draw(t, "flags")
	case "utimens":
		s.A, s.TS = pth("a"), drawTS(t)
		s.Flags = rapid.SampledFrom([]int{0, unix.AT_SYMLINK_NOFOLLOW}).Draw(t, "flags")
	case "access":
		s.A = pth("a")
		s.Mode = rapid.SampledFrom([]uint32{unix.F_OK, unix.R_OK, unix.W_OK, unix.X_OK, unix.R_OK | unix.W_OK}).Draw(t, "mode")
		s.Flags = rapid.SampledFrom([]int{0, unix.AT_EACCESS, unix.AT_SYMLINK_NOFOLLOW, unix.AT_REMOVEDIR}).Draw(t, "flags")
	case "truncate":
		s.A, s.Size = pth("a"), int64(rapid.SampledFrom([]int{0, 3, 100}).Draw(t, "size"))
	case "mknod":
		s.A = pth("a")
		switch rapid.IntRange(0, 4).Draw(t, "type") {
		case 0:
			s.Mode = unix.S_IFREG | mode()
		case 1:
			s.Mode = unix.S_IFSOCK | 0o600
		case 2:
			s.Mode = unix.S_IFCHR | 0o644 // 0:0, a whiteout: no CAP_MKNOD needed
		case 3:
			s.Mode, s.Dev = unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))
		case 4:
			// A block number with no driver on the host (major 240 is
			// for local use): the root variant must never make a node
			// that opens a real device of this machine, such as a loop
			// device another test has bound.
			s.Mode, s.Dev = unix.S_IFBLK|0o600, int(unix.Mkdev(240, 7))
		}
	case "flink":
		s.A, s.B = pth("a"), pth("b")
		s.Flags = rapid.SampledFrom([]int{unix.O_RDONLY, unix.O_PATH}).Draw(t, "flags")
	case "fdop":
		s.A = pth("a")
		s.Flags = rapid.SampledFrom([]int{unix.O_RDONLY, unix.O_WRONLY, unix.O_PATH}).Draw(t, "flags")
		s.Sub = rapid.SampledFrom([]string{"fchmod", "fchown", "futimens", "ftruncate"}).Draw(t, "sub")
		s.Mode = mode()
		s.Uid, s.Gid = rapid.SampledFrom(credUids).Draw(t, "uid"), rapid.SampledFrom(credGids).Draw(t, "gid")
		s.TS = drawTS(t)
		s.Size = int64(rapid.SampledFrom([]int{0, 5}).Draw(t, "size"))
	}
	return s
}

// credChild is the host side: the test binary again, as uid 1000.
type credChild struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
}

// helperCopy copies the test binary, which lives in a directory only
// root may enter, to where uid 1000 may run it.
func helperCopy(t *testing.T) string {
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "iovfs-cred")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	exe := filepath.Join(dir, "helper.test")
	must(t, os.WriteFile(exe, bin, 0o755))
	return exe
}

// startCredChild starts the host side as uid 1000, or as root if asRoot.
func startCredChild(t *testing.T, asRoot bool) *credChild {
	exe := helperCopy(t)
	cmd := exec.Command(exe, "-test.run=^TestCredHelper$")
	cmd.Env = append(os.Environ(), "IOVFS_CRED_HELPER=1")
	groups := make([]uint32, len(credGroups))
	for i, g := range credGroups {
		groups[i] = uint32(g)
	}
	if !asRoot {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: credUid, Gid: credGid, Groups: groups}}
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	c := &credChild{cmd: cmd, in: in, out: json.NewDecoder(out)}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return c
}

func (c *credChild) run(t fatalfer, dir string, s credStep) credResult {
	b, err := json.Marshal(credRequest{dir, s})
	if err != nil {
		t.Fatalf("%v", err)
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("to the child: %v", err)
	}
	var r credResult
	if err := c.out.Decode(&r); err != nil {
		t.Fatalf("from the child: %v", err)
	}
	return r
}

// TestCredDifferential runs random sequences as uid 1000 on a host tmpfs
// and on iovfs: 1000 sequences, 200 under -race or -short.
func TestCredDifferential(t *testing.T) {
	checks := 1000
	if testenv.Quick() || raceEnabled {
		checks = 200
	}
	credDifferential(t, false, checks)
}

// TestCredDifferentialRoot runs the same sequences as root, where the
// capabilities override what the modes refuse: 300 sequences, 100 under
// -race or -short.
func TestCredDifferentialRoot(t *testing.T) {
	checks := 300
	if testenv.Quick() || raceEnabled {
		checks = 100
	}
	credDifferential(t, true, checks)
}

func credDifferential(t *testing.T, asRoot bool, checks int) {
	testenv.RequireRoot(t, "setting up as root and running the host side as uid 1000")
	host := hostTmpfs(t)
	// t.TempDir's own directory is 0700: let uid 1000 through to the tmpfs.
	must(t, os.Chmod(filepath.Dir(host), 0o755))
	child := startCredChild(t, asRoot)

	root, err := iovfs.New()
	must(t, err)
	must(t, root.Namespace().SetLinkProtection(hostProtection(t)))
	root.Umask(0o022)
	user := vfs.NewProcCred(root.Namespace(), credUid, credGid, credGroups...)
	if asRoot {
		user, _ = root.Fork()
	}
	ours := ovfsCred{user}
	// The sequences' parent is root's and 0755 on both sides, as the host
	// tmpfs's root is: a symlink to "../x" leads there.
	must(t, root.Mkdir("/tmp/cd", 0o755))

	f := flag.Lookup("rapid.checks")
	old := f.Value.String()
	flag.Set("rapid.checks", fmt.Sprint(checks))
	defer flag.Set("rapid.checks", old)

	seqs, steps, compared, successes := 0, 0, 0, 0
	byOp := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		seqs++
		name := fmt.Sprintf("s%d", seqs)
		hdir, odir := path.Join(host, name), "/tmp/cd/"+name
		for _, err := range []error{unix.Mkdir(hdir, 0o777), unix.Chmod(hdir, 0o777), root.Mkdir(odir, 0o777), root.Chmod(odir, 0o777)} {
			if err != nil {
				t.Fatalf("sequence directory: %v", err)
			}
		}
		defer func() {
			os.RemoveAll(hdir)
			removeAllOurs(root, odir)
		}()
		plantHost(t, hdir, credTree...)
		plantOurs(t, root, odir, credTree...)
		hb, ob := snapHost(t, hdir), snapOurs(t, root, odir)
		if h, o := describe(hb, hb), describe(ob, ob); h != o {
			t.Fatalf("planted trees differ:\nLinux:\n%s\niovfs:\n%s", h, o)
		}
		n := rapid.IntRange(5, 25).Draw(t, "steps")
		for i := 0; i < n; i++ {
			presetHost(t, hdir, hb)
			presetOurs(t, root, odir, ob)
			hb, ob = snapHost(t, hdir), snapOurs(t, root, odir)
			s := drawCredStep(t)
			hr := child.run(t, hdir, s)
			or := runCredStep(ours, odir, s)
			steps++
			compared += 2
			if hr != or {
				t.Fatalf("step %d %+v:\nLinux %+v\niovfs %+v", i, s, hr, or)
			}
			if hr.Errno == 0 {
				successes++
			}
			byOp[s.Op+" "+syscall.Errno(hr.Errno).Error()]++
			ha, oa := snapHost(t, hdir), snapOurs(t, root, odir)
			if h, o := describe(hb, ha), describe(ob, oa); h != o {
				t.Fatalf("after step %d %+v (result %+v) the trees differ:\n%s", i, s, hr, diffLines(h, o))
			}
			// ctime cannot be preset: a change Linux shows must show on
			// iovfs too (Linux may miss one within a clock tick).
			for k, e := range ha {
				if old, ok := hb[k]; ok && old.ino == e.ino && old.ctime != e.ctime {
					if oo, on := ob[k], oa[k]; oo.ctime == on.ctime {
						t.Fatalf("after step %d %+v: %s's ctime changed on Linux, not on iovfs", i, s, k)
					}
				}
			}
			hb, ob = ha, oa
		}
	})
	if testing.Verbose() {
		for _, k := range sortedKeysInt(byOp) {
			t.Logf("%6d %s", byOp[k], k)
		}
	}
	t.Logf("%d sequences, %d steps, %d results and %d tree states compared, %d steps succeeded; 0 divergences",
		seqs, steps, compared, steps, successes)
}

func sortedKeysInt(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// removeAllOurs removes dir and everything below it, as root.
func removeAllOurs(p *vfs.Proc, dir string) {
	st, err := p.Lstat(dir)
	if err != nil {
		return
	}
	if st.IsDir() {
		fd, err := p.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err == nil {
			var names []string
			for {
				ents, _ := p.Getdents(fd)
				if len(ents) == 0 {
					break
				}
				for _, e := range ents {
					if e.Name != "." && e.Name != ".." {
						names = append(names, e.Name)
					}
				}
			}
			p.Close(fd)
			for _, n := range names {
				removeAllOurs(p, dir+"/"+n)
			}
		}
		p.Rmdir(dir)
		return
	}
	p.Unlink(dir)
}

// diffLines shows the lines of two descriptions that differ.
func diffLines(linux, ours string) string {
	a, b := strings.Split(linux, "\n"), strings.Split(ours, "\n")
	var out strings.Builder
	seen := map[string]bool{}
	for _, l := range b {
		seen[l] = true
	}
	for _, l := range a {
		if !seen[l] {
			fmt.Fprintf(&out, "Linux: %s\n", l)
		}
	}
	seen = map[string]bool{}
	for _, l := range a {
		seen[l] = true
	}
	for _, l := range b {
		if !seen[l] {
			fmt.Fprintf(&out, "iovfs: %s\n", l)
		}
	}
	return out.String()
}
