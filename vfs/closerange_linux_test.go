package vfs_test

import (
	"fmt"
	"testing"

	"github.com/iovfs/iovfs"
	"golang.org/x/sys/unix"
)

// TestCloseRangeKernel runs the same close_range calls on descriptors
// 900-911 of this process (dups of /dev/null, half with FD_CLOEXEC) and
// of an iovfs process, and compares each call's errno and then every
// descriptor's F_GETFD answer (its FD_CLOEXEC bit, or EBADF).
func TestCloseRangeKernel(t *testing.T) {
	const base = 900
	cases := []struct {
		first, last uint
		flags       int
	}{
		{base + 2, base + 4, 0}, {base + 9, ^uint(0), 0}, {base + 1, base + 1, 0},
		{base + 3, base + 8, unix.CLOSE_RANGE_CLOEXEC}, {base + 5, base + 2, 0},
		{base, base + 11, 0x40}, {base + 20, base + 30, 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d-%d-%#x", c.first-base, c.last-base, c.flags), func(t *testing.T) {
			p, err := iovfs.New()
			if err != nil {
				t.Fatal(err)
			}
			null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(null)
			inull, err := p.Open("/dev/null", unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 12; i++ {
				fl := 0
				if i%2 == 1 {
					fl = unix.O_CLOEXEC
				}
				if err := unix.Dup3(null, base+i, fl); err != nil {
					t.Fatal(err)
				}
				if _, err := p.Dup3(inull, base+i, fl); err != nil {
					t.Fatal(err)
				}
			}
			defer func() {
				for i := 0; i < 12; i++ {
					unix.Close(base + i)
				}
			}()
			hostErr := unix.CloseRange(c.first, c.last, uint(c.flags))
			ourErr := p.CloseRange(c.first, c.last, c.flags)
			if hostErr != ourErr && !(hostErr != nil && ourErr != nil && hostErr.Error() == ourErr.Error()) {
				t.Errorf("close_range: host %v, iovfs %v", hostErr, ourErr)
			}
			for i := 0; i < 12; i++ {
				hfl, herr := unix.FcntlInt(uintptr(base+i), unix.F_GETFD, 0)
				ifl, ierr := p.Fcntl(base+i, unix.F_GETFD, 0)
				if hfl != ifl || fmt.Sprint(herr) != fmt.Sprint(ierr) {
					t.Errorf("fd %d: host %d %v, iovfs %d %v", base+i, hfl, herr, ifl, ierr)
				}
			}
		})
	}
}

// TestCloseOnExec: only the descriptors with FD_CLOEXEC close, and the
// lowest free descriptor is found again.
func TestCloseOnExec(t *testing.T) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.Open("/dev/null", unix.O_RDONLY, 0)
	b, _ := p.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	c, _ := p.Open("/dev/null", unix.O_RDONLY, 0)
	p.CloseOnExec()
	if _, err := p.Fstat(a); err != nil {
		t.Errorf("fd %d without FD_CLOEXEC closed: %v", a, err)
	}
	if _, err := p.Fstat(c); err != nil {
		t.Errorf("fd %d without FD_CLOEXEC closed: %v", c, err)
	}
	if _, err := p.Fstat(b); err != unix.EBADF {
		t.Errorf("fd %d with FD_CLOEXEC: %v, want EBADF", b, err)
	}
	if fd, _ := p.Open("/dev/null", unix.O_RDONLY, 0); fd != b {
		t.Errorf("next open got %d, want the freed %d", fd, b)
	}
}
