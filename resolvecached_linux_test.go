package iovfs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestResolveCachedKernel compares openat2 with RESOLVE_CACHED against
// the host on a tree that neither dentry cache has seen: on the host a
// fresh read-only overlay mount (its dentries, unlike tmpfs's, exist only
// once looked up), in iovfs a tmpfs whose namespace's cache was emptied
// after the tree was made. The steps interleave cached opens with plain
// ones, which fill the caches: the first cached open of a path gives
// EAGAIN, the same after a plain open succeeds. A file in the middle of
// a path gives EAGAIN, not ENOTDIR (Linux leaves RCU-walk to report it).
// Following a symlink is left out: overlayfs's get_link cannot run in
// RCU-walk, so the host gives EAGAIN where tmpfs (checked by hand on this
// kernel: "l" -> "dd/f" opens with RESOLVE_CACHED) and iovfs succeed.
func TestResolveCachedKernel(t *testing.T) {
	testenv.RequireRoot(t, "mounting a host tmpfs and an overlay")
	base := t.TempDir()
	lower, hroot := filepath.Join(base, "lower"), filepath.Join(base, "ovl")
	for _, d := range []string{lower, hroot} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("tmpfs", lower, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(lower, unix.MNT_DETACH) })
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	vroot := "/mnt/rc"
	if err := p.Mkdir(vroot, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("tmpfs", vroot, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/d", "/d/e"} {
		if err := os.Mkdir(lower+d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := p.Mkdir(vroot+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"/d/f", "/d/e/g", "/top"} {
		if err := os.WriteFile(lower+f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := writeVFS(p, vroot+f, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("d/f", lower+"/l")
	p.Symlink("d/f", vroot+"/l")
	// Two lower layers make a read-only overlay with no upper layer.
	empty := filepath.Join(base, "empty")
	os.Mkdir(empty, 0o755)
	if err := unix.Mount("overlay", hroot, "overlay", unix.MS_RDONLY, "lowerdir="+lower+":"+empty); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(hroot, unix.MNT_DETACH) })
	p.Namespace().SetDentryCacheSize(vfs.DefaultDentryCacheSize) // empty it

	hdir, err := unix.Open(hroot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(hdir)
	vdir, err := p.Open(vroot, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(vdir)

	const cached = 0x20 // RESOLVE_CACHED
	steps := []struct {
		path    string
		flags   int
		resolve uint64
	}{
		{"d/f", unix.O_RDONLY, cached},
		{"d/e/g", unix.O_RDONLY, cached},
		{"missing", unix.O_RDONLY, cached},
		{".", unix.O_RDONLY | unix.O_DIRECTORY, cached},
		{"d/f", unix.O_RDONLY, 0},
		{"d/f", unix.O_RDONLY, cached},
		{"d/f", unix.O_PATH, cached},
		{"d/../d/f", unix.O_RDONLY, cached},
		{"d/e/g", unix.O_RDONLY, cached}, // d cached, e not
		{"d/e", unix.O_RDONLY | unix.O_DIRECTORY, 0},
		{"d/e/g", unix.O_RDONLY, cached}, // g not
		{"d/e/g", unix.O_RDONLY, 0},
		{"d/e/g", unix.O_RDONLY, cached},
		{"d/e/g", unix.O_RDONLY, cached | unix.RESOLVE_BENEATH},
		{"d/nope", unix.O_RDONLY, cached},
		{"d/nope", unix.O_RDONLY, 0},
		{"d/nope", unix.O_RDONLY, cached}, // a negative dentry
		{"d/f", unix.O_RDONLY | unix.O_CREAT, cached},
		{"d/f", unix.O_WRONLY | unix.O_TRUNC, cached},
		{"d", unix.O_RDWR | unix.O_DIRECTORY | 0o20000000, cached}, // O_TMPFILE
		{"l", unix.O_PATH | unix.O_NOFOLLOW, cached},
		{"l", unix.O_PATH | unix.O_NOFOLLOW, 0},
		{"l", unix.O_PATH | unix.O_NOFOLLOW, cached},
		{"top", unix.O_RDONLY, cached},
		{"d/f/x", unix.O_RDONLY, cached}, // a cached file in the middle
		{"d/f/x", unix.O_RDONLY, 0},
		{"d/f", unix.O_RDONLY | unix.O_DIRECTORY, cached},
		{"d/nope/x", unix.O_RDONLY, cached}, // a negative dentry in the middle
	}
	for i, s := range steps {
		how := unix.OpenHow{Flags: uint64(s.flags | unix.O_CLOEXEC), Resolve: s.resolve}
		if s.flags&unix.O_CREAT != 0 || s.flags&0o20000000 != 0 {
			how.Mode = 0o644
		}
		hfd, herr := unix.Openat2(hdir, s.path, &how)
		if herr == nil {
			unix.Close(hfd)
		}
		vfd, verr := p.Openat2(vdir, s.path, &how)
		if verr == nil {
			p.Close(vfd)
		}
		what := fmt.Sprintf("step %d: openat2(%q, flags %#o, resolve %#x)", i, s.path, s.flags, s.resolve)
		if errnoOf(herr) != errnoOf(verr) {
			t.Errorf("%s: host %v, iovfs %v", what, herr, verr)
		} else {
			t.Logf("%s: %v", what, herr)
		}
	}
}
