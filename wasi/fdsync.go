package wasi

// Descriptor functions built on fcntl, fsync and fallocate.

import (
	"context"
	"encoding/binary"

	"github.com/tetratelabs/wazero/api"
	"golang.org/x/sys/unix"
)

// fd_allocate(fd, offset, len) errno: fallocate with mode 0.
func (w *instance) fdAllocate(_ context.Context, _ api.Module, stack []uint64) {
	fd, off, length := int32(stack[0]), int64(stack[1]), int64(stack[2])
	if e := w.check(fd, rightFdAllocate); e != 0 {
		stack[0] = uint64(e)
		return
	}
	stack[0] = uint64(errnoOf(w.p.Fallocate(int(fd), 0, off, length)))
}

// fd_datasync(fd) errno: fdatasync.
func (w *instance) fdDatasync(_ context.Context, _ api.Module, stack []uint64) {
	fd := int32(stack[0])
	if e := w.check(fd, rightFdDatasync); e != 0 {
		stack[0] = uint64(e)
		return
	}
	stack[0] = uint64(errnoOf(w.p.Fdatasync(int(fd))))
}

// fd_sync(fd) errno: fsync.
func (w *instance) fdSync(_ context.Context, _ api.Module, stack []uint64) {
	fd := int32(stack[0])
	if e := w.check(fd, rightFdSync); e != 0 {
		stack[0] = uint64(e)
		return
	}
	stack[0] = uint64(errnoOf(w.p.Fsync(int(fd))))
}

// fdflagsOf maps F_GETFL's status flags to WASI fdflags. Linux's O_SYNC
// includes O_DSYNC's bit and O_RSYNC equals O_SYNC, so a synchronous file
// reports sync alone.
func fdflagsOf(fl int) uint16 {
	var f uint16
	if fl&unix.O_APPEND != 0 {
		f |= fdflagAppend
	}
	if fl&unix.O_NONBLOCK != 0 {
		f |= fdflagNonblock
	}
	switch {
	case fl&unix.O_SYNC == unix.O_SYNC:
		f |= fdflagSync
	case fl&unix.O_DSYNC != 0:
		f |= fdflagDsync
	}
	return f
}

// fd_fdstat_get(fd, buf) errno: file type, F_GETFL's flags, rights.
func (w *instance) fdFdstatGet(_ context.Context, mod api.Module, stack []uint64) {
	fd, buf := int32(stack[0]), uint32(stack[1])
	st, e := w.fstat(fd)
	if e != 0 {
		stack[0] = uint64(e)
		return
	}
	fl, err := w.p.Fcntl(int(fd), unix.F_GETFL, 0)
	if err != nil {
		stack[0] = uint64(errnoOf(err))
		return
	}
	b, ok := mod.Memory().Read(buf, 24)
	if !ok {
		stack[0] = uint64(errnoFault)
		return
	}
	r := w.rightsOf(fd, &st)
	clear(b)
	b[0] = filetypeOf(st.Mode)
	binary.LittleEndian.PutUint16(b[2:], fdflagsOf(fl))
	binary.LittleEndian.PutUint64(b[8:], r.base)
	binary.LittleEndian.PutUint64(b[16:], r.inherit)
	stack[0] = 0
}

// fd_fdstat_set_flags(fd, flags) errno: F_SETFL with O_APPEND and
// O_NONBLOCK from flags. The sync flags cannot change after open; Linux's
// F_SETFL ignores them, and so does this.
func (w *instance) fdFdstatSetFlags(_ context.Context, _ api.Module, stack []uint64) {
	fd, flags := int32(stack[0]), uint32(stack[1])
	if e := w.check(fd, rightFdFdstatSetFlags); e != 0 {
		stack[0] = uint64(e)
		return
	}
	if flags&^(fdflagAppend|fdflagDsync|fdflagNonblock|fdflagRsync|fdflagSync) != 0 {
		stack[0] = uint64(errnoInval)
		return
	}
	cur, err := w.p.Fcntl(int(fd), unix.F_GETFL, 0)
	if err != nil {
		stack[0] = uint64(errnoOf(err))
		return
	}
	nfl := cur&^(unix.O_APPEND|unix.O_NONBLOCK) | openFlags(flags)&(unix.O_APPEND|unix.O_NONBLOCK)
	_, err = w.p.Fcntl(int(fd), unix.F_SETFL, nfl)
	stack[0] = uint64(errnoOf(err))
}
