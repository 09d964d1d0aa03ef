package ext4_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestOpenPathHoldsInode compares with a kernel loop mount what an O_PATH
// file of an unlinked symlink, FIFO and regular file sees while new files
// are made beside it: its own target and nlink 0, a number no new file
// gets, and the free-inode count back only once it is closed.
func TestOpenPathHoldsInode(t *testing.T) {
	testenv.RequireRoot(t, "a kernel loop mount")
	img := mkImage(t, 4096, func(testing.TB, string) {})
	kimg := filepath.Join(t.TempDir(), "k.img")
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(kimg, b, 0o644)
	kmnt := t.TempDir()
	if out, err := testenv.Mount("-o", "loop", kimg, kmnt); err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", kmnt).Run() })
	p, dev, done := newProc(t, img, viaRAM)
	err = p.Mount(dev, "/mnt", "ext4", 0, "")
	done()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Unmount("/mnt", 0); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	type sys struct {
		mk     func(kind, name string) error
		opath  func(name string) (int, error)
		unlink func(name string) error
		link   func(fd int) (string, error)
		stat   func(fd int, name string) (uint64, uint64, error) // ino, nlink
		ffree  func() uint64
		close  func(fd int)
	}
	host := sys{
		mk: func(kind, name string) error {
			switch kind {
			case "symlink":
				return unix.Symlink("target-"+name, filepath.Join(kmnt, name))
			case "fifo":
				return unix.Mkfifo(filepath.Join(kmnt, name), 0o644)
			}
			return os.WriteFile(filepath.Join(kmnt, name), []byte(name), 0o644)
		},
		opath: func(name string) (int, error) {
			return unix.Open(filepath.Join(kmnt, name), unix.O_PATH|unix.O_NOFOLLOW, 0)
		},
		unlink: func(name string) error { return unix.Unlink(filepath.Join(kmnt, name)) },
		link: func(fd int) (string, error) {
			b := make([]byte, 64)
			n, err := unix.Readlinkat(fd, "", b)
			if err != nil {
				return "", err
			}
			return string(b[:n]), nil
		},
		stat: func(fd int, name string) (uint64, uint64, error) {
			var st unix.Stat_t
			var err error
			if name == "" {
				err = unix.Fstatat(fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
			} else {
				err = unix.Lstat(filepath.Join(kmnt, name), &st)
			}
			return st.Ino, st.Nlink, err
		},
		ffree: func() uint64 { var s unix.Statfs_t; unix.Statfs(kmnt, &s); return s.Ffree },
		close: func(fd int) { unix.Close(fd) },
	}
	mine := sys{
		mk: func(kind, name string) error {
			switch kind {
			case "symlink":
				return p.Symlink("target-"+name, "/mnt/"+name)
			case "fifo":
				return p.Mknod("/mnt/"+name, unix.S_IFIFO|0o644, 0)
			}
			fd, err := p.Open("/mnt/"+name, unix.O_CREAT|unix.O_WRONLY, 0o644)
			if err == nil {
				_, err = p.Write(fd, []byte(name))
				p.Close(fd)
			}
			return err
		},
		opath:  func(name string) (int, error) { return p.Open("/mnt/"+name, unix.O_PATH|unix.O_NOFOLLOW, 0) },
		unlink: func(name string) error { return p.Unlink("/mnt/" + name) },
		link:   func(fd int) (string, error) { return p.Readlinkat(fd, "") },
		stat: func(fd int, name string) (uint64, uint64, error) {
			var st vfs.Stat
			var err error
			if name == "" {
				st, err = p.Fstatat(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
			} else {
				st, err = p.Lstat("/mnt/" + name)
			}
			return st.Ino, st.Nlink, err
		},
		ffree: func() uint64 { s, _ := p.Statfs("/mnt"); return s.Ffree },
		close: func(fd int) { p.Close(fd) },
	}
	steps := func(s sys) []string {
		var out []string
		put := func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) }
		for _, kind := range []string{"symlink", "fifo", "file"} {
			free0 := s.ffree()
			put("%s: mk %v", kind, s.mk(kind, "a"))
			fd, err := s.opath("a")
			put("%s: O_PATH %v", kind, err)
			ino, _, _ := s.stat(fd, "")
			put("%s: unlink %v", kind, s.unlink("a"))
			var news []uint64
			for i := range 4 {
				n := fmt.Sprintf("n%d", i)
				s.mk(kind, n)
				nino, _, _ := s.stat(-1, n)
				news = append(news, nino)
			}
			reused := false
			for _, n := range news {
				reused = reused || n == ino
			}
			put("%s: a new file took the held number: %v", kind, reused)
			_, nlink, err := s.stat(fd, "")
			put("%s: fstat of the O_PATH file: nlink %d %v", kind, nlink, err)
			if kind == "symlink" {
				l, err := s.link(fd)
				put("%s: readlink of the O_PATH file: %q %v", kind, l, err)
			}
			put("%s: inodes in use while held: %d", kind, free0-s.ffree())
			s.close(fd)
			put("%s: inodes in use after close: %d", kind, free0-s.ffree())
			for i := range 4 {
				s.unlink(fmt.Sprintf("n%d", i))
			}
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
}
