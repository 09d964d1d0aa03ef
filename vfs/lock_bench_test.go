package vfs_test

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkLock measures an uncontended lock and unlock of each kind, and
// F_GETLK against another owner's lock.
func BenchmarkLock(b *testing.B) {
	s := newProc(b)
	fd := mustOpen(b, s.p, "/both", unix.O_RDWR)
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: 10, Len: 10}
	un := unix.Flock_t{Type: unix.F_UNLCK, Start: 10, Len: 10}
	b.Run("posix", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l, u := lk, un
			s.p.FcntlFlock(fd, unix.F_SETLK, &l)
			s.p.FcntlFlock(fd, unix.F_SETLK, &u)
		}
	})
	b.Run("ofd", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l, u := lk, un
			s.p.FcntlFlock(fd, unix.F_OFD_SETLK, &l)
			s.p.FcntlFlock(fd, unix.F_OFD_SETLK, &u)
		}
	})
	b.Run("flock", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.p.Flock(fd, unix.LOCK_EX)
			s.p.Flock(fd, unix.LOCK_UN)
		}
	})
	b.Run("getlk", func(b *testing.B) {
		l := lk
		if err := s.p.FcntlFlock(fd, unix.F_OFD_SETLK, &l); err != nil {
			b.Fatal(err)
		}
		fd2 := mustOpen(b, s.p, "/both", unix.O_RDWR)
		b.ReportAllocs()
		for b.Loop() {
			g := unix.Flock_t{Type: unix.F_RDLCK, Start: 0, Len: 100}
			s.p.FcntlFlock(fd2, unix.F_OFD_GETLK, &g)
		}
	})
	b.Run("close-unlocked", func(b *testing.B) {
		// Close of a descriptor when no node has lock state: one atomic load.
		b.ReportAllocs()
		for b.Loop() {
			d, _ := s.p.Dup(fd)
			s.p.Close(d)
		}
	})
}

// BenchmarkFcntl measures F_GETFL and F_SETFD.
func BenchmarkFcntl(b *testing.B) {
	s := newProc(b)
	fd := mustOpen(b, s.p, "/both", unix.O_RDWR)
	b.Run("getfl", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.p.Fcntl(fd, unix.F_GETFL, 0)
		}
	})
	b.Run("setfd", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.p.Fcntl(fd, unix.F_SETFD, unix.FD_CLOEXEC)
		}
	})
}
