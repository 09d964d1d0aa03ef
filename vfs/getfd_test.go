package vfs_test

import (
	"testing"

	"github.com/iovfs/iovfs"
	"golang.org/x/sys/unix"
)

// TestGetfd checks pidfd_getfd's contract: the new descriptor shares the
// open file (position), has FD_CLOEXEC, survives the source's close, and
// a bad source descriptor gives EBADF; POSIX locks through it belong to
// the new process.
func TestGetfd(t *testing.T) {
	src, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	dst, err := src.Fork()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := src.Open("/tmp/f", unix.O_CREAT|unix.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Write(fd, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	nfd, err := dst.Getfd(src, fd)
	if err != nil {
		t.Fatal(err)
	}
	if pos, err := dst.Seek(nfd, 0, unix.SEEK_CUR); pos != 5 || err != nil {
		t.Errorf("position through the new descriptor: %d, %v; want 5 (shared)", pos, err)
	}
	if fl, err := dst.Fcntl(nfd, unix.F_GETFD, 0); fl != unix.FD_CLOEXEC || err != nil {
		t.Errorf("F_GETFD: %d, %v; want FD_CLOEXEC", fl, err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := dst.FcntlFlock(nfd, unix.F_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
	lk = unix.Flock_t{Type: unix.F_WRLCK}
	if err := src.FcntlFlock(fd, unix.F_SETLK, &lk); err != unix.EAGAIN {
		t.Errorf("source's lock against the new process's: %v, want EAGAIN", err)
	}
	if err := src.Close(fd); err != nil {
		t.Fatal(err)
	}
	if n, err := dst.Pread(nfd, make([]byte, 10), 0); n != 5 || err != nil {
		t.Errorf("read after the source closed: %d, %v", n, err)
	}
	if _, err := dst.Getfd(src, fd); err != unix.EBADF {
		t.Errorf("Getfd of a closed descriptor: %v, want EBADF", err)
	}
	// Closing it drops the new process's lock (the lock tests count
	// what is left behind).
	if err := dst.Close(nfd); err != nil {
		t.Fatal(err)
	}
}
