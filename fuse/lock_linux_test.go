package fuse

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

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
