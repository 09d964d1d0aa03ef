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
