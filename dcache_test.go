package iovfs_test

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
)

// lstatErrno returns Lstat's errno (0 on success) and the inode number.
func lstatErrno(p *vfs.Proc, path string) (syscall.Errno, uint64) {
	st, err := p.Lstat(path)
	if err == nil {
		return 0, st.Ino
	}
	var en syscall.Errno
	if !errors.As(err, &en) {
		return syscall.Errno(^uintptr(0)), 0
	}
	return en, 0
}

// TestDcacheNoStaleEntries makes every namespace change after the names
// involved were looked up (so the dentry cache holds them, positive or
// negative) and checks the lookups that follow see the change.
func TestDcacheNoStaleEntries(t *testing.T) {
	type check struct {
		path string
		want syscall.Errno
	}
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, p *vfs.Proc)
		warm   []string
		change func(p *vfs.Proc) error
		after  []check
	}{
		{"create", nil, []string{"/tmp/d/f"}, func(p *vfs.Proc) error {
			fd, err := p.Open("/tmp/d/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
			if err == nil {
				p.Close(fd)
			}
			return err
		}, []check{{"/tmp/d/f", 0}}},
		{"mkdir", nil, []string{"/tmp/d/n", "/tmp/d/n/x"}, func(p *vfs.Proc) error { return p.Mkdir("/tmp/d/n", 0o755) },
			[]check{{"/tmp/d/n", 0}, {"/tmp/d/n/x", unix.ENOENT}}},
		{"symlink", nil, []string{"/tmp/d/l"}, func(p *vfs.Proc) error { return p.Symlink("f", "/tmp/d/l") },
			[]check{{"/tmp/d/l", 0}}},
		{"link", func(t *testing.T, p *vfs.Proc) { createFile(t, p, "/tmp/d/f", "x") }, []string{"/tmp/d/f", "/tmp/d/h"},
			func(p *vfs.Proc) error { return p.Link("/tmp/d/f", "/tmp/d/h") }, []check{{"/tmp/d/h", 0}}},
		{"unlink", func(t *testing.T, p *vfs.Proc) { createFile(t, p, "/tmp/d/f", "x") }, []string{"/tmp/d/f"},
			func(p *vfs.Proc) error { return p.Unlink("/tmp/d/f") }, []check{{"/tmp/d/f", unix.ENOENT}}},
		{"rmdir", func(t *testing.T, p *vfs.Proc) { must(t, p.Mkdir("/tmp/d/e", 0o755)) }, []string{"/tmp/d/e", "/tmp/d/e/x"},
			func(p *vfs.Proc) error { return p.Rmdir("/tmp/d/e") }, []check{{"/tmp/d/e", unix.ENOENT}, {"/tmp/d/e/x", unix.ENOENT}}},
		{"rename-file", func(t *testing.T, p *vfs.Proc) { createFile(t, p, "/tmp/d/f", "x") }, []string{"/tmp/d/f", "/tmp/d/g"},
			func(p *vfs.Proc) error { return p.Rename("/tmp/d/f", "/tmp/d/g") }, []check{{"/tmp/d/f", unix.ENOENT}, {"/tmp/d/g", 0}}},
		{"rename-over", func(t *testing.T, p *vfs.Proc) {
			createFile(t, p, "/tmp/d/f", "x")
			createFile(t, p, "/tmp/d/g", "yy")
		}, []string{"/tmp/d/f", "/tmp/d/g"},
			func(p *vfs.Proc) error { return p.Rename("/tmp/d/f", "/tmp/d/g") }, []check{{"/tmp/d/f", unix.ENOENT}, {"/tmp/d/g", 0}}},
		{"rename-dir", func(t *testing.T, p *vfs.Proc) {
			must(t, p.Mkdir("/tmp/d/s", 0o755))
			createFile(t, p, "/tmp/d/s/in", "x")
			must(t, p.Mkdir("/tmp/d2", 0o755))
		}, []string{"/tmp/d/s/in", "/tmp/d2/t/in", "/tmp/d2/t"},
			func(p *vfs.Proc) error { return p.Rename("/tmp/d/s", "/tmp/d2/t") },
			[]check{{"/tmp/d/s/in", unix.ENOENT}, {"/tmp/d/s", unix.ENOENT}, {"/tmp/d2/t/in", 0}, {"/tmp/d2/t", 0}}},
		{"mount-over", func(t *testing.T, p *vfs.Proc) {
			must(t, p.Mkdir("/tmp/d/m", 0o755))
			createFile(t, p, "/tmp/d/m/under", "x")
		}, []string{"/tmp/d/m/under", "/tmp/d/m/new"},
			func(p *vfs.Proc) error { return p.Mount("none", "/tmp/d/m", "tmpfs", 0, "") },
			[]check{{"/tmp/d/m/under", unix.ENOENT}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProc(t)
			must(t, p.Mkdir("/tmp/d", 0o755))
			if tc.setup != nil {
				tc.setup(t, p)
			}
			for range 2 {
				for _, w := range tc.warm {
					p.Lstat(w)
				}
			}
			var ino uint64
			if tc.name == "rename-over" {
				_, ino = lstatErrno(p, "/tmp/d/f")
			}
			if err := tc.change(p); err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.after {
				if got, gotIno := lstatErrno(p, c.path); got != c.want {
					t.Errorf("lstat %s after %s: errno %v, want %v", c.path, tc.name, got, c.want)
				} else if tc.name == "rename-over" && c.path == "/tmp/d/g" && gotIno != ino {
					t.Errorf("lstat %s after rename over it: ino %d, want the renamed file's %d", c.path, gotIno, ino)
				}
			}
		})
	}
}

// TestDcacheUnmount: entries cached below a mount are not seen after the
// unmount, the covered directory is seen again, and the unmounted file
// system's dentries leave the cache.
func TestDcacheUnmount(t *testing.T) {
	p := newProc(t)
	ns := p.Namespace()
	must(t, p.Mkdir("/tmp/m", 0o755))
	createFile(t, p, "/tmp/m/under", "x")
	must(t, p.Mount("none", "/tmp/m", "tmpfs", 0, ""))
	must(t, p.Mkdir("/tmp/m/a", 0o755))
	for i := range 50 {
		createFile(t, p, fmt.Sprintf("/tmp/m/a/f%d", i), "x")
	}
	for i := range 50 {
		if e, _ := lstatErrno(p, fmt.Sprintf("/tmp/m/a/f%d", i)); e != 0 {
			t.Fatalf("lstat f%d: %v", i, e)
		}
	}
	if e, _ := lstatErrno(p, "/tmp/m/under"); e != unix.ENOENT {
		t.Fatalf("lstat under the mount: %v", e)
	}
	before := ns.DentryCacheStats().Entries
	must(t, p.Unmount("/tmp/m", 0))
	after := ns.DentryCacheStats().Entries
	if before-after < 51 {
		t.Errorf("unmount dropped %d dentries (%d to %d), want the mount's 51 or more", before-after, before, after)
	}
	for _, c := range []struct {
		path string
		want syscall.Errno
	}{{"/tmp/m/a", unix.ENOENT}, {"/tmp/m/a/f1", unix.ENOENT}, {"/tmp/m/under", 0}} {
		if e, _ := lstatErrno(p, c.path); e != c.want {
			t.Errorf("after unmount: lstat %s: %v, want %v", c.path, e, c.want)
		}
	}
}

// TestDcacheDetachWithOpenFile: a lazily detached mount with an open file
// below it drops out of the namespace at once, cached entries and all.
func TestDcacheDetachWithOpenFile(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/tmp/m", 0o755))
	must(t, p.Mount("none", "/tmp/m", "tmpfs", 0, ""))
	createFile(t, p, "/tmp/m/f", "x")
	fd, err := p.Open("/tmp/m/f", unix.O_RDONLY, 0)
	must(t, err)
	defer p.Close(fd)
	p.Lstat("/tmp/m/f")
	must(t, p.Unmount("/tmp/m", unix.MNT_DETACH))
	if e, _ := lstatErrno(p, "/tmp/m/f"); e != unix.ENOENT {
		t.Errorf("lstat below a detached mount: %v, want ENOENT", e)
	}
}

// TestDcacheRevalidate: devfs names come and go behind the VFS
// (LOOP_CTL_ADD, LOOP_CTL_REMOVE); its Revalidator keeps cached answers,
// negative and positive, from going stale.
func TestDcacheRevalidate(t *testing.T) {
	p := newProc(t)
	ctl, err := p.Open("/dev/loop-control", unix.O_RDWR, 0)
	must(t, err)
	defer p.Close(ctl)
	for range 2 {
		if e, _ := lstatErrno(p, "/dev/loop12"); e != unix.ENOENT {
			t.Fatalf("lstat /dev/loop12 before LOOP_CTL_ADD: %v", e)
		}
	}
	if _, err := p.Ioctl(ctl, unix.LOOP_CTL_ADD, 12); err != nil {
		t.Fatal(err)
	}
	if e, _ := lstatErrno(p, "/dev/loop12"); e != 0 {
		t.Fatalf("lstat /dev/loop12 after LOOP_CTL_ADD: %v (a stale negative dentry)", e)
	}
	if _, err := p.Ioctl(ctl, unix.LOOP_CTL_REMOVE, 12); err != nil {
		t.Fatal(err)
	}
	if e, _ := lstatErrno(p, "/dev/loop12"); e != unix.ENOENT {
		t.Fatalf("lstat /dev/loop12 after LOOP_CTL_REMOVE: %v (a stale positive dentry)", e)
	}
}

// TestDcacheRenameRace: renamers move files back and forth while other
// goroutines look both names up, filling the cache with answers that race
// the renames. After each rename returns, its own goroutine must see the
// new state; at the end every file is where the last rename put it.
func TestDcacheRenameRace(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/tmp/r", 0o755))
	const pairs = 4
	for i := range pairs {
		createFile(t, p, fmt.Sprintf("/tmp/r/a%d", i), "x")
	}
	rounds := 2000
	if testenv.Quick() {
		rounds = 200
	}
	stop := make(chan struct{})
	var lookers sync.WaitGroup
	for g := range 3 {
		lookers.Add(1)
		go func() {
			defer lookers.Done()
			for i := g; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				for _, n := range []string{"a", "b"} {
					e, _ := lstatErrno(p, fmt.Sprintf("/tmp/r/%s%d", n, i%pairs))
					if e != 0 && e != unix.ENOENT {
						t.Errorf("lstat: %v", e)
						return
					}
				}
			}
		}()
	}
	var renamers sync.WaitGroup
	errs := make(chan error, pairs)
	for i := range pairs {
		renamers.Add(1)
		go func() {
			defer renamers.Done()
			from, to := fmt.Sprintf("/tmp/r/a%d", i), fmt.Sprintf("/tmp/r/b%d", i)
			for r := range rounds {
				if err := p.Rename(from, to); err != nil {
					errs <- err
					return
				}
				if e, _ := lstatErrno(p, from); e != unix.ENOENT {
					errs <- fmt.Errorf("round %d: %s after renaming it away: %v (stale)", r, from, e)
					return
				}
				if e, _ := lstatErrno(p, to); e != 0 {
					errs <- fmt.Errorf("round %d: %s after renaming onto it: %v (stale)", r, to, e)
					return
				}
				from, to = to, from
			}
		}()
	}
	renamers.Wait()
	close(stop)
	lookers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDcacheEviction: a small cache stays within its bound and answers
// right after its entries were evicted.
func TestDcacheEviction(t *testing.T) {
	p := newProc(t)
	ns := p.Namespace()
	ns.SetDentryCacheSize(256)
	must(t, p.Mkdir("/tmp/e", 0o755))
	for i := range 2000 {
		createFile(t, p, fmt.Sprintf("/tmp/e/f%d", i), "")
	}
	for round := range 2 {
		for i := range 2000 {
			if e, _ := lstatErrno(p, fmt.Sprintf("/tmp/e/f%d", i)); e != 0 {
				t.Fatalf("round %d: lstat f%d: %v", round, i, e)
			}
			if e, _ := lstatErrno(p, fmt.Sprintf("/tmp/e/g%d", i)); e != unix.ENOENT {
				t.Fatalf("round %d: lstat g%d: %v", round, i, e)
			}
		}
	}
	st := ns.DentryCacheStats()
	if st.Entries > st.Limit || st.Limit > 256 || st.Evictions == 0 {
		t.Errorf("%d entries, limit %d, %d evictions", st.Entries, st.Limit, st.Evictions)
	}
}

// TestLstatAllocs: a cached Lstat of a 6-component path allocates
// nothing.
func TestLstatAllocs(t *testing.T) {
	p := newProc(t)
	mkPath6(t, p)
	p.Lstat(lstatPath6)
	if a := testing.AllocsPerRun(1000, func() { p.Lstat(lstatPath6) }); a != 0 {
		t.Errorf("Lstat allocates %v times", a)
	}
	st := p.Namespace().DentryCacheStats()
	if st.Entries < 6 || st.Misses > 20 {
		t.Errorf("dentry cache: %+v; want the path's 6 components cached and few misses", st)
	}
}
