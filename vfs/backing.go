package vfs

// Backing files: an open file that a driver keeps as its store, the way
// Linux's loop driver keeps lo_backing_file after fget(). The driver holds
// a reference on the open-file description, so closing the descriptor that
// named it does not release it; the driver's Release does.
//
// I/O goes through the call paths that newFile chose at open (rd, ird, wr,
// iwr), so a backing file costs what a pread on it costs, and a request of
// several segments reaches the file's vectored method in one call, which
// is the analogue of the kernel handing a bvec iterator to ->read_iter.

import (
	"os"
	"sync/atomic"

	"github.com/iovfs/iovfs/iov"
)

// Backing is a reference to an open file, taken by Proc.Backing, through
// which a driver reads and writes the file at offsets. Its methods may be
// called concurrently. They follow the driver contract (ops.go): a short
// count is not an error, and an error comes only with a count of 0.
// No method may be called after Release.
type Backing struct {
	f        *file
	released atomic.Bool
}

// Backing takes a reference on the open file of fd and returns it, for a
// driver that keeps the file as its store (LOOP_CONFIGURE). The reference
// keeps the file open after fd is closed, until Release. A bad fd gives
// EBADF.
func (p *Proc) Backing(fd int) (*Backing, error) {
	f := p.files.get(fd)
	if f == nil || !f.tryRef() {
		return nil, errEBADF
	}
	return &Backing{f: f}, nil
}

// Release drops the reference. The file is released when no descriptor
// and no other Backing refers to it. A second Release does nothing.
func (b *Backing) Release() error {
	if b.released.Swap(true) {
		return nil
	}
	return b.f.release()
}

// Same reports whether b and c refer to the same open file.
func (b *Backing) Same(c *Backing) bool { return b.f == c.f }

// Handle returns the driver handle of the open file, for a driver that
// must recognise its own kind below it (a loop device over a loop device).
func (b *Backing) Handle() Handle { return b.f.h }

// Readable reports whether the file was opened for reading.
func (b *Backing) Readable() bool { return b.f.mode&fmRead != 0 }

// Writable reports whether the file was opened for writing (FMODE_WRITE)
// and its driver has a write method.
func (b *Backing) Writable() bool {
	return b.f.mode&fmWrite != 0 && (b.f.wr != nil || b.f.iwr != nil)
}

// Seekable reports whether the file takes offsets: false for streams,
// where every call below gives ESPIPE.
func (b *Backing) Seekable() bool { return b.f.mode&fmStream == 0 }

// Stat returns the file's metadata, as Fstat does.
func (b *Backing) Stat() (Stat, error) { return b.f.stat() }

// Size returns the file's size in bytes: Stat's Size, which for a block
// device (iovfs's, or an imported host one) is the device size.
func (b *Backing) Size() (int64, error) {
	st, err := b.f.stat()
	return st.Size, err
}

// HostFile returns the host file behind a descriptor made by ImportFile,
// or nil for any other file. The *os.File stays open until Release; the
// caller must not close it. A loop device maps it for direct access.
func (b *Backing) HostFile() *os.File {
	if h, ok := b.f.h.(*hostFile); ok {
		return h.f
	}
	return nil
}

// HostFD returns the host descriptor behind the file, or -1: the
// descriptor of a file made by ImportFile, or of a handle that has a
// HostFD() int method (fs/hostfs). It stays open until Release; the
// caller must not close it. A loop device maps it for direct access.
func (b *Backing) HostFD() int {
	switch h := b.f.h.(type) {
	case *hostFile:
		return h.fd
	case interface{ HostFD() int }:
		return h.HostFD()
	}
	return -1
}

// Sync flushes the file (fsync). A file whose driver has no Syncer has
// nothing to flush.
func (b *Backing) Sync() error {
	if s, ok := b.f.h.(Syncer); ok {
		return s.Sync()
	}
	return nil
}

// check applies the checks a pread or pwrite would: access mode (EBADF),
// seekability (ESPIPE) and the offset range (EINVAL).
func (b *Backing) check(mode int, off int64, n int) error {
	if b.f.mode&mode == 0 {
		return errEBADF
	}
	if b.f.mode&fmStream != 0 {
		return errESPIPE
	}
	return verifyArea(off, n)
}

// ReadAt reads up to len(p) bytes at off with one call to the driver, as
// pread does.
func (b *Backing) ReadAt(p []byte, off int64) (int, error) {
	if err := b.check(fmRead, off, len(p)); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	return b.f.readBuf(p, off)
}

// ReadIter reads up to dst.Len() bytes at off into dst, as preadv does:
// one call to the driver's vectored read, or its scalar read when dst has
// one segment, or Linux's per-segment loop for a scalar-only driver.
func (b *Backing) ReadIter(dst iov.Iter, off int64) (int, error) {
	if err := b.check(fmRead, off, dst.Len()); err != nil {
		return 0, err
	}
	if dst.Len() == 0 {
		return 0, nil
	}
	segs := 2
	if len(dst.Segment()) == dst.Len() {
		segs = 1
	}
	if b.f.rd == nil && b.f.ird == nil {
		return 0, errEINVAL
	}
	return b.f.readIter(dst, segs, off)
}

// WriteAt writes up to len(p) bytes at off with one call to the driver, as
// pwrite does, except that it never appends: a loop device writes where
// its sector lies whatever the backing file's O_APPEND.
func (b *Backing) WriteAt(p []byte, off int64) (int, error) {
	if err := b.check(fmWrite, off, len(p)); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	return b.f.writeBuf(p, off)
}

// WriteIter writes up to src.Len() bytes from src at off, as pwritev does;
// see ReadIter and WriteAt.
func (b *Backing) WriteIter(src iov.Iter, off int64) (int, error) {
	if err := b.check(fmWrite, off, src.Len()); err != nil {
		return 0, err
	}
	if src.Len() == 0 {
		return 0, nil
	}
	segs := 2
	if len(src.Segment()) == src.Len() {
		segs = 1
	}
	if b.f.wr == nil && b.f.iwr == nil {
		return 0, errEINVAL
	}
	return b.f.writeIter(src, segs, off)
}
