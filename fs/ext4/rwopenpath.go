package ext4

// Holding inodes on a read-write mount. An open file, an O_PATH file
// (vfs.PathOpener) and an open directory hold their inode (Writer.Hold),
// as Linux's struct file holds it through its dentry: an unlink or rmdir
// while one is open puts the inode on the orphan list and keeps it, and
// its number, until the last hold goes. A node whose inode was freed is
// gone (Writer.OnRelease calls released under the Writer's lock): it
// answers ENOENT from then on and leaves the node table, so its number
// can name a new inode without the old node reaching it. A call on a
// node that changes or reads the inode outside one View pins it (pin),
// so the inode cannot be freed, and its number reused, under the call.

import (
	"sync/atomic"
	"syscall"

	"github.com/iovfs/iovfs/vfs"
)

// OpenPath implements vfs.PathOpener: the hold of an O_PATH file of any
// type, and of an open FIFO or device node, which has no handle of the
// file system's.
func (n *rwBase) OpenPath() (vfs.Releaser, error) {
	if err := n.pin(); err != nil {
		return nil, err
	}
	return &rwPathHold{fs: n.fs, ino: n.ino}, nil
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
	return h.fs.unhold(h.ino)
}

// pin holds n's inode (Writer.Hold) unless it is gone: ENOENT then, as a
// lookup after the unlink would give.
func (n *rwBase) pin() error {
	if !n.fs.w.HoldIf(n.ino, n.alive) {
		return syscall.ENOENT
	}
	return nil
}

// alive reports whether n's inode is still the one n was made for.
func (n *rwBase) alive() bool { return !n.gone.Load() }

// unhold ends a Hold of ino, freeing an orphan at the last one.
func (fs *rwFS) unhold(ino uint32) error {
	return fs.check("ext4_evict_inode", fs.w.Unhold(ino))
}

// released is the Writer's OnRelease hook, run under its lock when it
// frees inode ino: ino's node, if any, is gone.
func (fs *rwFS) released(ino uint32) {
	fs.mu.Lock()
	if n := fs.nodes[ino]; n != nil {
		baseOf(n).gone.Store(true)
		delete(fs.nodes, ino)
	}
	fs.mu.Unlock()
}

// baseOf is the rwBase of one of this file system's nodes.
func baseOf(n vfs.Node) *rwBase {
	switch x := n.(type) {
	case *rwDir:
		return &x.rwBase
	case *rwFile:
		return &x.rwBase
	case *rwLink:
		return &x.rwBase
	case *rwSpecial:
		return &x.rwBase
	}
	return nil
}
