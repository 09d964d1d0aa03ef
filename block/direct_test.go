package block

import (
	"errors"
	"syscall"
	"testing"
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
