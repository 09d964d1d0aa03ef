package vfs

// Calls on files whose driver may block (fmHold: the handle is a Poller)
// take a descriptor reference for their whole duration, as Linux's fdget
// does when the fd table is shared. Without it a close from another
// goroutine would run the handle's Release under a blocked read, and a
// pipe would lose its reader while that reader still waits. Files that
// never block keep the lock-free, reference-free path: the only cost to
// them is the test of fmHold in a mode word already loaded.
//
// A write to a pipe (Proc.Write, and Writev of one buffer) is the one
// exception: it takes the reference only if it has to drop the pipe's
// lock (pipe.Pipe.WriteHold). A write that never drops it needs none,
// since the end's release takes that lock too, and a write that finds
// no write end left gives EBADF, as the call would a moment later.
//
// Each function is the body of the matching call, between tryRef and
// release. A failed tryRef means a concurrent close released the file
// after the table lookup: the call sees EBADF, as it would a moment later.

import "github.com/iovfs/iovfs/iov"

func (f *file) heldRead(b []byte) (int, error) {
	if !f.tryRef() {
		return 0, errEBADF
	}
	defer f.release()
	if f.mode&fmNoPos != 0 {
		return f.readBuf(b, noOffset)
	}
	f.posMu.Lock()
	defer f.posMu.Unlock()
	n, err := f.readBuf(b, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *file) heldReadv(iovs [][]byte, flags int) (int, error) {
	if !f.tryRef() {
		return 0, errEBADF
	}
	defer f.release()
	return f.readvPos(iovs, flags)
}

func (f *file) heldWrite(b []byte) (int, error) {
	if !f.tryRef() {
		return 0, errEBADF
	}
	defer f.release()
	if f.mode&fmNoPos != 0 {
		return f.writeBuf(b, noOffset)
	}
	if f.appending() && f.app != nil {
		return f.appendPos(iov.Buf(b))
	}
	f.posMu.Lock()
	defer f.posMu.Unlock()
	n, err := f.writeBuf(b, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *file) heldWritev(iovs [][]byte, flags int) (int, error) {
	if !f.tryRef() {
		return 0, errEBADF
	}
	defer f.release()
	return f.writevPos(iovs, flags)
}
