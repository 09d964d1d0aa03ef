package fuse

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// lockSteps runs a fixed sequence of POSIX and flock calls on two
// descriptors of one file in dir and returns each call's errno.
func lockSteps(t *testing.T, dir string) []syscall.Errno {
	name := filepath.Join(dir, "lockfile")
	f1, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f1.Close()
	f2, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	var out []syscall.Errno
	do := func(err error) {
		e, _ := err.(syscall.Errno)
		if err != nil && e == 0 {
			t.Fatalf("not an errno: %v", err)
		}
		out = append(out, e)
	}
	lk := func(fd uintptr, cmd int, typ int16, start, n int64) {
		fl := unix.Flock_t{Type: typ, Whence: 0, Start: start, Len: n}
		do(unix.FcntlFlock(fd, cmd, &fl))
		if cmd == unix.F_GETLK || cmd == unix.F_OFD_GETLK {
			out = append(out, syscall.Errno(fl.Type), syscall.Errno(fl.Start), syscall.Errno(fl.Len))
		}
	}
	// One process: locks through two descriptors merge (no conflict).
	lk(f1.Fd(), unix.F_SETLK, unix.F_WRLCK, 0, 0)
	lk(f2.Fd(), unix.F_SETLK, unix.F_RDLCK, 0, 0)
	lk(f2.Fd(), unix.F_GETLK, unix.F_WRLCK, 0, 10)
	// OFD locks conflict with the process's POSIX lock.
	lk(f2.Fd(), unix.F_OFD_SETLK, unix.F_WRLCK, 0, 10)
	lk(f2.Fd(), unix.F_OFD_GETLK, unix.F_WRLCK, 0, 10)
	lk(f1.Fd(), unix.F_SETLK, unix.F_UNLCK, 0, 0)
	lk(f2.Fd(), unix.F_OFD_SETLK, unix.F_WRLCK, 5, 10)
	lk(f1.Fd(), unix.F_SETLK, unix.F_WRLCK, 0, 6)
	lk(f1.Fd(), unix.F_SETLK, unix.F_WRLCK, 0, 5)
	// flock belongs to the open file: the two descriptors conflict.
	do(unix.Flock(int(f1.Fd()), unix.LOCK_EX|unix.LOCK_NB))
	do(unix.Flock(int(f2.Fd()), unix.LOCK_SH|unix.LOCK_NB))
	do(unix.Flock(int(f1.Fd()), unix.LOCK_UN))
	do(unix.Flock(int(f2.Fd()), unix.LOCK_SH|unix.LOCK_NB))
	// Closing any descriptor drops the process's POSIX locks.
	f3, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	f3.Close()
	lk(f2.Fd(), unix.F_OFD_GETLK, unix.F_WRLCK, 0, 5)
	return out
}

// TestLockDifferential compares the errnos and F_GETLK answers of a lock
// sequence on a tmpfs export with those on the host kernel.
func TestLockDifferential(t *testing.T) {
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{})
	host := lockSteps(t, t.TempDir())
	got := lockSteps(t, mnt)
	if len(host) != len(got) {
		t.Fatalf("%d results on the kernel, %d on the export", len(host), len(got))
	}
	for i := range host {
		if host[i] != got[i] {
			t.Errorf("step %d: kernel %d (%v), export %d (%v)", i, host[i], host[i], got[i], got[i])
		}
	}
	t.Logf("%d results compared", len(host))
}

// TestLockDifferentialKernelFlock runs the lock sequence again with the
// kernel keeping the flock locks.
func TestLockDifferentialKernelFlock(t *testing.T) {
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{KernelFlock: true})
	host := lockSteps(t, t.TempDir())
	got := lockSteps(t, mnt)
	if !slices.Equal(host, got) {
		t.Errorf("kernel %v, export %v", host, got)
	}
}

// TestFlockKeeper takes flock(2) locks through the export and from the
// namespace. With KernelFlock the kernel keeps the host's: /proc/locks
// lists them with the taker's pid and the file's device and inode as
// stat(2) gives them, a second open file of the host conflicts, and the
// namespace sees nothing. Without it the export keeps them in the
// namespace, where in-process callers conflict with them, and
// /proc/locks lists none.
func TestFlockKeeper(t *testing.T) {
	for _, kernel := range []bool{true, false} {
		t.Run(fmt.Sprintf("KernelFlock=%v", kernel), func(t *testing.T) {
			p := newProc(t)
			mnt, _ := export(t, p, "/tmp", Options{KernelFlock: kernel})
			name := filepath.Join(mnt, "flocked")
			f1, err := os.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f1.Close()
			f2, err := os.OpenFile(name, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f2.Close()
			var st unix.Stat_t
			if err := unix.Fstat(int(f1.Fd()), &st); err != nil {
				t.Fatal(err)
			}
			listed := func() []testenv.ProcLock {
				t.Helper()
				all, err := testenv.ProcLocks()
				if err != nil {
					t.Fatal(err)
				}
				var ls []testenv.ProcLock
				for _, l := range all {
					if l.Major == unix.Major(st.Dev) && l.Minor == unix.Minor(st.Dev) && l.Ino == st.Ino {
						ls = append(ls, l)
					}
				}
				return ls
			}
			fd, err := p.Open("/tmp/flocked", unix.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(fd)

			if err := unix.Flock(int(f1.Fd()), unix.LOCK_EX); err != nil {
				t.Fatalf("flock LOCK_EX: %v", err)
			}
			ls := listed()
			if kernel {
				if len(ls) != 1 || ls[0].Class != "FLOCK" || ls[0].Mode != "ADVISORY" || ls[0].Type != "WRITE" || ls[0].Pid != os.Getpid() {
					t.Errorf("/proc/locks for %x:%x:%d: %+v; want one FLOCK ADVISORY WRITE of pid %d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino, ls, os.Getpid())
				}
			} else if len(ls) != 0 {
				t.Errorf("/proc/locks lists the export's lock: %+v", ls)
			}
			if err := unix.Flock(int(f2.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != unix.EWOULDBLOCK {
				t.Errorf("second open file's LOCK_EX|LOCK_NB while locked: %v, want EWOULDBLOCK", err)
			}
			err = p.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
			if kernel && err != nil {
				t.Errorf("in-process LOCK_EX|LOCK_NB beside the kernel's lock: %v, want none", err)
			}
			if !kernel && err != unix.EWOULDBLOCK {
				t.Errorf("in-process LOCK_EX|LOCK_NB beside the export's lock: %v, want EWOULDBLOCK", err)
			}
			p.Flock(fd, unix.LOCK_UN)

			if err := unix.Flock(int(f1.Fd()), unix.LOCK_UN); err != nil {
				t.Fatalf("flock LOCK_UN: %v", err)
			}
			if ls := listed(); len(ls) != 0 {
				t.Errorf("/proc/locks after LOCK_UN: %+v", ls)
			}
			if err := unix.Flock(int(f2.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
				t.Errorf("second open file's LOCK_EX|LOCK_NB after unlock: %v", err)
			}
			if err := p.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); (err == nil) != kernel {
				t.Errorf("in-process LOCK_EX|LOCK_NB while the second open file holds it: %v", err)
			}
		})
	}
}
