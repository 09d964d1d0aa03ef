package ext4

// O_PATH files on a read-write mount (vfs.PathOpener): an O_PATH file of a
// regular file, symlink, FIFO, socket or device node holds its inode as an
// open file does (Writer.Hold), so an unlink while it is open puts the
// inode on the orphan list and keeps it, and its number, until the last
// such file is closed, as Linux's O_PATH file holds the inode through its
// dentry. Without the hold the number could go to a new file while the
// O_PATH file still names it, and the file would change under it (the
// FUSE export holds every file it serves this way). Directories are not
// held: rmdir frees them at once, and nothing may be made in one that is
// gone.

import (
	"sync/atomic"

	"github.com/iovfs/iovfs/vfs"
)

var (
	_ vfs.PathOpener = (*rwFile)(nil)
	_ vfs.PathOpener = (*rwLink)(nil)
	_ vfs.PathOpener = (*rwSpecial)(nil)
)

// OpenPath implements vfs.PathOpener.
func (f *rwFile) OpenPath() (vfs.Releaser, error) { return f.hold(), nil }

// OpenPath implements vfs.PathOpener.
func (l *rwLink) OpenPath() (vfs.Releaser, error) { return l.hold(), nil }

// OpenPath implements vfs.PathOpener: also the hold of an open FIFO or
// device node, which has no handle of the file system's.
func (s *rwSpecial) OpenPath() (vfs.Releaser, error) { return s.hold(), nil }

func (n *rwBase) hold() *rwPathHold {
	n.fs.w.Hold(n.ino)
	return &rwPathHold{fs: n.fs, ino: n.ino}
}

// rwPathHold is an O_PATH file's hold on an inode.
type rwPathHold struct {
	fs   *rwFS
	ino  uint32
	done atomic.Bool
}

// Release implements vfs.Releaser: the inode is freed with the last hold
// if its last name went meanwhile.
func (h *rwPathHold) Release() error {
	if h.done.Swap(true) {
		return nil
	}
	err := h.fs.w.Unhold(h.ino)
	h.fs.forget(h.ino)
	return err
}
