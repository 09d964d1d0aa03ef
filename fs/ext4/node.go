package ext4

// Nodes: one Go type per inode type, so the VFS's interface checks see
// only what the inode supports (a directory is a Lookuper, a regular file
// an Opener, a symlink a Readlinker, a device or fifo only a Node), for
// read-only and read-write mounts alike: a change on a read-only mount
// gives EROFS (the VFS refuses it first).
//
// Reads take no lock: they go through fs.vol's Read (disk/live.go),
// which on a read-write mount runs them again if a change of the Writer
// overlapped them. Changes go to the Writer, acting for the caller's
// credentials, with the inode pinned (pin) so it cannot be freed, and its
// number reused, under the call.

import (
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// node is what every node has: its file system, its inode's Ref, and
// its file type (the S_IFMT bits, which never change).
type node struct {
	fs  *FS
	ref *disk.Ref
	typ uint32
	// gen is i_generation, which never changes (handles.go).
	gen uint32

	// acls caches the access and default ACLs (acl.go).
	acls aclCache
}

// ino is the node's inode number.
func (n *node) ino() uint32 { return n.ref.Ino() }

// baseOf is the node of one of this file system's nodes.
func baseOf(n vfs.Node) *node {
	switch x := n.(type) {
	case *dirNode:
		return &x.node
	case *fileNode:
		return &x.node
	case *linkNode:
		return &x.node
	case *specialNode:
		return &x.node
	}
	return nil
}

// read runs fn with the node's inode as it is now (disk.Volume.Read):
// fn may run more than once and must only read. Errors go through the
// error reporter under op.
func (n *node) read(op string, fn func(in *disk.Inode) error) error {
	return n.fs.check(op, n.fs.vol.Read(n.ref, fn))
}

// Stat implements vfs.Node with the fields Linux's ext4_getattr fills:
// st_blksize is the block size, st_blocks counts 512-byte units, btime
// the creation time where the inode has one.
func (n *node) Stat() (st vfs.Stat, err error) {
	err = n.read("ext4_getattr", func(in *disk.Inode) error {
		st = vfs.Stat{
			Ino: uint64(in.Ino), Mode: in.Mode, Nlink: uint64(in.Nlink),
			Uid: in.Uid, Gid: in.Gid, Rdev: in.Rdev, Size: int64(in.Size),
			Blksize: int64(n.fs.bs), Blocks: int64(in.Blocks),
			Atime: ts(in.Atime), Mtime: ts(in.Mtime), Ctime: ts(in.Ctime),
		}
		if in.HasCrtime {
			st.Btime = ts(in.Crtime)
		}
		st.Attributes = vfs.StatxAttrs(in.Flags&disk.FlagsUserVisible) & statxMask
		st.AttributesMask = statxMask
		return nil
	})
	return st, err
}

func ts(t disk.Timespec) time.Time { return time.Unix(t.Sec, t.Nsec) }

// FileType implements vfs.FileTyper: the path walk's directory test,
// without building a Stat. A node's type never changes.
func (n *node) FileType() uint32 { return n.typ }

// Getxattr implements vfs.Xattrer.
func (n *node) Getxattr(name string) (b []byte, err error) {
	err = n.read("ext4_xattr_get", func(in *disk.Inode) error {
		b, err = n.fs.vol.GetXattr(in, name)
		return err
	})
	return b, err
}

// Listxattr implements vfs.Xattrer.
func (n *node) Listxattr() (l []string, err error) {
	err = n.read("ext4_listxattr", func(in *disk.Inode) error {
		l, err = n.fs.vol.ListXattr(in)
		return err
	})
	return l, err
}

// pin holds the node's inode on a read-write mount (Writer.Hold) unless
// it is gone: ENOENT then, as a lookup after the unlink would give;
// EROFS on a read-only mount. unpin ends it.
func (n *node) pin() error {
	w := n.fs.w
	if w == nil {
		return syscall.EROFS
	}
	if !w.HoldIf(n.ino(), func() bool { return !n.ref.Dead() }) {
		return syscall.ENOENT
	}
	return nil
}

// unpin ends a pin, freeing an orphan at the last hold.
func (n *node) unpin() error {
	return n.fs.check("ext4_evict_inode", n.fs.w.Unhold(n.ino()))
}

// OpenPath implements vfs.PathOpener: on a read-write mount an O_PATH
// file (and an open FIFO or device node, which has no handle of the file
// system's) holds its inode, as an open file does, so an unlink keeps it
// and its number until the last close.
func (n *node) OpenPath() (vfs.Releaser, error) {
	if n.fs.w == nil {
		return noHold{}, nil
	}
	if err := n.pin(); err != nil {
		return nil, err
	}
	return &pathHold{n: n}, nil
}

// noHold is a read-only mount's O_PATH hold: nothing to release.
type noHold struct{}

func (noHold) Release() error { return nil }

// pathHold is an O_PATH file's hold on an inode.
type pathHold struct {
	n    *node
	done atomic.Bool
}

// Release implements vfs.Releaser: the inode is freed with the last hold
// if its last name went meanwhile.
func (h *pathHold) Release() error {
	if h.done.Swap(true) {
		return nil
	}
	return h.n.unpin()
}

// Setattr implements vfs.Setattrer; a truncate acts for c.
func (n *node) Setattr(a vfs.SetAttr, c vfs.Cred) error {
	if err := n.pin(); err != nil {
		return err
	}
	defer n.unpin()
	w := n.fs.w
	if a.Valid&vfs.SetSize != 0 {
		cl := callerOf(c)
		if err := w.TruncateAs(&cl, n.ino(), a.Size); err != nil {
			return n.fs.check("ext4_setattr", err)
		}
	}
	var x disk.Attr
	if a.Valid&vfs.SetMode != 0 {
		x.Valid |= disk.AttrMode
		x.Mode = a.Mode
	}
	if a.Valid&vfs.SetUid != 0 {
		x.Valid |= disk.AttrUid
		x.Uid = a.Uid
	}
	if a.Valid&vfs.SetGid != 0 {
		x.Valid |= disk.AttrGid
		x.Gid = a.Gid
	}
	if a.Valid&vfs.SetAtime != 0 {
		x.Valid |= disk.AttrAtime
		x.Atime = a.Atime
	}
	if a.Valid&vfs.SetMtime != 0 {
		x.Valid |= disk.AttrMtime
		x.Mtime = a.Mtime
	}
	if x.Valid == 0 && a.Valid&vfs.SetSize != 0 {
		return nil
	}
	return n.fs.check("ext4_setattr", w.Setattr(n.ino(), x))
}

// Setxattr implements vfs.XattrSetter (see disk.Writer.Setxattr), acting
// for c; nil data is an empty value.
func (n *node) Setxattr(name string, data []byte, flags int, c vfs.Cred) error {
	if data == nil {
		data = []byte{}
	}
	if err := n.pin(); err != nil {
		return err
	}
	defer n.unpin()
	cl := callerOf(c)
	return n.fs.check("ext4_xattr_set", n.fs.w.SetxattrAs(&cl, n.ino(), name, data, flags))
}

// Removexattr implements vfs.XattrSetter, acting for c.
func (n *node) Removexattr(name string, c vfs.Cred) error {
	if err := n.pin(); err != nil {
		return err
	}
	defer n.unpin()
	cl := callerOf(c)
	return n.fs.check("ext4_xattr_set", n.fs.w.RemovexattrAs(&cl, n.ino(), name))
}

// callerOf is the Caller of an operation run for c.
// A create's inherited ACLs go with it (ext4_init_acl).
func callerOf(c vfs.Cred) disk.Caller {
	cl := disk.Caller{Uid: c.Uid, Gid: c.Gid, Groups: c.Groups, NoSysResource: !c.Capable, SysResource: c.Capable}
	if c.ACL != nil {
		if c.ACL.Access != nil {
			cl.ACLAccess = c.ACL.Access.Xattr()
		}
		if c.ACL.Default != nil {
			cl.ACLDefault = c.ACL.Default.Xattr()
		}
	}
	return cl
}

// linkNode is a symbolic link.
type linkNode struct{ node }

// Readlink implements vfs.Readlinker.
func (l *linkNode) Readlink() (s string, err error) {
	err = l.read("ext4_get_link", func(in *disk.Inode) error {
		s, err = l.fs.vol.Readlink(in)
		return err
	})
	return s, err
}

// specialNode is a device, fifo or socket inode: it has metadata only.
type specialNode struct{ node }

// fileNode is a regular file.
type fileNode struct{ node }
