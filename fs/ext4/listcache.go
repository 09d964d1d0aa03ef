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
// Bound: a file system's listings together stay under listLimit bytes
// (the buffer cache's budget; the default budget for dax mounts; none
// with bcache=0), counted as listCost of what they hold. A listing that
// would pass it is not cached, and that directory keeps reading its
// blocks. Listings are freed at unmount, not evicted. ListingStats
// reports the bytes, their peak and the hits.
//
// Consistency: only read-only mounts have listings (a read-write mount's
// directories are rwDir, rwmount.go, listed from their blocks), so a
// listing never changes while mounted. Were rwDir to use them, every
// operation that changes directory d would have to drop d.list
// (d.list.Store(nil), giving its bytes back).
//
// Concurrency: a listing is immutable once stored; d.list is an atomic
// pointer, and two getdents racing to fill it store equal listings (the
// second CompareAndSwap fails and its bytes are not charged).

import (
	"cmp"
	"slices"
	"sync/atomic"
	"unsafe"

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
}

// charge adds cost bytes if they fit under limit, and keeps the peak.
func (c *listCounters) charge(cost, limit int64) bool {
	n := c.bytes.Add(cost)
	if n > limit {
		c.bytes.Add(-cost)
		return false
	}
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	c.lists.Add(1)
	return true
}

// ListingStats are a mount's parsed-listing counters.
type ListingStats struct {
	Bytes, Peak, Limit int64  // held now, the most held at once, the bound
	Listings           int64  // directories holding a listing
	Hits               uint64 // getdents answered from a listing
	Misses             uint64 // getdents that read directory blocks (to make a listing, or without one)
}

// ListingStats returns the mount's listing counters.
func (fs *FS) ListingStats() ListingStats {
	c := &fs.lists
	return ListingStats{Bytes: c.bytes.Load(), Peak: c.peak.Load(), Limit: fs.listLimit,
		Listings: c.lists.Load(), Hits: c.hits.Load(), Misses: c.misses.Load()}
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
		return l
	}
	fs, in := d.fs, d.in
	fs.lists.misses.Add(1) // this getdents reads blocks, to make a listing or without one
	if fs.listLimit <= 0 || in.Flags&FlagInlineData != 0 {
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
	if !fs.lists.charge(l.cost, fs.listLimit) {
		d.list.CompareAndSwap(nil, unlisted) // listings are never freed while mounted
		return nil
	}
	if !d.list.CompareAndSwap(nil, l) { // another getdents stored one
		fs.lists.bytes.Add(-l.cost)
		fs.lists.lists.Add(-1)
		return d.list.Load()
	}
	return l
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
