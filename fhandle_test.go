package iovfs_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
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
