package fuse

import (
	"sync"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// A handle is an open file of the export: a descriptor in the Proc of
// the caller who opened it. Later requests on the handle use that
// descriptor whoever sends them, as a descriptor passed to another
// process keeps the rights it was opened with.
type handle struct {
	p  *vfs.Proc
	fd int
	// dir is the listing state of a directory handle.
	dir *dirState
	// node is the node the handle is open on; set once by openOn,
	// under Server.mu.
	node *node
	// backing says the handle holds a reference to node.backingID
	// (passthrough.go); under Server.bmu.
	backing bool
}

// dirState resumes a listing at the kernel's offset.
type dirState struct {
	// mu protects the fields below; READDIR calls on one handle are
	// serialised by the kernel, but READDIRPLUS after a seek may race.
	mu   sync.Mutex
	buf  []vfs.Dirent
	i    int   // next entry of buf to send
	next int64 // the offset the kernel asks for to get buf[i]
}

func (s *Server) handle(fh uint64) *handle {
	s.hmu.RLock()
	h := s.handles[fh]
	s.hmu.RUnlock()
	return h
}

func (s *Server) addHandle(h *handle) uint64 {
	s.hmu.Lock()
	fh := s.nextFh
	s.nextFh++
	s.handles[fh] = h
	s.hmu.Unlock()
	return fh
}

func (s *Server) dropHandle(fh uint64) *handle {
	s.hmu.Lock()
	h := s.handles[fh]
	delete(s.handles, fh)
	s.hmu.Unlock()
	return h
}

// openFlags are the open(2) flags the export passes on: the kernel has
// done O_CREAT, O_EXCL and O_TRUNC already (it truncates with SETATTR),
// and O_NOCTTY means nothing here.
func openFlags(f uint32) int {
	return int(f) &^ (unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC | unix.O_NOCTTY)
}

// openOut sets the reply flags for an open file of node id: anything
// that is not a regular file bypasses the page cache (FOPEN_DIRECT_IO),
// because its size is not its content; regular files use it, and keep
// what it holds (FOPEN_KEEP_CACHE) only when the file's size, mtime and
// ctime are those seen at its previous open, so that nothing, through
// the export or in-process, has changed it since.
func (s *Server) openOut(id uint64, p *vfs.Proc, fd int, out *gofuse.OpenOut) {
	sb, err := p.Fstat(fd)
	if err != nil || !sb.IsRegular() {
		out.OpenFlags |= gofuse.FOPEN_DIRECT_IO
	}
	if err == nil && sb.IsRegular() {
		k := cacheKey{sb.Size, sb.Mtime.UnixNano(), sb.Ctime.UnixNano()}
		s.mu.Lock()
		if n := s.nodes[id]; n != nil {
			if n.cache == k {
				out.OpenFlags |= gofuse.FOPEN_KEEP_CACHE
			}
			n.cache = k
		}
		s.mu.Unlock()
	}
	if err == nil && sb.Mode&unix.S_IFMT != unix.S_IFREG && sb.Mode&unix.S_IFMT != unix.S_IFDIR {
		// A character device shown as a regular file (see
		// deviceAsFile) cannot seek in a useful way either.
		out.OpenFlags |= gofuse.FOPEN_NONSEEKABLE
	}
}

func (r *rawFS) Open(cancel <-chan struct{}, in *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	p, path, s := r.self(&in.InHeader)
	if !s.Ok() {
		return s
	}
	fd, err := p.Open(path, openFlags(in.Flags)|unix.O_CLOEXEC, 0)
	if err != nil {
		return st(err)
	}
	r.s.openOut(in.NodeId, p, fd, out)
	h := &handle{p: p, fd: fd}
	r.s.openOn(in.NodeId, h)
	r.s.passthrough(h, out)
	out.Fh = r.s.addHandle(h)
	return gofuse.OK
}

func (r *rawFS) Create(cancel <-chan struct{}, in *gofuse.CreateIn, name string, out *gofuse.CreateOut) gofuse.Status {
	p, path, s := r.at(&in.InHeader, name)
	if !s.Ok() {
		return s
	}
	fl := int(in.Flags)&^unix.O_NOCTTY | unix.O_CREAT | unix.O_CLOEXEC
	fd, err := p.Open(path, fl, in.Mode)
	if err != nil {
		return st(err)
	}
	sb, err := p.Fstat(fd)
	if err != nil {
		p.Close(fd)
		return st(err)
	}
	r.s.register(in.NodeId, name, &sb, &out.EntryOut)
	r.s.openOut(out.NodeId, p, fd, &out.OpenOut)
	h := &handle{p: p, fd: fd}
	r.s.openOn(out.NodeId, h)
	r.s.passthrough(h, &out.OpenOut)
	out.Fh = r.s.addHandle(h)
	return gofuse.OK
}

func (r *rawFS) Read(cancel <-chan struct{}, in *gofuse.ReadIn, buf []byte) (gofuse.ReadResult, gofuse.Status) {
	h := r.s.handle(in.Fh)
	if h == nil {
		return nil, gofuse.EBADF
	}
	if int(in.Size) < len(buf) {
		buf = buf[:in.Size]
	}
	if rr, ok := r.readDirect(h, buf, int64(in.Offset)); ok {
		return rr, gofuse.OK
	}
	n, err := h.p.Pread(h.fd, buf, int64(in.Offset))
	if err == syscall.ESPIPE {
		n, err = h.p.Read(h.fd, buf)
	}
	if err != nil {
		return nil, st(err)
	}
	rr := readResults.Get().(*readResult)
	rr.b = buf[:n]
	return rr, gofuse.OK
}

// readResult is a READ reply in go-fuse's own buffer. Results are pooled
// so that a READ allocates nothing here: go-fuse calls Done once the
// reply is written.
type readResult struct{ b []byte }

var readResults = sync.Pool{New: func() any { return new(readResult) }}

func (r *readResult) Bytes([]byte) ([]byte, gofuse.Status) { return r.b, gofuse.OK }
func (r *readResult) Size() int                            { return len(r.b) }
func (r *readResult) Done() {
	r.b = nil
	readResults.Put(r)
}

func (r *rawFS) Write(cancel <-chan struct{}, in *gofuse.WriteIn, data []byte) (uint32, gofuse.Status) {
	h := r.s.handle(in.Fh)
	if h == nil {
		return 0, gofuse.EBADF
	}
	n, err := h.p.Pwrite(h.fd, data, int64(in.Offset))
	if err == syscall.ESPIPE {
		n, err = h.p.Write(h.fd, data)
	}
	if err != nil {
		return 0, st(err)
	}
	return uint32(n), gofuse.OK
}

func (r *rawFS) Flush(cancel <-chan struct{}, in *gofuse.FlushIn) gofuse.Status {
	// close(2) by the lock owner: drop its POSIX locks on the file, as
	// Linux's filp_close does (locks_remove_posix).
	r.s.locks.closeOwnerFile(in.LockOwner, r.s.handle(in.Fh))
	return gofuse.OK
}

func (r *rawFS) Release(cancel <-chan struct{}, in *gofuse.ReleaseIn) {
	h := r.s.dropHandle(in.Fh)
	r.s.locks.dropFile(in.Fh)
	if h != nil {
		r.s.closedOn(h)
		r.s.dropBacking(h)
		h.p.Close(h.fd) // drops flock locks with the open file
	}
}

func (r *rawFS) Fsync(cancel <-chan struct{}, in *gofuse.FsyncIn) gofuse.Status {
	h := r.s.handle(in.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	if in.FsyncFlags&1 != 0 { // FUSE_FSYNC_FDATASYNC
		return st(h.p.Fdatasync(h.fd))
	}
	return st(h.p.Fsync(h.fd))
}

func (r *rawFS) Fallocate(cancel <-chan struct{}, in *gofuse.FallocateIn) gofuse.Status {
	h := r.s.handle(in.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	return st(h.p.Fallocate(h.fd, in.Mode, int64(in.Offset), int64(in.Length)))
}

func (r *rawFS) Lseek(cancel <-chan struct{}, in *gofuse.LseekIn, out *gofuse.LseekOut) gofuse.Status {
	h := r.s.handle(in.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	// The kernel sends only SEEK_DATA and SEEK_HOLE; the handle's own
	// position is not used by READ and WRITE, so moving it is harmless.
	off, err := h.p.Seek(h.fd, int64(in.Offset), int(in.Whence))
	if err != nil {
		return st(err)
	}
	out.Offset = uint64(off)
	return gofuse.OK
}

func (r *rawFS) CopyFileRange(cancel <-chan struct{}, in *gofuse.CopyFileRangeIn) (uint32, gofuse.Status) {
	src, dst := r.s.handle(in.FhIn), r.s.handle(in.FhOut)
	if src == nil || dst == nil {
		return 0, gofuse.EBADF
	}
	rfd, wfd := src.fd, dst.fd
	if src.p != dst.p {
		// Opened by callers with different credentials: borrow the
		// source into the destination's Proc for the call.
		fd, err := dst.p.Getfd(src.p, src.fd)
		if err != nil {
			return 0, st(err)
		}
		defer dst.p.Close(fd)
		rfd = fd
	}
	roff, woff := int64(in.OffIn), int64(in.OffOut)
	n, err := dst.p.CopyFileRange(rfd, &roff, wfd, &woff, int(min(in.Len, 1<<30)), int(in.Flags))
	if err != nil {
		return 0, st(err)
	}
	return uint32(n), gofuse.OK
}

func (r *rawFS) OpenDir(cancel <-chan struct{}, in *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	p, path, s := r.self(&in.InHeader)
	if !s.Ok() {
		return s
	}
	fd, err := p.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return st(err)
	}
	h := &handle{p: p, fd: fd, dir: &dirState{}}
	r.s.openOn(in.NodeId, h)
	out.Fh = r.s.addHandle(h)
	return gofuse.OK
}

func (r *rawFS) ReleaseDir(in *gofuse.ReleaseIn) {
	if h := r.s.dropHandle(in.Fh); h != nil {
		r.s.closedOn(h)
		h.p.Close(h.fd)
	}
}

func (r *rawFS) FsyncDir(cancel <-chan struct{}, in *gofuse.FsyncIn) gofuse.Status {
	return r.Fsync(cancel, in)
}

func (r *rawFS) ReadDir(cancel <-chan struct{}, in *gofuse.ReadIn, out *gofuse.DirEntryList) gofuse.Status {
	return r.readDir(in, out, false)
}

func (r *rawFS) ReadDirPlus(cancel <-chan struct{}, in *gofuse.ReadIn, out *gofuse.DirEntryList) gofuse.Status {
	return r.readDir(in, out, true)
}

// readDir fills out with the entries after the kernel's offset, a cookie
// that vfs gave (Dirent.Off), so a listing resumes where it stopped even
// when entries come and go.
func (r *rawFS) readDir(in *gofuse.ReadIn, out *gofuse.DirEntryList, plus bool) gofuse.Status {
	h := r.s.handle(in.Fh)
	if h == nil || h.dir == nil {
		return gofuse.EBADF
	}
	d := h.dir
	d.mu.Lock()
	defer d.mu.Unlock()
	off := int64(in.Offset)
	if off != d.next || d.i > len(d.buf) {
		if _, err := h.p.Seek(h.fd, off, unix.SEEK_SET); err != nil {
			return st(err)
		}
		d.buf, d.i, d.next = nil, 0, off
	}
	var p *vfs.Proc
	var dir string
	if plus {
		var s gofuse.Status
		p, dir, s = r.self(&in.InHeader)
		if !s.Ok() {
			return s
		}
	}
	for {
		if d.i >= len(d.buf) {
			b, err := h.p.Getdents(h.fd)
			if err != nil {
				return st(err)
			}
			if len(b) == 0 {
				return gofuse.OK
			}
			d.buf, d.i = b, 0
		}
		e := d.buf[d.i]
		de := gofuse.DirEntry{Name: e.Name, Ino: e.Ino, Mode: uint32(e.Type) << 12, Off: uint64(e.Off)}
		if r.s.devFiles && (e.Type == unix.DT_CHR || e.Type == unix.DT_BLK) {
			de.Mode = unix.S_IFREG
		}
		if !plus {
			if !out.AddDirEntry(de) {
				return gofuse.OK
			}
		} else {
			eo := out.AddDirLookupEntry(de)
			if eo == nil {
				return gofuse.OK
			}
			if e.Name != "." && e.Name != ".." {
				cp := dir + "/" + e.Name
				if dir == "/" {
					cp = "/" + e.Name
				}
				// An entry that vanished meanwhile keeps node id 0:
				// the kernel lists it without caching it.
				if sb, err := p.Lstat(cp); err == nil {
					r.s.register(in.NodeId, e.Name, &sb, eo)
				}
			}
		}
		d.i++
		d.next = e.Off
	}
}
