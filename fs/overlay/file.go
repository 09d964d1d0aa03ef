package overlay

// Open files (Linux fs/overlayfs/file.c): an overlay file holds an open
// file of the layer object that serves it, as a backing file, and hands
// each read and write to that file's own handle: no copy of its own, and
// a vectored read of the overlay is one vectored read of the layer's
// file. A file opened for reading before its node is copied up reads the
// copy from then on, as ovl_real_fdget reopens it.

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Open opens the file. Opening it for writing, or with O_TRUNC, copies it
// up first, with its data even for O_TRUNC, as Linux 6's ovl_maybe_copy_up
// does: the VFS truncates after the open, and a crash between the two
// must leave the file as it was, not empty with its old times.
func (f *fileNode) Open(flags int, c vfs.Cred) (vfs.Handle, error) {
	n := (*node)(f)
	if flags&unix.O_ACCMODE != unix.O_RDONLY || flags&unix.O_TRUNC != 0 {
		if n.fs.upper == nil {
			return nil, unix.EROFS
		}
		if err := n.copyUp(); err != nil {
			return nil, err
		}
	}
	h := &fileHandle{n: n}
	// The layer's file is opened by its descriptor, as the kernel opens
	// the real path: no name is resolved, so O_NOFOLLOW and O_DIRECTORY
	// have done their work at the overlay's open (a reopen through the
	// magic link refuses O_NOFOLLOW).
	h.flags.Store(int32(flags &^ (unix.O_CREAT | unix.O_EXCL | unix.O_NOCTTY | unix.O_TRUNC | unix.O_NOFOLLOW | unix.O_DIRECTORY)))
	rf, err := n.openReal(int(h.flags.Load()))
	if err != nil {
		return nil, err
	}
	h.cur.Store(rf)
	return h, nil
}

// realFile is an open file of a layer object and the methods of its
// handle.
type realFile struct {
	b     *vfs.Backing
	lower bool // of a lower object
	rd    vfs.Reader
	ird   vfs.IterReader
	wr    vfs.Writer
	iwr   vfs.IterWriter
	app   vfs.Appender
	seek  vfs.Seeker
}

// openReal opens the object serving n with the open flags given, as the
// mounter (ovl_open_realfile).
func (n *node) openReal(flags int) (*realFile, error) {
	t := n.top()
	p := t.l.p
	fd, err := p.Reopen(t.fd, flags&^unix.O_CLOEXEC)
	runtime.KeepAlive(n)
	if err != nil {
		return nil, errno(err)
	}
	b, err := p.Backing(fd)
	p.Close(fd)
	if err != nil {
		return nil, errno(err)
	}
	h := b.Handle()
	rf := &realFile{b: b, lower: t.l != n.fs.upper}
	rf.rd, _ = h.(vfs.Reader)
	rf.ird, _ = h.(vfs.IterReader)
	rf.wr, _ = h.(vfs.Writer)
	rf.iwr, _ = h.(vfs.IterWriter)
	rf.app, _ = h.(vfs.Appender)
	rf.seek, _ = h.(vfs.Seeker)
	return rf, nil
}

// fileHandle is an open overlay file.
type fileHandle struct {
	n     *node
	flags atomic.Int32 // the file status flags the layer's file was told
	cur   atomic.Pointer[realFile]
	// mu serialises the switch to the upper file; old are the files
	// replaced, which reads begun before the switch may still use, closed
	// at Release.
	mu  sync.Mutex
	old []*realFile
}

// real returns the layer file to use: the upper object's once the node
// has one.
func (h *fileHandle) real() *realFile {
	rf := h.cur.Load()
	if rf.lower && h.n.upper.Load() != nil {
		return h.switchUp(rf)
	}
	return rf
}

func (h *fileHandle) switchUp(old *realFile) *realFile {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur := h.cur.Load(); cur != old {
		return cur
	}
	fl := int(h.flags.Load())&^unix.O_ACCMODE | unix.O_RDONLY
	rf, err := h.n.openReal(fl)
	if err != nil {
		return old // the lower file still reads as it did
	}
	if s, ok := rf.b.Handle().(vfs.FlagSetter); ok {
		s.SetFlags(fl)
	}
	h.old = append(h.old, old)
	h.cur.Store(rf)
	return rf
}

// Read reads from the layer's file.
func (h *fileHandle) Read(p []byte, off int64) (int, error) {
	rf := h.real()
	if rf.rd != nil {
		return rf.rd.Read(p, off)
	}
	return rf.b.ReadAt(p, off)
}

// ReadIter is one vectored read of the layer's file.
func (h *fileHandle) ReadIter(dst iov.Iter, off int64) (int, error) {
	rf := h.real()
	if rf.ird != nil {
		return rf.ird.ReadIter(dst, off)
	}
	return rf.b.ReadIter(dst, off)
}

// Write writes to the layer's file.
func (h *fileHandle) Write(p []byte, off int64) (int, error) {
	rf := h.real()
	if rf.wr != nil {
		return rf.wr.Write(p, off)
	}
	return rf.b.WriteAt(p, off)
}

// WriteIter is one vectored write of the layer's file.
func (h *fileHandle) WriteIter(src iov.Iter, off int64) (int, error) {
	rf := h.real()
	if rf.iwr != nil {
		return rf.iwr.WriteIter(src, off)
	}
	return rf.b.WriteIter(src, off)
}

// Append appends to the layer's file, atomically where its file system
// does.
func (h *fileHandle) Append(src iov.Iter) (int64, int, error) {
	rf := h.real()
	if rf.app != nil {
		return rf.app.Append(src)
	}
	size, err := rf.b.Size()
	if err != nil {
		return 0, 0, err
	}
	n, err := rf.b.WriteIter(src, size)
	return size, n, err
}

// Llseek is the layer file's lseek (SEEK_DATA and SEEK_HOLE find its
// holes), as ovl_llseek.
func (h *fileHandle) Llseek(pos, off int64, whence int) (int64, error) {
	rf := h.real()
	if rf.seek != nil {
		return rf.seek.Llseek(pos, off, whence)
	}
	switch whence {
	case unix.SEEK_SET:
		if off < 0 {
			return 0, unix.EINVAL
		}
		return off, nil
	case unix.SEEK_CUR:
		if pos+off < 0 {
			return 0, unix.EINVAL
		}
		return pos + off, nil
	}
	size, err := rf.b.Size()
	if err != nil {
		return 0, err
	}
	return vfs.SeekInFile(size, off, whence)
}

// Sync flushes the layer's file.
func (h *fileHandle) Sync() error { return h.real().b.Sync() }

// Datasync flushes the layer's file's data.
func (h *fileHandle) Datasync() error {
	rf := h.real()
	if d, ok := rf.b.Handle().(vfs.DataSyncer); ok {
		return d.Datasync()
	}
	return rf.b.Sync()
}

// Fallocate is the layer file's fallocate, with the mounter's
// credentials, which the layer's file was opened with.
func (h *fileHandle) Fallocate(mode uint32, off, length int64, c vfs.Cred) error {
	rf := h.real()
	if f, ok := rf.b.Handle().(vfs.Fallocater); ok {
		return f.Fallocate(mode, off, length, h.n.fs.mounterCred())
	}
	return unix.EOPNOTSUPP
}

// SetFlags passes the file status flags on to the layer's file, as
// ovl_change_flags.
func (h *fileHandle) SetFlags(flags int) error {
	rf := h.real()
	if s, ok := rf.b.Handle().(vfs.FlagSetter); ok {
		if err := s.SetFlags(flags); err != nil {
			return err
		}
	}
	h.flags.Store(int32(flags))
	return nil
}

// SetNoatime passes O_NOATIME on to the layer's file.
func (h *fileHandle) SetNoatime(on bool) {
	if s, ok := h.real().b.Handle().(vfs.NoatimeHandle); ok {
		s.SetNoatime(on)
	}
}

// ReadDirect gives the layer file's direct view of its bytes, where it
// has one (ext4 with dax).
func (h *fileHandle) ReadDirect(off int64, n int) ([]byte, error) {
	if d, ok := h.real().b.Handle().(vfs.DirectReader); ok {
		return d.ReadDirect(off, n)
	}
	return nil, unix.EOPNOTSUPP
}

// Release closes the layer's files.
func (h *fileHandle) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, rf := range h.old {
		rf.b.Release()
	}
	h.old = nil
	return h.cur.Load().b.Release()
}
