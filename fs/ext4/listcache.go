package ext4

// Parsed directory listings. A warm walk spends most of its getdents
// time re-reading and re-parsing directory blocks: one 1 KiB block per
// directory for the 65,000-directory bench tree (63.5 MiB, more than the
// default buffer-cache budget, so the blocks thrash), several per
// directory of the nested tree, and 1,600 for the flat tree's root. Linux
// keeps those blocks in the page cache, bounded only by memory. Here a
// directory keeps, after its first getdents, the entries it parsed (name,
// inode, type, offsets; the names in one string): 32 bytes for a
// directory holding only "." and "..", against its 1 KiB block, and no
// block read, checksum or parse on the next getdents.
//
// Bound: one budget for the blocks and the listings of a mount. Each
// listing is charged to the mount's buffer cache (block.View.Charge, at
// listCost of what it holds) as one more entry of its 2Q CLOCK: the
// bcache= limit bounds the cached blocks and listings together, and
// eviction picks among both (a dirty or pinned block is still never
// evicted; a listing is neither). An evicted listing is dropped from its
// directory, whose next getdents reads the blocks and makes it again. A
// dax mount, whose metadata needs no buffer cache, gets a cache of the
// default budget for its listings alone; bcache=0 turns both off. A
// listing larger than the budget is not made, and its directory keeps
// reading its blocks. ListingStats reports the listing bytes, their
// peak and the hits; CacheStats the budget's bytes, listings included.
//
// Consistency: on a read-only mount a listing never changes while
// mounted; an invalidation of the device (a write to it by another path,
// a loop rebinding) drops them with the blocks. A read-write mount's
// directories (rwDir) keep listings too (rwlist.go), made under the
// Writer's lock and dropped under it by every write of one of the
// directory's blocks (writeDirBlock) and when the directory is freed.
//
// Concurrency: a listing is immutable once stored, but for evicted;
// d.list is an atomic pointer. The eviction callback (dropList) runs
// under a buffer-cache lock and only sets evicted and clears d.list; a
// getdents still reading an evicted listing reads valid memory. Two
// getdents racing to fill d.list: the second CompareAndSwap fails and its
// charge is given back.

import (
	"cmp"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/vfs"
)

// dirList is a directory's entries without "." and "..", in order.
type dirList struct {
	ents []listEnt
	cost int64 // what it is charged (listCost)
	// ent is its entry in the buffer cache, set before the listing is
	// stored; evicted is set when the cache drops it.
	ent     *block.Buf
	evicted atomic.Bool
}

// unlisted marks a directory that is listed from its blocks: inline, over
// the budget, or with a block that failed to read or check.
var unlisted = new(dirList)

type listEnt struct {
	name string
	at   int64 // offset of the entry
	next int64 // offset just past it (the getdents cookie)
	ino  uint32
	typ  uint8 // DT_*
}

// listCost is what a listing of n entries (room for n) holding nameBytes
// of names is charged: its header, entries and the name bytes.
func listCost(n, nameBytes int) int64 {
	return int64(unsafe.Sizeof(dirList{})) + int64(n)*int64(unsafe.Sizeof(listEnt{})) + int64(nameBytes)
}

// listCounters are a file system's listing counters.
type listCounters struct {
	bytes, peak  atomic.Int64
	lists        atomic.Int64 // listings held
	hits, misses atomic.Uint64
	dropped      atomic.Uint64
}

// add counts in a listing of cost bytes, and keeps the peak.
func (c *listCounters) add(cost int64) {
	n := c.bytes.Add(cost)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	c.lists.Add(1)
}

// ListingStats are a mount's parsed-listing counters.
type ListingStats struct {
	Bytes, Peak int64 // held now, the most held at once
	// Limit is the budget they share with the buffer cache's blocks.
	Limit    int64
	Listings int64  // directories holding a listing
	Hits     uint64 // getdents answered from a listing
	Misses   uint64 // getdents that read directory blocks (to make a listing, or without one)
	Dropped  uint64 // listings the buffer cache evicted (or dropped at an invalidation)
}

// ListingStats returns the mount's listing counters.
func (fs *FS) ListingStats() ListingStats {
	var limit int64
	if fs.lview != nil {
		limit = fs.lview.Cache().Limit()
	}
	return fs.lists.stats(limit)
}

// stats returns the counters, with the budget limit.
func (c *listCounters) stats(limit int64) ListingStats {
	return ListingStats{Bytes: c.bytes.Load(), Peak: c.peak.Load(), Limit: limit,
		Listings: c.lists.Load(), Hits: c.hits.Load(), Misses: c.misses.Load(), Dropped: c.dropped.Load()}
}

// drop counts out a listing of cost bytes the cache dropped.
func (c *listCounters) drop(cost int64) {
	c.bytes.Add(-cost)
	c.lists.Add(-1)
	c.dropped.Add(1)
}

// cachedList returns d's listing, making it if the budget allows; nil if
// d is listed from its blocks.
func (d *dirNode) cachedList() *dirList {
	if l := d.list.Load(); l != nil {
		if l == unlisted {
			d.fs.lists.misses.Add(1)
			return nil
		}
		d.fs.lists.hits.Add(1)
		l.ent.Touch()
		return l
	}
	fs, in := d.fs, d.in
	fs.lists.misses.Add(1) // this getdents reads blocks, to make a listing or without one
	if fs.lview == nil || in.Flags&FlagInlineData != 0 {
		d.list.CompareAndSwap(nil, unlisted)
		return nil
	}
	l, err := fs.vol.parseList(in)
	if err != nil {
		// The block path reports the error where it meets it, after
		// the entries before it, as before; and no later getdents
		// parses the whole directory again to fail again.
		d.list.CompareAndSwap(nil, unlisted)
		return nil
	}
	if l.cost > fs.lview.Cache().Limit() {
		d.list.CompareAndSwap(nil, unlisted)
		return nil
	}
	if l.ent = fs.lview.Charge(uint64(in.Ino), l.cost, func() { d.dropList(l) }); l.ent == nil {
		return nil // no room now (every block held); a later getdents tries again
	}
	fs.lists.add(l.cost)
	if !d.list.CompareAndSwap(nil, l) { // another getdents stored one
		fs.lview.Uncharge(l.ent)
		if l := d.list.Load(); l != unlisted {
			return l
		}
		return nil
	}
	if l.evicted.Load() { // dropped before it was stored
		d.list.CompareAndSwap(l, nil)
		return l
	}
	if fs.lview == fs.vol.meta {
		fs.vol.demoteDir(in)
	}
	return l
}

// demoteDir demotes directory in's blocks in the buffer cache, now that
// its listing holds what getdents needs from them: a walk of many small
// directories then evicts their blocks before the listings (a Lookup
// that still reads a block promotes it again).
func (v *Volume) demoteDir(in *Inode) {
	var c ExtentCache
	for lblk, n := uint64(0), v.dirBlocks(in); lblk < n; {
		m, err := v.MapBlocks(in, &c, lblk)
		if err != nil || m.Logical > lblk || m.Logical+m.Len <= lblk {
			return
		}
		for i := lblk - m.Logical; !m.Hole && i < m.Len && m.Logical+i < n; i++ {
			v.meta.Demote(m.Physical + i)
		}
		lblk = m.Logical + m.Len
	}
}

// dropList is listing l's eviction callback: d lets go of it.
func (d *dirNode) dropList(l *dirList) {
	l.evicted.Store(true)
	d.list.CompareAndSwap(l, nil)
	d.fs.lists.drop(l.cost)
}

// parseList reads every block of directory in, as scanDir does (the same
// checks), and returns its entries but "." and "..".
func (v *Volume) parseList(in *Inode) (*dirList, error) {
	type pending struct {
		listEnt
		off, n int // the name in names
	}
	var ents []pending
	var names []byte
	_, err := v.scanDir(in, 0, func(name []byte, ino uint32, ft uint8, next int64) bool {
		if string(name) == "." || string(name) == ".." {
			return true // as ReadDirFrom
		}
		// The entry's header is the 8 bytes before its name, and it
		// ends at next: at is next less its rec_len, read there.
		hdr := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(name)), -8)), 8)
		at := next - int64(v.recLen(le16(hdr, 4)))
		ents = append(ents, pending{listEnt{at: at, next: next, ino: ino, typ: dtype(ft)}, len(names), len(name)})
		names = append(names, name...)
		return true
	})
	if err != nil {
		return nil, err
	}
	all := string(names)
	l := &dirList{ents: make([]listEnt, len(ents))}
	for i := range ents {
		l.ents[i] = ents[i].listEnt
		l.ents[i].name = all[ents[i].off : ents[i].off+ents[i].n]
	}
	l.cost = listCost(len(l.ents), len(all))
	return l, nil
}

// read is ReadDir from a cached listing: the entries starting at or
// after off, as walkEntries reports them.
// The entries are in offset order (scanDir's), so a getdents that resumes
// inside a large directory finds its first entry by binary search.
func (l *dirList) read(off int64, fn func(vfs.Dirent) bool) {
	i, _ := slices.BinarySearchFunc(l.ents, off, func(e listEnt, off int64) int { return cmp.Compare(e.at, off) })
	for ; i < len(l.ents); i++ {
		e := &l.ents[i]
		if !fn(vfs.Dirent{Name: e.name, Ino: uint64(e.ino), Type: e.typ, Off: e.next}) {
			return
		}
	}
}
