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
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r)
			}
			n, err = 0, errEIO
		}
	}()
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	return dst.CopyOut(src), nil
}
