package block

import (
	"bytes"
	"errors"
	"os"
	"runtime/debug"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/iov"
)

type faultAt uintptr

func (f faultAt) Error() string { return "fault" }
func (f faultAt) Addr() uintptr { return uintptr(f) }
func (f faultAt) RuntimeError() {}

// TestFault: a memory fault (a value with Addr, as the runtime's fault
// errors under SetPanicOnFault) becomes EIO; any other panic goes on.
func TestFault(t *testing.T) {
	if err := Fault(faultAt(0x1234)); !errors.Is(err, syscall.EIO) {
		t.Errorf("Fault(fault) = %v, want EIO", err)
	}
	other := errors.New("not a fault")
	defer func() {
		if r := recover(); r != other {
			t.Errorf("Fault(other panic) panicked with %v, want the same value", r)
		}
	}()
	Fault(other)
	t.Error("Fault(other panic) returned")
}

// TestGuardedCopies: each guarded copy out of a mapping whose file was
// truncated under it returns 0 and EIO instead of crashing, leaves the
// goroutine's panic-on-fault setting as it found it, and copies the
// bytes of a mapping that is still whole.
func TestGuardedCopies(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "mapped")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := os.Getpagesize()
	want := bytes.Repeat([]byte{0x5a}, 2*page)
	if _, err := f.Write(want); err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, 2*page, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	dst := make([]byte, 2*page)
	copies := []struct {
		name string
		copy func(src []byte) (int, error)
	}{
		{"Copy", func(src []byte) (int, error) { return Copy(dst, src) }},
		{"CopyOut", func(src []byte) (int, error) {
			it := iov.Vec([][]byte{dst[:100], dst[100:]})
			return CopyOut(&it, src)
		}},
		{"CopyAll", func(src []byte) (int, error) { return CopyAll(iov.Vec([][]byte{dst[:100], dst[100:]}), src) }},
	}
	for _, c := range copies {
		clear(dst)
		if n, err := c.copy(m); n != len(m) || err != nil || !bytes.Equal(dst, want) {
			t.Errorf("%s of a whole mapping: %d, %v", c.name, n, err)
		}
	}
	if err := f.Truncate(int64(page)); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []bool{false, true} {
		debug.SetPanicOnFault(flag)
		for _, c := range copies {
			if n, err := c.copy(m[page:]); n != 0 || !errors.Is(err, syscall.EIO) {
				t.Errorf("%s past the truncation: %d, %v; want 0, EIO", c.name, n, err)
			}
			if got := debug.SetPanicOnFault(flag); got != flag {
				t.Errorf("%s left panic-on-fault %v, want %v", c.name, got, flag)
			}
		}
	}
	debug.SetPanicOnFault(false)
}
