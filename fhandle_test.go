package iovfs_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestFileHandleRace opens files and directories by handle while their
// last name and last open go: each open must either give ESTALE or a file
// that reads as the one the handle named; when all is closed, ESTALE; and
// the
// tmpfs must have every inode back, no more (a double free) and no fewer
// (a leak).
func TestFileHandleRace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	p := newProc(t)
	must(t, p.Mkdir("/tmp/fhr", 0o755))
	root, err := p.Open("/tmp/fhr", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer p.Close(root)
	before, err := p.Statfs("/tmp/fhr")
	must(t, err)
	rounds := 200
	if testenv.Long() {
		rounds = 2000
	}
	for i := range rounds {
		name := fmt.Sprintf("/tmp/fhr/%d", i)
		dir := i%2 == 1
		var fd int
		if dir {
			must(t, p.Mkdir(name, 0o755))
			fd, err = p.Open(name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		} else {
			createFile(t, p, name, name)
			fd, err = p.Open(name, unix.O_RDONLY, 0)
		}
		must(t, err)
		h, _, err := p.NameToHandleAt(unix.AT_FDCWD, name, 0)
		must(t, err)
		var wg sync.WaitGroup
		wg.Go(func() {
			if dir {
				must(t, p.Rmdir(name))
			} else {
				must(t, p.Unlink(name))
			}
			p.Close(fd)
		})
		for range 3 {
			wg.Go(func() {
				for range 20 { // not until ESTALE: openers can keep it open forever
					hfd, err := p.OpenByHandleAt(root, h, unix.O_RDONLY)
					if errors.Is(err, unix.ESTALE) {
						return
					}
					if err != nil {
						t.Errorf("open_by_handle_at(%s): %v", name, err)
						return
					}
					if !dir {
						b := make([]byte, 64)
						n, err := p.Pread(hfd, b, 0)
						if err != nil || string(b[:n]) != name {
							t.Errorf("%s opened by handle reads %q, %v", name, b[:n], err)
						}
					} else if st, err := p.Fstat(hfd); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
						t.Errorf("%s opened by handle: mode %o, %v", name, st.Mode, err)
					}
					p.Close(hfd)
				}
			})
		}
		wg.Wait()
		if hfd, err := p.OpenByHandleAt(root, h, unix.O_RDONLY); !errors.Is(err, unix.ESTALE) {
			t.Errorf("%s removed and closed: open_by_handle_at gives fd %d, %v; want ESTALE", name, hfd, err)
		}
		if t.Failed() {
			return
		}
	}
	after, err := p.Statfs("/tmp/fhr")
	must(t, err)
	if after.Ffree != before.Ffree {
		t.Errorf("free inodes: %d before, %d after every file was removed and closed", before.Ffree, after.Ffree)
	}
}

// TestOpenByIno checks the FUSE export's way back from a node id: only
// from the root of a mount that shows its file system whole, only for
// files a handle was made of, only for a privileged caller.
func TestOpenByIno(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/tmp/sub", 0o755))
	createFile(t, p, "/tmp/sub/f", "data")
	must(t, p.Mount("/tmp/sub", "/mnt", "", unix.MS_BIND, ""))
	st, err := p.Stat("/tmp/sub/f")
	must(t, err)
	root, err := p.Open("/tmp", unix.O_PATH, 0)
	must(t, err)
	sub, err := p.Open("/tmp/sub", unix.O_PATH, 0)
	must(t, err)
	bind, err := p.Open("/mnt", unix.O_PATH, 0)
	must(t, err)
	if _, _, err := p.OpenByIno(root, st.Ino, unix.O_RDONLY); !errors.Is(err, unix.ESTALE) {
		t.Errorf("before any handle of it: %v, want ESTALE", err)
	}
	h, _, err := p.NameToHandleAt(unix.AT_FDCWD, "/tmp/sub/f", 0)
	must(t, err)
	want, _ := vfs.ParseFileHandle(h)
	fd, id, err := p.OpenByIno(root, st.Ino, unix.O_RDONLY)
	must(t, err)
	b := make([]byte, 8)
	if n, err := p.Read(fd, b); string(b[:n]) != "data" || err != nil || id != want {
		t.Errorf("OpenByIno reads %q, %v, and gives %+v; want \"data\" and %+v", b[:n], err, id, want)
	}
	p.Close(fd)
	for _, c := range []struct {
		what string
		fd   int
		want error
	}{{"a directory inside the mount", sub, unix.EXDEV}, {"a bind mount of a subdirectory", bind, unix.EXDEV}, {"no descriptor", 99, unix.EBADF}} {
		if _, _, err := p.OpenByIno(c.fd, st.Ino, unix.O_RDONLY); !errors.Is(err, c.want) {
			t.Errorf("from %s: %v, want %v", c.what, err, c.want)
		}
	}
	user := vfs.NewProcCred(p.Namespace(), 1000, 1000)
	ufd, err := user.Open("/tmp", unix.O_PATH, 0)
	must(t, err)
	if _, _, err := user.OpenByIno(ufd, st.Ino, unix.O_RDONLY); !errors.Is(err, unix.EPERM) {
		t.Errorf("unprivileged: %v, want EPERM", err)
	}
	must(t, p.Unlink("/tmp/sub/f"))
	if _, _, err := p.OpenByIno(root, st.Ino, unix.O_RDONLY); !errors.Is(err, unix.ESTALE) {
		t.Errorf("removed: %v, want ESTALE", err)
	}
}
