package fuse

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestUnmountFreesFileSystem ends exports of tmpfs and read-write ext4
// while host files are open, one with a record lock held and one with a
// lock taken and dropped, and with files just closed (RELEASE may still
// be on its way): once Unmount returns, the exported file system must
// unmount inside the process, so that ext4 commits and marks its journal
// clean.
func TestUnmountFreesFileSystem(t *testing.T) {
	requireFUSE(t)
	tp := newProc(t)
	if err := tp.Mount("tmpfs", "/mnt", "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	ep, _ := ext4RWProc(t, "32M")
	for _, c := range []struct {
		name string
		p    *vfs.Proc
	}{{"tmpfs", tp}, {"ext4", ep}} {
		t.Run(c.name, func(t *testing.T) {
			p := c.p
			mnt := t.TempDir()
			s, err := Mount(p, "/mnt", mnt, Options{})
			if err != nil {
				t.Fatal(err)
			}
			f := func(n string) string { return filepath.Join(mnt, n) }
			for _, n := range []string{"held", "dropped", "closed"} {
				if err := os.WriteFile(f(n), []byte(n), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			os.Mkdir(f("dir"), 0o755)
			held, err := os.OpenFile(f("held"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
			if err := unix.FcntlFlock(held.Fd(), unix.F_SETLK, &lk); err != nil {
				t.Fatal(err)
			}
			dropped, err := os.OpenFile(f("dropped"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.FcntlFlock(dropped.Fd(), unix.F_SETLK, &lk); err != nil {
				t.Fatal(err)
			}
			lk.Type = unix.F_UNLCK
			unix.FcntlFlock(dropped.Fd(), unix.F_SETLK, &lk)
			defer dropped.Close()
			if err := unix.Flock(int(dropped.Fd()), unix.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			for range 20 {
				if c, err := os.Open(f("closed")); err == nil {
					c.Close()
				}
			}
			if err := s.Unmount(); err != nil {
				t.Fatalf("Unmount: %v", err)
			}
			if err := p.Unmount("/mnt", 0); err != nil {
				t.Fatalf("in-process unmount after the export's: %v", err)
			}
		})
	}
}
