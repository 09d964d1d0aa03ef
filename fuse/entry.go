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

// req is one request's view of the export: the caller's thread and the
// node the request is about, which done gives back.
type req struct {
	p *vfs.Proc
	n *node
}

// begin returns the caller's thread and node id for a request.
func (r *rawFS) begin(h *gofuse.InHeader, id uint64) (req, gofuse.Status) {
	return r.beginUmask(h, id, 0)
}

// beginUmask is begin for a request that creates a file with umask.
func (r *rawFS) beginUmask(h *gofuse.InHeader, id uint64, umask uint32) (req, gofuse.Status) {
	p, err := r.s.creds.procUmask(h, umask)
	if err != nil {
		return req{}, st(err)
	}
	n, err := r.s.get(id)
	if err != nil {
		return req{}, st(err)
	}
	return req{p, n}, gofuse.OK
}

func (r *rawFS) done(q req) { r.s.put(q.n) }

// one refuses a name that is not one name of a directory: the kernel
// sends "." and ".." only in LOOKUP, to decode a file handle (handles.go),
// and a ".." could leave the exported tree.
func one(name string) gofuse.Status {
	if name == "" || name == "." || name == ".." {
		return gofuse.EINVAL
	}
	return gofuse.OK
}

// lookup opens name in directory q.n as the caller (search permission
// on the directory, one name, a final symlink not followed) and replies
// with its node.
func (r *rawFS) lookup(q req, name string, out *gofuse.EntryOut) gofuse.Status {
	fd, err := q.p.Openat(q.n.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return st(err)
	}
	return st(r.s.register(fd, out))
}

func (r *rawFS) Lookup(cancel <-chan struct{}, h *gofuse.InHeader, name string, out *gofuse.EntryOut) gofuse.Status {
	switch name {
	case ".":
		return st(r.s.lookupSelf(h.NodeId, out))
	case "..":
		return r.lookupParent(h, out)
	}
	if s := one(name); !s.Ok() {
		return s
	}
	q, s := r.begin(h, h.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	return r.lookup(q, name, out)
}

func (r *rawFS) Forget(nodeid, nlookup uint64) { r.s.forget(nodeid, nlookup) }

func (r *rawFS) GetAttr(cancel <-chan struct{}, in *gofuse.GetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	var x unix.Statx_t
	var err error
	if in.Flags()&gofuse.FUSE_GETATTR_FH != 0 {
		if hd := r.s.handle(in.Fh()); hd != nil {
			x, err = r.s.statFd(hd.fd)
			r.s.putHandle(hd)
			goto done
		}
	}
	{
		n, err2 := r.s.get(in.NodeId)
		if err2 != nil {
			return st(err2)
		}
		x, err = r.s.statFd(n.fd)
		r.s.put(n)
	}
done:
	if err != nil {
		return st(err)
	}
	setTTL(&out.AttrValid, &out.AttrValidNsec, r.s.attrTTL)
	r.s.fillAttr(&out.Attr, &x)
	return gofuse.OK
}

// Statx answers FUSE_STATX, which the kernel sends when statx(2) asks for
// more than GETATTR gives: the creation time (STATX_BTIME) where the file
// system records one, and the file's attributes (immutable, append-only,
// nodump).
func (r *rawFS) Statx(cancel <-chan struct{}, in *gofuse.StatxIn, out *gofuse.StatxOut) gofuse.Status {
	var x unix.Statx_t
	var err error
	const mask = unix.STATX_BASIC_STATS | unix.STATX_BTIME
	if in.GetattrFlags&gofuse.FUSE_GETATTR_FH != 0 {
		if hd := r.s.handle(in.Fh); hd != nil {
			x, err = r.s.base.Statx(hd.fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, mask)
			r.s.putHandle(hd)
			goto done
		}
	}
	{
		n, err2 := r.s.get(in.NodeId)
		if err2 != nil {
			return st(err2)
		}
		x, err = r.s.base.Statx(n.fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, mask)
		r.s.put(n)
	}
done:
	if err != nil {
		return st(err)
	}
	setTTL(&out.AttrValid, &out.AttrValidNsec, r.s.attrTTL)
	var a gofuse.Attr
	r.s.fillAttr(&a, &x)
	sx := &out.Statx
	sx.Mask = x.Mask & mask
	sx.Blksize = a.Blksize
	sx.Attributes = x.Attributes & fileAttributes
	sx.AttributesMask = x.Attributes_mask & fileAttributes
	sx.Nlink = a.Nlink
	sx.Uid, sx.Gid = a.Uid, a.Gid
	sx.Mode = uint16(a.Mode)
	sx.Ino, sx.Size, sx.Blocks = a.Ino, a.Size, a.Blocks
	sx.Atime = gofuse.SxTime{Sec: uint64(x.Atime.Sec), Nsec: x.Atime.Nsec}
	sx.Btime = gofuse.SxTime{Sec: uint64(x.Btime.Sec), Nsec: x.Btime.Nsec}
	sx.Ctime = gofuse.SxTime{Sec: uint64(x.Ctime.Sec), Nsec: x.Ctime.Nsec}
	sx.Mtime = gofuse.SxTime{Sec: uint64(x.Mtime.Sec), Nsec: x.Mtime.Nsec}
	sx.RdevMajor, sx.RdevMinor = unix.Major(uint64(a.Rdev)), unix.Minor(uint64(a.Rdev))
	return gofuse.OK
}

// fileAttributes are the statx attributes of the file itself, which the
// export passes on (the mount's, such as STATX_ATTR_MOUNT_ROOT, are the
// kernel's).
const fileAttributes = unix.STATX_ATTR_COMPRESSED | unix.STATX_ATTR_IMMUTABLE | unix.STATX_ATTR_APPEND |
	unix.STATX_ATTR_NODUMP | unix.STATX_ATTR_ENCRYPTED | unix.STATX_ATTR_VERITY | unix.STATX_ATTR_DAX

func (r *rawFS) SetAttr(cancel <-chan struct{}, in *gofuse.SetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	q, s := r.begin(&in.InHeader, in.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	var hd *handle
	if fh, ok := in.GetFh(); ok {
		if hd = r.s.handle(fh); hd != nil {
			defer r.s.putHandle(hd)
		}
	}
	if size, ok := in.GetSize(); ok && !r.s.isDevice(q.n) {
		// open(O_TRUNC) of a device shown as a file arrives here too;
		// Linux's may_open drops O_TRUNC for devices. ftruncate and
		// open(O_TRUNC) come with the handle: ftruncate(2)'s rules, no
		// permission beyond the open; truncate(2) without one: its
		// rules, write permission, for the caller. Either clears the
		// set-ID bits of a caller without CAP_FSETID
		// (FATTR_KILL_SUIDGID), as the vfs call does for the caller.
		var err error
		if hd != nil {
			err = q.p.Ftruncate(hd.fd, int64(size))
		} else {
			err = q.p.TruncateFd(q.n.fd, int64(size))
		}
		if err != nil {
			return st(err)
		}
	}
	// chown, and truncate or the kernel's file_remove_privs by a caller
	// without CAP_FSETID, ask the server to clear the set-ID bits; a
	// request with the caller's ids gets that from vfs, acting as the
	// caller; one without them (AllowIdmap) from killSetID.
	killAnon := in.Valid&gofuse.FATTR_KILL_SUIDGID != 0 && anonymous(&in.InHeader)
	if mode, ok := in.GetMode(); ok {
		killAnon = false // the kernel sends the mode it decided on
		if err := q.p.Fchmodat(q.n.fd, "", mode, unix.AT_EMPTY_PATH); err != nil {
			return st(err)
		}
	}
	if killAnon {
		// Before a chown: Linux decides by the group the file had.
		r.s.killSetID(&in.InHeader, q.n.fd)
	}
	uid, gid := -1, -1
	if v, ok := in.GetUID(); ok {
		uid = int(v)
	}
	if v, ok := in.GetGID(); ok {
		gid = int(v)
	}
	if uid != -1 || gid != -1 {
		// chown clears the set-ID bits as Linux's chown_common does;
		// with HANDLE_KILLPRIV_V2 the kernel leaves that to the server.
		if err := q.p.Fchownat(q.n.fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
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
		if err := q.p.Utimensat(q.n.fd, "", ts, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return st(err)
		}
	}
	x, err := r.s.statFd(q.n.fd)
	if err != nil {
		return st(err)
	}
	setTTL(&out.AttrValid, &out.AttrValidNsec, r.s.attrTTL)
	r.s.fillAttr(&out.Attr, &x)
	return gofuse.OK
}

// isDevice reports whether the export shows n, a device, as a regular
// file (Options.DevicesAsFiles).
func (s *Server) isDevice(n *node) bool {
	if !s.devFiles {
		return false
	}
	x, err := s.statFd(n.fd)
	t := uint32(x.Mode) & unix.S_IFMT
	return err == nil && (t == unix.S_IFCHR || t == unix.S_IFBLK)
}

// made replies with the node of name, just made in directory q.n.
func (r *rawFS) made(q req, name string, err error, out *gofuse.EntryOut) gofuse.Status {
	if err != nil {
		return st(err)
	}
	return r.lookup(q, name, out)
}

func (r *rawFS) Mknod(cancel <-chan struct{}, in *gofuse.MknodIn, name string, out *gofuse.EntryOut) gofuse.Status {
	if s := one(name); !s.Ok() {
		return s
	}
	q, s := r.beginUmask(&in.InHeader, in.NodeId, in.Umask)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	return r.made(q, name, q.p.Mknodat(q.n.fd, name, in.Mode, int(in.Rdev)), out)
}

func (r *rawFS) Mkdir(cancel <-chan struct{}, in *gofuse.MkdirIn, name string, out *gofuse.EntryOut) gofuse.Status {
	if s := one(name); !s.Ok() {
		return s
	}
	q, s := r.beginUmask(&in.InHeader, in.NodeId, in.Umask)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	return r.made(q, name, q.p.Mkdirat(q.n.fd, name, in.Mode), out)
}

func (r *rawFS) Symlink(cancel <-chan struct{}, h *gofuse.InHeader, target, name string, out *gofuse.EntryOut) gofuse.Status {
	if s := one(name); !s.Ok() {
		return s
	}
	q, s := r.begin(h, h.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	return r.made(q, name, q.p.Symlinkat(target, q.n.fd, name), out)
}

// remove runs unlinkat on name in h.NodeId. The node that loses the name
// keeps its descriptor: a file with other names, or open, still works.
func (r *rawFS) remove(h *gofuse.InHeader, name string, flags int) gofuse.Status {
	if s := one(name); !s.Ok() {
		return s
	}
	q, s := r.begin(h, h.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	k, dir := r.s.dirKey(q.n.fd, name)
	if err := q.p.Unlinkat(q.n.fd, name, flags); err != nil {
		return st(err)
	}
	if dir {
		r.s.gone(k)
	}
	return gofuse.OK
}

// dirKey returns the key of name in directory fd when it is a directory.
func (s *Server) dirKey(fd int, name string) (nodeKey, bool) {
	x, err := s.base.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_INO)
	if err != nil || uint32(x.Mode)&unix.S_IFMT != unix.S_IFDIR {
		return nodeKey{}, false
	}
	return nodeKey{x.Mnt_id, x.Ino}, true
}

// gone takes the directory k, just removed, out of the key table: a file
// system may give its inode number to a new file before the kernel
// forgets the directory's node (an O_PATH file holds a file's inode, not
// a directory's, on every one), and a LOOKUP of that file must not find
// the old node. The node itself stays, for its FORGET.
func (s *Server) gone(k nodeKey) {
	s.mu.Lock()
	delete(s.byKey, k)
	s.mu.Unlock()
}

func (r *rawFS) Unlink(cancel <-chan struct{}, h *gofuse.InHeader, name string) gofuse.Status {
	return r.remove(h, name, 0)
}

func (r *rawFS) Rmdir(cancel <-chan struct{}, h *gofuse.InHeader, name string) gofuse.Status {
	return r.remove(h, name, unix.AT_REMOVEDIR)
}

func (r *rawFS) Rename(cancel <-chan struct{}, in *gofuse.RenameIn, oldName, newName string) gofuse.Status {
	if s := one(oldName); !s.Ok() {
		return s
	}
	if s := one(newName); !s.Ok() {
		return s
	}
	q, s := r.begin(&in.InHeader, in.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	nd, err := r.s.get(in.Newdir)
	if err != nil {
		return st(err)
	}
	defer r.s.put(nd)
	k, dir := r.s.dirKey(nd.fd, newName)
	if err := q.p.Renameat2(q.n.fd, oldName, nd.fd, newName, uint(in.Flags)); err != nil {
		return st(err)
	}
	if dir && in.Flags&unix.RENAME_EXCHANGE == 0 {
		r.s.gone(k) // the directory renamed over is removed
	}
	return gofuse.OK
}

func (r *rawFS) Link(cancel <-chan struct{}, in *gofuse.LinkIn, name string, out *gofuse.EntryOut) gofuse.Status {
	if s := one(name); !s.Ok() {
		return s
	}
	q, s := r.begin(&in.InHeader, in.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	old, err := r.s.get(in.Oldnodeid)
	if err != nil {
		return st(err)
	}
	defer r.s.put(old)
	if err := q.p.LinkFd(old.fd, q.n.fd, name); err != nil {
		return st(err)
	}
	return st(r.s.again(old, out))
}

func (r *rawFS) Readlink(cancel <-chan struct{}, h *gofuse.InHeader) ([]byte, gofuse.Status) {
	n, err := r.s.get(h.NodeId)
	if err != nil {
		return nil, st(err)
	}
	defer r.s.put(n)
	t, err := r.s.base.Readlinkat(n.fd, "")
	if err != nil {
		return nil, st(err)
	}
	return []byte(t), gofuse.OK
}

func (r *rawFS) Access(cancel <-chan struct{}, in *gofuse.AccessIn) gofuse.Status {
	q, s := r.begin(&in.InHeader, in.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	// The kernel asks as the real ids (access(2)) or the effective ones
	// (faccessat2 AT_EACCESS) and puts them in the header either way.
	return st(q.p.Faccessat2(q.n.fd, "", in.Mask, unix.AT_EACCESS|unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW))
}

func (r *rawFS) StatFs(cancel <-chan struct{}, h *gofuse.InHeader, out *gofuse.StatfsOut) gofuse.Status {
	n, err := r.s.get(h.NodeId)
	if err != nil {
		return st(err)
	}
	defer r.s.put(n)
	fs, err := r.s.base.Fstatfs(n.fd)
	if err != nil {
		return st(err)
	}
	out.Blocks, out.Bfree, out.Bavail = fs.Blocks, fs.Bfree, fs.Bavail
	out.Files, out.Ffree = fs.Files, fs.Ffree
	out.Bsize, out.Frsize, out.NameLen = uint32(fs.Bsize), uint32(fs.Frsize), uint32(fs.Namelen)
	return gofuse.OK
}

// Xattr calls act on the node itself, never following a symlink, as the
// kernel expects: the magic-link calls on its descriptor, as the caller.

func (r *rawFS) GetXAttr(cancel <-chan struct{}, h *gofuse.InHeader, attr string, dest []byte) (uint32, gofuse.Status) {
	q, s := r.begin(h, h.NodeId)
	if !s.Ok() {
		return 0, s
	}
	defer r.done(q)
	v, err := q.p.GetxattrFd(q.n.fd, attr)
	if err != nil {
		return 0, st(err)
	}
	if len(dest) < len(v) {
		return uint32(len(v)), gofuse.ERANGE
	}
	return uint32(copy(dest, v)), gofuse.OK
}

func (r *rawFS) ListXAttr(cancel <-chan struct{}, h *gofuse.InHeader, dest []byte) (uint32, gofuse.Status) {
	q, s := r.begin(h, h.NodeId)
	if !s.Ok() {
		return 0, s
	}
	defer r.done(q)
	names, err := q.p.ListxattrFd(q.n.fd)
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
	q, s := r.begin(&in.InHeader, in.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	err := q.p.SetxattrFd(q.n.fd, attr, data, int(in.Flags))
	if err == nil && attr == aclAccessXattr && anonymous(&in.InHeader) {
		// An access ACL sets the mode too, and Linux's
		// posix_acl_update_mode drops S_ISGID unless the caller is in
		// the file's group or has CAP_FSETID: vfs does so for a caller
		// it knows; this one came without ids.
		if sb, err := r.s.base.Fstat(q.n.fd); err == nil && sb.Mode&unix.S_ISGID != 0 && !inGroupOrCapable(in.Pid, sb.Gid) {
			r.s.base.Fchmodat(q.n.fd, "", sb.Mode&0o7777&^unix.S_ISGID, unix.AT_EMPTY_PATH)
		}
	}
	return st(err)
}

// aclAccessXattr is XATTR_NAME_POSIX_ACL_ACCESS.
const aclAccessXattr = "system.posix_acl_access"

func (r *rawFS) RemoveXAttr(cancel <-chan struct{}, h *gofuse.InHeader, attr string) gofuse.Status {
	q, s := r.begin(h, h.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	p := q.p
	if attr == capsXattr {
		// Only the kernel's own security_inode_killpriv sends this for
		// a caller without CAP_SETFCAP (cap_inode_removexattr refuses
		// the system call before it reaches FUSE): a write, fallocate,
		// truncate or chown the caller may make removes the file's
		// capabilities without a permission check of its own.
		p = r.s.base
	}
	return st(p.RemovexattrFd(q.n.fd, attr))
}

// capsXattr is XATTR_NAME_CAPS, the file capabilities.
const capsXattr = "security.capability"
