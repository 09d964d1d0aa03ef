package tmpfs

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Linux's tmpfs reports a directory's size as 20 bytes (BOGO_DIRENT_SIZE)
// for each entry, plus two for "." and "..".
const direntSize = 20

// firstCookie is the ReadDir cookie of a directory's first entry. Cookies 1
// and 2 are left for the "." and ".." the VFS adds, as Linux's stable
// directory offsets start at DIR_OFFSET_MIN.
const firstCookie = 3

// Dir is a directory.
type Dir struct {
	inode

	// dl is the VFS's lock of this directory (vfs.DirLocker); tmpfs never
	// takes it.
	dl vfs.DirLock

	// parent is the directory that holds this one; the root's is itself.
	// It changes only in a rename between directories.
	parent atomic.Pointer[Dir]

	// mu protects the fields below: shared for Lookup, Stat and ReadDir,
	// exclusive for every change.
	mu sync.RWMutex
	// names maps each name to its entry.
	names map[string]*dentry
	// order holds the entries by cookie, the order they were added in,
	// including gone ones not yet compacted away.
	order      []*dentry
	gone       int
	nextCookie int64
	subdirs    int64       // for nlink: 2 + subdirectories
	removed    bool        // rmdir'd: nothing can be added (Linux IS_DEADDIR)
	freed      atomic.Bool // the inode went back (free); not under mu
}

// dentry is one name in a directory.
type dentry struct {
	name   string
	node   node
	cookie int64
	gone   bool
}

func (fs *FS) newDir(parent *Dir, mode uint32, c vfs.Cred, now instant) *Dir {
	d := &Dir{names: map[string]*dentry{}, nextCookie: firstCookie}
	d.init(fs, parent, unix.S_IFDIR|mode&0o7777, c, now)
	if parent == nil {
		parent = d
	}
	d.parent.Store(parent)
	return d
}

func (d *Dir) dtype() uint8 { return unix.DT_DIR }

// free returns the inode to nr_inodes once the directory is removed (Rmdir
// has emptied it) and no O_PATH file holds it.
func (d *Dir) free() {
	d.mu.RLock()
	dead := d.removed
	d.mu.RUnlock()
	if !dead || d.pins.Load() != 0 || d.freed.Swap(true) {
		return
	}
	d.evict()
}

// Stat implements vfs.Node. Nlink is 2 plus the subdirectories, and 0 once
// the directory is removed.
func (d *Dir) Stat() (st vfs.Stat, err error) {
	d.stat(&st)
	d.mu.RLock()
	st.Nlink = uint64(2 + d.subdirs)
	if d.removed {
		st.Nlink = 0
	}
	st.Size = int64(2+len(d.names)) * direntSize
	d.mu.RUnlock()
	return st, nil
}

// Setattr implements vfs.Setattrer; a size gives EISDIR.
func (d *Dir) Setattr(a vfs.SetAttr, _ vfs.Cred) error { return d.setattrMeta(a, errEISDIR) }

// DirLock implements vfs.DirLocker.
func (d *Dir) DirLock() *vfs.DirLock { return &d.dl }

// Lookup implements vfs.Lookuper. ".." is the parent, and the root's own.
func (d *Dir) Lookup(name string) (vfs.Node, error) {
	if name == ".." {
		return d.parent.Load(), nil
	}
	d.mu.RLock()
	e := d.names[name]
	d.mu.RUnlock()
	if e == nil {
		return nil, errENOENT
	}
	return e.node, nil
}

// canAdd checks that name can be added, with mu held: a removed directory
// gives ENOENT, a taken name EEXIST.
func (d *Dir) canAdd(name string) error {
	if d.removed {
		return errENOENT
	}
	if d.names[name] != nil {
		return errEEXIST
	}
	return nil
}

// add enters n as name at now, with mu held, and sets the directory's
// mtime and ctime.
func (d *Dir) add(name string, n node, now int64) {
	e := &dentry{name: name, node: n, cookie: d.nextCookie}
	d.nextCookie++
	d.names[name] = e
	d.order = append(d.order, e)
	d.changed(now, true)
}

// remove drops e, with mu held. Gone entries stay in order until they are
// half of it, so removal is O(1) amortised.
func (d *Dir) remove(e *dentry, now int64) {
	delete(d.names, e.name)
	e.gone = true
	d.gone++
	if d.gone > 16 && d.gone > len(d.order)/2 {
		live := d.order[:0]
		for _, e := range d.order {
			if !e.gone {
				live = append(live, e)
			}
		}
		clear(d.order[len(live):])
		d.order = live
		d.gone = 0
	}
	d.changed(now, true)
}

// reserveNew checks that name can be added to d and takes an inode from
// the file system's limit for it; d.mu must be held.
func (d *Dir) reserveNew(name string) error {
	if err := d.canAdd(name); err != nil {
		return err
	}
	if !d.fs.reserveInode() {
		return errENOSPC
	}
	return nil
}

// Create implements vfs.Creator.
func (d *Dir) Create(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reserveNew(name); err != nil {
		return nil, err
	}
	now := clockNow()
	f := d.fs.newFile(d, mode&0o7777, c, now)
	d.add(name, f, now.wall)
	return f, nil
}

// Mkdir implements vfs.Mkdirer. The set-user-ID and set-group-ID bits of
// mode are dropped, as Linux's vfs_mkdir does; the set-group-ID bit comes
// from the parent instead.
func (d *Dir) Mkdir(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reserveNew(name); err != nil {
		return nil, err
	}
	now := clockNow()
	sub := d.fs.newDir(d, mode&0o1777, c, now)
	d.add(name, sub, now.wall)
	d.subdirs++
	return sub, nil
}

// Symlink implements vfs.Symlinker. An empty target gives ENOENT and one
// of 4096 bytes or more ENAMETOOLONG, as in Linux. A target of 128 bytes
// or more takes a page from the size limit, as shmem_symlink does.
func (d *Dir) Symlink(name, target string, c vfs.Cred) (vfs.Node, error) {
	if target == "" {
		return nil, errENOENT
	}
	if len(target) >= pageSize {
		return nil, unix.ENAMETOOLONG
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reserveNew(name); err != nil {
		return nil, err
	}
	paged := len(target) >= shortSymlinkLen
	if paged && !d.fs.reservePage() {
		d.fs.inodes.Add(-1)
		return nil, errENOSPC
	}
	now := clockNow()
	s := &Symlink{target: target, paged: paged}
	s.init(d.fs, d, unix.S_IFLNK|0o777, c, now)
	d.add(name, s, now.wall)
	return s, nil
}

// Link implements vfs.Linker. A node of another file system gives EXDEV,
// a directory EPERM, and a file whose last link is gone ENOENT (Linux
// vfs_link). It sets the target's ctime.
func (d *Dir) Link(name string, target vfs.Node, _ vfs.Cred) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.canAdd(name); err != nil {
		return err
	}
	t, ok := target.(node)
	if !ok || t.base().fs != d.fs {
		return errEXDEV
	}
	if _, ok := t.(*Dir); ok {
		return errEPERM
	}
	b := t.base()
	b.mu.Lock()
	first := b.nlink.Load() == 0
	if first && !relink(t) { // tmpfile.go
		b.mu.Unlock()
		return errENOENT
	}
	// shmem_link: every extra link takes an inode's worth of nr_inodes
	// (BOGO_INODE_SIZE), since each pins a dentry; dropLink gives it back.
	// An unnamed file's first link takes none: its inode is reserved.
	if !first && !d.fs.reserveInode() {
		b.mu.Unlock()
		return errENOSPC
	}
	b.nlink.Add(1)
	now := clockNow().wall
	b.changed(now, false)
	b.mu.Unlock()
	d.add(name, t, now)
	return nil
}

// Unlink implements vfs.Unlinker: a directory gives EISDIR. It sets the
// node's ctime; a file's pages go back when its last handle is released.
func (d *Dir) Unlink(name string, _ vfs.Cred) error {
	d.mu.Lock()
	e := d.names[name]
	if e == nil {
		d.mu.Unlock()
		return errENOENT
	}
	if _, ok := e.node.(*Dir); ok {
		d.mu.Unlock()
		return errEISDIR
	}
	now := clockNow().wall
	dropLink(e.node, now)
	d.remove(e, now)
	d.mu.Unlock()
	e.node.free()
	return nil
}

// dropLink takes one link from n and sets its ctime.
func dropLink(n node, now int64) {
	b := n.base()
	b.mu.Lock()
	if _, dir := n.(*Dir); !dir && b.nlink.Load() > 1 {
		b.fs.inodes.Add(-1) // shmem_unlink: an extra link's share of nr_inodes
	}
	b.nlink.Add(-1)
	b.changed(now, false)
	b.mu.Unlock()
}

// Rmdir implements vfs.Rmdirer: ENOTDIR for a non-directory, ENOTEMPTY for
// a directory with entries.
func (d *Dir) Rmdir(name string, _ vfs.Cred) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.names[name]
	if e == nil {
		return errENOENT
	}
	sub, ok := e.node.(*Dir)
	if !ok {
		return errENOTDIR
	}
	now := clockNow().wall
	if err := sub.kill(now); err != nil {
		return err
	}
	d.remove(e, now)
	d.subdirs--
	sub.free()
	return nil
}

// kill marks an empty directory removed, with its parent's mu held; one
// with entries gives ENOTEMPTY.
func (d *Dir) kill(now int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.names) != 0 {
		return errENOTEMPTY
	}
	d.removed = true
	d.changed(now, false)
	return nil
}

// renameLocked moves oldName in d to newName in nd, with the mu of both
// held. The VFS has refused moving a directory below itself and replacing
// an ancestor of the source; the types are checked again here because
// the directory counts depend on them. The entry gets a new ReadDir
// cookie at the end of nd, as with Linux's stable offsets. Both
// directories' mtime and ctime move, and the ctime of the moved and the
// replaced node. It returns the node that lost its name to the rename,
// to be freed after the locks are dropped.
func (d *Dir) renameLocked(oldName string, nd *Dir, newName string) (node, error) {
	src := d.names[oldName]
	if src == nil || nd.removed {
		return nil, errENOENT
	}
	srcDir, srcIsDir := src.node.(*Dir)
	dst := nd.names[newName]
	if dst != nil && dst.node == src.node {
		return nil, nil // two links to one node: rename(2) does nothing
	}
	now := clockNow().wall
	var victim node
	if dst != nil {
		dstDir, dstIsDir := dst.node.(*Dir)
		switch {
		case srcIsDir && !dstIsDir:
			return nil, errENOTDIR
		case !srcIsDir && dstIsDir:
			return nil, errEISDIR
		case dstIsDir:
			if err := dstDir.kill(now); err != nil {
				return nil, err
			}
			nd.subdirs--
		default:
			dropLink(dst.node, now)
		}
		nd.remove(dst, now)
		victim = dst.node
	}
	d.remove(src, now)
	nd.add(newName, src.node, now)
	if srcIsDir && d != nd {
		d.subdirs--
		nd.subdirs++
		srcDir.parent.Store(nd)
	}
	src.node.base().changed(now, false)
	return victim, nil
}

// ReadDir implements vfs.DirReader. Entries come in the order they were
// added; each carries its cookie, which never changes while the entry
// lives, so a listing resumed from any cookie lists every entry present
// throughout exactly once. Cookies start at 3, leaving 1 and 2 to the VFS
// for "." and ".."; an off below 3 starts at the beginning. fn is called
// without the directory's lock held. The listing updates atime (relatime),
// as Linux's iterate_dir does.
func (d *Dir) ReadDir(off int64, fn func(vfs.Dirent) bool) error {
	return d.ReadDirAtime(off, vfs.AtimeRelative, fn)
}

// ReadDirAtime implements vfs.AtimeDirReader: ReadDir, updating atime by
// mode.
func (d *Dir) ReadDirAtime(off int64, mode vfs.AtimeMode, fn func(vfs.Dirent) bool) error {
	var batch [32]vfs.Dirent
	for {
		d.mu.RLock()
		i := sort.Search(len(d.order), func(i int) bool { return d.order[i].cookie > off })
		k := 0
		for ; i < len(d.order) && k < len(batch); i++ {
			if e := d.order[i]; !e.gone {
				batch[k] = vfs.Dirent{Name: e.name, Ino: e.node.base().ino, Type: e.node.dtype(), Off: e.cookie}
				k++
			}
		}
		more := i < len(d.order)
		d.mu.RUnlock()
		for _, e := range batch[:k] {
			if !fn(e) {
				d.touchAtimeMode(mode)
				return nil
			}
			off = e.Off
		}
		if !more {
			d.touchAtimeMode(mode)
			return nil
		}
	}
}
