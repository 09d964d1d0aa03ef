package ext4

// The VFS side of the metadata operations of a read-write mount
// (rwxattr.go, rwmknod.go): xattr setters on every node, mknod and
// whiteout renames on directories.

import (
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

// Setxattr implements vfs.XattrSetter (see Writer.Setxattr), acting for
// c; nil data is an empty value, as Writer.Setxattr takes it.
func (n *rwBase) Setxattr(name string, data []byte, flags int, c vfs.Cred) error {
	if data == nil {
		data = []byte{}
	}
	if err := n.pin(); err != nil {
		return err
	}
	defer n.fs.unhold(n.ino)
	cl := callerOf(c)
	return n.fs.check("ext4_xattr_set", n.fs.w.SetxattrAs(&cl, n.ino, name, data, flags))
}

// Removexattr implements vfs.XattrSetter, acting for c.
func (n *rwBase) Removexattr(name string, c vfs.Cred) error {
	if err := n.pin(); err != nil {
		return err
	}
	defer n.fs.unhold(n.ino)
	cl := callerOf(c)
	return n.fs.check("ext4_xattr_set", n.fs.w.RemovexattrAs(&cl, n.ino, name))
}

// Mknod implements vfs.Mknoder: FIFOs, sockets and devices (a regular
// file is Create's).
func (d *rwDir) Mknod(name string, mode uint32, rdev uint64, c vfs.Cred) (vfs.Node, error) {
	if mode&disk.S_IFMT == disk.S_IFREG || mode&disk.S_IFMT == 0 {
		return d.Create(name, mode, c)
	}
	cl := callerOf(c)
	ino, err := d.fs.w.MknodAs(&cl, d.ino, name, mode, rdev, c.Uid, c.Gid)
	if err != nil {
		return nil, d.fs.check("ext4_mknod", err)
	}
	return d.fs.node(ino, mode)
}

// renameWhiteout is RenameFlags with RENAME_WHITEOUT.
func (d *rwDir) renameWhiteout(oldName string, nd *rwDir, newName string, flags uint, c vfs.Cred) error {
	over := nd.lookupIno(newName)
	if flags&unix.RENAME_NOREPLACE != 0 && over != 0 {
		if d.lookupIno(oldName) == 0 {
			return syscall.ENOENT
		}
		return syscall.EEXIST
	}
	cl := callerOf(c)
	return d.fs.w.RenameWhiteoutAs(&cl, d.ino, oldName, nd.ino, newName, c.Uid, c.Gid)
}
