package ext4

// Inode flags (chattr): ext4's i_flags, shown and changed as Linux's
// ext4_fileattr_get and ext4_fileattr_set do (disk/rwflags.go); the VFS
// decides who may change them and enforces immutable and append-only,
// which Stat reports in its attributes.

import (
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// statxMask is the statx attributes ext4_getattr reports.
const statxMask = unix.STATX_ATTR_APPEND | unix.STATX_ATTR_COMPRESSED | unix.STATX_ATTR_ENCRYPTED |
	unix.STATX_ATTR_IMMUTABLE | unix.STATX_ATTR_NODUMP | unix.STATX_ATTR_VERITY

// GetFileAttr implements vfs.FileAttrer.
func (n *node) GetFileAttr() (a vfs.FileAttr, err error) {
	err = n.read("ext4_fileattr_get", func(in *disk.Inode) error {
		a.FillFlags(disk.VisibleFlags(in.Mode, in.Flags))
		return nil
	})
	return a, err
}

// SetFileAttr implements vfs.FileAttrer (disk.Writer.SetFlagsAs): the
// fsx extent size hints are ignored, as ext4 ignores them; c's
// capabilities stand for CAP_SYS_RESOURCE.
func (n *node) SetFileAttr(a vfs.FileAttr, c vfs.Cred) error {
	if err := n.pin(); err != nil {
		return err
	}
	defer n.unpin()
	cl := callerOf(c)
	return n.fs.check("ext4_fileattr_set", n.fs.w.SetFlagsAs(&cl, n.ino(), a.Flags, a.Projid, c.Capable))
}
