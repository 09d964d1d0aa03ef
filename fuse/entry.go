package fuse

import (
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// rawFS serves the kernel's requests. Methods it does not define answer
// ENOSYS (go-fuse's default), which the kernel remembers for the mount.
type rawFS struct {
	gofuse.RawFileSystem
	s *Server
}

func (r *rawFS) String() string { return "iovfs" }

func st(err error) gofuse.Status { return gofuse.ToStatus(err) }

// entry looks up path for h's caller and fills out as a LOOKUP reply for
// name in directory parent.
func (r *rawFS) entry(p *vfs.Proc, parent uint64, name, path string, out *gofuse.EntryOut) gofuse.Status {
	sb, err := p.Lstat(path)
	if err != nil {
		return st(err)
	}
	r.s.register(parent, name, &sb, out)
	return gofuse.OK
}

// at returns the caller's Proc and the path of name in directory id.
func (r *rawFS) at(h *gofuse.InHeader, name string) (*vfs.Proc, string, gofuse.Status) {
	p, err := r.s.creds.proc(h)
	if err != nil {
		return nil, "", st(err)
	}
	path, err := r.s.child(h.NodeId, name)
	if err != nil {
		return nil, "", st(err)
	}
	return p, path, gofuse.OK
}

// self returns the caller's Proc and the path of node h.NodeId.
func (r *rawFS) self(h *gofuse.InHeader) (*vfs.Proc, string, gofuse.Status) {
	p, err := r.s.creds.proc(h)
	if err != nil {
		return nil, "", st(err)
	}
	path, err := r.s.path(h.NodeId)
	if err != nil {
		return nil, "", st(err)
	}
	return p, path, gofuse.OK
}

func (r *rawFS) Lookup(cancel <-chan struct{}, h *gofuse.InHeader, name string, out *gofuse.EntryOut) gofuse.Status {
	p, path, s := r.at(h, name)
	if !s.Ok() {
		return s
	}
	return r.entry(p, h.NodeId, name, path, out)
}

func (r *rawFS) Forget(nodeid, nlookup uint64) { r.s.forget(nodeid, nlookup) }

func (r *rawFS) GetAttr(cancel <-chan struct{}, in *gofuse.GetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	var sb vfs.Stat
	var err error
	if in.Flags()&gofuse.FUSE_GETATTR_FH != 0 {
		if hd := r.s.handle(in.Fh()); hd != nil {
			sb, err = hd.p.Fstat(hd.fd)
			goto done
		}
	}
	{
		p, path, s := r.self(&in.InHeader)
		if s == gofuse.ENOENT {
			// Unlinked or replaced while open: fstat(2) of such a
			// file works on Linux, so answer from an open handle.
			if hd := r.s.anyHandle(in.NodeId); hd != nil {
				sb, err = hd.p.Fstat(hd.fd)
				goto done
			}
		}
		if !s.Ok() {
			return s
		}
		sb, err = p.Lstat(path)
	}
done:
	if err != nil {
		return st(err)
	}
	setTTL(&out.AttrValid, &out.AttrValidNsec, r.s.attrTTL)
	r.s.fillAttr(&out.Attr, &sb)
	return gofuse.OK
}

func (r *rawFS) SetAttr(cancel <-chan struct{}, in *gofuse.SetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	p, path, s := r.self(&in.InHeader)
	var hd *handle
	if fh, ok := in.GetFh(); ok {
		hd = r.s.handle(fh)
	}
	// byFd: the node has lost its name (unlinked or replaced while
	// open), so fchmod, fchown and futimens of an open descriptor go
	// through one of its handles, as they work on Linux.
	byFd := false
	if s == gofuse.ENOENT {
		if hd == nil {
			hd = r.s.anyHandle(in.NodeId)
		}
		if hd != nil {
			p, byFd, s = hd.p, true, gofuse.OK
		}
	}
	if !s.Ok() {
		return s
	}
	if size, ok := in.GetSize(); ok && !r.s.isDevice(in.NodeId, hd, p, path) {
		// open(O_TRUNC) of a device shown as a file arrives here too;
		// Linux's may_open drops O_TRUNC for devices.
		var err error
		if hd != nil {
			err = hd.p.Ftruncate(hd.fd, int64(size))
		} else {
			err = p.Truncate(path, int64(size))
		}
		if err != nil {
			return st(err)
		}
	}
	if mode, ok := in.GetMode(); ok {
		var err error
		if byFd {
			err = p.Fchmod(hd.fd, mode)
		} else {
			err = p.Fchmodat(unix.AT_FDCWD, path, mode, 0)
		}
		if err != nil {
			return st(err)
		}
	}
	uid, gid := -1, -1
	if v, ok := in.GetUID(); ok {
		uid = int(v)
	}
	if v, ok := in.GetGID(); ok {
		gid = int(v)
	}
	if uid != -1 || gid != -1 {
		var err error
		if byFd {
			err = p.Fchown(hd.fd, uid, gid)
		} else {
			err = p.Fchownat(unix.AT_FDCWD, path, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
		}
		if err != nil {
			return st(err)
		}
	}
	if in.Valid&(gofuse.FATTR_ATIME|gofuse.FATTR_MTIME) != 0 {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if in.Valid&gofuse.FATTR_ATIME != 0 {
			ts[0] = unix.Timespec{Sec: int64(in.Atime), Nsec: int64(in.Atimensec)}
			if in.Valid&gofuse.FATTR_ATIME_NOW != 0 {
				ts[0] = unix.Timespec{Nsec: unix.UTIME_NOW}
			}
		}
		if in.Valid&gofuse.FATTR_MTIME != 0 {
			ts[1] = unix.Timespec{Sec: int64(in.Mtime), Nsec: int64(in.Mtimensec)}
			if in.Valid&gofuse.FATTR_MTIME_NOW != 0 {
				ts[1] = unix.Timespec{Nsec: unix.UTIME_NOW}
			}
		}
		var err error
		if byFd {
			err = p.Futimens(hd.fd, ts)
		} else {
			err = p.Utimensat(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW)
		}
		if err != nil {
			return st(err)
		}
	}
	var sb vfs.Stat
	var err error
	if hd != nil {
		sb, err = hd.p.Fstat(hd.fd)
	} else {
		sb, err = p.Lstat(path)
	}
	if err != nil {
		return st(err)
	}
	setTTL(&out.AttrValid, &out.AttrValidNsec, r.s.attrTTL)
	r.s.fillAttr(&out.Attr, &sb)
	return gofuse.OK
}

// isDevice reports whether the export shows node id, a device, as a
// regular file (Options.DevicesAsFiles).
func (s *Server) isDevice(id uint64, hd *handle, p *vfs.Proc, path string) bool {
	if !s.devFiles {
		return false
	}
	var sb vfs.Stat
	var err error
	if hd != nil {
		sb, err = hd.p.Fstat(hd.fd)
	} else {
		sb, err = p.Lstat(path)
	}
	t := sb.Mode & unix.S_IFMT
	return err == nil && (t == unix.S_IFCHR || t == unix.S_IFBLK)
}

func (r *rawFS) Mknod(cancel <-chan struct{}, in *gofuse.MknodIn, name string, out *gofuse.EntryOut) gofuse.Status {
	p, path, s := r.at(&in.InHeader, name)
	if !s.Ok() {
		return s
	}
	if err := p.Mknod(path, in.Mode, uint64(in.Rdev)); err != nil {
		return st(err)
	}
	return r.entry(p, in.NodeId, name, path, out)
}

func (r *rawFS) Mkdir(cancel <-chan struct{}, in *gofuse.MkdirIn, name string, out *gofuse.EntryOut) gofuse.Status {
	p, path, s := r.at(&in.InHeader, name)
	if !s.Ok() {
		return s
	}
	if err := p.Mkdir(path, in.Mode); err != nil {
		return st(err)
	}
	return r.entry(p, in.NodeId, name, path, out)
}

// remove runs unlink or rmdir on name in h.NodeId and detaches the node
// that lost its name.
func (r *rawFS) remove(h *gofuse.InHeader, name string, rm func(p *vfs.Proc, path string) error) gofuse.Status {
	p, path, s := r.at(h, name)
	if !s.Ok() {
		return s
	}
	sb, serr := p.Lstat(path)
	if err := rm(p, path); err != nil {
		return st(err)
	}
	if serr == nil {
		r.s.detach(h.NodeId, name, nodeKey{sb.Dev, sb.Ino})
	}
	return gofuse.OK
}

func (r *rawFS) Unlink(cancel <-chan struct{}, h *gofuse.InHeader, name string) gofuse.Status {
	return r.remove(h, name, (*vfs.Proc).Unlink)
}

func (r *rawFS) Rmdir(cancel <-chan struct{}, h *gofuse.InHeader, name string) gofuse.Status {
	return r.remove(h, name, (*vfs.Proc).Rmdir)
}

func (r *rawFS) Rename(cancel <-chan struct{}, in *gofuse.RenameIn, oldName, newName string) gofuse.Status {
	p, oldPath, s := r.at(&in.InHeader, oldName)
	if !s.Ok() {
		return s
	}
	newPath, err := r.s.child(in.Newdir, newName)
	if err != nil {
		return st(err)
	}
	src, serr := p.Lstat(oldPath)
	dst, derr := p.Lstat(newPath)
	if err := p.Renameat2(unix.AT_FDCWD, oldPath, unix.AT_FDCWD, newPath, uint(in.Flags)); err != nil {
		return st(err)
	}
	if derr == nil && in.Flags&unix.RENAME_EXCHANGE == 0 {
		r.s.detach(in.Newdir, newName, nodeKey{dst.Dev, dst.Ino})
	}
	if serr == nil {
		r.s.moved(in.Newdir, newName, nodeKey{src.Dev, src.Ino})
	}
	if derr == nil && in.Flags&unix.RENAME_EXCHANGE != 0 {
		r.s.moved(in.NodeId, oldName, nodeKey{dst.Dev, dst.Ino})
	}
	return gofuse.OK
}

func (r *rawFS) Link(cancel <-chan struct{}, in *gofuse.LinkIn, name string, out *gofuse.EntryOut) gofuse.Status {
	p, path, s := r.at(&in.InHeader, name)
	if !s.Ok() {
		return s
	}
	old, err := r.s.path(in.Oldnodeid)
	if err != nil {
		return st(err)
	}
	if err := p.Link(old, path); err != nil {
		return st(err)
	}
	return r.entry(p, in.NodeId, name, path, out)
}

func (r *rawFS) Symlink(cancel <-chan struct{}, h *gofuse.InHeader, target, name string, out *gofuse.EntryOut) gofuse.Status {
	p, path, s := r.at(h, name)
	if !s.Ok() {
		return s
	}
	if err := p.Symlink(target, path); err != nil {
		return st(err)
	}
	return r.entry(p, h.NodeId, name, path, out)
}

func (r *rawFS) Readlink(cancel <-chan struct{}, h *gofuse.InHeader) ([]byte, gofuse.Status) {
	p, path, s := r.self(h)
	if !s.Ok() {
		return nil, s
	}
	t, err := p.Readlink(path)
	if err != nil {
		return nil, st(err)
	}
	return []byte(t), gofuse.OK
}

func (r *rawFS) Access(cancel <-chan struct{}, in *gofuse.AccessIn) gofuse.Status {
	p, path, s := r.self(&in.InHeader)
	if !s.Ok() {
		return s
	}
	// The kernel asks as the real ids (access(2)) or the effective ones
	// (faccessat2 AT_EACCESS) and puts them in the header either way.
	return st(p.Faccessat2(unix.AT_FDCWD, path, in.Mask, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW))
}

func (r *rawFS) StatFs(cancel <-chan struct{}, h *gofuse.InHeader, out *gofuse.StatfsOut) gofuse.Status {
	p, path, s := r.self(h)
	if !s.Ok() {
		return s
	}
	fs, err := p.Statfs(path)
	if err != nil {
		return st(err)
	}
	out.Blocks, out.Bfree, out.Bavail = fs.Blocks, fs.Bfree, fs.Bavail
	out.Files, out.Ffree = fs.Files, fs.Ffree
	out.Bsize, out.Frsize, out.NameLen = uint32(fs.Bsize), uint32(fs.Frsize), uint32(fs.Namelen)
	return gofuse.OK
}

// Xattr calls. The L* forms act on the node itself, never following a
// symlink, as the kernel expects.

func (r *rawFS) GetXAttr(cancel <-chan struct{}, h *gofuse.InHeader, attr string, dest []byte) (uint32, gofuse.Status) {
	p, path, s := r.self(h)
	if !s.Ok() {
		return 0, s
	}
	v, err := p.Lgetxattr(path, attr)
	if err != nil {
		return 0, st(err)
	}
	if len(dest) < len(v) {
		return uint32(len(v)), gofuse.ERANGE
	}
	return uint32(copy(dest, v)), gofuse.OK
}

func (r *rawFS) ListXAttr(cancel <-chan struct{}, h *gofuse.InHeader, dest []byte) (uint32, gofuse.Status) {
	p, path, s := r.self(h)
	if !s.Ok() {
		return 0, s
	}
	names, err := p.Llistxattr(path)
	if err != nil {
		return 0, st(err)
	}
	n := 0
	for _, nm := range names {
		n += len(nm) + 1
	}
	if len(dest) < n {
		return uint32(n), gofuse.ERANGE
	}
	i := 0
	for _, nm := range names {
		i += copy(dest[i:], nm)
		dest[i] = 0
		i++
	}
	return uint32(n), gofuse.OK
}

func (r *rawFS) SetXAttr(cancel <-chan struct{}, in *gofuse.SetXAttrIn, attr string, data []byte) gofuse.Status {
	p, path, s := r.self(&in.InHeader)
	if !s.Ok() {
		return s
	}
	return st(p.Lsetxattr(path, attr, data, int(in.Flags)))
}

func (r *rawFS) RemoveXAttr(cancel <-chan struct{}, h *gofuse.InHeader, attr string) gofuse.Status {
	p, path, s := r.self(h)
	if !s.Ok() {
		return s
	}
	return st(p.Lremovexattr(path, attr))
}
