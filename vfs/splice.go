package vfs

// splice(2), tee(2) and vmsplice(2) (Linux fs/splice.c). A pipe's ring
// holds references: a splice from a tmpfs file (SpliceReader) or from a
// dax file (DirectReader) queues the file's own pages, tee and a splice
// between pipes move or share buffers, vmsplice queues the caller's
// memory; bytes are copied once, by whoever finally reads them: a read,
// or the write of a splice into a file (one vectored write over the
// pipe's buffers, Linux's iter_file_splice_write). A splice into a sink
// (Discarder) copies nothing. Other files are read into the pipe's own
// pages, one copy (copy_splice_read).
//
// The interfaces of this file are optional driver capabilities, as those
// of ops.go.

import (
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/pipe"
	"golang.org/x/sys/unix"
)

// A SpliceReader is a handle whose file data lives in memory that a pipe
// may refer to instead of copying it: splice, sendfile, copy_file_range
// and io.Copy then queue the file's pages (Linux's splice_read over the
// page cache, shmem_file_splice_read).
//
// SplicePage returns a view of the file's bytes from off: at most n of
// them, as far as they are contiguous in memory, and none past the end of
// the file (an empty view at or past it). The view is the file's own
// memory, kept alive by the garbage collector while referenced; the
// caller never writes into it. Later writes to the file may show through
// it, as they show through the page cache pages a Linux pipe holds. A
// hole is a view of zeros. A negative off gives EINVAL. SplicePage must
// be safe to call concurrently with every other method and should not
// allocate.
type SpliceReader interface {
	SplicePage(off int64, n int) ([]byte, error)
}

// NoSpliceReader marks a handle that splice and sendfile may not read
// from (EINVAL), as a Linux file without ->splice_read (/dev/null).
type NoSpliceReader interface{ NoSpliceRead() }

// NoSpliceWriter marks a handle that splice and sendfile may not write
// to (EINVAL), as a Linux file without ->splice_write (/dev/full).
type NoSpliceWriter interface{ NoSpliceWrite() }

// A Discarder is a handle whose writes only count the bytes, like
// /dev/null and /dev/zero: a splice into it drops a pipe's buffers
// without reading them (Linux's splice_write_null).
type Discarder interface{ Discard() }

// The splice flags (SPLICE_F_*). MOVE, MORE and GIFT are hints that
// change nothing iovfs does, as MOVE has changed nothing in Linux since
// 2.6.21; NONBLOCK makes the pipe side not wait.
const spliceAll = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK | unix.SPLICE_F_MORE | unix.SPLICE_F_GIFT

// Get and Put make an open file a pipe.Keeper: a pipe that holds pages
// of a dax file's device memory keeps the file open (and so its device
// mapped) until it drops them.
func (f *file) Get() { f.refs.Add(1) }

// Put drops a count Get took.
func (f *file) Put() { f.release() }

// spliceFile returns fd's file with a reference held (as fdget), or nil.
func (p *Proc) spliceFile(fd int) *file {
	f := p.files.get(fd)
	if f == nil || !f.tryRef() {
		return nil
	}
	return f
}

// readable and writable are FMODE_READ and FMODE_WRITE: an O_PATH file
// has neither.
func (f *file) readable() bool { return f.mode&fmRead != 0 && f.flags.Load()&unix.O_PATH == 0 }
func (f *file) writable() bool { return f.mode&fmWrite != 0 && f.flags.Load()&unix.O_PATH == 0 }

func (f *file) nonblock() bool { return f.flags.Load()&unix.O_NONBLOCK != 0 }

// spliceOffset is the offset a splice on f starts at: *off when given,
// which needs a file that can seek (FMODE_PREAD/FMODE_PWRITE: EINVAL
// otherwise), else the file position.
func spliceOffset(f *file, off *int64) (int64, error) {
	if off == nil {
		return f.getPos(), nil
	}
	if f.mode&fmStream != 0 {
		return 0, errEINVAL
	}
	return *off, nil
}

// advance is the offset after a splice of done bytes at pos: Linux's
// ki_pos after the driver's read or write, which the memory devices
// (Positionless drivers without a Seeker) leave where it was.
func (f *file) advance(pos int64, done int) int64 {
	if f.mode&fmNoPos != 0 && f.seek == nil {
		return pos
	}
	return pos + int64(done)
}

// driverOff is the offset a driver is called with for a splice at pos:
// noOffset for a Positionless driver at the file position.
func driverOff(f *file, off *int64, pos int64) int64 {
	if off == nil && f.mode&fmNoPos != 0 {
		return noOffset
	}
	return pos
}

// Splice moves up to n bytes between rfd and wfd, one of which must be a
// pipe or FIFO, as splice(2), and returns the count. roff and woff are
// offsets in the file that is not a pipe (nil: its file position, which
// then advances; otherwise the offset, which advances instead). It
// checks in the kernel's order: n == 0 returns 0 at once; flags outside
// SPLICE_F_MOVE, NONBLOCK, MORE and GIFT give EINVAL; a descriptor that
// is not open EBADF; an offset for a pipe ESPIPE; rfd not open for
// reading or wfd not for writing EBADF; then:
//
//   - pipe to pipe moves whole buffers and shares parts of one (EINVAL if
//     both are the same pipe);
//   - pipe to file writes the pipe's buffers with one vectored write at
//     the offset (EINVAL for an O_APPEND file, an offset on a file that
//     cannot seek, or a file splice cannot write to; EINVAL for a range
//     past the largest offset);
//   - file to pipe queues references to the file's pages where it has
//     them, and otherwise reads into the pipe's pages (EINVAL for a file
//     splice cannot read, such as a pipe's write end's twin that is not
//     a pipe, /dev/null, or a directory);
//   - two files that are not pipes give EINVAL.
//
// The pipe side waits as read and write do, unless the pipe's end is
// O_NONBLOCK or flags has SPLICE_F_NONBLOCK (then EAGAIN); a pipe with no
// reader gives EPIPE, an empty pipe with no writer 0. After a splice a
// pipe end's preadv2 and pwritev2 refuse RWF_NOWAIT (EOPNOTSUPP), as
// Linux's do. A splice from a file queues its pages by reference: bytes
// the file changes before the pipe is read are read changed, as in Linux.
// It allocates nothing.
func (p *Proc) Splice(rfd int, roff *int64, wfd int, woff *int64, n int, flags int) (int64, error) {
	if n == 0 {
		return 0, nil
	}
	if flags&^spliceAll != 0 {
		return 0, errEINVAL
	}
	in := p.spliceFile(rfd)
	if in == nil {
		return 0, errEBADF
	}
	defer in.release()
	out := p.spliceFile(wfd)
	if out == nil {
		return 0, errEBADF
	}
	defer out.release()
	ipipe, opipe := pipeOf(in), pipeOf(out)
	if ipipe != nil {
		if roff != nil {
			return 0, errESPIPE
		}
		ipipe.waits.Store(true)
	}
	if opipe != nil {
		if woff != nil {
			return 0, errESPIPE
		}
		opipe.waits.Store(true)
	}
	if !in.readable() || !out.writable() {
		return 0, errEBADF
	}
	count := uint64(uint(n)) // size_t
	nonblock := flags&unix.SPLICE_F_NONBLOCK != 0
	var done int
	var err error
	switch {
	case ipipe != nil && opipe != nil:
		if ipipe.obj == opipe.obj {
			return 0, errEINVAL
		}
		done, err = pipe.Splice(ipipe.p, opipe.p, int(min(count, iov.MaxCount)), nonblock || in.nonblock() || out.nonblock())
	case ipipe != nil:
		pos, err := spliceOffset(out, woff)
		if err != nil {
			return 0, err
		}
		if out.appending() {
			return 0, errEINVAL
		}
		if int64(count) < 0 || verifyArea(pos, 0) != nil || int64(count) > int64(^uint64(0)>>1)-pos {
			return 0, errEINVAL
		}
		done, err = p.spliceWrite(ipipe, out, driverOff(out, woff, pos), count, nonblock || in.nonblock())
		setPos(out, woff, out.advance(pos, done))
		return int64(done), err
	case opipe != nil:
		pos, err := spliceOffset(in, roff)
		if err != nil {
			return 0, err
		}
		// rw_verify_area on the whole length, before the wait for room
		// (measured on Linux 6.18).
		if int64(count) < 0 || verifyArea(pos, 0) != nil || int64(count) > int64(^uint64(0)>>1)-pos {
			return 0, errEINVAL
		}
		done, err = spliceToPipe(in, pos, driverOff(in, roff, pos), opipe, count, nonblock || out.nonblock())
		setPos(in, roff, in.advance(pos, done))
		return int64(done), err
	default:
		return 0, errEINVAL
	}
	return int64(done), err
}

// spliceToPipe is splice_file_to_pipe: it waits for room in the pipe
// (EPIPE without a reader, EAGAIN if nonblock), then fills it from in at
// pos (drvOff for the driver) with vfs_splice_read's checks.
func spliceToPipe(in *file, pos, drvOff int64, e *pipeEnd, count uint64, nonblock bool) (int, error) {
	return e.p.SpliceIn(nonblock, func(r pipe.Ring) (int, error) {
		return spliceRead(in, pos, drvOff, r, count)
	})
}

// spliceRead is vfs_splice_read into the free buffers of r: at most as
// many bytes as they hold, and MaxCount. References to the file's pages
// where the driver has them (SpliceReader, or DirectReader for device
// memory, which the pipe reads under the fault guard and which keeps the
// file open); otherwise one read into the pipe's own pages.
func spliceRead(in *file, pos, drvOff int64, r pipe.Ring, count uint64) (int, error) {
	if count == 0 {
		return 0, nil
	}
	n := min(count, uint64(r.Free())*pipe.PageSize)
	if verifyArea(pos, 0) != nil || int64(n) > int64(^uint64(0)>>1)-pos {
		return 0, errEINVAL
	}
	want := int(min(n, iov.MaxCount))
	if _, no := in.h.(NoSpliceReader); no || (in.rd == nil && in.ird == nil) || pipeOf(in) != nil {
		return 0, errEINVAL
	}
	if in.flags.Load()&unix.O_DIRECT == 0 && drvOff != noOffset {
		if sr, ok := in.h.(SpliceReader); ok {
			return spliceRefs(sr, drvOff, r, want)
		}
		if dr, ok := in.h.(DirectReader); ok {
			return spliceDirectRefs(in, dr, drvOff, r, want)
		}
	}
	return spliceCopy(in, drvOff, r, want)
}

// spliceRefs queues references to a SpliceReader's pages, one buffer per
// page of the file, as shmem_file_splice_read (per run of pages in a
// private pipe); it stops at the end of the file.
func spliceRefs(sr SpliceReader, off int64, r pipe.Ring, want int) (int, error) {
	done := 0
	for done < want && r.Free() > 0 {
		b, err := sr.SplicePage(off, want-done)
		if err != nil {
			return fixCount(done, err)
		}
		if len(b) == 0 {
			break
		}
		for len(b) > 0 && r.Free() > 0 {
			k := r.Piece(off, len(b))
			r.Add(b[:k:k], nil, false)
			b = b[k:]
			off += int64(k)
			done += k
		}
	}
	return done, nil
}

// spliceDirectRefs queues references to a dax file's device memory, one
// buffer per page of the file, each holding the file open; where the
// driver has no view (a hole, inline data, a mount without dax) it copies
// the rest.
func spliceDirectRefs(in *file, dr DirectReader, off int64, r pipe.Ring, want int) (int, error) {
	done := 0
	for done < want && r.Free() > 0 {
		b, err := dr.ReadDirect(off, want-done)
		if err == errEOPNOTSUPP {
			n, err := spliceCopy(in, off, r, want-done)
			return fixCount(done+n, err)
		}
		if err != nil {
			return fixCount(done, err)
		}
		if len(b) == 0 {
			break
		}
		for len(b) > 0 && r.Free() > 0 {
			k := r.Piece(off, len(b))
			in.Get()
			r.Add(b[:k:k], in, true)
			b = b[k:]
			off += int64(k)
			done += k
		}
	}
	return done, nil
}

// spliceCopy reads up to want bytes into the pipe's own pages, as
// copy_splice_read: one read over a vector of the free buffers' pages.
func spliceCopy(in *file, off int64, r pipe.Ring, want int) (int, error) {
	want = min(want, r.Free()*pipe.PageSize)
	if want == 0 {
		return 0, nil
	}
	k := (want + pipe.PageSize - 1) / pipe.PageSize
	it := iov.Vec(r.Pages(k))
	it.Truncate(want)
	n, err := in.readIter(it, k, off)
	if n < 0 {
		n = 0
	}
	r.Commit(n)
	return fixCount(n, err)
}

// spliceWrite is do_splice_from: it drains up to count bytes of e's pipe
// into out at off, one vectored write over the queued buffers at a time
// (iter_file_splice_write), or drops them for a Discarder.
func (p *Proc) spliceWrite(e *pipeEnd, out *file, off int64, count uint64, nonblock bool) (int, error) {
	if _, no := out.h.(NoSpliceWriter); no || (out.wr == nil && out.iwr == nil) || pipeOf(out) != nil {
		return 0, errEINVAL
	}
	_, sink := out.h.(Discarder)
	first := true
	return e.p.SpliceOut(int(min(count, uint64(^uint(0)>>1))), nonblock, !sink, func(v [][]byte) (int, error) {
		if sink {
			n := 0
			for _, b := range v {
				n += len(b)
			}
			return n, nil
		}
		if first && out.mode&fmKillPriv != 0 {
			p.removePrivs(out)
			first = false
		}
		it := iov.Vec(v)
		n, err := out.writeIter(it, len(v), off)
		if n > 0 && off != noOffset {
			off += int64(n)
		}
		return n, err
	})
}

// Tee copies up to n bytes of the buffers queued in the pipe rfd into
// the pipe wfd without consuming them, as tee(2): wfd's buffers refer to
// the same pages. Flags outside SPLICE_F_* give EINVAL, then n == 0
// returns 0, a descriptor not open EBADF, rfd not open for reading or wfd
// not for writing EBADF, and anything but two different pipes EINVAL.
// It waits for bytes in rfd and room in wfd as read and write do, unless
// either end is O_NONBLOCK or flags has SPLICE_F_NONBLOCK (EAGAIN); it
// returns 0 when rfd is empty with no writer, EPIPE when wfd has no
// reader. It allocates nothing.
func (p *Proc) Tee(rfd, wfd int, n int, flags int) (int64, error) {
	if flags&^spliceAll != 0 {
		return 0, errEINVAL
	}
	if n == 0 {
		return 0, nil
	}
	in := p.spliceFile(rfd)
	if in == nil {
		return 0, errEBADF
	}
	defer in.release()
	out := p.spliceFile(wfd)
	if out == nil {
		return 0, errEBADF
	}
	defer out.release()
	if !in.readable() || !out.writable() {
		return 0, errEBADF
	}
	ipipe, opipe := pipeOf(in), pipeOf(out)
	if ipipe == nil || opipe == nil || ipipe.obj == opipe.obj {
		return 0, errEINVAL
	}
	nonblock := flags&unix.SPLICE_F_NONBLOCK != 0 || in.nonblock() || out.nonblock()
	done, err := pipe.Tee(ipipe.p, opipe.p, int(min(uint64(uint(n)), iov.MaxCount)), nonblock)
	return int64(done), err
}

// Vmsplice moves bytes between the caller's memory and the pipe fd, as
// vmsplice(2). On a descriptor open for writing it queues the buffers of
// iovs as references to that memory, one pipe buffer per page of the
// address space they span, after waiting for a free buffer (EAGAIN with
// SPLICE_F_NONBLOCK; a pipe's O_NONBLOCK does not count, as in Linux);
// the caller must not change those bytes until they are read, or they
// are read changed. On one open only for reading it copies queued bytes
// into iovs as a splice reads: across packet boundaries, stopping when
// the pipe is empty once it has some. Flags outside SPLICE_F_* give
// EINVAL, a descriptor not open or neither readable nor writable EBADF,
// more than 1024 buffers EINVAL, no bytes 0, a descriptor that is not a
// pipe EBADF. SPLICE_F_GIFT marks the buffers given away and changes
// nothing else.
func (p *Proc) Vmsplice(fd int, iovs [][]byte, flags int) (int, error) {
	if flags&^spliceAll != 0 {
		return 0, errEINVAL
	}
	f := p.spliceFile(fd)
	if f == nil {
		return 0, errEBADF
	}
	defer f.release()
	toPipe := f.writable()
	if !toPipe && !f.readable() {
		return 0, errEBADF
	}
	it, _, err := iov.Import(iovs)
	if err != nil {
		return 0, err
	}
	if it.Len() == 0 {
		return 0, nil
	}
	e := pipeOf(f)
	if e == nil {
		return 0, errEBADF
	}
	e.waits.Store(true)
	nonblock := flags&unix.SPLICE_F_NONBLOCK != 0
	if toPipe {
		return e.p.Vmsplice(it, nonblock, flags&unix.SPLICE_F_GIFT != 0)
	}
	return e.p.SpliceOut(it.Len(), nonblock, true, func(v [][]byte) (int, error) {
		n := 0
		for _, b := range v {
			n += it.CopyOut(b)
		}
		return n, nil
	})
}
