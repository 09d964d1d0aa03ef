package tmpfs

import "golang.org/x/sys/unix"

// bogoInodeSize is Linux's BOGO_INODE_SIZE: each inode takes this much of
// nr_inodes's space (free_ispace), and tmpfs's xattrs take their size
// from the same space.
const bogoInodeSize = 1024

// Statfs implements vfs.Statfser as Linux's shmem_statfs: TMPFS_MAGIC,
// 4 KiB blocks, names of 255 bytes; the block counts are the size limit
// and what it leaves free, the file counts nr_inodes and what it leaves
// (in BOGO_INODE_SIZE units of free inode space); without a limit those
// counts are 0, as simple_statfs leaves them.
func (fs *FS) Statfs() (unix.Statfs_t, error) {
	st := unix.Statfs_t{Type: unix.TMPFS_MAGIC, Bsize: pageSize, Frsize: pageSize, Namelen: 255}
	if fs.maxPages != 0 {
		st.Blocks = uint64(fs.maxPages)
		st.Bfree = uint64(max(0, fs.maxPages-fs.pages.Load()))
		st.Bavail = st.Bfree
	}
	if fs.maxInodes != 0 {
		st.Files = uint64(fs.maxInodes)
		st.Ffree = uint64(max(0, (fs.maxInodes-fs.inodes.Load())*bogoInodeSize-fs.xattrSpace.Load()) / bogoInodeSize)
	}
	return st, nil
}
