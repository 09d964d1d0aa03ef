package iovfs_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestTmpfileKernel runs O_TMPFILE's cases on a kernel tmpfs and on
// iovfs's tmpfs and compares every result: an unnamed file (nlink 0, an
// inode taken), named by linkat(AT_EMPTY_PATH) and by linkat of
// /proc/self/fd (LinkFd on iovfs), refused a name with O_EXCL, freed at
// close when never named, and the flag errors.
func TestTmpfileKernel(t *testing.T) {
	testenv.RequireRoot(t, "a private kernel tmpfs")
	kern := t.TempDir()
	if err := unix.Mount("tmpfs", kern, "tmpfs", 0, "size=1m,nr_inodes=100"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(kern, unix.MNT_DETACH) })
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("tmpfs", "/mnt", "tmpfs", 0, "size=1m,nr_inodes=100"); err != nil {
		t.Fatal(err)
	}
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
	type sys struct {
		open   func(flags int) (int, error)
		write  func(fd int) error
		nlink  func(fd int) uint64
		ffree  func() uint64
		linkat func(fd int, name string) error
		procfd func(fd int, name string) error
		read   func(name string) (string, error)
		close  func(fd int)
	}
	host := sys{
		open:  func(fl int) (int, error) { return unix.Open(kern, fl|unix.O_CLOEXEC, 0o600) },
		write: func(fd int) error { _, err := unix.Write(fd, []byte("tmp")); return err },
		nlink: func(fd int) uint64 { var st unix.Stat_t; unix.Fstat(fd, &st); return st.Nlink },
		ffree: func() uint64 { var s unix.Statfs_t; unix.Statfs(kern, &s); return s.Ffree },
		linkat: func(fd int, name string) error {
			return unix.Linkat(fd, "", unix.AT_FDCWD, filepath.Join(kern, name), unix.AT_EMPTY_PATH)
		},
		procfd: func(fd int, name string) error {
			return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, filepath.Join(kern, name), unix.AT_SYMLINK_FOLLOW)
		},
		read: func(name string) (string, error) {
			b, err := os.ReadFile(filepath.Join(kern, name))
			return string(b), err
		},
		close: func(fd int) { unix.Close(fd) },
	}
	dir, _ := p.Open("/mnt", unix.O_PATH|unix.O_DIRECTORY, 0)
	mine := sys{
		open:  func(fl int) (int, error) { return p.Open("/mnt", fl, 0o600) },
		write: func(fd int) error { _, err := p.Write(fd, []byte("tmp")); return err },
		nlink: func(fd int) uint64 { st, _ := p.Fstat(fd); return st.Nlink },
		ffree: func() uint64 { s, _ := p.Statfs("/mnt"); return s.Ffree },
		linkat: func(fd int, name string) error {
			return p.Linkat(fd, "", unix.AT_FDCWD, "/mnt/"+name, unix.AT_EMPTY_PATH)
		},
		procfd: func(fd int, name string) error { return p.LinkFd(fd, dir, name) },
		read: func(name string) (string, error) {
			fd, err := p.Open("/mnt/"+name, unix.O_RDONLY, 0)
			if err != nil {
				return "", err
			}
			defer p.Close(fd)
			b := make([]byte, 16)
			n, err := p.Read(fd, b)
			return string(b[:n]), err
		},
		close: func(fd int) { p.Close(fd) },
	}
	steps := func(s sys) []string {
		var out []string
		put := func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) }
		free0 := s.ffree()
		for _, fl := range []int{unix.O_TMPFILE | unix.O_RDONLY, unix.O_TMPFILE&^unix.O_DIRECTORY | unix.O_RDWR, unix.O_TMPFILE | unix.O_RDWR | unix.O_CREAT} {
			_, err := s.open(fl)
			put("open %#o: %s", fl, errno(err))
		}
		for i, c := range []struct {
			flags int
			link  string
		}{
			{unix.O_TMPFILE | unix.O_RDWR, "linkat"},
			{unix.O_TMPFILE | unix.O_WRONLY, "procfd"},
			{unix.O_TMPFILE | unix.O_RDWR | unix.O_EXCL, "linkat"},
			{unix.O_TMPFILE | unix.O_RDWR | unix.O_EXCL, "procfd"},
			{unix.O_TMPFILE | unix.O_RDWR, ""},
		} {
			fd, err := s.open(c.flags)
			put("%d open: %s", i, errno(err))
			if err != nil {
				continue
			}
			put("%d write: %s nlink %d, inodes used %d", i, errno(s.write(fd)), s.nlink(fd), free0-s.ffree())
			name := fmt.Sprintf("t%d", i)
			switch c.link {
			case "linkat":
				put("%d linkat: %s", i, errno(s.linkat(fd, name)))
			case "procfd":
				put("%d link /proc/self/fd: %s", i, errno(s.procfd(fd, name)))
			}
			put("%d nlink %d, second link: %s", i, s.nlink(fd), errno(s.linkat(fd, name+"b")))
			s.close(fd)
			b, err := s.read(name)
			put("%d after close: %q %s, inodes used %d", i, b, errno(err), free0-s.ffree())
		}
		return out
	}
	want, got := steps(host), steps(mine)
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("iovfs  %s\nkernel %s", g, w)
		}
	}
	t.Logf("%d results compared", len(want))
}
