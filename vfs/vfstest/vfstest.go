package vfstest

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Caps are what a file system claims to support. A case that needs a
// capability runs only when it is claimed; the unclaimed ones are checked
// to fail as Linux fails them.
type Caps struct {
	// Files: regular files can be created (O_CREAT), written, read,
	// truncated and appended to.
	Files bool
	// Dirs: directories can be made and removed.
	Dirs bool
	// Rename: rename(2), within and between directories.
	Rename bool
	// RenameFlags are the renameat2 flags supported: any of
	// unix.RENAME_NOREPLACE, RENAME_EXCHANGE and RENAME_WHITEOUT.
	RenameFlags uint
	// Symlinks and HardLinks: symlink(2) and link(2).
	Symlinks, HardLinks bool
	// FIFOs: mknod(2) of a FIFO.
	FIFOs bool
	// Xattrs: extended attributes in the user namespace.
	Xattrs bool
	// Perms: chmod changes the modes the VFS checks, so the permission
	// cases run as an unprivileged process.
	Perms bool
	// Owners: a new file is owned by its creator's fsuid and fsgid, and
	// root may chown (hostfs, which acts as the host process, does not
	// claim it).
	Owners bool
	// SetgidDirs: a file made in a set-group-ID directory takes the
	// directory's group, and a directory the S_ISGID bit too.
	SetgidDirs bool
	// DirNlink: a directory's link count is 2 plus its subdirectories.
	DirNlink bool
	// RaceFor is how long each race case runs: 1 s when zero, or the
	// duration in IOVFS_RACE_FOR (such as 10s) when that is set.
	RaceFor time.Duration
}

// Run runs the suite on file systems that newFS makes: one fresh
// instance for each case, as the root of a fresh namespace.
func Run(t *testing.T, newFS func(t *testing.T) vfs.FileSystem, caps Caps) {
	if caps.RaceFor == 0 {
		caps.RaceFor = time.Second
		if s := os.Getenv("IOVFS_RACE_FOR"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("IOVFS_RACE_FOR=%q: %v", s, err)
			}
			caps.RaceFor = d
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.needs != nil && !c.needs(caps) {
				t.Skip("not claimed")
			}
			e := newEnv(t, newFS(t), caps)
			c.run(e)
		})
	}
}

// A testCase is one case of the suite: needs says which capabilities it
// requires (nil: none).
type testCase struct {
	name  string
	needs func(Caps) bool
	run   func(e *env)
}

var cases []testCase

// add registers cases; each file of the suite adds its own.
func add(cs ...testCase) { cases = append(cases, cs...) }

// env is one case's namespace: root and user are processes on it.
type env struct {
	t    *testing.T
	caps Caps
	ns   *vfs.Namespace
	root *vfs.Proc
	user *vfs.Proc // uid 1000, gid 1000, groups 1000
}

func newEnv(t *testing.T, fs vfs.FileSystem, caps Caps) *env {
	ns := vfs.NewNamespace(fs)
	return &env{t: t, caps: caps, ns: ns, root: vfs.NewProc(ns), user: vfs.NewProcCred(ns, 1000, 1000, 1000)}
}

// errno is the syscall.Errno err wraps, 0 for nil, and a test failure
// for anything else.
func (e *env) errno(err error) syscall.Errno {
	e.t.Helper()
	if err == nil {
		return 0
	}
	var en syscall.Errno
	if !errors.As(err, &en) {
		e.t.Errorf("%v: not an errno", err)
		return 0
	}
	return en
}

// want checks that err is the errno want (0: success), as Linux gives it
// for what.
func (e *env) want(what string, err error, want syscall.Errno) {
	e.t.Helper()
	if got := e.errno(err); got != want {
		e.t.Errorf("%s: got %v, want %v (%s)", what, errText(got), errText(want), "Linux's answer")
	}
}

// must fails the case at once if err is not nil.
func (e *env) must(what string, err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

func errText(en syscall.Errno) string {
	if en == 0 {
		return "success"
	}
	return fmt.Sprintf("%s (%v)", unix.ErrnoName(en), en)
}

// create makes a regular file with data as p.
func (e *env) create(p *vfs.Proc, path, data string, mode uint32) {
	e.t.Helper()
	fd, err := p.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, mode)
	e.must("create "+path, err)
	if data != "" {
		n, err := p.Write(fd, []byte(data))
		if err != nil || n != len(data) {
			e.t.Fatalf("write %s: %d, %v", path, n, err)
		}
	}
	e.must("close "+path, p.Close(fd))
}

// read returns the whole contents of path.
func (e *env) read(p *vfs.Proc, path string) string {
	e.t.Helper()
	fd, err := p.Open(path, unix.O_RDONLY, 0)
	e.must("open "+path, err)
	defer p.Close(fd)
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := p.Read(fd, buf)
		e.must("read "+path, err)
		if n == 0 {
			return string(out)
		}
		out = append(out, buf[:n]...)
	}
}

// lstat is p.Lstat that fails the case on error.
func (e *env) lstat(p *vfs.Proc, path string) vfs.Stat {
	e.t.Helper()
	st, err := p.Lstat(path)
	e.must("lstat "+path, err)
	return st
}

// names lists directory path (without "." and "..").
func (e *env) names(p *vfs.Proc, path string) map[string]uint64 {
	e.t.Helper()
	fd, err := p.Open(path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	e.must("open "+path, err)
	defer p.Close(fd)
	ents, err := p.Getdents(fd)
	e.must("getdents "+path, err)
	out := map[string]uint64{}
	for _, d := range ents {
		if d.Name == "." || d.Name == ".." {
			continue
		}
		if _, dup := out[d.Name]; dup {
			e.t.Errorf("getdents %s: %q listed twice", path, d.Name)
		}
		out[d.Name] = d.Ino
	}
	return out
}
