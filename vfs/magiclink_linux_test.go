package vfs_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// magicSys is one side of TestMagicLinkKernel: the host's calls on
// /proc/self/fd/N, or iovfs's *Fd calls.
type magicSys interface {
	openPath(name string, flags int) (int, error)
	reopen(fd, flags int) (int, error)
	truncate(fd int, size int64) error
	link(fd int, name string) error
	getxattr(fd int, name string) (string, error)
	listxattr(fd int) (string, error)
	setxattr(fd int, name, val string) error
	removexattr(fd int, name string) error
	fstat(fd int) (size int64, nlink uint64, err error)
	read(fd int) (string, error)
	unlink(name string) error
	close(fd int) error
}

type hostMagic struct{ dir int }

func procFd(fd int) string { return fmt.Sprintf("/proc/self/fd/%d", fd) }

func (h hostMagic) openPath(name string, flags int) (int, error) {
	return unix.Openat(h.dir, name, flags|unix.O_CLOEXEC, 0)
}
func (h hostMagic) reopen(fd, flags int) (int, error) {
	return unix.Open(procFd(fd), flags|unix.O_CLOEXEC, 0)
}
func (h hostMagic) truncate(fd int, size int64) error { return unix.Truncate(procFd(fd), size) }
func (h hostMagic) link(fd int, name string) error {
	return unix.Linkat(unix.AT_FDCWD, procFd(fd), h.dir, name, unix.AT_SYMLINK_FOLLOW)
}
func (h hostMagic) getxattr(fd int, name string) (string, error) {
	b := make([]byte, 64)
	n, err := unix.Getxattr(procFd(fd), name, b)
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}
func (h hostMagic) listxattr(fd int) (string, error) {
	b := make([]byte, 256)
	n, err := unix.Listxattr(procFd(fd), b)
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(string(b[:n]), "\x00", " "), nil
}
func (h hostMagic) setxattr(fd int, name, val string) error {
	return unix.Setxattr(procFd(fd), name, []byte(val), 0)
}
func (h hostMagic) removexattr(fd int, name string) error { return unix.Removexattr(procFd(fd), name) }
func (h hostMagic) fstat(fd int) (int64, uint64, error) {
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	return st.Size, st.Nlink, err
}
func (h hostMagic) read(fd int) (string, error) {
	b := make([]byte, 64)
	n, err := unix.Pread(fd, b, 0)
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}
func (h hostMagic) unlink(name string) error { return unix.Unlinkat(h.dir, name, 0) }
func (h hostMagic) close(fd int) error       { return unix.Close(fd) }

type vfsMagic struct {
	p   *vfs.Proc
	dir int
}

func (v vfsMagic) openPath(name string, flags int) (int, error) {
	return v.p.Openat(v.dir, name, flags, 0)
}
func (v vfsMagic) reopen(fd, flags int) (int, error) { return v.p.Reopen(fd, flags) }
func (v vfsMagic) truncate(fd int, size int64) error { return v.p.TruncateFd(fd, size) }
func (v vfsMagic) link(fd int, name string) error    { return v.p.LinkFd(fd, v.dir, name) }
func (v vfsMagic) getxattr(fd int, name string) (string, error) {
	b, err := v.p.GetxattrFd(fd, name)
	return string(b), err
}
func (v vfsMagic) listxattr(fd int) (string, error) {
	names, err := v.p.ListxattrFd(fd)
	s := ""
	for _, n := range names {
		s += n + " "
	}
	return s, err
}
func (v vfsMagic) setxattr(fd int, name, val string) error {
	return v.p.SetxattrFd(fd, name, []byte(val), 0)
}
func (v vfsMagic) removexattr(fd int, name string) error { return v.p.RemovexattrFd(fd, name) }
func (v vfsMagic) fstat(fd int) (int64, uint64, error) {
	st, err := v.p.Fstat(fd)
	return st.Size, st.Nlink, err
}
func (v vfsMagic) read(fd int) (string, error) {
	b := make([]byte, 64)
	n, err := v.p.Pread(fd, b, 0)
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}
func (v vfsMagic) unlink(name string) error { return v.p.Unlinkat(v.dir, name, 0) }
func (v vfsMagic) close(fd int) error       { return v.p.Close(fd) }

// magicSteps runs the cases on s in a directory holding f ("hello"), d/,
// l -> f and g, and returns one line per step.
func magicSteps(s magicSys) []string {
	var out []string
	errno := func(err error) string {
		var e syscall.Errno
		if errors.As(err, &e) {
			return e.Error()
		}
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	put := func(step string, vals ...any) { out = append(out, fmt.Sprint(append([]any{step + ":"}, vals...)...)) }
	path := func(name string, flags int) int {
		fd, err := s.openPath(name, unix.O_PATH|flags)
		if err != nil {
			put("O_PATH "+name, errno(err))
		}
		return fd
	}
	pf, pd, pl, pg := path("f", 0), path("d", unix.O_DIRECTORY), path("l", unix.O_NOFOLLOW), path("g", 0)
	put("unlink g", errno(s.unlink("g")))
	reopen := func(name string, fd, flags int) int {
		nfd, err := s.reopen(fd, flags)
		put(fmt.Sprintf("reopen %s %#o", name, flags), errno(err))
		if err != nil {
			return -1
		}
		return nfd
	}
	if fd := reopen("f", pf, unix.O_RDONLY); fd >= 0 {
		b, err := s.read(fd)
		put("read", b, errno(err))
		s.close(fd)
	}
	for _, c := range []struct {
		name  string
		fd    int
		flags int
	}{
		{"d", pd, unix.O_RDONLY | unix.O_DIRECTORY},
		{"f", pf, unix.O_DIRECTORY},
		{"d", pd, unix.O_WRONLY},
		{"l", pl, unix.O_RDONLY},
		{"l", pl, unix.O_PATH},
		{"f", pf, unix.O_NOFOLLOW},
		{"f", pf, unix.O_CREAT | unix.O_EXCL | unix.O_RDONLY},
		{"f", pf, unix.O_CREAT | unix.O_RDWR},
		{"g", pg, unix.O_RDWR},
		{"f", pf, unix.O_PATH | unix.O_NOFOLLOW},
	} {
		if fd := reopen(c.name, c.fd, c.flags); fd >= 0 {
			s.close(fd)
		}
	}
	put("truncate g 3", errno(s.truncate(pg, 3)))
	size, nlink, err := s.fstat(pg)
	put("fstat g", size, nlink, errno(err))
	put("truncate d", errno(s.truncate(pd, 0)))
	put("truncate l", errno(s.truncate(pl, 0)))
	put("link f f2", errno(s.link(pf, "f2")))
	size, nlink, err = s.fstat(pf)
	put("fstat f", size, nlink, errno(err))
	put("link g g2", errno(s.link(pg, "g2")))
	put("link d d2", errno(s.link(pd, "d2")))
	put("link l l2", errno(s.link(pl, "l2")))
	put("link f f2 again", errno(s.link(pf, "f2")))
	if fd := reopen("f", pf, unix.O_WRONLY|unix.O_TRUNC); fd >= 0 {
		size, _, err := s.fstat(fd)
		put("size after O_TRUNC", size, errno(err))
		s.close(fd)
	}
	put("setxattr f", errno(s.setxattr(pf, "user.a", "1")))
	v, err := s.getxattr(pf, "user.a")
	put("getxattr f", v, errno(err))
	v, err = s.listxattr(pf)
	put("listxattr f", v, errno(err))
	put("removexattr f", errno(s.removexattr(pf, "user.a")))
	_, err = s.getxattr(pf, "user.a")
	put("getxattr f removed", errno(err))
	put("setxattr d", errno(s.setxattr(pd, "user.b", "2")))
	put("setxattr l", errno(s.setxattr(pl, "user.a", "1")))
	_, err = s.getxattr(pl, "user.a")
	put("getxattr l", errno(err))
	for _, fd := range []int{pf, pd, pl, pg} {
		s.close(fd)
	}
	return out
}

// TestMagicLinkKernel runs the same calls through /proc/self/fd/N on a
// kernel tmpfs and through Reopen, TruncateFd, LinkFd and the xattr *Fd
// calls on iovfs's tmpfs, and compares every result.
func TestMagicLinkKernel(t *testing.T) {
	testenv.RequireRoot(t, "a private kernel tmpfs")
	kern := t.TempDir()
	if err := unix.Mount("tmpfs", kern, "tmpfs", 0, "size=4m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(kern, 0); err != nil {
			t.Errorf("umount %s: %v", kern, err)
			unix.Unmount(kern, unix.MNT_DETACH)
		}
	})
	p := newPipeProc(t)
	for _, mk := range []func(string) error{
		func(d string) error { return unix.Mkdir(d+"/d", 0o755) },
		func(d string) error { return os.WriteFile(d+"/f", []byte("hello"), 0o644) },
		func(d string) error { return os.WriteFile(d+"/g", []byte("gone"), 0o644) },
		func(d string) error { return unix.Symlink("f", d+"/l") },
	} {
		if err := mk(kern); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.Mkdir("/tmp/d", 0o755))
	for name, data := range map[string]string{"f": "hello", "g": "gone"} {
		fd, err := p.Open("/tmp/"+name, unix.O_CREAT|unix.O_WRONLY, 0o644)
		must(err)
		_, err = p.Write(fd, []byte(data))
		must(err)
		p.Close(fd)
	}
	must(p.Symlink("f", "/tmp/l"))
	hdir, err := unix.Open(kern, unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(err)
	vdir, err := p.Open("/tmp", unix.O_DIRECTORY, 0)
	must(err)
	want := magicSteps(hostMagic{dir: hdir})
	unix.Close(hdir)
	got := magicSteps(vfsMagic{p: p, dir: vdir})
	if len(got) != len(want) {
		t.Fatalf("%d steps on iovfs, %d on the kernel:\n%q\n%q", len(got), len(want), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("iovfs %s\nkernel %s", got[i], want[i])
		}
	}
	t.Logf("%d steps compared", len(want))
}

// TestReopenCredentials checks that Reopen, TruncateFd, LinkFd and the
// xattr calls decide as the caller, not as whoever opened the O_PATH
// descriptor: a thread of a root process acting as uid 1000 is refused
// a root file of mode 0600.
func TestReopenCredentials(t *testing.T) {
	p := newPipeProc(t)
	fd, err := p.Open("/tmp/secret", unix.O_CREAT|unix.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p.Close(fd)
	pf, err := p.Open("/tmp/secret", unix.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := p.Open("/tmp", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	th := p.NewThread()
	if err := th.Setresuid(1000, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Reopen(pf, unix.O_RDONLY); !errors.Is(err, syscall.EACCES) {
		t.Errorf("Reopen O_RDONLY as uid 1000: %v, want EACCES", err)
	}
	if err := th.TruncateFd(pf, 0); !errors.Is(err, syscall.EACCES) {
		t.Errorf("TruncateFd as uid 1000: %v, want EACCES", err)
	}
	// The link is refused by protected_hardlinks (EPERM).
	if err := p.Namespace().SetLinkProtection(vfs.LinkProtection{Hardlinks: 1}); err != nil {
		t.Fatal(err)
	}
	if err := th.LinkFd(pf, dir, "mine"); !errors.Is(err, syscall.EPERM) {
		t.Errorf("LinkFd as uid 1000: %v, want EPERM", err)
	}
	if err := th.SetxattrFd(pf, "user.x", []byte("1"), 0); !errors.Is(err, syscall.EACCES) {
		t.Errorf("SetxattrFd as uid 1000: %v, want EACCES", err)
	}
	if fd, err := p.Reopen(pf, unix.O_RDWR); err != nil {
		t.Errorf("Reopen O_RDWR as root: %v", err)
	} else {
		p.Close(fd)
	}
	if _, err := p.Reopen(99, unix.O_RDONLY); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Reopen of a closed descriptor: %v, want EBADF", err)
	}
	r, _, err := p.Pipe2(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reopen(r, unix.O_RDONLY); !errors.Is(err, syscall.ENXIO) {
		t.Errorf("Reopen of a pipe: %v, want ENXIO", err)
	}
}
