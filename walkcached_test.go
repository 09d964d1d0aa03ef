package iovfs_test

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

// TestCachedWalkDecisions: the cached prefix of a walk (vfs/walkcached.go)
// makes the decisions the full walk makes, on names all cached: each
// change below is made after the path was walked twice, and the next walk
// must see it. Search checks run on attributes read at the walk, a
// symlink in the middle is followed to its current target, a mount over
// a cached directory is crossed (the mount filter) and its unmount
// uncovers the directory again, and RESOLVE_NO_XDEV refuses the crossing.
func TestCachedWalkDecisions(t *testing.T) {
	root := newProc(t)
	user, err := root.Fork()
	must(t, err)
	must(t, user.Setresgid(1000, 1000, 1000))
	must(t, user.Setresuid(1000, 1000, 1000))
	for _, d := range []string{"/tmp/a", "/tmp/a/b", "/tmp/a/b/c", "/tmp/t", "/tmp/t/c"} {
		must(t, root.Mkdir(d, 0o755))
	}
	createFile(t, root, "/tmp/a/b/c/f", "x")
	createFile(t, root, "/tmp/t/c/g", "x")
	must(t, root.Symlink("a/b", "/tmp/l"))

	warm := func(p *vfs.Proc, path string) {
		p.Lstat(path)
		p.Lstat(path)
	}
	want := func(p *vfs.Proc, what, path string, errno syscall.Errno) {
		t.Helper()
		warm(p, path)
		if got, _ := lstatErrno(p, path); got != errno {
			t.Errorf("%s: lstat %s: errno %v, want %v", what, path, got, errno)
		}
	}

	want(user, "all searchable", "/tmp/a/b/c/f", 0)
	must(t, root.Chmod("/tmp/a/b", 0o700))
	want(user, "middle directory 0700, root's", "/tmp/a/b/c/f", unix.EACCES)
	want(root, "root in the 0700 directory", "/tmp/a/b/c/f", 0)
	must(t, root.Chmod("/tmp/a/b", 0o701))
	want(user, "middle directory 0701 (other x)", "/tmp/a/b/c/f", 0)
	must(t, root.Chmod("/tmp/a/b", 0o710))
	want(user, "middle directory 0710 (group x, not the user's group)", "/tmp/a/b/c/f", unix.EACCES)
	must(t, root.Chown("/tmp/a/b", 0, 1000))
	want(user, "middle directory 0710, now the user's group", "/tmp/a/b/c/f", 0)
	must(t, root.Chmod("/tmp/a/b", 0o755))

	want(root, "through a symlink", "/tmp/l/c/f", 0)
	must(t, root.Unlink("/tmp/l"))
	must(t, root.Symlink("t", "/tmp/l"))
	want(root, "through the symlink retargeted", "/tmp/l/c/f", unix.ENOENT)
	want(root, "through the symlink retargeted", "/tmp/l/c/g", 0)
	createFile(t, root, "/tmp/nd", "x")
	want(root, "a file in the middle", "/tmp/nd/x", unix.ENOTDIR)

	_, wantIno := lstatErrno(root, "/tmp/a/b/c/f")
	want(root, "before the mount", "/tmp/a/b/c/f", 0)
	must(t, root.Mount("none", "/tmp/a/b", "tmpfs", 0, ""))
	want(root, "under a mount on a cached middle directory", "/tmp/a/b/c/f", unix.ENOENT)
	must(t, root.Mkdir("/tmp/a/b/c", 0o755))
	createFile(t, root, "/tmp/a/b/c/f", "y")
	warm(root, "/tmp/a/b/c/f")
	if _, ino := lstatErrno(root, "/tmp/a/b/c/f"); ino == wantIno {
		t.Errorf("lstat through the mount gave the covered file's inode %d", ino)
	}
	fd, err := root.Openat2(unix.AT_FDCWD, "/tmp/a/b/c/f", &unix.OpenHow{Flags: unix.O_RDONLY, Resolve: unix.RESOLVE_NO_XDEV})
	if err == nil {
		root.Close(fd)
	}
	wantErrno(t, "openat2 RESOLVE_NO_XDEV across the cached mount", err, unix.EXDEV)
	must(t, root.Unmount("/tmp/a/b", 0))
	warm(root, "/tmp/a/b/c/f")
	if e, ino := lstatErrno(root, "/tmp/a/b/c/f"); e != 0 || ino != wantIno {
		t.Errorf("after the unmount: lstat errno %v ino %d, want the covered file's %d", e, ino, wantIno)
	}
}

// TestCachedWalkLastName: the cached walk also takes a path's last
// component (Linux's walk_component in RCU mode), and its mount
// crossings are remembered per dentry for as long as the mount table is
// unchanged. After every change below, made once the paths are cached,
// the walk must see it: a mount on the last component and on a middle
// one (stacked twice, then unmounted one at a time), a symlink as the
// last component (lstat gives the link, stat its target), a negative
// last component that is then created, and RESOLVE_NO_XDEV on a last
// component that is a mount point.
func TestCachedWalkLastName(t *testing.T) {
	p := newProc(t)
	for _, d := range []string{"/tmp/m", "/tmp/m/d", "/tmp/s"} {
		must(t, p.Mkdir(d, 0o755))
	}
	createFile(t, p, "/tmp/m/d/f", "x")
	must(t, p.Symlink("m/d", "/tmp/l"))
	// ino is the device and inode number stat gives for path.
	ino := func(what string, stat func(string) (vfs.Stat, error), path string) [2]uint64 {
		t.Helper()
		stat(path) // cache every name
		st, err := stat(path)
		if err != nil {
			t.Fatalf("%s: %s: %v", what, path, err)
		}
		return [2]uint64{st.Dev, st.Ino}
	}
	covered := ino("before the mounts", p.Lstat, "/tmp/m")
	middle := ino("before the mounts", p.Lstat, "/tmp/m/d/f")

	must(t, p.Mount("none", "/tmp/m", "tmpfs", 0, ""))
	first := ino("one mount on the last name", p.Lstat, "/tmp/m")
	if first == covered {
		t.Errorf("lstat of a mount point gave the covered directory's inode")
	}
	want(t, p, "a middle name under the mount", "/tmp/m/d/f", unix.ENOENT)
	must(t, p.Mkdir("/tmp/m/d", 0o755))
	createFile(t, p, "/tmp/m/d/f", "y")
	if ino("a file in the mount", p.Lstat, "/tmp/m/d/f") == middle {
		t.Errorf("lstat through the mount gave the covered file's inode")
	}
	fd, err := p.Openat2(unix.AT_FDCWD, "/tmp/m", &unix.OpenHow{Flags: unix.O_RDONLY, Resolve: unix.RESOLVE_NO_XDEV})
	if err == nil {
		p.Close(fd)
	}
	wantErrno(t, "openat2 RESOLVE_NO_XDEV of a cached mount point", err, unix.EXDEV)

	must(t, p.Mount("none", "/tmp/m", "tmpfs", 0, ""))
	if second := ino("a second mount stacked", p.Lstat, "/tmp/m"); second == first || second == covered {
		t.Errorf("lstat of a twice-mounted point: %v, want the top mount's root (not %v or %v)", second, first, covered)
	}
	want(t, p, "under the second mount", "/tmp/m/d/f", unix.ENOENT)
	must(t, p.Unmount("/tmp/m", 0))
	if got := ino("the second mount gone", p.Lstat, "/tmp/m"); got != first {
		t.Errorf("after one unmount: %v, want the first mount's root %v", got, first)
	}
	must(t, p.Unmount("/tmp/m", 0))
	if got := ino("both mounts gone", p.Lstat, "/tmp/m"); got != covered {
		t.Errorf("after both unmounts: %v, want the covered directory's %v", got, covered)
	}
	if got := ino("both mounts gone", p.Lstat, "/tmp/m/d/f"); got != middle {
		t.Errorf("after both unmounts: %v, want the covered file's %v", got, middle)
	}

	link := ino("a symlink, not followed", p.Lstat, "/tmp/l")
	if target := ino("a symlink, followed", p.Stat, "/tmp/l"); target == link || target != ino("its target", p.Lstat, "/tmp/m/d") {
		t.Errorf("stat of a cached symlink gave %v (the link is %v)", target, link)
	}
	if st, err := p.Lstat("/tmp/l"); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		t.Errorf("lstat of a cached symlink: mode %o, %v", st.Mode, err)
	}

	want(t, p, "a negative last name", "/tmp/s/new", unix.ENOENT)
	createFile(t, p, "/tmp/s/new", "z")
	want(t, p, "the negative last name created", "/tmp/s/new", 0)
	want(t, p, "a trailing slash on a file", "/tmp/s/new/", unix.ENOTDIR)
	must(t, p.Unlink("/tmp/s/new"))
	want(t, p, "the last name unlinked", "/tmp/s/new", unix.ENOENT)
}

// want checks the errno of lstat(path), after two walks of it.
func want(t *testing.T, p *vfs.Proc, what, path string, errno syscall.Errno) {
	t.Helper()
	p.Lstat(path)
	p.Lstat(path)
	if got, _ := lstatErrno(p, path); got != errno {
		t.Errorf("%s: lstat %s: errno %v, want %v", what, path, got, errno)
	}
}
