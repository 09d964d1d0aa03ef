package ext4

// Parsed directory listings (disk.DirList) as a mount keeps them: a
// directory keeps, after its first getdents, the entries it parsed, so
// that the next getdents reads no block.
//
// Bound: one budget for the blocks and the listings of a mount. Each
// listing is charged to the mount's buffer cache (block.View.Charge, at
// its Cost) as one more entry of its 2Q CLOCK: the bcache= limit bounds
// the cached blocks and listings together, and eviction picks among both
// (a dirty or pinned block is still never evicted; a listing is
// neither). An evicted listing is dropped from its directory, whose next
// getdents reads the blocks and makes it again. A dax mount, whose
// metadata needs no buffer cache, gets a cache of the default budget for
// its listings alone; bcache=0 turns both off. A listing larger than the
// budget is not made, and its directory keeps reading its blocks.
// ListingStats reports the listing bytes, their peak and the hits;
// CacheStats the budget's bytes, listings included.
//
// Consistency: on a read-only mount a listing never changes while
// mounted; an invalidation of the device (a write to it by another path,
// a loop rebinding) drops them with the blocks. A read-write mount's
// directories (rwDir) keep listings too (rwlist.go), made under the
// Writer's lock and dropped under it by every write of one of the
// directory's blocks and when the directory is freed.
//
// Concurrency: a listing is immutable once stored, but for evicted;
// d.list is an atomic pointer. The eviction callback (dropList) runs
// under a buffer-cache lock and only sets evicted and clears d.list; a
// getdents still reading an evicted listing reads valid memory. Two
// getdents racing to fill d.list: the second CompareAndSwap fails and its
// charge is given back.

import (
	"sync/atomic"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// listing is a directory's listing as a mount keeps it.
type listing struct {
	l *disk.DirList
	// ent is its entry in the buffer cache, set before the listing is
	// stored; evicted is set when the cache drops it.
	ent     *block.Buf
	evicted atomic.Bool
	// On a read-write mount (rwlist.go): the directory's inode and the
	// Writer's directory generation when the listing was made; both hold
	// while the listing is stored, since any change to the directory
	// drops it.
	in  *disk.Inode
	gen uint64
}

// unlisted marks a directory that is listed from its blocks: inline, over
// the budget, or with a block that failed to read or check.
var unlisted = new(listing)

// read is ReadDir from the listing: the entries but "." and ".." at or
// after position off, each with the position after it as its cookie.
func (l *listing) read(off int64, fn func(vfs.Dirent) bool) {
	l.l.Read(off, func(name string, ino uint32, typ uint8, next int64) bool {
		return fn(vfs.Dirent{Name: name, Ino: uint64(ino), Type: typ, Off: next})
	})
}

// source is what a directory handle lists from with this listing: the
// listing itself, nil for none.
func (l *listing) source() *disk.DirList {
	if l == nil {
		return nil
	}
	return l.l
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
func (d *dirNode) cachedList() *listing {
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
	if fs.lview == nil || in.Flags&disk.FlagInlineData != 0 {
		d.list.CompareAndSwap(nil, unlisted)
		return nil
	}
	dl, err := fs.vol.ParseList(in)
	if err != nil {
		// The block path reports the error where it meets it, after
		// the entries before it, as before; and no later getdents
		// parses the whole directory again to fail again.
		d.list.CompareAndSwap(nil, unlisted)
		return nil
	}
	if dl.Cost() > fs.lview.Cache().Limit() {
		d.list.CompareAndSwap(nil, unlisted)
		return nil
	}
	l := &listing{l: dl}
	if l.ent = fs.lview.Charge(uint64(in.Ino), dl.Cost(), func() { d.dropList(l) }); l.ent == nil {
		return nil // no room now (every block held); a later getdents tries again
	}
	fs.lists.add(dl.Cost())
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
	if fs.lview == fs.vol.MetaView() {
		fs.vol.DemoteDir(in)
	}
	return l
}

// dropList is listing l's eviction callback: d lets go of it.
func (d *dirNode) dropList(l *listing) {
	l.evicted.Store(true)
	d.list.CompareAndSwap(l, nil)
	d.fs.lists.drop(l.l.Cost())
}
