package ext4

// Parsed directory listings. A warm walk spends most of its getdents
// time re-reading and re-parsing directory blocks: one 1 KiB block per
// directory for the 65,000-directory bench tree (63.5 MiB, more than the
// default buffer-cache budget, so the blocks thrash), several per
// directory of the nested tree, and 1,600 for the flat tree's root. Linux
// keeps those blocks in the page cache, bounded only by memory. Here a
// directory keeps, after its first getdents, the entries it parsed in
// listing order (name, inode, type, position, "." and ".." included; the
// names in one string): 107 bytes for a directory holding only "." and
// "..", against its 1 KiB block, and no block read, checksum or parse on
// the next getdents. The listing stands for the kernel's fills and block
// walks (dirhash.go's dirSource).
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

// dirList is a directory's entries, "." and ".." among them, in the
// kernel's listing order (dirhash.go): by hash, with hash cookies as
// positions, for the directories ext4_dx_readdir lists; by offset
// otherwise.
type dirList struct {
	ents []listEnt
	end  int64 // the position after the last entry: EXT4_HTREE_EOF_64BIT or i_size
	cost int64 // what it is charged (listCost)
	// ent is its entry in the buffer cache, set before the listing is
	// stored; evicted is set when the cache drops it.
	ent     *block.Buf
	evicted atomic.Bool
	// On a read-write mount (rwlist.go): the directory's inode and the
	// Writer's dirGen when the listing was made; both hold while the
	// listing is stored, since any change to the directory drops it.
	in  *Inode
	gen uint64
}

// unlisted marks a directory that is listed from its blocks: inline, over
// the budget, or with a block that failed to read or check.
var unlisted = new(dirList)

type listEnt struct {
	name string
	at   int64 // the entry's position: its hash cookie or offset
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

// parseList reads directory in as a listing from its start would, with
// the same checks, and returns its entries in listing order. A hash-order
// listing whose fills do not come out in hash order (a damaged index) is
// not cached: the cursor reads such a directory fill by fill, as the
// kernel.
func (v *Volume) parseList(in *Inode) (*dirList, error) {
	var ents []listEnt
	if v.isDxDir(in) {
		var fill []listEnt
		var hash, minor uint32
		for {
			var next uint32
			var err error
			fill, next, err = v.dxFill(in, hash, minor, fill)
			if err != nil {
				return nil, err
			}
			if len(ents) > 0 && len(fill) > 0 && fill[0].at < ents[len(ents)-1].at {
				return nil, errBadDx
			}
			ents = append(ents, fill...)
			if len(fill) == 0 || next == ^uint32(0) {
				break
			}
			hash, minor = next, 0
		}
	} else {
		if _, err := v.linearIterate(in, 0, func(_ int64, e listEnt) bool {
			ents = append(ents, e)
			return true
		}); err != nil {
			return nil, err
		}
	}
	// The names in one string.
	n := 0
	for i := range ents {
		n += len(ents[i].name)
	}
	names := make([]byte, 0, n)
	for i := range ents {
		names = append(names, ents[i].name...)
	}
	all := string(names)
	l := &dirList{ents: make([]listEnt, len(ents)), end: v.dirEnd(in)}
	off := 0
	for i := range ents {
		l.ents[i] = ents[i]
		l.ents[i].name = all[off : off+len(ents[i].name)]
		off += len(ents[i].name)
	}
	l.cost = listCost(len(l.ents), len(all))
	return l, nil
}

// from is the index of the first entry at or after position pos.
func (l *dirList) from(pos int64) int {
	i, _ := slices.BinarySearchFunc(l.ents, pos, func(e listEnt, p int64) int { return cmp.Compare(e.at, p) })
	return i
}

// read is ReadDir from a cached listing: the entries but "." and ".."
// at or after position off, each with the position after it (the next
// entry's, or the end) as its cookie.
func (l *dirList) read(off int64, fn func(vfs.Dirent) bool) {
	for i := l.from(off); i < len(l.ents); i++ {
		e := &l.ents[i]
		if e.name == "." || e.name == ".." {
			continue
		}
		next := l.end
		if i+1 < len(l.ents) {
			next = l.ents[i+1].at
		}
		if !fn(vfs.Dirent{Name: e.name, Ino: uint64(e.ino), Type: e.typ, Off: next}) {
			return
		}
	}
}

// linear is linearIterate from a cached listing of a directory listed by
// offset.
func (l *dirList) linear(pos int64, emit func(at int64, e listEnt) bool) int64 {
	for i := l.from(pos); i < len(l.ents); i++ {
		if !emit(l.ents[i].at, l.ents[i]) {
			return l.ents[i].at
		}
	}
	return max(pos, l.end)
}
