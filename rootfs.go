package iovfs

import (
	"syscall"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// rootFS is a read-only root holding empty directories to mount on.
type rootFS struct{ root *staticDir }

func newRootFS(names ...string) *rootFS {
	t := time.Now()
	r := &staticDir{ino: 1, t: t, children: map[string]*staticDir{}}
	r.parent = r
	for i, name := range names {
		r.children[name] = &staticDir{ino: uint64(i + 2), t: t, parent: r}
	}
	return &rootFS{root: r}
}

func (fs *rootFS) Root() vfs.Node { return fs.root }

type staticDir struct {
	ino      uint64
	t        time.Time
	parent   *staticDir
	children map[string]*staticDir // never changed after newRootFS
}

func (d *staticDir) Stat() (vfs.Stat, error) {
	return vfs.Stat{Ino: d.ino, Mode: unix.S_IFDIR | 0o755, Nlink: uint64(2 + len(d.children)), Blksize: 4096, Atime: d.t, Mtime: d.t, Ctime: d.t}, nil
}

func (d *staticDir) Lookup(name string) (vfs.Node, error) {
	if name == ".." {
		return d.parent, nil
	}
	if c, ok := d.children[name]; ok {
		return c, nil
	}
	return nil, syscall.ENOENT
}
