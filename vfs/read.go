package vfs

// The read family: read, pread, readv, preadv, preadv2 (Linux
// fs/read_write.c). Each call checks what every call shares (the
// descriptor, the access mode, the vector) and then reaches the driver
// through the methods newFile stored at open:
//
//   - one buffer, or a vector with one non-empty segment, goes to the scalar
//     Read when the driver has one, and otherwise to ReadIter with a
//     single-buffer iov.Iter, which is a value and does not allocate;
//   - a vector with several segments goes to ReadIter, or, for a scalar-only
//     driver, to the compat loop (Linux do_loop_readv_writev).

import (
	"math"

	"github.com/iovfs/iovfs/iov"
)

// The checks every read shares are written once: readable (the calls at
// the file position), fileAt and verifyArea (the positioned ones), and
// pread1 for one positioned buffer. The single-buffer paths reach the
// driver's scalar Read with no iterator built and one call between them
// and the driver.

// readable is the descriptor check of the reads at the file position
// (fdget_pos, then FMODE_READ): the file open as fd for reading, or nil
// for EBADF. It inlines.
func (p *Proc) readable(fd int) *file {
	f := p.files.get(fd)
	if f == nil || f.mode&fmRead == 0 {
		return nil
	}
	return f
}

// Read reads up to len(p) bytes from fd at the file position into p, and
// advances the position by the count, as read(2) does. It returns 0, nil
// at end of file. A short count is not an error.
func (p *Proc) Read(fd int, b []byte) (int, error) {
	f := p.readable(fd)
	if f == nil {
		return 0, errEBADF
	}
	if f.mode&fmHold != 0 {
		if e := f.pipe; e != nil {
			// heldRead's work for a pipe, written out: a read that
			// blocks returns through Pipe.Read and this frame alone.
			if !f.tryRef() {
				return 0, errEBADF
			}
			n, err := e.p.Read(iov.Buf(b[:min(len(b), iov.MaxCount)]), e.flags.Load()&endNonblock != 0)
			f.release()
			return n, err
		}
		return f.heldRead(b)
	}
	if f.mode&fmNoPos != 0 {
		return f.readBuf(b, noOffset)
	}
	f.posMu.Lock()
	n, err := f.readBuf(b, f.pos)
	f.pos += int64(n)
	f.posMu.Unlock()
	return n, err
}

// Pread reads up to len(p) bytes from fd at offset off, as pread(2) does.
// The file position is neither used nor changed. A negative off gives
// EINVAL; a file that cannot seek gives ESPIPE.
func (p *Proc) Pread(fd int, b []byte, off int64) (int, error) {
	return p.pread1(fd, b[:min(len(b), iov.MaxCount)], len(b), off)
}

// pread1 is pread(2) of buffer b, clamped already from a request of count
// bytes: ksys_pread64's checks in order (fileAt, then rw_verify_area on
// the count asked for), then the driver's scalar Read when it has one.
// Pread and Preadv of one segment share it.
func (p *Proc) pread1(fd int, b []byte, count int, off int64) (int, error) {
	f, err := p.fileAt(fd, off, fmRead)
	if err != nil {
		return 0, err
	}
	if err := verifyArea(off, count); err != nil {
		return 0, err
	}
	if f.rd != nil {
		return fixCount(f.rd.Read(b, off))
	}
	return f.readFit(b, off)
}

// Readv reads into the buffers of iovs in order, at the file position, as
// readv(2) does. More than 1024 buffers give EINVAL; empty buffers are
// skipped; the total is clamped to 0x7ffff000 bytes. With no non-empty
// buffer it returns 0 without calling the driver.
func (p *Proc) Readv(fd int, iovs [][]byte) (int, error) {
	f := p.readable(fd)
	if f == nil {
		return 0, errEBADF
	}
	if f.mode&fmHold != 0 {
		if len(iovs) == 1 && len(iovs[0]) != 0 { // read(2)'s path, as below
			if e := f.pipe; e != nil { // as in Read
				if !f.tryRef() {
					return 0, errEBADF
				}
				n, err := e.p.Read(iov.Buf(iovs[0][:min(len(iovs[0]), iov.MaxCount)]), e.flags.Load()&endNonblock != 0)
				f.release()
				return n, err
			}
			return f.heldRead(iovs[0])
		}
		return f.heldReadv(iovs, 0)
	}
	if len(iovs) == 1 { // the common case, without building an iterator
		// One test for a segment that is neither empty (which must not
		// reach the driver) nor over MaxCount (which must be clamped):
		// readFit then skips readBuf's clamp, so this path costs Read's
		// plus the test of len(iovs).
		if b := iovs[0]; uint(len(b))-1 < iov.MaxCount {
			if f.mode&fmNoPos != 0 {
				return f.readFit(b, noOffset)
			}
			f.posMu.Lock()
			n, err := f.readFit(b, f.pos)
			f.pos += int64(n)
			f.posMu.Unlock()
			return n, err
		}
	}
	return f.readvPos(iovs, 0)
}

// Preadv is Readv at offset off, leaving the file position alone, as
// preadv(2) does. A negative off gives EINVAL; a file that cannot seek
// gives ESPIPE.
func (p *Proc) Preadv(fd int, iovs [][]byte, off int64) (int, error) {
	// One non-empty segment of at most MaxCount bytes is Pread: no
	// iterator to build. The one unsigned test is Readv's.
	if len(iovs) == 1 && uint(len(iovs[0]))-1 < iov.MaxCount {
		return p.pread1(fd, iovs[0], len(iovs[0]), off)
	}
	// Preadv2's path with no flags, without the call: fileAt refuses a
	// negative off (only preadv2 reads -1 as the file position).
	f, err := p.fileAt(fd, off, fmRead)
	if err != nil {
		return 0, err
	}
	if f.rd == nil && f.ird == nil {
		return 0, errEINVAL
	}
	it, segs, err := iov.Import(iovs)
	if err != nil || segs == 0 {
		return 0, err
	}
	if off > math.MaxInt64-int64(it.Len()) { // verifyArea: fileAt refused off < 0
		return 0, errEINVAL
	}
	if segs > 1 && f.ird != nil { // readIter's vectored case, a call less
		return fixCount(f.ird.ReadIter(it, off))
	}
	return f.readIter(it, segs, off)
}

// Preadv2 is Preadv with RWF_* flags, as preadv2(2). An off of -1 means the
// file position, which is then used and advanced as Readv does. The flags
// RWF_HIPRI, RWF_DSYNC, RWF_SYNC, RWF_NOWAIT, RWF_APPEND and RWF_NOAPPEND
// are accepted where Linux accepts them for the driver's methods; any other
// bit gives EOPNOTSUPP. iovfs drivers never block, so RWF_NOWAIT changes
// nothing else.
func (p *Proc) Preadv2(fd int, iovs [][]byte, off int64, flags int) (int, error) {
	if off == -1 {
		f := p.readable(fd)
		if f == nil {
			return 0, errEBADF
		}
		if f.mode&fmHold != 0 {
			return f.heldReadv(iovs, flags)
		}
		return f.readvPos(iovs, flags)
	}
	if flags == 0 {
		return p.Preadv(fd, iovs, off)
	}
	f, err := p.fileAt(fd, off, fmRead)
	if err != nil {
		return 0, err
	}
	if f.rd == nil && f.ird == nil {
		return 0, errEINVAL
	}
	it, segs, err := iov.Import(iovs)
	if err != nil || segs == 0 {
		return 0, err
	}
	if err := verifyArea(off, it.Len()); err != nil {
		return 0, err
	}
	if flags&^f.rwfRead != 0 {
		return 0, errEOPNOTSUP
	}
	return f.readIterFlags(it, segs, off, flags)
}

// readvPos is readv at the file position, with RWF flags.
func (f *file) readvPos(iovs [][]byte, flags int) (int, error) {
	if f.rd == nil && f.ird == nil {
		return 0, errEINVAL
	}
	it, segs, err := iov.Import(iovs)
	if err != nil || segs == 0 {
		return 0, err
	}
	if flags&^f.rwfRead != 0 {
		return 0, errEOPNOTSUP
	}
	if f.mode&fmNoPos != 0 {
		return f.readIterFlags(it, segs, noOffset, flags)
	}
	f.posMu.Lock()
	n, err := f.readIterFlags(it, segs, f.pos, flags)
	f.pos += int64(n)
	f.posMu.Unlock()
	return n, err
}

// readBuf reads into one buffer at off, clamped to MaxCount.
func (f *file) readBuf(b []byte, off int64) (int, error) {
	return f.readFit(b[:min(len(b), iov.MaxCount)], off)
}

// readFit is readBuf of a buffer of at most MaxCount bytes.
func (f *file) readFit(b []byte, off int64) (n int, err error) {
	switch {
	case f.rd != nil:
		n, err = f.rd.Read(b, off)
	case f.ird != nil:
		n, err = f.ird.ReadIter(iov.Buf(b), off)
	default:
		return 0, errEINVAL
	}
	return fixCount(n, err)
}

// readIter reads into a vector with segs non-empty segments at off.
func (f *file) readIter(it iov.Iter, segs int, off int64) (n int, err error) {
	switch {
	case segs == 1 && f.rd != nil:
		n, err = f.rd.Read(it.Segment(), off)
	case f.ird != nil:
		n, err = f.ird.ReadIter(it, off)
	default:
		return loopRead(f.rd, it, off)
	}
	return fixCount(n, err)
}

// readIterFlags is readIter for preadv2: RWF flags go to a driver that
// applies them itself (RWFReader).
func (f *file) readIterFlags(it iov.Iter, segs int, off int64, flags int) (int, error) {
	if flags != 0 && f.rrwf != nil {
		return fixCount(f.rrwf.ReadIterFlags(it, off, flags))
	}
	return f.readIter(it, segs, off)
}

// loopRead is Linux's do_loop_readv_writev for reads: one call per
// non-empty segment, in order, stopping at the first short transfer. An
// error counts only when nothing was read.
func loopRead(r Reader, it iov.Iter, off int64) (int, error) {
	done := 0
	for it.Len() > 0 {
		seg := it.Segment()
		o := off
		if off != noOffset {
			o += int64(done)
		}
		n, err := r.Read(seg, o)
		if n > 0 {
			done += n
			it.Advance(n)
		}
		if err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
		if n < len(seg) {
			break
		}
	}
	return done, nil
}

// verifyArea applies Linux's rw_verify_area to a transfer of count bytes at
// off: the range must not pass the largest offset.
func verifyArea(off int64, count int) error {
	if off < 0 || off > math.MaxInt64-int64(count) {
		return errEINVAL
	}
	return nil
}

// fileAt makes the checks that every positioned call shares, in the order
// of ksys_pread64 and do_preadv: a negative offset (EINVAL, even on a bad
// descriptor), the descriptor (EBADF), a file that cannot seek (ESPIPE),
// then the access mode need, fmRead or fmWrite (EBADF).
func (p *Proc) fileAt(fd int, off int64, need int) (*file, error) {
	if off < 0 {
		return nil, errEINVAL
	}
	f := p.files.get(fd)
	if f == nil {
		return nil, errEBADF
	}
	if f.mode&fmStream != 0 {
		return nil, errESPIPE
	}
	if f.mode&need == 0 {
		return nil, errEBADF
	}
	return f, nil
}
