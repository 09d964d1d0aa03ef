package block

import (
	"runtime/debug"

	"github.com/iovfs/iovfs/iov"
)

// CopyOut copies src, a view returned by DirectAccess, into dst, consumes
// what it copied and returns the count, min(len(src), dst.Len()).
//
// If reading src faults, because the host file under a loop device's
// mapping was truncated by another process (SIGBUS) or the view was used
// after the device was torn down (SIGSEGV), CopyOut returns 0 and EIO
// instead of crashing the program; dst is then left as it was, though
// some of its bytes may have been overwritten. It costs a few nanoseconds
// over dst.CopyOut.
func CopyOut(dst *iov.Iter, src []byte) (n int, err error) {
	// One deferred function, which does nothing unless the copy panicked
	// (n still -1): the flag is restored on the way out instead.
	old := debug.SetPanicOnFault(true)
	n = -1
	defer func() {
		if n < 0 { // the copy panicked
			debug.SetPanicOnFault(old)
			n, err = 0, Fault(recover())
		}
	}()
	n = dst.CopyOut(src)
	debug.SetPanicOnFault(old)
	return n, nil
}

// CopyAll is CopyOut for an iterator that is not used afterwards
// (iov.CopyAll): it copies src, a view returned by DirectAccess, into
// dst and returns min(len(src), dst.Len()), or 0 and EIO if reading src
// faults, as CopyOut does.
func CopyAll(dst iov.Iter, src []byte) (n int, err error) {
	old := debug.SetPanicOnFault(true)
	n = -1 // as in CopyOut
	defer func() {
		if n < 0 { // the copy panicked
			debug.SetPanicOnFault(old)
			n, err = 0, Fault(recover())
		}
	}()
	n = iov.CopyAll(dst, src)
	debug.SetPanicOnFault(old)
	return n, nil
}

// Copy is CopyOut for one destination buffer: it copies src, a view
// returned by DirectAccess, into dst and returns min(len(dst), len(src)),
// or 0 and EIO if reading src faults. A scalar read uses it to skip the
// iterator.
func Copy(dst, src []byte) (n int, err error) {
	old := debug.SetPanicOnFault(true)
	n = -1 // as in CopyOut
	defer func() {
		if n < 0 { // the copy panicked
			debug.SetPanicOnFault(old)
			n, err = 0, Fault(recover())
		}
	}()
	n = copy(dst, src)
	debug.SetPanicOnFault(old)
	return n, nil
}

// Fault is the error for what recover returned after a guarded copy
// panicked: EIO for a memory fault (the runtime's error with an Addr
// method, under debug.SetPanicOnFault); any other panic goes on. It is
// for a driver that inlines the guard of Copy on its hottest path.
func Fault(r any) error {
	if _, ok := r.(interface{ Addr() uintptr }); !ok {
		panic(r)
	}
	return errEIO
}
