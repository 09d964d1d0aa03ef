package ext4

// A mounted volume: one FS, one set of nodes and handles, for read-only
// and read-write mounts alike, as Linux's ext4 has one set of inode and
// file operations whatever the mount's flags. Read-only is a flag (w is
// nil) and a different disk-layer object under vol.
//
// Invariants:
//   - The FS holds a vfs.Backing on the source device from Mount until
//     Shutdown, so the device stays open (a loop device stays bound and
//     reports EBUSY to LOOP_CTL_REMOVE) and any DirectAccess view taken
//     at mount stays mapped (block.DirectAccessor's validity rule).
//   - vol reads the volume: on a read-only mount the disk.Volume, on a
//     read-write one the Writer's Reader (disk/live.go), whose reads take
//     no lock and are never torn by the Writer's changes. w, not nil on a
//     read-write mount, makes every change, and every error damage causes
//     there goes through its reporter (check).
//   - nodes maps an inode number to its node while the inode lives, so
//     the VFS gets the same Node for the same inode; a node holds the
//     inode's disk.Ref, which the Writer marks dead when it frees the
//     inode, and the Writer's OnRelease drops the node from the table
//     then, so the number can name a new inode, with a new node.
//   - mu protects nodes only; no other lock is taken while it is held.

import (
	"errors"
	"sync"
	"syscall"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// FS is a mounted ext2/3/4 volume. It implements vfs.FileSystem,
// vfs.Shutdowner and vfs.Statfser.
type FS struct {
	vol    *disk.Volume
	w      *disk.Writer // nil on a read-only mount
	b      *vfs.Backing // the source device, held open until Shutdown
	dev    block.Device
	bs     uint64
	bsBits uint
	opts   mountOpts

	// dax is the device's direct accessor in dax mode, nil otherwise.
	// mem, if not nil, is a view of the whole readable device taken at
	// mount (dax, or a read-write mount over a device that can be
	// mapped): file data is copied from it. It stays valid while b is
	// held.
	dax block.DirectAccessor
	mem []byte
	// viaVol: file data is read through vol, for a read-write mount
	// with data=journal, whose data may sit in the running transaction.
	viaVol bool

	// mu protects nodes.
	mu    sync.Mutex
	nodes map[uint32]vfs.Node

	statfs statfsCache // statfs.go

	// lview is the buffer-cache view parsed directory listings are
	// charged to (the metadata's, or for a dax mount a cache of their
	// own), nil without listings; lists counts them (listcache.go).
	lview *block.View
	lists listCounters

	shutdown sync.Once
}

// Root implements vfs.FileSystem.
func (fs *FS) Root() vfs.Node {
	n, _ := fs.nodeIno(fs.vol.Root()) // made by the mount, so in the table
	return n
}

// Volume returns the volume the file system reads: on a read-write mount
// the one that reads beside the Writer.
func (fs *FS) Volume() *disk.Volume { return fs.vol }

// Writer returns the Writer under a read-write mount, nil on a read-only
// one.
func (fs *FS) Writer() *disk.Writer { return fs.w }

// DAX reports whether the mount was asked for dax and copies file data
// from device memory (and, read-write, into it).
func (fs *FS) DAX() bool { return fs.dax != nil }

// Shutdown implements vfs.Shutdowner: a read-write mount ends writing
// (the last commit, the journal marked clean) and flushes the device;
// either mount releases it.
func (fs *FS) Shutdown() error {
	var err error
	fs.shutdown.Do(func() {
		if fs.w != nil {
			err = fs.w.Close()
			if e := fs.b.Sync(); err == nil && e != nil && !errors.Is(e, syscall.EINVAL) {
				err = e
			}
		}
		fs.closeVolume()
		if e := fs.b.Release(); err == nil {
			err = e
		}
	})
	return err
}

// closeVolume closes the volume and the listings' own cache view, if
// they have one.
func (fs *FS) closeVolume() {
	if fs.lview != nil && fs.lview != fs.vol.MetaView() {
		fs.lview.Close()
	}
	fs.vol.Close()
}

// check passes an error through, reporting damage on a read-write mount
// to the Writer first (errors= behaviour): op is the kernel function
// that would find it, recorded in the superblock. A read-only mount
// records nothing, as Linux's does not on a read-only device.
func (fs *FS) check(op string, err error) error {
	if err != nil && fs.w != nil {
		fs.w.ReportError(op, err)
	}
	return err
}

// nodeIno returns the node of inode ino, making it on first use.
func (fs *FS) nodeIno(ino uint32) (vfs.Node, error) {
	r, err := fs.vol.Ref(ino)
	if err != nil {
		return nil, err
	}
	return fs.nodeRef(r)
}

// nodeRef returns the node of the inode r is the Ref of, making it on
// first use; ENOENT if the Writer freed it.
func (fs *FS) nodeRef(r *disk.Ref) (vfs.Node, error) {
	fs.mu.Lock()
	n := fs.nodes[r.Ino()]
	fs.mu.Unlock()
	if n != nil && baseOf(n).ref == r {
		return n, nil
	}
	in, err := fs.vol.Current(r)
	if err != nil {
		return nil, err
	}
	var b *node
	switch in.Mode & disk.S_IFMT {
	case disk.S_IFDIR:
		d := &dirNode{}
		n, b = d, &d.node
	case disk.S_IFREG:
		f := &fileNode{}
		n, b = f, &f.node
	case disk.S_IFLNK:
		l := &linkNode{}
		n, b = l, &l.node
	default:
		s := &specialNode{}
		n, b = s, &s.node
	}
	b.fs, b.ref, b.typ, b.gen = fs, r, in.Mode&disk.S_IFMT, in.Generation
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if old := fs.nodes[r.Ino()]; old != nil && baseOf(old).ref == r {
		return old, nil // another goroutine made it first
	}
	if r.Dead() {
		return nil, syscall.ENOENT // freed meanwhile: released has run
	}
	fs.nodes[r.Ino()] = n
	return n, nil
}

// released is the Writer's OnRelease hook, run under its lock when it
// frees inode ino (after marking its Ref dead): ino's node leaves the
// table, so the number can name a new inode, with a new node.
func (fs *FS) released(ino uint32) {
	fs.mu.Lock()
	delete(fs.nodes, ino)
	fs.mu.Unlock()
}
