package vfs

// The write family: write, pwrite, writev, pwritev, pwritev2 (Linux
// fs/read_write.c), dispatched as the read family is (see read.go).
//
// Appending (O_APPEND, RWF_APPEND) goes to the handle's Appender, which
// places the bytes at the end of the file atomically. As in Linux, pwrite
// on an O_APPEND file appends too, whatever its offset; pwritev2 with
// RWF_NOAPPEND does not.

import (
	"math"

	"github.com/iovfs/iovfs/iov"
	"golang.org/x/sys/unix"
)

// The checks every write shares are written once, as the reads' are:
// writable (the calls at the file position), fileAt and verifyArea (the
// positioned ones), and pwrite1 for one positioned buffer.

// writable is the descriptor check of the writes at the file position
// (fdget_pos, then FMODE_WRITE): the file open as fd for writing, or nil
// for EBADF. It inlines.
func (p *Proc) writable(fd int) *file {
	f := p.files.get(fd)
	if f == nil || f.mode&fmWrite == 0 {
		return nil
	}
	return f
}

// Write writes len(p) bytes from p to fd at the file position, and advances
// the position by the count, as write(2) does. It may write fewer bytes
// (a full device or file system); that is not an error. It returns an
// error only if it wrote nothing.
func (p *Proc) Write(fd int, b []byte) (int, error) {
	f := p.writable(fd)
	if f == nil {
		return 0, errEBADF
	}
	if f.mode&fmHold != 0 {
		if e := f.pipe; e != nil {
			// heldWrite's work for a pipe, written out, as in Read; the
			// reference is taken only if the write waits (WriteHold).
			fl := e.flags.Load()
			n, held, err := e.p.WriteHold(iov.Buf(b[:min(len(b), iov.MaxCount)]), fl&endNonblock != 0, fl&endPacket != 0, f)
			if held {
				f.release()
			}
			return n, err
		}
		return f.heldWrite(b)
	}
	if f.mode&fmKillPriv != 0 && len(b) != 0 {
		p.removePrivs(f)
	}
	if f.mode&fmNoPos != 0 {
		return f.writeBuf(b, noOffset)
	}
	if f.appending() && f.app != nil {
		return f.appendPos(iov.Buf(b))
	}
	f.posMu.Lock()
	n, err := f.writeBuf(b, f.pos)
	f.pos += int64(n)
	f.posMu.Unlock()
	return n, err
}

// Pwrite writes len(p) bytes from p to fd at offset off, as pwrite(2) does,
// leaving the file position alone. A negative off gives EINVAL; a file that
// cannot seek gives ESPIPE.
func (p *Proc) Pwrite(fd int, b []byte, off int64) (int, error) {
	return p.pwrite1(fd, b[:min(len(b), iov.MaxCount)], len(b), off)
}

// pwrite1 is pwrite(2) of buffer b, clamped already from a request of
// count bytes: ksys_pwrite64's checks in order (fileAt, then
// rw_verify_area on the count asked for), file_remove_privs, then an
// append for an O_APPEND file (Linux's pwrite appends there too) or the
// driver's write at off. Pwrite and Pwritev of one segment share it.
func (p *Proc) pwrite1(fd int, b []byte, count int, off int64) (int, error) {
	f, err := p.fileAt(fd, off, fmWrite)
	if err != nil {
		return 0, err
	}
	if err := verifyArea(off, count); err != nil {
		return 0, err
	}
	if f.mode&fmKillPriv != 0 && len(b) != 0 {
		p.removePrivs(f)
	}
	if f.appending() && f.app != nil {
		_, n, err := f.app.Append(iov.Buf(b))
		return fixCount(n, err)
	}
	return f.writeFit(b, off)
}

// Writev writes the buffers of iovs in order at the file position, as
// writev(2) does. The vector rules are Readv's.
func (p *Proc) Writev(fd int, iovs [][]byte) (int, error) {
	f := p.writable(fd)
	if f == nil {
		return 0, errEBADF
	}
	if f.mode&fmHold != 0 {
		if len(iovs) == 1 && len(iovs[0]) != 0 { // write(2)'s path, as below
			if e := f.pipe; e != nil { // as in Write
				fl := e.flags.Load()
				n, held, err := e.p.WriteHold(iov.Buf(iovs[0][:min(len(iovs[0]), iov.MaxCount)]), fl&endNonblock != 0, fl&endPacket != 0, f)
				if held {
					f.release()
				}
				return n, err
			}
			return f.heldWrite(iovs[0])
		}
		return f.heldWritev(iovs, 0)
	}
	if f.mode&fmKillPriv != 0 && anyBytes(iovs) {
		p.removePrivs(f)
	}
	if len(iovs) == 1 && uint(len(iovs[0]))-1 < iov.MaxCount && !f.appending() { // Readv's test
		if f.mode&fmNoPos != 0 {
			return f.writeFit(iovs[0], noOffset)
		}
		f.posMu.Lock()
		n, err := f.writeFit(iovs[0], f.pos)
		f.pos += int64(n)
		f.posMu.Unlock()
		return n, err
	}
	return f.writevPos(iovs, 0)
}

// Pwritev is Writev at offset off, leaving the file position alone, as
// pwritev(2) does.
func (p *Proc) Pwritev(fd int, iovs [][]byte, off int64) (int, error) {
	// One non-empty segment of at most MaxCount bytes is Pwrite, as in
	// Preadv: no iterator to build, and O_APPEND appends.
	if len(iovs) == 1 && uint(len(iovs[0]))-1 < iov.MaxCount {
		return p.pwrite1(fd, iovs[0], len(iovs[0]), off)
	}
	// Pwritev2's path with no flags, without the call: fileAt refuses a
	// negative off (only pwritev2 reads -1 as the file position).
	f, err := p.fileAt(fd, off, fmWrite)
	if err != nil {
		return 0, err
	}
	if f.wr == nil && f.iwr == nil {
		return 0, errEINVAL
	}
	it, segs, err := iov.Import(iovs)
	if err != nil || segs == 0 {
		return 0, err
	}
	if off > math.MaxInt64-int64(it.Len()) { // verifyArea: fileAt refused off < 0
		return 0, errEINVAL
	}
	if f.mode&fmKillPriv != 0 {
		p.removePrivs(f)
	}
	if f.appends(0) {
		_, n, err := f.app.Append(it)
		return fixCount(n, err)
	}
	return f.writeIter(it, segs, off)
}

// Pwritev2 is Pwritev with RWF_* flags, as pwritev2(2). An off of -1 means
// the file position. RWF_APPEND appends whatever the offset; RWF_NOAPPEND
// writes at the offset even on an O_APPEND file. The accepted flags are
// Preadv2's.
func (p *Proc) Pwritev2(fd int, iovs [][]byte, off int64, flags int) (int, error) {
	if off == -1 {
		f := p.writable(fd)
		if f == nil {
			return 0, errEBADF
		}
		if f.mode&fmKillPriv != 0 && anyBytes(iovs) {
			p.removePrivs(f)
		}
		if f.mode&fmHold != 0 {
			return f.heldWritev(iovs, flags)
		}
		return f.writevPos(iovs, flags)
	}
	if flags == 0 {
		return p.Pwritev(fd, iovs, off)
	}
	f, err := p.fileAt(fd, off, fmWrite)
	if err != nil {
		return 0, err
	}
	if f.wr == nil && f.iwr == nil {
		return 0, errEINVAL
	}
	it, segs, err := iov.Import(iovs)
	if err != nil || segs == 0 {
		return 0, err
	}
	if err := verifyArea(off, it.Len()); err != nil {
		return 0, err
	}
	if f.mode&fmKillPriv != 0 {
		p.removePrivs(f)
	}
	if flags&^f.rwfWrite != 0 {
		return 0, errEOPNOTSUP
	}
	if f.appends(flags) {
		_, n, err := f.app.Append(it)
		return fixCount(n, err)
	}
	return f.writeIterFlags(it, segs, off, flags)
}

// appends reports whether a write with RWF flags goes to the end of file.
func (f *file) appends(flags int) bool {
	if f.app == nil || flags&unix.RWF_NOAPPEND != 0 {
		return false
	}
	return f.appending() || flags&unix.RWF_APPEND != 0
}

// writevPos is writev at the file position, with RWF flags.
func (f *file) writevPos(iovs [][]byte, flags int) (int, error) {
	if f.wr == nil && f.iwr == nil {
		return 0, errEINVAL
	}
	it, segs, err := iov.Import(iovs)
	if err != nil || segs == 0 {
		return 0, err
	}
	if flags&^f.rwfWrite != 0 {
		return 0, errEOPNOTSUP
	}
	if f.mode&fmNoPos != 0 {
		return f.writeIterFlags(it, segs, noOffset, flags)
	}
	if f.appends(flags) {
		return f.appendPos(it)
	}
	f.posMu.Lock()
	n, err := f.writeIterFlags(it, segs, f.pos, flags)
	f.pos += int64(n)
	f.posMu.Unlock()
	return n, err
}

// writeIterFlags is writeIter for pwritev2: RWF flags other than
// RWF_APPEND and RWF_NOAPPEND, which the VFS has applied, go to a driver
// that applies them itself (RWFWriter).
func (f *file) writeIterFlags(it iov.Iter, segs int, off int64, flags int) (int, error) {
	if flags &^= unix.RWF_APPEND | unix.RWF_NOAPPEND; flags != 0 && f.wrwf != nil {
		return fixCount(f.wrwf.WriteIterFlags(it, off, flags))
	}
	return f.writeIter(it, segs, off)
}

// appendPos appends src and moves the file position to the end of the
// bytes written, as Linux does for O_APPEND writes.
func (f *file) appendPos(src iov.Iter) (int, error) {
	f.posMu.Lock()
	off, n, err := f.app.Append(src)
	if n > 0 {
		f.pos = off + int64(n)
	}
	f.posMu.Unlock()
	return fixCount(n, err)
}

// writeBuf writes one buffer at off, clamped to MaxCount.
func (f *file) writeBuf(b []byte, off int64) (int, error) {
	return f.writeFit(b[:min(len(b), iov.MaxCount)], off)
}

// writeFit is writeBuf of a buffer of at most MaxCount bytes.
func (f *file) writeFit(b []byte, off int64) (n int, err error) {
	switch {
	case f.wr != nil:
		n, err = f.wr.Write(b, off)
	case f.iwr != nil:
		n, err = f.iwr.WriteIter(iov.Buf(b), off)
	default:
		return 0, errEINVAL
	}
	return fixCount(n, err)
}

// writeIter writes a vector with segs non-empty segments at off.
func (f *file) writeIter(it iov.Iter, segs int, off int64) (n int, err error) {
	switch {
	case segs == 1 && f.wr != nil:
		n, err = f.wr.Write(it.Segment(), off)
	case f.iwr != nil:
		n, err = f.iwr.WriteIter(it, off)
	default:
		return loopWrite(f.wr, it, off)
	}
	return fixCount(n, err)
}

// loopWrite is Linux's do_loop_readv_writev for writes: one call per
// non-empty segment, stopping at the first short transfer. An error counts
// only when nothing was written.
func loopWrite(w Writer, it iov.Iter, off int64) (int, error) {
	done := 0
	for it.Len() > 0 {
		seg := it.Segment()
		o := off
		if off != noOffset {
			o += int64(done)
		}
		n, err := w.Write(seg, o)
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

// fixCount enforces the rule that a transfer that moved bytes succeeded.
func fixCount(n int, err error) (int, error) {
	if n > 0 {
		return n, nil
	}
	if n < 0 {
		n = 0
	}
	return n, err
}
