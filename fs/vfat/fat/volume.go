package fat

import (
	"encoding/binary"
	"sync"
	"syscall"
	"time"
)

// Volume is an open FAT volume. All methods are safe for concurrent use
// (see the package comment).
type Volume struct {
	dev Device
	g   *geometry
	ro  bool

	mu        sync.Mutex
	fat       table
	root      *Node
	nodes     map[nodeKey]*Node
	wasDirty  bool // the dirty bit was set when the volume was opened
	closed    bool
	tailCount uint32
	// dirtyDirs are the directories with changes not yet on the device
	// (writeDir), each with its dirty bitmap.
	dirtyDirs map[*Node]struct{}
	// wb writes the changes back wbDelay after the first change since
	// the last write-back (done arms it; wbArmed says it is armed).
	wb      *time.Timer
	wbArmed bool
	wbDelay time.Duration
	// vec is the vector of a write of data and the zeros after it
	// (stageData).
	vec [2][]byte
	// stg is file data not yet on the device (stage.go).
	stg stage
}

// nodeKey names a directory entry: the first cluster of its directory
// (0 for a FAT12/16 root) and the entry's offset in it. It is what
// Linux's i_pos holds.
type nodeKey struct {
	dir uint32
	off int
}

// Node is a file or directory of the volume. Its fields are protected by
// the volume's mutex; methods that read them are the Volume's.
type Node struct {
	dir   *Node // parent; nil for the root
	off   int   // offset of the short entry in dir
	first int   // offset of the first slot of the entry
	root  bool
	isDir bool // attr's AttrDir, fixed at creation: read without the mutex

	attr  byte
	lcase byte
	start uint32
	size  uint32
	mt    fatTime // modification
	ct    fatTime // creation
	adate uint16

	chain    []uint32 // clusters, once loaded (chainOK)
	chainOK  bool
	data     []byte             // directories: the directory's bytes, once loaded
	dirty    []uint64           // directories: sectors of data changed since the last sync (writeDir)
	index    map[string]indexed // directories: folded names, once built (dir.go)
	aliases  map[[11]byte]int32 // directories: short entries per alias, once built (aliasTaken)
	freeHint int                // directories: no free slot lies before this offset (addSlots)
	unlinked bool
	opens    int
}

// IsDir reports whether n is a directory. A node's type never changes.
func (n *Node) IsDir() bool { return n.isDir }

func (n *Node) fixedRoot() bool { return n.root && n.start == 0 }

// Options change how Open opens a volume.
type Options struct {
	// ReadOnly opens the volume without writing anything to it.
	ReadOnly bool
	// Writeback is how long a change of the FAT or of a directory may
	// stay in memory before it is written to the device (without a
	// flush of the device): 5 seconds if 0, Linux's dirty_writeback
	// interval. Sync and Close write everything at once.
	Writeback time.Duration
}

// defaultWriteback is Options.Writeback's default.
const defaultWriteback = 5 * time.Second

// Open reads the boot sector and the FAT of dev. A device that does not
// hold a FAT volume gives an error wrapping ErrNotFAT. Opening for
// writing sets the boot sector's dirty bit; Close clears it unless it
// was set already (WasDirty).
func Open(dev Device, o Options) (*Volume, error) {
	if dev.Size() < 512 {
		return nil, ErrNotFAT
	}
	b := make([]byte, 512)
	if _, err := dev.ReadAt(b, 0); err != nil {
		return nil, syscall.EIO
	}
	g, err := parseBoot(b, dev.Size())
	if err != nil {
		return nil, err
	}
	v := &Volume{dev: dev, g: g, ro: o.ReadOnly, nodes: map[nodeKey]*Node{}, wbDelay: o.Writeback}
	if v.wbDelay <= 0 {
		v.wbDelay = defaultWriteback
	}
	v.fat.g = g
	free, hinted := fsinfoFree(dev, g)
	if err := v.fat.load(dev, free, hinted); err != nil {
		return nil, err
	}
	v.root = &Node{root: true, isDir: true, attr: AttrDir, off: -1}
	if g.bits == 32 {
		v.root.start = g.rootCluster
		if _, err := v.chainOf(v.root); err != nil {
			return nil, err
		}
	}
	if err := v.loadDir(v.root); err != nil {
		return nil, err
	}
	v.wasDirty = b[g.stateOff]&1 != 0
	if !v.ro {
		if err := v.setState(true); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// WasDirty reports whether the volume was not cleanly unmounted before
// it was opened (Linux warns "Volume was not properly unmounted").
func (v *Volume) WasDirty() bool { return v.wasDirty }

// setState sets or clears the dirty bit (fat_set_state).
func (v *Volume) setState(dirty bool) error {
	if err := v.settle(); err != nil {
		return err
	}
	b := make([]byte, 512)
	if _, err := v.dev.ReadAt(b, 0); err != nil {
		return syscall.EIO
	}
	if dirty {
		b[v.g.stateOff] |= 1
	} else {
		b[v.g.stateOff] &^= 1
	}
	// The whole sector: a device writes no less, and would read it
	// first for a write of one byte.
	if _, err := v.dev.WriteAt(b, 0); err != nil {
		return syscall.EIO
	}
	return nil
}

// Root returns the root directory.
func (v *Volume) Root() *Node { return v.root }

// ClusterSize returns the volume's cluster size in bytes.
func (v *Volume) ClusterSize() int { return int(v.g.clusterSize) }

// Info returns the volume's geometry and free count (exact: a lazily
// read FAT is read whole the first time, as statfs does on Linux).
func (v *Volume) Info() Info {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.fat.exactFree()
	return Info{Bits: v.g.bits, ClusterSize: v.g.clusterSize, Clusters: v.g.clusters, Free: v.fat.free, Serial: v.g.serial, Label: v.g.label}
}

// fsinfoFree returns the free count of FAT32's FSInfo sector, and
// whether there is one: a sector with its three signatures and a count
// no larger than the volume's clusters (0xffffffff is "unknown").
func fsinfoFree(dev Device, g *geometry) (uint32, bool) {
	if g.bits != 32 || g.fsinfo == 0 {
		return 0, false
	}
	b := make([]byte, 512)
	if _, err := dev.ReadAt(b, g.fsinfo); err != nil {
		return 0, false
	}
	if binary.LittleEndian.Uint32(b[0:]) != 0x41615252 || binary.LittleEndian.Uint32(b[484:]) != 0x61417272 || binary.LittleEndian.Uint32(b[508:]) != 0xaa550000 {
		return 0, false
	}
	free := binary.LittleEndian.Uint32(b[488:])
	return free, free <= g.clusters
}

func (v *Volume) tail() uint32 {
	v.tailCount++
	return uint32(time.Now().UnixNano()>>20) + v.tailCount*11
}

// chainOf loads and returns n's cluster chain.
func (v *Volume) chainOf(n *Node) ([]uint32, error) {
	if n.chainOK {
		return n.chain, nil
	}
	if n.fixedRoot() {
		return nil, nil
	}
	cs, err := v.fat.chain(n.start)
	if err != nil {
		return nil, err
	}
	n.chain, n.chainOK = cs, true
	return cs, nil
}

// node returns the Node for entry e of directory dir, making it once.
func (v *Volume) node(dir *Node, e *entry) *Node {
	k := nodeKey{dir.start, e.off}
	if n := v.nodes[k]; n != nil {
		n.first = e.first
		return n
	}
	raw := e.raw
	n := &Node{dir: dir, off: e.off, first: e.first}
	n.attr = raw[11]
	n.isDir = n.attr&AttrDir != 0
	n.lcase = raw[12]
	n.start = e.start(v.g.bits == 32)
	n.size = binary.LittleEndian.Uint32(raw[28:])
	n.ct = fatTime{binary.LittleEndian.Uint16(raw[14:]), binary.LittleEndian.Uint16(raw[16:]), raw[13]}
	n.mt = fatTime{binary.LittleEndian.Uint16(raw[22:]), binary.LittleEndian.Uint16(raw[24:]), 0}
	n.adate = binary.LittleEndian.Uint16(raw[18:])
	if n.IsDir() {
		n.size = 0
	}
	v.nodes[k] = n
	return n
}

// writeEntry stores n's fields in its directory entry.
func (v *Volume) writeEntry(n *Node) error {
	if n.root || n.unlinked {
		return nil
	}
	d := n.dir.data[n.off : n.off+entrySize]
	d[11] = n.attr
	binary.LittleEndian.PutUint16(d[14:], n.ct.time)
	binary.LittleEndian.PutUint16(d[16:], n.ct.date)
	d[13] = n.ct.cs
	binary.LittleEndian.PutUint16(d[18:], n.adate)
	binary.LittleEndian.PutUint16(d[22:], n.mt.time)
	binary.LittleEndian.PutUint16(d[24:], n.mt.date)
	setStart(d, n.start)
	size := n.size
	if n.IsDir() {
		size = 0
	}
	binary.LittleEndian.PutUint32(d[28:], size)
	return v.writeDir(n.dir, n.off, n.off+entrySize)
}

// done ends a change. The FAT's changed sectors, like the directories',
// stay in memory until the next sync or write-back, as the buffers of
// Linux's vfat stay dirty until writeback: a file copied in costs its
// data's writes and a share of the metadata's. It arms the write-back.
func (v *Volume) done(err error) error {
	if !v.wbArmed && !v.closed {
		v.wbArmed = true
		if v.wb == nil {
			v.wb = time.AfterFunc(v.wbDelay, v.writeback)
		} else {
			v.wb.Reset(v.wbDelay)
		}
	}
	return err
}

// writeback writes the changed metadata to the device (the flusher
// thread's periodic writeback; no flush of the device's cache). An error
// is left for the next Sync or Close to report, which write again.
func (v *Volume) writeback() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.wbArmed = false
	if v.closed || v.ro {
		return
	}
	if v.flushDirs() == nil && v.fat.flush(v.dev) == nil {
		v.writeFSInfo()
	}
}

func (v *Volume) writable() error {
	if v.ro {
		return syscall.EROFS
	}
	if v.closed {
		return syscall.EIO
	}
	return nil
}

// Lookup finds name in directory dir: ENOENT if absent, ENOTDIR if dir
// is not a directory.
func (v *Volume) Lookup(dir *Node, name string) (*Node, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !dir.IsDir() {
		return nil, syscall.ENOTDIR
	}
	if dir.unlinked {
		return nil, syscall.ENOENT
	}
	if stripTail(name) == "" {
		return nil, syscall.ENOENT
	}
	e, err := v.find(dir, name)
	if err != nil {
		return nil, err
	}
	return v.node(dir, e), nil
}

// Parent returns the directory that holds dir: the root for the root
// (the ".." a walk takes).
func (v *Volume) Parent(dir *Node) *Node {
	v.mu.Lock()
	defer v.mu.Unlock()
	if dir.dir == nil {
		return dir
	}
	return dir.dir
}

// A DirEntry is one listed entry.
type DirEntry struct {
	Name  string
	Node  *Node
	IsDir bool
	// Next is the position after the entry, to resume the listing from.
	Next int
}

// ReadDir lists directory dir from position pos (0: the start) in disk
// order, calling fn for each entry until it returns false.
func (v *Volume) ReadDir(dir *Node, pos int, fn func(DirEntry) bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if dir.unlinked {
		return nil
	}
	var ents []DirEntry
	err := v.entries(dir, pos, func(e *entry) bool {
		n := v.node(dir, e)
		ents = append(ents, DirEntry{Name: e.name, Node: n, IsDir: n.IsDir(), Next: e.off + entrySize})
		return true
	})
	if err != nil {
		return err
	}
	v.mu.Unlock()
	defer v.mu.Lock()
	for _, e := range ents {
		if !fn(e) {
			break
		}
	}
	return nil
}

// Create makes a file (or, with dir true, a directory) called name in
// parent, with the times set to now (vfat_create, vfat_mkdir). A name
// that exists gives EEXIST.
func (v *Volume) Create(parent *Node, name string, dir bool, now time.Time) (*Node, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.writable(); err != nil {
		return nil, err
	}
	if parent.unlinked {
		return nil, syscall.ENOENT
	}
	name = stripTail(name)
	if name == "" {
		return nil, syscall.ENOENT
	}
	if _, err := v.find(parent, name); err == nil {
		return nil, syscall.EEXIST
	} else if err != syscall.ENOENT {
		return nil, err
	}
	t := toFAT(now)
	var start uint32
	var dirData []byte
	attr := byte(AttrArch)
	if dir {
		attr = AttrDir
		c, b, err := v.newDirCluster(parent, t)
		if err != nil {
			return nil, v.done(err)
		}
		start, dirData = c, b
	}
	slots, err := v.buildSlots(parent, name, attr, start, t)
	if err == nil {
		var at int
		at, err = v.addSlots(parent, slots)
		if err == nil {
			e := entry{off: at + len(slots) - entrySize, first: at}
			e.raw = parent.data[e.off : e.off+entrySize]
			n := v.node(parent, &e)
			if dir {
				n.chain, n.chainOK = []uint32{start}, true
				n.data = dirData
			}
			v.touchDir(parent, t)
			return n, v.done(nil)
		}
	}
	if dir {
		v.fat.freeChain([]uint32{start})
	}
	return nil, v.done(err)
}

// newDirCluster allocates and writes the first cluster of a new directory
// of parent: "." and ".." and zeros (fat_alloc_new_dir). It returns the
// cluster and its bytes, the new directory's cache.
func (v *Volume) newDirCluster(parent *Node, t fatTime) (uint32, []byte, error) {
	cs, err := v.fat.alloc(1, 0)
	if err != nil {
		return 0, nil, err
	}
	c := cs[0]
	b := make([]byte, v.g.clusterSize)
	up := parent.start
	if parent.root {
		up = 0 // ".." of a child of the root points at cluster 0
	}
	for i, nm := range [][11]byte{dotName, dotdotName} {
		de := b[i*entrySize:]
		copy(de, nm[:])
		de[11] = AttrDir
		binary.LittleEndian.PutUint16(de[14:], t.time)
		binary.LittleEndian.PutUint16(de[16:], t.date)
		de[13] = t.cs
		binary.LittleEndian.PutUint16(de[18:], t.date)
		binary.LittleEndian.PutUint16(de[22:], t.time)
		binary.LittleEndian.PutUint16(de[24:], t.date)
		if i == 0 {
			setStart(de, c)
		} else {
			setStart(de, up)
		}
	}
	if err := v.stageData(b, 0, v.g.clusterOff(c)); err != nil {
		v.fat.freeChain(cs)
		return 0, nil, err
	}
	return c, b, nil
}

// touchDir sets a directory's modification time after a change of its
// entries.
func (v *Volume) touchDir(d *Node, t fatTime) {
	if d.root {
		return
	}
	d.mt = t
	d.adate = t.date
	v.writeEntry(d)
}

// Remove removes name from parent: a file (Unlink) unless dir, else an
// empty directory (Rmdir), with the errors of unlink(2) and rmdir(2).
// A removed file's clusters are freed once it is not open (Release).
func (v *Volume) Remove(parent *Node, name string, dir bool, now time.Time) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.writable(); err != nil {
		return err
	}
	e, err := v.find(parent, name)
	if err != nil {
		return err
	}
	n := v.node(parent, e)
	if dir != n.IsDir() {
		if dir {
			return syscall.ENOTDIR
		}
		return syscall.EISDIR
	}
	if dir {
		empty, err := v.isEmpty(n)
		if err != nil {
			return err
		}
		if !empty {
			return syscall.ENOTEMPTY
		}
	}
	if err := v.removeSlots(parent, e.first, e.off); err != nil {
		return v.done(err)
	}
	v.detach(n)
	v.touchDir(parent, toFAT(now))
	return v.done(v.evictIfUnused(n))
}

// detach takes n out of the name cache and marks it unlinked.
func (v *Volume) detach(n *Node) {
	delete(v.nodes, nodeKey{n.dir.start, n.off})
	n.unlinked = true
}

// evictIfUnused frees the clusters of an unlinked node nobody has open
// (fat_evict_inode).
func (v *Volume) evictIfUnused(n *Node) error {
	if !n.unlinked || n.opens > 0 {
		return nil
	}
	cs, err := v.chainOf(n)
	if err != nil {
		return err
	}
	v.fat.freeChain(cs)
	if n.IsDir() {
		v.forgetDir(n)
	}
	n.chain, n.start, n.size, n.data = nil, 0, 0, nil
	n.aliases, n.freeHint = nil, 0
	return nil
}

// Opened counts an open of n; Release undoes it and frees an unlinked
// file's clusters at the last.
func (v *Volume) Opened(n *Node) {
	v.mu.Lock()
	n.opens++
	v.mu.Unlock()
}

// Release undoes one Opened.
func (v *Volume) Release(n *Node) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	n.opens--
	if n.unlinked && n.opens == 0 && !v.ro && !v.closed {
		return v.done(v.evictIfUnused(n))
	}
	return nil
}

// Rename moves oldName in odir to newName in ndir with rename(2)'s rules
// (vfat_rename). With noReplace an existing newName gives EEXIST. The
// caller has checked that a directory does not move into itself.
// Renaming a name onto another name of the same file does nothing, as
// the VFS does for two names of one inode: rename("a", "A") keeps "a".
func (v *Volume) Rename(odir *Node, oldName string, ndir *Node, newName string, noReplace bool, now time.Time) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.writable(); err != nil {
		return err
	}
	oe, err := v.find(odir, oldName)
	if err != nil {
		return err
	}
	on := v.node(odir, oe)
	t := toFAT(now)
	var tn *Node
	te, err := v.find(ndir, newName)
	switch {
	case err == nil:
		tn = v.node(ndir, te)
		if tn == on {
			return nil
		}
		if noReplace {
			return syscall.EEXIST
		}
		if on.IsDir() && !tn.IsDir() {
			return syscall.ENOTDIR
		}
		if !on.IsDir() && tn.IsDir() {
			return syscall.EISDIR
		}
		if tn.IsDir() {
			empty, err := v.isEmpty(tn)
			if err != nil {
				return err
			}
			if !empty {
				return syscall.ENOTEMPTY
			}
		}
	case err != syscall.ENOENT:
		return err
	}
	if stripTail(newName) == "" {
		return syscall.ENOENT
	}
	// The ".." of a directory that changes parent.
	var dotdot *Node
	if on.IsDir() && odir != ndir {
		if err := v.loadDir(on); err != nil {
			return err
		}
		if len(on.data) < 2*entrySize || [11]byte(on.data[entrySize:entrySize+11]) != dotdotName {
			return syscall.EIO
		}
		dotdot = on
	}
	var newOff, newFirst int
	if tn != nil {
		// The target's entry keeps its name and takes the moved file
		// (fat_detach, fat_attach).
		newOff, newFirst = tn.off, tn.first
		v.detach(tn)
	} else {
		slots, err := v.buildSlots(ndir, stripTail(newName), on.attr, on.start, t)
		if err != nil {
			return v.done(err)
		}
		at, err := v.addSlots(ndir, slots)
		if err != nil {
			return v.done(err)
		}
		newOff, newFirst = at+len(slots)-entrySize, at
		// The short entry keeps the moved file's times and case flags.
		ndir.data[newOff+12] = 0
	}
	// The old entry's offset may have moved if odir == ndir grew; it
	// did not: growth appends.
	delete(v.nodes, nodeKey{odir.start, on.off})
	oldFirst, oldOff := oe.first, oe.off
	on.dir, on.off, on.first = ndir, newOff, newFirst
	v.nodes[nodeKey{ndir.start, newOff}] = on
	if err := v.writeEntry(on); err != nil {
		return v.done(err)
	}
	if dotdot != nil {
		up := ndir.start
		if ndir.root {
			up = 0
		}
		setStart(on.data[entrySize:], up)
		if err := v.writeDir(on, entrySize, 2*entrySize); err != nil {
			return v.done(err)
		}
	}
	if err := v.removeSlots(odir, oldFirst, oldOff); err != nil {
		return v.done(err)
	}
	v.touchDir(odir, t)
	if ndir != odir {
		v.touchDir(ndir, t)
	}
	if tn != nil {
		return v.done(v.evictIfUnused(tn))
	}
	return v.done(nil)
}

// Exchange swaps the files called oldName in odir and newName in ndir
// (renameat2's RENAME_EXCHANGE, vfat_rename_exchange): each directory
// entry keeps its name and takes the other file, a directory that
// changes parent has its ".." pointed at the new one (so the parents'
// link counts, counted from their entries, follow), and both parents'
// modification times are set to now. The caller has checked that both
// names exist and that neither is an ancestor of the other's parent;
// two names of one file are left as they are.
func (v *Volume) Exchange(odir *Node, oldName string, ndir *Node, newName string, now time.Time) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.writable(); err != nil {
		return err
	}
	oe, err := v.find(odir, oldName)
	if err != nil {
		return err
	}
	on := v.node(odir, oe)
	ne, err := v.find(ndir, newName)
	if err != nil {
		return err
	}
	nn := v.node(ndir, ne)
	if on == nn {
		return nil
	}
	// The ".." entries to rewrite, read before anything changes
	// (vfat_get_dotdot_de).
	if odir != ndir {
		for _, d := range []*Node{on, nn} {
			if !d.IsDir() {
				continue
			}
			if err := v.loadDir(d); err != nil {
				return err
			}
			if len(d.data) < 2*entrySize || [11]byte(d.data[entrySize:entrySize+11]) != dotdotName {
				return syscall.EIO
			}
		}
	}
	t := toFAT(now)
	// Each node takes the other's entry (fat_detach, fat_attach); the
	// entries' names and case flags stay where they are.
	delete(v.nodes, nodeKey{odir.start, on.off})
	delete(v.nodes, nodeKey{ndir.start, nn.off})
	on.dir, nn.dir = ndir, odir
	on.off, nn.off = nn.off, on.off
	on.first, nn.first = nn.first, on.first
	on.lcase, nn.lcase = nn.lcase, on.lcase
	v.nodes[nodeKey{ndir.start, on.off}] = on
	v.nodes[nodeKey{odir.start, nn.off}] = nn
	if err := v.writeEntry(on); err != nil {
		return v.done(err)
	}
	if err := v.writeEntry(nn); err != nil {
		return v.done(err)
	}
	if odir != ndir {
		for _, d := range []*Node{on, nn} {
			if !d.IsDir() {
				continue
			}
			up := d.dir.start
			if d.dir.root {
				up = 0 // ".." of a child of the root points at cluster 0
			}
			setStart(d.data[entrySize:], up)
			if err := v.writeDir(d, entrySize, 2*entrySize); err != nil {
				return v.done(err)
			}
		}
	}
	v.touchDir(odir, t)
	if ndir != odir {
		v.touchDir(ndir, t)
	}
	return v.done(nil)
}

// Sync writes the FAT, FSInfo and the device's caches out.
func (v *Volume) Sync() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.sync()
}

func (v *Volume) sync() error {
	if err := v.writeAll(); err != nil {
		return err
	}
	if !v.ro {
		if err := v.dev.Flush(); err != nil {
			return syscall.EIO
		}
	}
	return nil
}

// writeAll writes every change kept in memory (directories, the FAT,
// FSInfo) to the device, without flushing the device's cache.
func (v *Volume) writeAll() error {
	if v.ro {
		return nil
	}
	if err := v.flushDirs(); err != nil {
		return err
	}
	if err := v.fat.flush(v.dev); err != nil {
		return err
	}
	return v.writeFSInfo()
}

// writeFSInfo updates FAT32's FSInfo sector, if it has a valid one
// (fat_clusters_flush).
func (v *Volume) writeFSInfo() error {
	if v.g.bits != 32 || v.g.fsinfo == 0 {
		return nil
	}
	if err := v.settle(); err != nil {
		return err
	}
	b := make([]byte, 512)
	if _, err := v.dev.ReadAt(b, v.g.fsinfo); err != nil {
		return syscall.EIO
	}
	if binary.LittleEndian.Uint32(b[0:]) != 0x41615252 || binary.LittleEndian.Uint32(b[484:]) != 0x61417272 {
		return nil
	}
	binary.LittleEndian.PutUint32(b[488:], v.fat.free)
	binary.LittleEndian.PutUint32(b[492:], v.fat.next-1)
	if _, err := v.dev.WriteAt(b, v.g.fsinfo); err != nil {
		return syscall.EIO
	}
	return nil
}

// Close writes what the volume kept in memory to the device and clears
// the dirty bit it set (unless the volume was dirty before), as Linux's
// vfat does at unmount (sync_filesystem, then fat_set_state): without a
// flush of the device's cache, which only fsync and Sync ask for. Later
// calls give EIO.
func (v *Volume) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	if v.wb != nil {
		v.wb.Stop()
	}
	err := v.writeAll()
	if !v.ro && !v.wasDirty && err == nil {
		err = v.setState(false)
	}
	v.closed = true
	return err
}
