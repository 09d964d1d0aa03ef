package ext4

// Unnamed files (O_TMPFILE): the Writer makes them (disk's tmpfileAs).

import "github.com/iovfs/iovfs/fs/ext4/disk"
import "github.com/iovfs/iovfs/vfs"

var _ vfs.Tmpfiler = (*rwDir)(nil)

// Tmpfile implements vfs.Tmpfiler.
func (d *rwDir) Tmpfile(mode uint32, linkable bool, c vfs.Cred) (vfs.Node, error) {
	cl := callerOf(c)
	ino, err := d.fs.w.TmpfileAs(&cl, d.ino, disk.S_IFREG|mode&07777, c.Uid, c.Gid, linkable)
	if err != nil {
		return nil, d.fs.check("ext4_tmpfile", err)
	}
	return d.fs.node(ino, disk.S_IFREG)
}
