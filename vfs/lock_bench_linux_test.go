package vfs_test

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkLockHost is BenchmarkLock's posix, ofd and flock variants on a
// host file through the kernel, for the ratio.
func BenchmarkLockHost(b *testing.B) {
	f, err := os.CreateTemp(b.TempDir(), "lock")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: 10, Len: 10}
	un := unix.Flock_t{Type: unix.F_UNLCK, Start: 10, Len: 10}
	for _, c := range []struct {
		name string
		cmd  int
	}{{"posix", unix.F_SETLK}, {"ofd", unix.F_OFD_SETLK}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l, u := lk, un
				unix.FcntlFlock(uintptr(fd), c.cmd, &l)
				unix.FcntlFlock(uintptr(fd), c.cmd, &u)
			}
		})
	}
	b.Run("flock", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			unix.Flock(fd, unix.LOCK_EX)
			unix.Flock(fd, unix.LOCK_UN)
		}
	})
}
