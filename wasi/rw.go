package wasi

// fd_read, fd_pread, fd_write and fd_pwrite: the guest's iovec array
// becomes [][]byte over guest memory, and one Readv, Preadv, Writev or
// Pwritev call moves the bytes.

import (
	"context"
	"encoding/binary"

	"github.com/tetratelabs/wazero/api"
)

// uioMaxIOV is Linux's UIO_MAXIOV: more segments give EINVAL.
const uioMaxIOV = 1024

// gather fills the scratch segments with the iovec array at iovs (n
// entries of {buf u32, len u32}) as slices of guest memory. A segment
// that runs past the end of memory ends the vector: its in-bounds head is
// kept and the later segments are dropped, so the call transfers what
// fits and returns that count, as Linux's readv of a regular file does at
// an unmapped page. (Linux's readv of a pipe instead gives EFAULT and
// leaves the bytes in the pipe; here the pipe hands over what fits. Either
// way no byte is lost.) If nothing addressable is left, the answer is
// EFAULT without a call. Zero segments need no array, as in Linux.
func (w *instance) gather(mem api.Memory, iovs, n uint32) ([][]byte, bool, uint32) {
	if n > uioMaxIOV {
		return nil, false, errnoInval
	}
	if n == 0 {
		return nil, false, errnoSuccess
	}
	arr, ok := mem.Read(iovs, n*8)
	if !ok {
		return nil, false, errnoFault
	}
	segs, own := w.getScratch(int(n))
	var total uint64
	for i := range segs {
		ptr := binary.LittleEndian.Uint32(arr[i*8:])
		l := binary.LittleEndian.Uint32(arr[i*8+4:])
		if l == 0 {
			segs[i] = nil // skipped, as Linux skips empty segments unchecked
			continue
		}
		b, ok := mem.Read(ptr, l)
		if !ok {
			if size := mem.Size(); ptr < size {
				b, _ = mem.Read(ptr, size-ptr)
				segs[i] = b
				total += uint64(len(b))
				i++
			}
			if total == 0 {
				w.putScratch(segs, own)
				return nil, false, errnoFault
			}
			clear(segs[i:])
			return segs[:i], own, errnoSuccess
		}
		segs[i] = b
		total += uint64(l)
	}
	return segs, own, errnoSuccess
}

// transfer is one of the four vectored calls.
type transfer int

const (
	opRead transfer = iota
	opPread
	opWrite
	opPwrite
)

var transferRights = [...]uint64{
	opRead:   rightFdRead,
	opPread:  rightFdRead | rightFdSeek,
	opWrite:  rightFdWrite,
	opPwrite: rightFdWrite | rightFdSeek,
}

// rw serves the four functions. The result pointer is checked before the
// call, so a guest never loses bytes it read to a bad result address.
func (w *instance) rw(op transfer, mod api.Module, fd int32, iovs, n uint32, off int64, result uint32) uint32 {
	if e := w.check(fd, transferRights[op]); e != 0 {
		return e
	}
	mem := mod.Memory()
	if _, ok := mem.Read(result, 4); !ok {
		return errnoFault
	}
	if (op == opPread || op == opPwrite) && off < 0 {
		return errnoInval
	}
	segs, own, e := w.gather(mem, iovs, n)
	if e != 0 {
		return e
	}
	var cnt int
	var err error
	switch op {
	case opRead:
		cnt, err = w.p.Readv(int(fd), segs)
	case opPread:
		cnt, err = w.p.Preadv(int(fd), segs, off)
	case opWrite:
		cnt, err = w.p.Writev(int(fd), segs)
	case opPwrite:
		cnt, err = w.p.Pwritev(int(fd), segs, off)
	}
	w.putScratch(segs, own)
	if err != nil {
		return errnoOf(err)
	}
	mem.WriteUint32Le(result, uint32(cnt))
	return errnoSuccess
}

// fd_read(fd, iovs, iovs_len, nread) errno
func (w *instance) fdRead(_ context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(w.rw(opRead, mod, int32(stack[0]), uint32(stack[1]), uint32(stack[2]), 0, uint32(stack[3])))
}

// fd_pread(fd, iovs, iovs_len, offset, nread) errno
func (w *instance) fdPread(_ context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(w.rw(opPread, mod, int32(stack[0]), uint32(stack[1]), uint32(stack[2]), int64(stack[3]), uint32(stack[4])))
}

// fd_write(fd, iovs, iovs_len, nwritten) errno
func (w *instance) fdWrite(_ context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(w.rw(opWrite, mod, int32(stack[0]), uint32(stack[1]), uint32(stack[2]), 0, uint32(stack[3])))
}

// fd_pwrite(fd, iovs, iovs_len, offset, nwritten) errno
func (w *instance) fdPwrite(_ context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(w.rw(opPwrite, mod, int32(stack[0]), uint32(stack[1]), uint32(stack[2]), int64(stack[3]), uint32(stack[4])))
}
