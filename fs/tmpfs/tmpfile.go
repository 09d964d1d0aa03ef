package tmpfs

// Unnamed files (vfs.Tmpfiler, O_TMPFILE, Linux's shmem_tmpfile): a regular
// file made with no link, freed at its last close like an unlinked file,
// unless a link names it first.

import "github.com/iovfs/iovfs/vfs"

var _ vfs.Tmpfiler = (*Dir)(nil)

// Tmpfile implements vfs.Tmpfiler. The file takes an inode of nr_inodes,
// as a created one does, and its group from a set-group-ID directory.
func (d *Dir) Tmpfile(mode uint32, linkable bool, c vfs.Cred) (vfs.Node, error) {
	if !d.fs.reserveInode() {
		return nil, errENOSPC
	}
	f := d.fs.newFile(d, mode&0o7777, c, clockNow())
	f.nlink.Store(0)
	f.linkable.Store(linkable)
	return f, nil
}

// relink reports whether t, a node with no link, may take one: an
// unnamed file made linkable, once (Linux clears I_LINKABLE at the first
// link).
func relink(t node) bool {
	f, ok := t.(*File)
	return ok && f.linkable.CompareAndSwap(true, false)
}
