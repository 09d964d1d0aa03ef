package overlay

// Attribute changes (Linux fs/overlayfs/inode.c's ovl_setattr and
// ovl_xattr_set): the node is copied up and the change made to its upper
// object, as the mounter.

import (
	"runtime"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// mounterCred is the mounter's Cred, for the calls on a layer's handles.
func (fs *FS) mounterCred() vfs.Cred {
	l := fs.upper
	if l == nil {
		l = fs.lowers[0]
	}
	return vfs.Cred{Uid: uint32(l.p.Geteuid()), Gid: uint32(l.p.Getegid()), Capable: l.p.Privileged()}
}

// setattr copies n up and changes its upper object: the owner first,
// whose change clears set-ID bits, then the mode the VFS decided, the
// size, and the times.
func (n *node) setattr(a vfs.SetAttr, c vfs.Cred) error {
	fs := n.fs
	if fs.upper == nil {
		return unix.EROFS
	}
	if err := n.copyUp(); err != nil {
		return err
	}
	up := fs.upper.p
	u := n.upper.Load()
	defer runtime.KeepAlive(n)
	defer n.refresh()
	if a.Valid&(vfs.SetUid|vfs.SetGid) != 0 {
		uid, gid := -1, -1
		if a.Valid&vfs.SetUid != 0 {
			uid = int(a.Uid)
		}
		if a.Valid&vfs.SetGid != 0 {
			gid = int(a.Gid)
		}
		if err := up.Fchownat(u.fd, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
			return errno(err)
		}
	}
	if a.Valid&vfs.SetMode != 0 && n.typ != unix.S_IFLNK {
		if err := up.Fchmodat(u.fd, "", a.Mode&0o7777, unix.AT_EMPTY_PATH); err != nil {
			return errno(err)
		}
	}
	if a.Valid&vfs.SetSize != 0 {
		if err := up.TruncateFd(u.fd, a.Size); err != nil {
			return errno(err)
		}
	}
	if a.Valid&(vfs.SetAtime|vfs.SetMtime) != 0 {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if a.Valid&vfs.SetAtime != 0 {
			ts[0] = unix.NsecToTimespec(a.Atime.UnixNano())
		}
		if a.Valid&vfs.SetMtime != 0 {
			ts[1] = unix.NsecToTimespec(a.Mtime.UnixNano())
		}
		if err := up.Utimensat(u.fd, "", ts, unix.AT_EMPTY_PATH); err != nil {
			return errno(err)
		}
	}
	return nil
}

// setxattr copies n up and sets the attribute on its upper object, the
// overlay's own names escaped.
func (n *node) setxattr(name string, data []byte, flags int, c vfs.Cred) error {
	fs := n.fs
	if fs.upper == nil {
		return unix.EROFS
	}
	if err := n.copyUp(); err != nil {
		return err
	}
	u := n.upper.Load()
	err := fs.upper.p.SetxattrFd(u.fd, fs.realXattr(name), data, flags)
	runtime.KeepAlive(n)
	return errno(err)
}

// removexattr removes the attribute: a name the serving object lacks
// gives ENODATA without a copy-up.
func (n *node) removexattr(name string, c vfs.Cred) error {
	fs := n.fs
	if fs.upper == nil {
		return unix.EROFS
	}
	if n.upper.Load() == nil {
		if _, err := n.getxattr(name); err != nil {
			return err
		}
		if err := n.copyUp(); err != nil {
			return err
		}
	}
	u := n.upper.Load()
	err := fs.upper.p.RemovexattrFd(u.fd, fs.realXattr(name))
	runtime.KeepAlive(n)
	return errno(err)
}
