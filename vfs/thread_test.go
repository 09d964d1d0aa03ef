package vfs_test

import (
	"errors"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestThreadSharesFiles checks NewThread's contract: one descriptor table
// for the process and its threads, credentials of each thread's own.
func TestThreadSharesFiles(t *testing.T) {
	p := newPipeProc(t)
	if err := p.Mkdir("/tmp/d", 0o700); err != nil {
		t.Fatal(err)
	}
	dfd, err := p.Open("/tmp/d", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	th := p.NewThread()
	if th.Pid() != p.Pid() {
		t.Errorf("thread pid %d, process %d", th.Pid(), p.Pid())
	}
	// The thread uses the process's descriptor, and what it opens is the
	// process's.
	fd, err := th.Openat(dfd, "f", unix.O_CREAT|unix.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(fd, []byte("abc")); err != nil {
		t.Fatalf("process writes the thread's descriptor: %v", err)
	}
	// Credentials are the thread's alone.
	if err := th.Setresuid(1000, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if p.Geteuid() != 0 || th.Geteuid() != 1000 {
		t.Fatalf("euid: process %d, thread %d", p.Geteuid(), th.Geteuid())
	}
	if _, err := th.Openat(dfd, "f", unix.O_RDONLY, 0); !errors.Is(err, syscall.EACCES) {
		t.Errorf("thread as uid 1000 opens a 0700 root directory's file: %v, want EACCES", err)
	}
	if fd2, err := p.Openat(dfd, "f", unix.O_RDONLY, 0); err != nil {
		t.Errorf("the root process cannot open it: %v", err)
	} else {
		p.Close(fd2)
	}
	// A close by one is a close for both.
	if err := th.Close(fd); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(fd, []byte("x")); err != syscall.EBADF {
		t.Errorf("write after the thread closed the descriptor: %v, want EBADF", err)
	}
	// Fork of a thread copies the table.
	child, err := th.Fork()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Close(dfd); err != nil {
		t.Errorf("child has no copy of the shared descriptor: %v", err)
	}
	if _, err := p.Fstat(dfd); err != nil {
		t.Errorf("child's close reached the process: %v", err)
	}
}

// TestThreadLocks checks that a record lock taken through a thread is its
// process's, as Linux's are the files_struct's: the process does not
// conflict with it, another process sees it with the process's pid, and
// the process's close of any descriptor of the file drops it.
func TestThreadLocks(t *testing.T) {
	p := newPipeProc(t)
	fd, err := p.Open("/tmp/f", unix.O_CREAT|unix.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	other, err := p.Fork()
	if err != nil {
		t.Fatal(err)
	}
	th := p.NewThread()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: unix.SEEK_SET, Start: 0, Len: 10}
	if err := th.FcntlFlock(fd, unix.F_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
	rl := unix.Flock_t{Type: unix.F_WRLCK, Whence: unix.SEEK_SET, Start: 5, Len: 10}
	if err := p.FcntlFlock(fd, unix.F_SETLK, &rl); err != nil {
		t.Errorf("the process conflicts with its thread's lock: %v", err)
	}
	q := unix.Flock_t{Type: unix.F_WRLCK, Whence: unix.SEEK_SET, Start: 0, Len: 1}
	if err := other.FcntlFlock(fd, unix.F_GETLK, &q); err != nil {
		t.Fatal(err)
	}
	if q.Type != unix.F_WRLCK || int(q.Pid) != p.Pid() || q.Start != 0 || q.Len != 15 {
		t.Errorf("another process's F_GETLK: %+v, want a write lock 0..14 of pid %d", q, p.Pid())
	}
	fd2, err := th.Open("/tmp/f", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.Close(fd2) // any descriptor of the file, by any thread
	q = unix.Flock_t{Type: unix.F_WRLCK, Whence: unix.SEEK_SET, Start: 0, Len: 1}
	if err := other.FcntlFlock(fd, unix.F_GETLK, &q); err != nil {
		t.Fatal(err)
	}
	if q.Type != unix.F_UNLCK {
		t.Errorf("after the process closed a descriptor of the file the lock is still there: %+v", q)
	}
}
