// Package devfs is the file system mounted at /dev: a flat directory of
// names, each bound to a device driver.
package devfs

import (
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// A Device is a device driver that devfs can expose under a name.
type Device interface {
	vfs.Opener
	// DevInfo returns the file type and permission bits (unix.S_IFCHR or
	// unix.S_IFBLK with the mode) and the device number.
	DevInfo() (mode uint32, rdev uint64)
}

// Sizer is implemented by devices with a size in bytes, such as block
// devices; Fstat reports it.
type Sizer interface {
	Size() int64
}

// FS is a devfs instance. It is safe for concurrent use.
type FS struct {
	root    *dir
	nextIno atomic.Uint64
	created time.Time
}

// New returns an empty devfs.
func New() *FS {
	fs := &FS{created: time.Now()}
	fs.root = &dir{fs: fs, ino: fs.nextIno.Add(1), entries: map[string]*node{}}
	return fs
}

// Root implements vfs.FileSystem.
func (fs *FS) Root() vfs.Node { return fs.root }

// Add binds name to d. A name that is taken gives EEXIST.
func (fs *FS) Add(name string, d Device) error {
	fs.root.mu.Lock()
	defer fs.root.mu.Unlock()
	if _, ok := fs.root.entries[name]; ok {
		return syscall.EEXIST
	}
	fs.root.entries[name] = &node{fs: fs, dev: d, ino: fs.nextIno.Add(1)}
	return nil
}

// Remove unbinds name. A name that is not there gives ENOENT.
func (fs *FS) Remove(name string) error {
	fs.root.mu.Lock()
	defer fs.root.mu.Unlock()
	if _, ok := fs.root.entries[name]; !ok {
		return syscall.ENOENT
	}
	delete(fs.root.entries, name)
	return nil
}

// dir is the devfs root directory.
type dir struct {
	fs  *FS
	ino uint64

	// mu protects entries.
	mu      sync.RWMutex
	entries map[string]*node
}

func (d *dir) Stat() (vfs.Stat, error) {
	d.mu.RLock()
	n := len(d.entries)
	d.mu.RUnlock()
	t := d.fs.created
	return vfs.Stat{Ino: d.ino, Mode: unix.S_IFDIR | 0o755, Nlink: 2, Size: int64(n) * 20, Blksize: 4096, Atime: t, Mtime: t, Ctime: t}, nil
}

func (d *dir) Lookup(name string) (vfs.Node, error) {
	if name == ".." {
		return d, nil
	}
	d.mu.RLock()
	n, ok := d.entries[name]
	d.mu.RUnlock()
	if !ok {
		return nil, syscall.ENOENT
	}
	return n, nil
}

// Revalidate implements vfs.Revalidator: device names come and go behind
// the VFS (Add and Remove, as LOOP_CTL_ADD and LOOP_CTL_REMOVE do), so a
// cached answer holds only if the name still maps to the same node.
func (d *dir) Revalidate(name string, child vfs.Node) bool {
	d.mu.RLock()
	n, ok := d.entries[name]
	d.mu.RUnlock()
	if child == nil {
		return !ok
	}
	return ok && vfs.Node(n) == child
}

// FileType implements vfs.FileTyper.
func (d *dir) FileType() uint32 { return unix.S_IFDIR }

// Names returns the device names in sorted order.
func (d *dir) Names() []string {
	d.mu.RLock()
	names := make([]string, 0, len(d.entries))
	for name := range d.entries {
		names = append(names, name)
	}
	d.mu.RUnlock()
	sort.Strings(names)
	return names
}

// node is one device file.
type node struct {
	fs  *FS
	dev Device
	ino uint64
}

// FileType implements vfs.FileTyper.
func (n *node) FileType() uint32 {
	mode, _ := n.dev.DevInfo()
	return mode & unix.S_IFMT
}

func (n *node) Stat() (vfs.Stat, error) {
	mode, rdev := n.dev.DevInfo()
	t := n.fs.created
	st := vfs.Stat{Ino: n.ino, Mode: mode, Nlink: 1, Rdev: rdev, Blksize: 4096, Atime: t, Mtime: t, Ctime: t}
	if s, ok := n.dev.(Sizer); ok {
		st.Size = s.Size()
	}
	return st, nil
}

func (n *node) Open(flags int, c vfs.Cred) (vfs.Handle, error) { return n.dev.Open(flags, c) }

// Statfs implements vfs.Statfser. Linux's /dev is devtmpfs, a tmpfs: it
// reports TMPFS_MAGIC, 4 KiB blocks and 255-byte names. devfs holds no
// data and has no limits, so the counts are 0, as simple_statfs leaves
// them.
func (fs *FS) Statfs() (unix.Statfs_t, error) {
	return unix.Statfs_t{Type: unix.TMPFS_MAGIC, Bsize: 4096, Frsize: 4096, Namelen: 255}, nil
}

// ReadDir implements vfs.DirReader. Each name's cookie is its inode
// number plus 3: inode numbers are handed out in increasing order and
// never reused, so a listing resumed at a cookie goes on after that entry
// whatever was added or removed meanwhile.
func (d *dir) ReadDir(off int64, fn func(vfs.Dirent) bool) error {
	d.mu.RLock()
	ents := make([]vfs.Dirent, 0, len(d.entries))
	for name, n := range d.entries {
		if c := int64(n.ino) + 3; c > off {
			ents = append(ents, vfs.Dirent{Name: name, Ino: n.ino, Type: dtype(n), Off: c})
		}
	}
	d.mu.RUnlock()
	sort.Slice(ents, func(i, j int) bool { return ents[i].Off < ents[j].Off })
	for _, e := range ents {
		if !fn(e) {
			break
		}
	}
	return nil
}

// dtype is the getdents type of a device node.
func dtype(n *node) uint8 {
	if n.FileType() == unix.S_IFBLK {
		return unix.DT_BLK
	}
	return unix.DT_CHR
}
