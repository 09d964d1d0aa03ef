package ext4

// Parsed directory listings (disk.DirList) as a mount keeps them: a
// directory keeps, after its first getdents, the entries it parsed, so
// that the next getdents reads no block.
//
// Bound: one budget for the blocks and the listings, the process's
// (block.ProcessCache, shared by every mount) or the mount's own
// (bcache=). Each listing is charged to the mount's buffer cache
// (block.View.Charge, at its Cost) as one more entry of its 2Q CLOCK:
// the limit bounds the cached blocks and listings together, and eviction
// picks among both (a dirty or pinned block is still never evicted; a
// listing is neither). An evicted listing is dropped from its directory,
// whose next getdents reads the blocks and makes it again. A dax mount,
// whose metadata needs no buffer cache, charges its listings alone;
// bcache=0 turns both off. A listing larger than the
// budget is not made, and its directory keeps reading its blocks.
// ListingStats reports the listing bytes, their peak and the hits;
// CacheStats the budget's bytes, listings included.
//
// Consistency: on a read-only mount a listing never changes while
// mounted; an invalidation of the device (a write to it by another path,
// a loop rebinding) drops them with the blocks. On a read-write mount a
// listing records the directory's sequence count (disk.Ref.Seq) at which
// it was parsed, and is used only while the count has not moved: any
// change the Writer makes to the directory moves it. There every listing
// is parsed in one lock-free Read and then used outside it, stored if the
// budget allows, else kept by the open directory alone.
//
// Concurrency: a listing is immutable once stored, but for evicted;
// d.list is an atomic pointer. The eviction callback (dropList) runs
// under a buffer-cache lock and only sets evicted and clears d.list; a
// getdents still reading an evicted listing reads valid memory. Two
// getdents racing to fill d.list: the second CompareAndSwap fails and its
// charge is given back.

import (
	"sync/atomic"
	"syscall"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// listing is a directory's listing as a mount keeps it.
type listing struct {
	l *disk.DirList
	// in is the directory's inode as it was parsed, and gen its sequence
	// count then (0 on a read-only mount, where it never moves).
	in  *disk.Inode
	gen uint64
	// ent is its entry in the buffer cache, set before the listing is
	// stored (nil for a listing too large to store); evicted is set when
	// the cache drops it.
	ent     *block.Buf
	evicted atomic.Bool
}

// unlisted marks a read-only mount's directory that is listed from its
// blocks: inline, over the budget, or with a block that failed to read
// or check.
var unlisted = new(listing)

// listKeys numbers the listings, their keys in the buffer cache: unique
// in the process, since mounts of one device may share a cache, and an
// older listing of a directory (or of an inode its number named before)
// may still be charged.
var listKeys atomic.Uint64

// read is ReadDir from the listing: the entries but "." and ".." at or
// after position off, each with the position after it as its cookie.
func (l *listing) read(off int64, fn func(vfs.Dirent) bool) {
	l.l.Read(off, func(name string, ino uint32, typ uint8, next int64) bool {
		return fn(vfs.Dirent{Name: name, Ino: uint64(ino), Type: typ, Off: next})
	})
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
	return ListingStats{Bytes: fs.lists.bytes.Load(), Peak: fs.lists.peak.Load(), Limit: limit,
		Listings: fs.lists.lists.Load(), Hits: fs.lists.hits.Load(), Misses: fs.lists.misses.Load(), Dropped: fs.lists.dropped.Load()}
}

// drop counts out a listing of cost bytes the cache dropped.
func (c *listCounters) drop(cost int64) {
	c.bytes.Add(-cost)
	c.lists.Add(-1)
	c.dropped.Add(1)
}

// listing returns d's listing as it is now: the stored one while it
// holds (always on a read-only mount, while the directory's count has
// not moved on a read-write one), else a new one, stored if the budget
// allows. On a read-only mount a directory listed from its blocks gives
// nil. On a read-write one the listing is parsed in one Read: ENOENT for
// a directory removed meanwhile, the damage for a directory that cannot
// be parsed (the caller reports it, reading the blocks itself).
func (d *dirNode) listing() (*listing, error) {
	fs := d.fs
	if fs.w == nil {
		return d.cachedList(), nil
	}
	if l := d.list.Load(); l != nil && l.gen == d.ref.Seq() {
		fs.lists.hits.Add(1)
		l.ent.Touch()
		return l, nil
	}
	fs.lists.misses.Add(1)
	l := new(listing)
	err := fs.vol.Read(d.ref, func(in *disk.Inode) error {
		if in.Nlink == 0 {
			return syscall.ENOENT // rmdir'ed while open: iterate_dir's IS_DEADDIR
		}
		dl, err := fs.vol.ParseList(in)
		l.l, l.in, l.gen = dl, in, d.ref.Seq()
		return err
	})
	if err != nil {
		return nil, err
	}
	d.store(l)
	return l, nil
}

// store charges listing l to the budget and keeps it as d's, if it fits;
// a listing it replaces is given back first.
func (d *dirNode) store(l *listing) {
	fs := d.fs
	if fs.lview == nil || l.l.Cost() > fs.lview.Cache().Limit() {
		return
	}
	if old := d.list.Load(); old != nil && old.ent != nil {
		fs.lview.Uncharge(old.ent)
	}
	if l.ent = fs.lview.Charge(listKeys.Add(1), l.l.Cost(), func() { d.dropList(l) }); l.ent == nil {
		return // no room now
	}
	fs.lists.add(l.l.Cost())
	if !d.list.CompareAndSwap(nil, l) {
		fs.lview.Uncharge(l.ent)
		return
	}
	if l.evicted.Load() { // dropped before it was stored
		d.list.CompareAndSwap(l, nil)
	}
}

// cachedList returns a read-only mount's listing of d, making it if the
// budget allows; nil if d is listed from its blocks.
func (d *dirNode) cachedList() *listing {
	fs := d.fs
	if l := d.list.Load(); l != nil {
		if l == unlisted {
			fs.lists.misses.Add(1)
			return nil
		}
		fs.lists.hits.Add(1)
		l.ent.Touch()
		return l
	}
	fs.lists.misses.Add(1) // this getdents reads blocks, to make a listing or without one
	in, err := fs.vol.Current(d.ref)
	if err != nil || fs.lview == nil || in.Flags&disk.FlagInlineData != 0 {
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
	l := &listing{l: dl, in: in}
	if l.ent = fs.lview.Charge(listKeys.Add(1), dl.Cost(), func() { d.dropList(l) }); l.ent == nil {
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
