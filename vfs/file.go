package vfs

// The open-file description (Linux's struct file). Its call paths are
// chosen once, in newFile, and never again: a read or write tests at most
// whether an interface field is nil.
//
// Lock order: fdTable.mu, then file.posMu. A handle's own locks come after
// both; the VFS never holds posMu while taking the table lock.

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// fmode bits, after Linux's FMODE_*.
const (
	fmRead   = 1 << iota // opened for reading (FMODE_READ)
	fmWrite              // opened for writing (FMODE_WRITE)
	fmNoPos              // reads and writes do not use the position
	fmStream             // cannot seek: pread/pwrite/lseek give ESPIPE
	fmNoWait             // honours RWF_NOWAIT
	fmHold               // calls may block: they hold a reference (a Poller)
)

// noOffset is the off that Positionless handles get from the calls at the
// file position; explicit offsets are never negative.
const noOffset = -1

// rwfKnown are the preadv2/pwritev2 flags iovfs accepts (Linux RWF_SUPPORTED
// less RWF_ATOMIC and RWF_DONTCACHE, which need driver support no iovfs
// driver offers, and which Linux refuses the same way for such files).
const rwfKnown = unix.RWF_HIPRI | unix.RWF_DSYNC | unix.RWF_SYNC | unix.RWF_NOWAIT | unix.RWF_APPEND | unix.RWF_NOAPPEND

// file is an open-file description, shared by the descriptors that dup
// creates.
//
// The fields every read and write loads come first: mode, then for a
// pipe or FIFO its end (which the calls use instead of the interfaces)
// and the reference count that a call on it takes.
type file struct {
	// Set at open, read-only afterwards.
	mode int      // fm* bits
	pipe *pipeEnd // the pipe end h is, or nil

	// refs counts the descriptors that refer to the file, and the calls
	// in progress on a file whose calls may block (hold.go).
	refs atomic.Int32

	// Set at open, read-only afterwards.
	rd   Reader
	ird  IterReader
	wr   Writer
	iwr  IterWriter
	node Node
	h    Handle
	seek Seeker
	app  Appender
	rrwf RWFReader // nil unless the driver applies RWF flags itself
	wrwf RWFWriter
	// rwfRead and rwfWrite are the RWF_* flags the file accepts.
	rwfRead, rwfWrite int
	// mnt is the mount the node was opened on; it counts open files for
	// EBUSY on unmount.
	mnt *mount
	// loc is where the file was opened, for getdents' "..".
	loc location
	// cred is the opener's credentials (Linux f_cred), set by open.
	cred *creds
	// hold keeps the node allocated while the file is open, for nodes
	// opened without a handle of their own (openpath.go); set by open.
	hold Releaser

	// flags are the file status flags, Linux's f_flags: the open(2)
	// flags less O_CREAT, O_EXCL, O_NOCTTY, O_TRUNC and O_CLOEXEC, plus
	// O_LARGEFILE. F_SETFL changes the bits of setflMask, so the word is
	// loaded atomically wherever it is read (O_APPEND on every write).
	flags atomic.Int32

	// posMu serialises the calls that use and move pos (Linux f_pos_lock).
	posMu sync.Mutex
	pos   int64
	// dctx is the listing context a DirIterator fills (getdents.go),
	// kept here so that a getdents allocates none; under posMu.
	dctx DirContext
}

// newFile builds the open-file description for handle h of node n, and
// chooses its call paths.
func newFile(n Node, h Handle, flags int) *file {
	f := &file{node: n, h: h}
	fl := flags &^ (unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC | unix.O_NOCTTY | unix.O_CLOEXEC)
	if fl&unix.O_PATH == 0 {
		fl |= oLargefile // not on O_PATH files: measured, F_GETFL gives O_PATH alone
	}
	f.flags.Store(int32(fl))
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		f.mode |= fmRead
	case unix.O_WRONLY:
		f.mode |= fmWrite
	case unix.O_RDWR:
		f.mode |= fmRead | fmWrite
	}
	f.rd, _ = h.(Reader)
	f.ird, _ = h.(IterReader)
	f.wr, _ = h.(Writer)
	f.iwr, _ = h.(IterWriter)
	f.seek, _ = h.(Seeker)
	f.app, _ = h.(Appender)
	f.rrwf, _ = h.(RWFReader)
	f.wrwf, _ = h.(RWFWriter)
	if _, ok := h.(Positionless); ok {
		f.mode |= fmNoPos
	}
	if _, ok := h.(Stream); ok {
		f.mode |= fmStream
	}
	if _, ok := h.(NoWaiter); ok {
		f.mode |= fmNoWait
	}
	if _, ok := h.(Poller); ok {
		f.mode |= fmHold
	}
	switch e := h.(type) {
	case *pipeEnd:
		f.pipe = e
	case pipe2End:
		f.pipe = e.pipeEnd
	}
	f.rwfRead = rwfFor(f.mode, f.ird != nil)
	f.rwfWrite = rwfFor(f.mode, f.iwr != nil)
	f.refs.Store(1)
	return f
}

// rwfFor returns the RWF_* flags a file accepts in one direction. Linux
// checks them in kiocb_set_rw_flags for drivers with .read_iter/.write_iter,
// and in do_loop_readv_writev, which allows RWF_HIPRI alone, for the rest.
// RWF_NOWAIT needs FMODE_NOWAIT.
func rwfFor(mode int, vectored bool) int {
	if !vectored {
		return unix.RWF_HIPRI
	}
	ok := rwfKnown
	if mode&fmNoWait == 0 {
		ok &^= unix.RWF_NOWAIT
	}
	return ok
}

// appending reports whether the file was opened or set O_APPEND.
func (f *file) appending() bool { return f.flags.Load()&unix.O_APPEND != 0 }

func (f *file) stat() (Stat, error) {
	st, err := f.node.Stat()
	if err == nil && st.Dev == 0 && f.mnt != nil {
		st.Dev = f.mnt.dev
	}
	return st, err
}

// tryRef takes a descriptor reference unless the file was already
// released by a concurrent close.
func (f *file) tryRef() bool {
	for {
		n := f.refs.Load()
		if n <= 0 {
			return false
		}
		if f.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Hold implements pipe.Holder: a write to a pipe takes its reference
// only if it waits.
func (f *file) Hold() bool { return f.tryRef() }

// release drops one descriptor's reference and, on the last one, releases
// the handle.
func (f *file) release() error {
	if f.refs.Add(-1) != 0 {
		return nil
	}
	return f.released()
}

// released is release's work once the last reference is gone, out of
// line so that release inlines.
func (f *file) released() error {
	f.releaseLocks()
	if f.mnt != nil {
		f.mnt.openFiles.Add(-1)
		defer f.mnt.maybeShutdown()
	}
	if f.hold != nil {
		defer f.hold.Release()
	}
	if r, ok := f.h.(Releaser); ok {
		return r.Release()
	}
	return nil
}
