package ext4

// Nodes: one Go type per inode type, so the VFS's interface checks see
// only what the inode supports (a directory is a Lookuper, a regular file
// an Opener, a symlink a Readlinker, a device or fifo only a Node).

import (
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"sync/atomic"
	"time"

	"github.com/iovfs/iovfs/vfs"
)

// nodeBase is what every node has: its file system and parsed inode.
type nodeBase struct {
	fs *FS
	in *disk.Inode
}

// Stat implements vfs.Node with the fields Linux's ext4_getattr fills:
// st_blksize is the block size, st_blocks counts 512-byte units.
func (n *nodeBase) Stat() (vfs.Stat, error) {
	in := n.in
	return vfs.Stat{
		Ino:     uint64(in.Ino),
		Mode:    in.Mode,
		Nlink:   uint64(in.Nlink),
		Uid:     in.Uid,
		Gid:     in.Gid,
		Rdev:    in.Rdev,
		Size:    int64(in.Size),
		Blksize: int64(n.fs.bs),
		Blocks:  int64(in.Blocks),
		Atime:   ts(in.Atime),
		Mtime:   ts(in.Mtime),
		Ctime:   ts(in.Ctime),
	}, nil
}

func ts(t disk.Timespec) time.Time { return time.Unix(t.Sec, t.Nsec) }

// Getxattr implements vfs.Xattrer.
func (n *nodeBase) Getxattr(name string) ([]byte, error) {
	return n.fs.vol.GetXattr(n.in, name)
}

// Listxattr implements vfs.Xattrer.
func (n *nodeBase) Listxattr() ([]string, error) {
	return n.fs.vol.ListXattr(n.in)
}

// dirNode is a directory.
type dirNode struct {
	nodeBase
	// up remembers what ".." found: the volume is read-only, so it never
	// changes (getdents asks for it in every listing).
	up atomic.Pointer[dirNode]
	// list is the parsed listing of a one-block directory (listcache.go).
	list atomic.Pointer[listing]
}

// Lookup implements vfs.Lookuper. ".." is the on-disk entry, which at
// the root names the root itself, as the VFS asks.
func (d *dirNode) Lookup(name string) (vfs.Node, error) {
	if name == ".." {
		if up := d.up.Load(); up != nil {
			return up, nil
		}
	}
	ino, err := d.fs.vol.Lookup(d.in, name)
	if err != nil {
		return nil, err
	}
	n, err := d.fs.node(ino)
	if up, ok := n.(*dirNode); ok && name == ".." {
		d.up.Store(up)
	}
	return n, err
}

// ReadDir implements vfs.DirReader, for the VFS's own walks of a
// directory (getdents goes through the open directory's handle,
// dirhandle.go): the entries but "." and ".." in the kernel's order, each
// entry's cookie the position after it (dirhash.go). An off below 3
// starts at the beginning: 1 and 2 are the VFS's "." and "..".
func (d *dirNode) ReadDir(off int64, fn func(vfs.Dirent) bool) error {
	if off < 3 {
		off = 0
	}
	if l := d.cachedList(); l != nil {
		l.read(off, fn)
		return nil
	}
	return d.fs.vol.ReadDirFrom(d.in, off, func(name []byte, ino uint32, ftype uint8, next int64) bool {
		return fn(vfs.Dirent{Name: string(name), Ino: uint64(ino), Type: disk.DType(ftype), Off: next})
	})
}

// linkNode is a symbolic link.
type linkNode struct{ nodeBase }

// Readlink implements vfs.Readlinker.
func (l *linkNode) Readlink() (string, error) {
	return l.fs.vol.Readlink(l.in)
}

// specialNode is a device, fifo or socket inode: it has metadata only.
type specialNode struct{ nodeBase }

// fileNode is a regular file.
type fileNode struct{ nodeBase }

// Open implements vfs.Opener. The VFS has already refused write access on
// the read-only mount (EROFS). The handle's shape is fixed here, once, by
// the mount's read path (ARCHITECTURE: the path is chosen at open).
func (f *fileNode) Open(flags int, _ vfs.Cred) (vfs.Handle, error) {
	h := &handle{fs: f.fs, in: f.in}
	switch f.fs.opts.path {
	case ReadIterWrap:
		return iterWrapHandle{h}, nil
	case ReadIter1Seg:
		return iter1SegHandle{h}, nil
	case ReadIomap:
		return iomapHandle{h}, nil
	}
	return h, nil
}
