package fuse

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// A handle is an open file of the export: a descriptor in the server's
// table, opened by the caller's thread, so with the caller's rights.
// Later requests on the handle use that descriptor whoever sends them, as
// a descriptor passed to another process keeps the rights it was opened
// with.
type handle struct {
	fd int
	// dir is the listing state of a directory handle.
	dir *dirState
	// node is the node the handle is open on; set before the handle is
	// published.
	node *node
	// backing says the handle holds a reference to node.backingID
	// (passthrough.go); under Server.bmu.
	backing bool
	// state counts the requests using fd, plus handleDropped once the
	// handle has left the table (RELEASE, or the end of the export);
	// whoever brings it to exactly handleDropped closes fd.
	state atomic.Int64
}

const handleDropped = 1 << 40

// dirState resumes a listing at the kernel's offset.
type dirState struct {
	// mu protects the fields below; READDIR calls on one handle are
	// serialised by the kernel, but READDIRPLUS after a seek may race.
	mu   sync.Mutex
	buf  []vfs.Dirent
	i    int   // next entry of buf to send
	next int64 // the offset the kernel asks for to get buf[i]
}

// handle returns the handle fh for a request, which must put it back
// with putHandle, or nil if there is none.
func (s *Server) handle(fh uint64) *handle {
	s.hmu.RLock()
	h := s.handles[fh]
	if h != nil {
		h.state.Add(1)
	}
	s.hmu.RUnlock()
	return h
}

// putHandle ends a request's use of h.
func (s *Server) putHandle(h *handle) {
	if h.state.Add(-1) == handleDropped {
		s.base.Close(h.fd)
	}
}

// drop marks h as out of the table: its descriptor is closed now, or by
// the last request using it.
func (h *handle) drop(base *vfs.Proc) {
	if h.state.Add(handleDropped) == handleDropped {
		base.Close(h.fd)
	}
}

func (s *Server) addHandle(h *handle) uint64 {
	s.hmu.Lock()
	fh := s.nextFh
	s.nextFh++
	s.handles[fh] = h
	s.hmu.Unlock()
	return fh
}

// takeHandle removes handle fh from the table and returns it (RELEASE).
func (s *Server) takeHandle(fh uint64) *handle {
	s.hmu.Lock()
	h := s.handles[fh]
	delete(s.handles, fh)
	s.hmu.Unlock()
	return h
}

// openFlags are the open(2) flags the export passes on: the kernel has
// resolved the name (O_NOFOLLOW) and done O_CREAT, O_EXCL and O_TRUNC
// already (it truncates with SETATTR), and O_NOCTTY means nothing here.
func openFlags(f uint32) int {
	return int(f) &^ (unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC | unix.O_NOCTTY | unix.O_NOFOLLOW)
}

// openOut sets the reply flags for an open file of node n: anything
// that is not a regular file bypasses the page cache (FOPEN_DIRECT_IO),
// because its size is not its content; regular files use it, and keep
// what it holds (FOPEN_KEEP_CACHE) only when the file's size, mtime and
// ctime are those seen at its previous open, so that nothing, through
// the export or in-process, has changed it since.
func (s *Server) openOut(n *node, fd int, out *gofuse.OpenOut) {
	x, err := s.statFd(fd)
	typ := uint32(x.Mode) & unix.S_IFMT
	if err != nil || typ != unix.S_IFREG {
		out.OpenFlags |= gofuse.FOPEN_DIRECT_IO
	}
	if err == nil && typ == unix.S_IFREG {
		k := cacheKey{int64(x.Size), x.Mtime.Sec*1e9 + int64(x.Mtime.Nsec), x.Ctime.Sec*1e9 + int64(x.Ctime.Nsec)}
		s.mu.Lock()
		// Under strictatime every read must reach the server, which
		// updates atime (atime.go): no page cache kept across opens.
		if n.cache == k && !s.atime.strict.Load() {
			out.OpenFlags |= gofuse.FOPEN_KEEP_CACHE
		}
		n.cache = k
		s.mu.Unlock()
	}
	if err == nil && typ != unix.S_IFREG && typ != unix.S_IFDIR {
		// A character device shown as a regular file (see
		// DevicesAsFiles) cannot seek in a useful way either.
		out.OpenFlags |= gofuse.FOPEN_NONSEEKABLE
	}
}

// opened publishes fd, open on n, as a handle and fills out.
func (s *Server) opened(n *node, fd int, dir bool, out *gofuse.OpenOut) {
	h := &handle{fd: fd, node: n}
	if dir {
		h.dir = &dirState{}
	} else {
		s.openOut(n, fd, out)
		s.passthrough(h, out)
	}
	out.Fh = s.addHandle(h)
}

func (r *rawFS) Open(cancel <-chan struct{}, in *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	q, s := r.begin(&in.InHeader, in.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	r.s.checkAtime()
	fd, err := q.p.Reopen(q.n.fd, openFlags(in.Flags)|unix.O_CLOEXEC)
	if err != nil {
		return st(err)
	}
	r.s.opened(q.n, fd, false, out)
	return gofuse.OK
}

func (r *rawFS) Create(cancel <-chan struct{}, in *gofuse.CreateIn, name string, out *gofuse.CreateOut) gofuse.Status {
	if s := one(name); !s.Ok() {
		return s
	}
	q, s := r.beginUmask(&in.InHeader, in.NodeId, in.Umask)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	fl := int(in.Flags)&^unix.O_NOCTTY | unix.O_CREAT | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := q.p.Openat(q.n.fd, name, fl, in.Mode)
	if err != nil {
		return st(err)
	}
	return r.created(fd, out)
}

func (r *rawFS) Read(cancel <-chan struct{}, in *gofuse.ReadIn, buf []byte) (gofuse.ReadResult, gofuse.Status) {
	h := r.s.handle(in.Fh)
	if h == nil {
		return nil, gofuse.EBADF
	}
	if int(in.Size) < len(buf) {
		buf = buf[:in.Size]
	}
	rr := readResults.Get().(*readResult)
	rr.s, rr.h = r.s, h
	if r.readViews(rr, buf, int64(in.Offset)) {
		return rr, gofuse.OK
	}
	p := r.s.base
	n, err := p.Pread(h.fd, buf, int64(in.Offset))
	if err == syscall.ESPIPE {
		n, err = p.Read(h.fd, buf)
	}
	if err != nil {
		rr.Done()
		return nil, st(err)
	}
	rr.add(buf[:n])
	return rr, gofuse.OK
}

func (r *rawFS) Write(cancel <-chan struct{}, in *gofuse.WriteIn, data []byte) (uint32, gofuse.Status) {
	h := r.s.handle(in.Fh)
	if h == nil {
		return 0, gofuse.EBADF
	}
	defer r.s.putHandle(h)
	p := r.s.base
	var mode uint32
	kill := in.WriteFlags&gofuse.WRITE_KILL_SUIDGID != 0
	if kill {
		// Only a writer without CAP_FSETID comes with the flag.
		mode, kill = r.s.setIDMode(h.fd)
	}
	if kill {
		// A writer without CAP_FSETID: write as the writer, so that
		// vfs clears the set-ID bits as Linux's file_remove_privs does
		// for it (the set-group-ID bit too when the file is
		// group-executable or the writer is not in its group).
		var err error
		if p, err = r.s.creds.proc(&in.InHeader); err != nil {
			return 0, st(err)
		}
	}
	n, err := p.Pwrite(h.fd, data, int64(in.Offset))
	if err == syscall.ESPIPE {
		n, err = p.Write(h.fd, data)
	}
	if kill && anonymous(&in.InHeader) && err == nil {
		r.s.killSetID(&in.InHeader, h.fd)
	}
	if kill {
		r.s.notifyModeChange(in.NodeId, h.fd, mode)
	}
	if err != nil {
		return 0, st(err)
	}
	return uint32(n), gofuse.OK
}

// killSetID clears the set-ID bits of the regular file open as fd (any
// descriptor, O_PATH too) for a request that came without the caller's
// ids, as Linux's file_remove_privs and chown_common decide for the
// caller: S_ISUID always, S_ISGID when the file is group-executable or
// the caller (host thread h.Pid) is neither in the file's group nor has
// CAP_FSETID. The kernel asks for it only for callers it applies to
// (WRITE_KILL_SUIDGID, FATTR_KILL_SUIDGID). Requests that carry the
// caller's ids get this from vfs, which acts as the caller.
func (s *Server) killSetID(h *gofuse.InHeader, fd int) {
	sb, err := s.base.Fstat(fd)
	if err != nil || sb.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	kill := sb.Mode & unix.S_ISUID
	if sb.Mode&unix.S_ISGID != 0 && (sb.Mode&unix.S_IXGRP != 0 || !inGroupOrCapable(h.Pid, sb.Gid)) {
		kill |= unix.S_ISGID
	}
	if kill != 0 {
		s.base.Fchmodat(fd, "", sb.Mode&0o7777&^kill, unix.AT_EMPTY_PATH)
	}
}

// notifyModeChange tells the kernel that the file of node id, open as
// fd, no longer has mode: after a WRITE or FALLOCATE the kernel forgets
// only the size and times it has cached, so stat would go on showing
// set-ID bits the request cleared (a negative offset leaves the page
// cache alone).
func (s *Server) notifyModeChange(id uint64, fd int, mode uint32) {
	if now, _ := s.setIDMode(fd); now != mode {
		s.srv.InodeNotify(id, -1, 0)
	}
}

// setIDMode returns the mode of the file open as fd and whether it has
// a set-ID bit.
func (s *Server) setIDMode(fd int) (uint32, bool) {
	sb, err := s.base.Fstat(fd)
	if err != nil {
		return 0, false
	}
	return sb.Mode, sb.Mode&(unix.S_ISUID|unix.S_ISGID) != 0
}

func (r *rawFS) Flush(cancel <-chan struct{}, in *gofuse.FlushIn) gofuse.Status {
	// close(2) by the lock owner: drop its POSIX locks on the file, as
	// Linux's filp_close does (locks_remove_posix).
	if h := r.s.handle(in.Fh); h != nil {
		r.s.locks.closeOwnerFile(in.LockOwner, h)
		r.s.putHandle(h)
	}
	return gofuse.OK
}

func (r *rawFS) Release(cancel <-chan struct{}, in *gofuse.ReleaseIn) {
	if h := r.s.takeHandle(in.Fh); h != nil {
		r.s.locks.dropFile(h)
		r.s.dropBacking(h)
		h.drop(r.s.base) // drops flock locks with the open file
	}
}

func (r *rawFS) Fsync(cancel <-chan struct{}, in *gofuse.FsyncIn) gofuse.Status {
	h := r.s.handle(in.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	defer r.s.putHandle(h)
	if in.FsyncFlags&1 != 0 { // FUSE_FSYNC_FDATASYNC
		return st(r.s.base.Fdatasync(h.fd))
	}
	return st(r.s.base.Fsync(h.fd))
}

func (r *rawFS) Fallocate(cancel <-chan struct{}, in *gofuse.FallocateIn) gofuse.Status {
	h := r.s.handle(in.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	defer r.s.putHandle(h)
	// As the caller: fallocate clears the set-ID bits of a caller
	// without CAP_FSETID (file_modified), and allocates for it.
	p, err := r.s.creds.proc(&in.InHeader)
	if err != nil {
		return st(err)
	}
	mode, setID := r.s.setIDMode(h.fd)
	err = p.Fallocate(h.fd, in.Mode, int64(in.Offset), int64(in.Length))
	if setID && err == nil && anonymous(&in.InHeader) && !hasFsetid(in.Pid) {
		// file_modified's rule, for a caller that came without ids.
		r.s.killSetID(&in.InHeader, h.fd)
	}
	if setID {
		r.s.notifyModeChange(in.NodeId, h.fd, mode)
	}
	return st(err)
}

func (r *rawFS) Lseek(cancel <-chan struct{}, in *gofuse.LseekIn, out *gofuse.LseekOut) gofuse.Status {
	h := r.s.handle(in.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	defer r.s.putHandle(h)
	// The kernel sends only SEEK_DATA and SEEK_HOLE; the handle's own
	// position is not used by READ and WRITE, so moving it is harmless.
	off, err := r.s.base.Seek(h.fd, int64(in.Offset), int(in.Whence))
	if err != nil {
		return st(err)
	}
	out.Offset = uint64(off)
	return gofuse.OK
}

func (r *rawFS) CopyFileRange(cancel <-chan struct{}, in *gofuse.CopyFileRangeIn) (uint32, gofuse.Status) {
	src := r.s.handle(in.FhIn)
	if src == nil {
		return 0, gofuse.EBADF
	}
	defer r.s.putHandle(src)
	dst := r.s.handle(in.FhOut)
	if dst == nil {
		return 0, gofuse.EBADF
	}
	defer r.s.putHandle(dst)
	// As the caller, whose write may clear the destination's set-ID
	// bits (file_modified).
	p, err := r.s.creds.proc(&in.InHeader)
	if err != nil {
		return 0, st(err)
	}
	roff, woff := int64(in.OffIn), int64(in.OffOut)
	n, err := p.CopyFileRange(src.fd, &roff, dst.fd, &woff, int(min(in.Len, 1<<30)), int(in.Flags))
	if err != nil {
		return 0, st(err)
	}
	return uint32(n), gofuse.OK
}

func (r *rawFS) OpenDir(cancel <-chan struct{}, in *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	q, s := r.begin(&in.InHeader, in.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	r.s.checkAtime()
	fd, err := q.p.Reopen(q.n.fd, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return st(err)
	}
	r.s.opened(q.n, fd, true, out)
	return gofuse.OK
}

func (r *rawFS) ReleaseDir(in *gofuse.ReleaseIn) {
	if h := r.s.takeHandle(in.Fh); h != nil {
		h.drop(r.s.base)
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
// when entries come and go. READDIRPLUS looks each entry up as the
// caller, relative to the directory's open descriptor.
func (r *rawFS) readDir(in *gofuse.ReadIn, out *gofuse.DirEntryList, plus bool) gofuse.Status {
	h := r.s.handle(in.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	defer r.s.putHandle(h)
	if h.dir == nil {
		return gofuse.EBADF
	}
	d := h.dir
	d.mu.Lock()
	defer d.mu.Unlock()
	base := r.s.base
	off := int64(in.Offset)
	if off != d.next || d.i > len(d.buf) {
		if _, err := base.Seek(h.fd, off, unix.SEEK_SET); err != nil {
			return st(err)
		}
		d.buf, d.i, d.next = nil, 0, off
	}
	var p *vfs.Proc
	if plus {
		var err error
		if p, err = r.s.creds.proc(&in.InHeader); err != nil {
			return st(err)
		}
	}
	for {
		if d.i >= len(d.buf) {
			b, err := base.Getdents(h.fd)
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
				// An entry that vanished meanwhile, or that the
				// caller may not look up, keeps node id 0: the
				// kernel lists it without caching it.
				if fd, err := p.Openat(h.fd, e.Name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
					if r.s.register(fd, eo) != nil {
						*eo = gofuse.EntryOut{}
					}
				}
			}
		}
		d.i++
		d.next = e.Off
	}
}

// Tmpfile makes an unnamed file in directory in.NodeId (open(2) with
// O_TMPFILE there), as the caller, and replies with its node and an open
// handle; a later LINK of the node names it (LinkFd), unless it was made
// with O_EXCL.
func (r *rawFS) Tmpfile(cancel <-chan struct{}, in *gofuse.CreateIn, out *gofuse.CreateOut) gofuse.Status {
	q, s := r.beginUmask(&in.InHeader, in.NodeId, in.Umask)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	fl := int(in.Flags)&^(unix.O_CREAT|unix.O_NOCTTY|unix.O_TRUNC|unix.O_NOFOLLOW) | unix.O_TMPFILE | unix.O_CLOEXEC
	fd, err := q.p.Openat(q.n.fd, ".", fl, in.Mode)
	if err != nil {
		return st(err)
	}
	return r.created(fd, out)
}

// created publishes fd, a file just made and opened, as a node and an
// open handle of it in out.
func (r *rawFS) created(fd int, out *gofuse.CreateOut) gofuse.Status {
	pfd, err := r.s.base.Reopen(fd, unix.O_PATH|unix.O_CLOEXEC)
	if err == nil {
		err = r.s.register(pfd, &out.EntryOut)
	}
	if err != nil {
		r.s.base.Close(fd)
		return st(err)
	}
	n, err := r.s.get(out.NodeId)
	if err != nil {
		r.s.base.Close(fd)
		return st(err)
	}
	defer r.s.put(n)
	r.s.opened(n, fd, false, &out.OpenOut)
	return gofuse.OK
}

// Ioctl serves the inode-flag requests, which the kernel sends for
// ioctl(2)'s FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IOC_FSGETXATTR and
// FS_IOC_FSSETXATTR (chattr, lsattr) through its fileattr calls, after
// its own checks, on a handle it opened for them: vfs answers them as the
// caller (owner or CAP_FOWNER, CAP_LINUX_IMMUTABLE for the immutable and
// append-only flags). Other requests give ENOTTY, as for a file whose
// driver has none.
func (r *rawFS) Ioctl(cancel <-chan struct{}, in *gofuse.IoctlIn, inbuf []byte, out *gofuse.IoctlOut, outbuf []byte) gofuse.Status {
	h := r.s.handle(in.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	defer r.s.putHandle(h)
	p, err := r.s.creds.proc(&in.InHeader)
	if err != nil {
		return st(err)
	}
	switch cmd := uint(in.Cmd); cmd {
	case vfs.FS_IOC_GETFLAGS:
		var flags uint32
		if len(outbuf) < 4 {
			return gofuse.EINVAL
		}
		if _, err := p.Ioctl(h.fd, cmd, &flags); err != nil {
			return st(err)
		}
		binary.LittleEndian.PutUint32(outbuf, flags)
	case vfs.FS_IOC_SETFLAGS:
		if len(inbuf) < 4 {
			return gofuse.EINVAL
		}
		flags := binary.LittleEndian.Uint32(inbuf)
		if _, err := p.Ioctl(h.fd, cmd, &flags); err != nil {
			return st(err)
		}
	case vfs.FS_IOC_FSGETXATTR:
		var x vfs.Fsxattr
		if len(outbuf) < fsxattrSize {
			return gofuse.EINVAL
		}
		if _, err := p.Ioctl(h.fd, cmd, &x); err != nil {
			return st(err)
		}
		b := outbuf[:0]
		for _, v := range []uint32{x.Xflags, x.Extsize, x.Nextents, x.Projid, x.Cowextsize} {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		clear(outbuf[len(b):])
	case vfs.FS_IOC_FSSETXATTR:
		if len(inbuf) < fsxattrSize {
			return gofuse.EINVAL
		}
		u := func(i int) uint32 { return binary.LittleEndian.Uint32(inbuf[4*i:]) }
		x := vfs.Fsxattr{Xflags: u(0), Extsize: u(1), Nextents: u(2), Projid: u(3), Cowextsize: u(4)}
		if _, err := p.Ioctl(h.fd, cmd, &x); err != nil {
			return st(err)
		}
	default:
		return gofuse.Status(unix.ENOTTY)
	}
	// The flags change what the kernel must show (statx attributes,
	// ctime): it forgets the attributes it has.
	if cmd := uint(in.Cmd); cmd == vfs.FS_IOC_SETFLAGS || cmd == vfs.FS_IOC_FSSETXATTR {
		r.s.srv.InodeNotify(in.NodeId, -1, 0)
	}
	return gofuse.OK
}

// fsxattrSize is the size of struct fsxattr.
const fsxattrSize = 28
