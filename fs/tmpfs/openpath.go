package tmpfs

// O_PATH opens (vfs.PathOpener): each holds its node as an open handle
// does, so an unlinked node keeps its inode, pages and xattr space until
// the last O_PATH file on it is closed, as Linux's O_PATH file holds the
// inode through its dentry. A regular file counts O_PATH opens in opens,
// with its other handles; the other node types count them in inode.pins,
// which their free checks.

import (
	"sync/atomic"

	"github.com/iovfs/iovfs/vfs"
)

// OpenPath implements vfs.PathOpener: an O_PATH open counts as an open.
func (f *File) OpenPath() (vfs.Releaser, error) {
	f.mu.Lock()
	f.opens.Add(1) // under mu, so that free sees it
	f.mu.Unlock()
	return &OpenFile{f: f}, nil
}

// OpenPath implements vfs.PathOpener.
func (d *Dir) OpenPath() (vfs.Releaser, error) { return pin(d), nil }

// OpenPath implements vfs.PathOpener.
func (s *Symlink) OpenPath() (vfs.Releaser, error) { return pin(s), nil }

// OpenPath implements vfs.PathOpener.
func (s *Special) OpenPath() (vfs.Releaser, error) { return pin(s), nil }

// pathPin is an O_PATH file's hold on a node other than a regular file.
type pathPin struct {
	n    node
	done atomic.Bool
}

func pin(n node) *pathPin {
	n.base().pins.Add(1)
	return &pathPin{n: n}
}

// Release drops the hold; a node already unlinked is freed with the last.
func (p *pathPin) Release() error {
	if p.done.Swap(true) {
		return nil
	}
	p.n.base().pins.Add(-1)
	p.n.free()
	return nil
}
