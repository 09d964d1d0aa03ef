// Package hostio moves the bytes of an iov.Iter through one host system
// call: preadv, pwritev, preadv2, pwritev2, readv or writev, straight over
// the caller's buffers. It is shared by the drivers that hold host
// descriptors (vfs.ImportFile, fs/hostfs), so that their vectored calls
// cost one host call and no allocation.
package hostio

import (
	"sync"
	"unsafe"

	"github.com/iovfs/iovfs/iov"
	"golang.org/x/sys/unix"
)

// Preadv reads into it from fd at off with one preadv, or one preadv2
// when flags (RWF_*) is not 0. It returns the host's count, or its errno
// when the host returned an error.
func Preadv(fd int, it iov.Iter, off int64, flags int) (int, error) {
	if flags != 0 {
		return call(unix.SYS_PREADV2, fd, it, off, flags)
	}
	return call(unix.SYS_PREADV, fd, it, off, 0)
}

// Pwritev writes it to fd at off with one pwritev, or one pwritev2 when
// flags is not 0.
func Pwritev(fd int, it iov.Iter, off int64, flags int) (int, error) {
	if flags != 0 {
		return call(unix.SYS_PWRITEV2, fd, it, off, flags)
	}
	return call(unix.SYS_PWRITEV, fd, it, off, 0)
}

// Readv reads into it from fd at the host file position (readv), for
// streams.
func Readv(fd int, it iov.Iter) (int, error) { return call(unix.SYS_READV, fd, it, 0, 0) }

// Writev writes it to fd at the host file position (writev), for streams.
func Writev(fd int, it iov.Iter) (int, error) { return call(unix.SYS_WRITEV, fd, it, 0, 0) }

// iovecs is a pool of iovec arrays for vectors too long for the stack.
var iovecs = sync.Pool{New: func() any { return new([iov.MaxSegments]unix.Iovec) }}

// small is how many segments the iovec array on the stack holds: 16, the
// most common large vector (WASI and the benchmarks use it), so that it
// never reaches the pool.
const small = 16

// call performs the system call trap on fd with the segments of it. The
// iovec array is on the stack for up to small segments and pooled beyond,
// so the call does not allocate.
func call(trap uintptr, fd int, it iov.Iter, off int64, flags int) (int, error) {
	if it.Kind() == iov.KindDiscard {
		return discard(trap, fd, it.Len(), off, flags)
	}
	var stack [small]unix.Iovec
	vecs := stack[:]
	var big *[iov.MaxSegments]unix.Iovec
	cnt := 0
	for it.Len() > 0 && cnt < iov.MaxSegments {
		if cnt == len(vecs) {
			big = iovecs.Get().(*[iov.MaxSegments]unix.Iovec)
			copy(big[:], vecs)
			vecs = big[:]
		}
		seg := it.Segment()
		vecs[cnt].Base = unsafe.SliceData(seg)
		vecs[cnt].SetLen(len(seg))
		cnt++
		it.Advance(len(seg))
	}
	lo, hi := uintptr(off), uintptr(uint64(off)>>(unix.SizeofLong*8-1)>>1)
	r, _, e := unix.Syscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&vecs[0])), uintptr(cnt), lo, hi, uintptr(flags))
	if big != nil {
		clear(big[:cnt])
		iovecs.Put(big)
	}
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// discard reads n bytes and drops them, for a discard iterator, which has
// no memory of its own. Writes from one are zeros.
func discard(trap uintptr, fd, n int, off int64, flags int) (int, error) {
	buf := make([]byte, min(n, 1<<16))
	return call(trap, fd, iov.Buf(buf), off, flags)
}
