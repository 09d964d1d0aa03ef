package tmpfs

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Linux's tmpfs reports a directory's size as 20 bytes (BOGO_DIRENT_SIZE)
// for each entry, plus two for "." and "..".
const direntSize = 20

// Directory offsets follow Linux's tmpfs (simple_offset, and the
// d_children list its readdir walks). Each entry has an offset that never
// changes while it keeps its name: a new name (create, link, a rename to
// a free name) takes the directory's next offset, counting up from
// dirOffsetMin; a rename over an existing name takes the replaced entry's
// offset; RENAME_EXCHANGE leaves each name its offset. A listing walks the
// entries newest first: a new name, a renamed entry and both entries of
// an exchange move to the head. A listing resumes at the live entry with
// the largest offset not above the position (at the head if there is
// none), and walks on from it, so that entries renamed away and back
// while a directory is read (which move to the head) are not listed
// again. The position after an entry
// (its d_off) is the offset of the next entry, or dirOffsetEOD after the
// last. ReadDir's cookies are those positions less 2: the VFS adds 2,
// after "." and "..".
const (
	dirOffsetMin = 3
	dirOffsetEOD = math.MaxInt32
)

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
	// order is the list readdir walks, oldest first (it walks from the
	// end); byOff holds the entries by offset, ascending. Both keep gone
	// entries until they are compacted away.
	order   []*dentry
	byOff   []*dentry
	gone    int
	nextOff int64
	subdirs int64       // for nlink: 2 + subdirectories
	removed bool        // rmdir'd: nothing can be added (Linux IS_DEADDIR)
	freed   atomic.Bool // the inode went back (free); not under mu
}

// dentry is one name in a directory, at one place in its list: moving it
// to the head makes a new dentry and leaves this one gone.
type dentry struct {
	name string
	node node
	off  int64 // the stable offset
	pos  int   // index in order
	slot int   // index in byOff
	gone bool
}

func (fs *FS) newDir(parent *Dir, mode uint32, c vfs.Cred, now instant) *Dir {
	d := &Dir{names: map[string]*dentry{}, nextOff: dirOffsetMin}
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
	d.insert(name, n, -1)
	d.changed(now, true)
}

// insert enters n as name at the head of the list, with mu held: with the
// next offset if slot is -1, else with the offset of byOff[slot], whose
// entry is gone.
func (d *Dir) insert(name string, n node, slot int) *dentry {
	e := &dentry{name: name, node: n, pos: len(d.order), slot: slot}
	if slot < 0 {
		e.off, e.slot = d.nextOff, len(d.byOff)
		d.nextOff++
		d.byOff = append(d.byOff, e)
	} else {
		e.off = d.byOff[slot].off
		d.byOff[slot] = e
	}
	d.names[name] = e
	d.order = append(d.order, e)
	return e
}

// unname marks e gone, with mu held; compact drops it later.
func (d *Dir) unname(e *dentry) {
	delete(d.names, e.name)
	e.gone = true
	d.gone++
}

// toHead moves e to the head of the list, keeping its name and offset.
func (d *Dir) toHead(e *dentry) {
	d.unname(e)
	d.insert(e.name, e.node, e.slot)
}

// remove drops e, with mu held, and sets the directory's mtime and ctime.
func (d *Dir) remove(e *dentry, now int64) {
	d.unname(e)
	d.compact()
	d.changed(now, true)
}

// compact drops the gone entries once they are half of the list, so that
// removal is O(1) amortised.
func (d *Dir) compact() {
	if d.gone <= 16 || d.gone <= len(d.order)/2 {
		return
	}
	live := d.order[:0]
	for _, e := range d.order {
		if !e.gone {
			e.pos = len(live)
			live = append(live, e)
		}
	}
	clear(d.order[len(live):])
	d.order = live
	byOff := d.byOff[:0]
	for _, e := range d.byOff {
		if !e.gone {
			e.slot = len(byOff)
			byOff = append(byOff, e)
		}
	}
	clear(d.byOff[len(byOff):])
	d.byOff = byOff
	d.gone = 0
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
// the directory counts depend on them. The entry gets a new
// place at the head of nd's list, and the offset of the name it replaces
// or a new one, as Linux's tmpfs gives. Both
// directories' mtime and ctime move, and the ctime of the moved and the
// replaced node. It returns the node that lost its name to the rename,
// to be freed after the locks are dropped, and whether the rename was
// made (a rename between two links of one node is not). A whiteout ws,
// if not nil, takes oldName.
func (d *Dir) renameLocked(oldName string, nd *Dir, newName string, ws node) (node, bool, error) {
	src := d.names[oldName]
	if src == nil || nd.removed {
		return nil, false, errENOENT
	}
	srcDir, srcIsDir := src.node.(*Dir)
	dst := nd.names[newName]
	if dst != nil && dst.node == src.node {
		return nil, false, nil // two links to one node: rename(2) does nothing
	}
	now := clockNow().wall
	var victim node
	if dst != nil {
		dstDir, dstIsDir := dst.node.(*Dir)
		switch {
		case srcIsDir && !dstIsDir:
			return nil, false, errENOTDIR
		case !srcIsDir && dstIsDir:
			return nil, false, errEISDIR
		case dstIsDir:
			if err := dstDir.kill(now); err != nil {
				return nil, false, err
			}
			nd.subdirs--
		default:
			dropLink(dst.node, now)
		}
		nd.unname(dst)
		victim = dst.node
	}
	// simple_offset_rename: the replaced name's offset, or a new one.
	d.unname(src)
	slot := -1
	if dst != nil {
		slot = dst.slot
	}
	moved := nd.insert(newName, src.node, slot)
	if ws != nil {
		// shmem_whiteout: the next offset after the move's, and a place
		// below the moved entry, which the VFS's d_move puts at the head
		// after the whiteout's dentry was made.
		w := d.insert(oldName, ws, -1)
		if nd == d {
			d.order[moved.pos], d.order[w.pos] = w, moved
			moved.pos, w.pos = w.pos, moved.pos
		}
	}
	d.compact()
	if nd != d {
		nd.compact()
	}
	d.changed(now, true)
	nd.changed(now, true)
	if srcIsDir && d != nd {
		d.subdirs--
		nd.subdirs++
		srcDir.parent.Store(nd)
	}
	src.node.base().changed(now, false)
	return victim, true, nil
}

// ReadDir implements vfs.DirReader: the entries newest first, from the
// position off+2 (see dirOffsetMin); an off of 0 starts at the head. fn is called without the directory's lock held. The listing
// updates atime (relatime), as Linux's iterate_dir does.
func (d *Dir) ReadDir(off int64, fn func(vfs.Dirent) bool) error {
	return d.ReadDirAtime(off, vfs.AtimeRelative, fn)
}

// DirEnd implements vfs.DirPositioner: a listing that ran out rests at
// dirOffsetEOD.
func (d *Dir) DirEnd() int64 { return dirOffsetEOD - 2 }

// DirAt implements vfs.DirPositioner: the cookie of e's own offset, while
// e keeps its name.
func (d *Dir) DirAt(e vfs.Dirent) (int64, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if de := d.names[e.Name]; de != nil && de.node.base().ino == e.Ino {
		return de.off - 2, true
	}
	return 0, false
}

// ReadDirAtime implements vfs.AtimeDirReader: ReadDir, updating atime by
// mode.
func (d *Dir) ReadDirAtime(off int64, mode vfs.AtimeMode, fn func(vfs.Dirent) bool) error {
	var batch [32]vfs.Dirent
	pos := off + 2
	for {
		d.mu.RLock()
		// offset_dir_lookup: the live entry with the largest offset not
		// above pos, else the head; nothing at dirOffsetEOD.
		i := len(d.order) - 1
		if pos >= dirOffsetEOD {
			i = -1
		} else if pos > 2 {
			j := sort.Search(len(d.byOff), func(j int) bool { return d.byOff[j].off > pos }) - 1
			for j >= 0 && d.byOff[j].gone {
				j--
			}
			if j >= 0 {
				i = d.byOff[j].pos
			}
		}
		k := 0
		for ; i >= 0 && k < len(batch); i-- {
			if e := d.order[i]; !e.gone {
				if k > 0 {
					batch[k-1].Off = e.off - 2
				}
				batch[k] = vfs.Dirent{Name: e.name, Ino: e.node.base().ino, Type: e.node.dtype(), Off: dirOffsetEOD - 2}
				k++
			}
		}
		for i >= 0 && d.order[i].gone {
			i--
		}
		more := i >= 0
		if more && k > 0 {
			batch[k-1].Off = d.order[i].off - 2
		}
		d.mu.RUnlock()
		for _, e := range batch[:k] {
			if !fn(e) {
				d.touchAtimeMode(mode)
				return nil
			}
			pos = e.Off + 2
		}
		if !more {
			d.touchAtimeMode(mode)
			return nil
		}
	}
}
