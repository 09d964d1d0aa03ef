package vfs

// sendfile(2) (Linux fs/read_write.c's do_sendfile) and the direct splice
// between two files that sendfile and copy_file_range share
// (splice_direct_to_actor): the source's pages go into a private pipe by
// reference and out of it with one vectored write, so a copy between two
// files costs one copy of each byte.

import (
	"sync/atomic"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/pipe"
)

// Sendfile copies up to count bytes from infd to outfd, as sendfile(2),
// and returns the count. A nil offset means infd's file position, which
// then advances; otherwise *offset is where reading starts, and it is
// set to the offset after the last byte read (infd's position stays).
// outfd's position advances unless it is a pipe. The checks run in the
// kernel's order: infd not open or not readable EBADF; an offset on a
// file that cannot seek ESPIPE; a negative offset, or a range past the
// largest offset, EINVAL; outfd not open or not writable EBADF; then, for
// a pipe outfd, splice's file-to-pipe rules (it waits for room unless
// outfd is O_NONBLOCK); otherwise EINVAL for an O_APPEND outfd or a
// source splice cannot read (a pipe), and the bytes go file to file
// through a private pipe. count is clamped to 0x7ffff000. It allocates
// nothing once warm.
func (p *Proc) Sendfile(outfd, infd int, offset *int64, count int) (int, error) {
	in := p.spliceFile(infd)
	if in == nil {
		return 0, errEBADF
	}
	defer in.release()
	if !in.readable() {
		return 0, errEBADF
	}
	var pos int64
	if offset == nil {
		pos = in.getPos()
	} else {
		if in.mode&fmStream != 0 {
			return 0, errESPIPE
		}
		pos = *offset
	}
	if count < 0 || verifyArea(pos, count) != nil {
		return 0, errEINVAL
	}
	count = min(count, iov.MaxCount)
	out := p.spliceFile(outfd)
	if out == nil {
		return 0, errEBADF
	}
	defer out.release()
	if !out.writable() {
		return 0, errEBADF
	}
	var done int
	var err error
	if opipe := pipeOf(out); opipe != nil {
		done, err = spliceToPipe(in, pos, driverOff(in, offset, pos), opipe, uint64(count), out.nonblock())
	} else {
		outPos := out.getPos()
		if verifyArea(outPos, count) != nil {
			return 0, errEINVAL
		}
		done, err = p.spliceDirect(in, pos, driverOff(in, offset, pos) == noOffset, out, outPos, driverOff(out, nil, outPos) == noOffset, count)
		if done > 0 {
			setPos(out, nil, out.advance(outPos, done))
		}
	}
	if done > 0 {
		setPos(in, offset, in.advance(pos, done))
	}
	return done, err
}

// directPipes keeps the private pipes of splice_direct_to_actor (Linux
// keeps one per task, current->splice_pipe) for reuse: a copy takes one
// from a slot and puts it back in a free one. Unlike a sync.Pool it never
// drops a pipe on its own, so a copy allocates nothing once warm, with
// or without the race detector. The pipes are larger than a pipe(2)
// pipe, which nothing can observe, so that a long copy makes fewer
// rounds.
var directPipes [8]atomic.Pointer[pipe.Pipe]

func getDirectPipe() *pipe.Pipe {
	for i := range directPipes {
		if pp := directPipes[i].Swap(nil); pp != nil {
			return pp
		}
	}
	return pipe.NewPrivate(directPipeSize)
}

func putDirectPipe(pp *pipe.Pipe) {
	pp.Reset()
	for i := range directPipes {
		if directPipes[i].CompareAndSwap(nil, pp) {
			return
		}
	}
}

const directPipeSize = 1 << 20

// spliceDirect is do_splice_direct: up to count bytes from in at inPos
// to out at outPos through a private pipe, until the source ends or a
// write falls short. inNoPos (outNoPos) says the driver keeps the
// position itself (Positionless, at the file position): it is then
// called with noOffset.
// out must not be O_APPEND (EINVAL), and in must be a file splice can
// read (EINVAL otherwise). It returns the count, or the first error if
// nothing moved.
func (p *Proc) spliceDirect(in *file, inPos int64, inNoPos bool, out *file, outPos int64, outNoPos bool, count int) (int, error) {
	if out.appending() {
		return 0, errEINVAL
	}
	if _, no := out.h.(NoSpliceWriter); no || (out.wr == nil && out.iwr == nil) {
		return 0, errEINVAL
	}
	pp := getDirectPipe()
	defer putDirectPipe(pp)
	done := 0
	for done < count {
		n, err := pp.SpliceIn(false, func(r pipe.Ring) (int, error) {
			return spliceRead(in, inPos+int64(done), at(inPos, done, inNoPos), r, uint64(count-done))
		})
		if n <= 0 {
			return fixCount(done, err)
		}
		m, err := p.drainTo(pp, out, at(outPos, done, outNoPos), n, count >= directPipeSize)
		done += m
		if m < n {
			return fixCount(done, err)
		}
	}
	return done, nil
}

// at is the driver offset of a transfer's next step: pos advanced by
// done, or noOffset for a driver that keeps its position.
func at(pos int64, done int, noPos bool) int64 {
	if noPos {
		return noOffset
	}
	return pos + int64(done)
}

// drainTo writes n bytes queued in the private pipe pp to out at off.
// bulk says the copy is large (a megabyte or more): the driver then
// stores its bytes past the CPU's caches (iov.Stream), as one large
// memmove would.
func (p *Proc) drainTo(pp *pipe.Pipe, out *file, off int64, n int, bulk bool) (int, error) {
	_, sink := out.h.(Discarder)
	first := true
	return pp.SpliceOut(n, false, !sink, func(v [][]byte) (int, error) {
		if sink {
			k := 0
			for _, b := range v {
				k += len(b)
			}
			return k, nil
		}
		if first && out.mode&fmKillPriv != 0 {
			p.removePrivs(out)
			first = false
		}
		it := iov.Vec(v)
		if bulk {
			it = iov.Stream(v)
		}
		k, err := out.writeIter(it, len(v), off)
		if k > 0 && off != noOffset {
			off += int64(k)
		}
		return k, err
	})
}
