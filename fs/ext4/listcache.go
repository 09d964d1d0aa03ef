package ext4

// Parsed listings of one-block directories. A warm walk of a tree of many
// small directories spends most of its time re-reading and re-parsing
// their single directory block on every getdents (one 1 KiB block per
// directory: 63.5 MiB for the 65,000-directory bench tree, more than the
// default buffer-cache budget, so the blocks thrash). Linux keeps those
// blocks in the page cache, bounded only by memory. Here a directory of
// one block keeps, after its first complete listing, the entries it
// parsed (name, inode, type, offsets): a few dozen bytes for a directory
// holding only "." and "..", against the 1 KiB block, and no block read,
// checksum or parse on the next getdents.
//
// Bound: a file system's listings together stay under listLimit bytes
// (the buffer cache's budget; the default budget for dax mounts; none
// with bcache=0), counted as listCost. A listing that would pass it is
// not cached, and that directory keeps reading its block.
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

import "github.com/iovfs/iovfs/vfs"

// dirList is a directory's entries without "." and "..", in order.
type dirList struct {
	ents []listEnt
}

// unlisted marks a directory that is listed from its blocks: more than
// one block, inline, or over the budget.
var unlisted = new(dirList)

type listEnt struct {
	name string
	at   int64 // offset of the entry
	next int64 // offset just past it (the getdents cookie)
	ino  uint32
	typ  uint8 // DT_*
}

// listCost is what a listing of ents holding nameBytes of names is
// charged: its headers and the name bytes.
func listCost(n, nameBytes int) int64 {
	return int64(32 + n*48 + nameBytes)
}

// cachedList returns d's listing, making it if d is a one-block directory
// and the budget allows; nil if d is listed from its blocks.
func (d *dirNode) cachedList() *dirList {
	if l := d.list.Load(); l != nil {
		if l == unlisted {
			return nil
		}
		return l
	}
	fs, in, v := d.fs, d.in, d.fs.vol
	if fs.listLimit <= 0 || in.Flags&FlagInlineData != 0 || v.dirBlocks(in) != 1 {
		d.list.CompareAndSwap(nil, unlisted)
		return nil
	}
	bp := v.getBuf()
	defer v.putBuf(bp)
	b := (*bp)[:v.bs]
	var c ExtentCache
	if hole, _, err := v.dirBlock(in, &c, 0, b); err != nil || hole {
		return nil // the uncached path reports the error
	}
	var ents []listEnt
	names := 0
	_, err := v.walkEntries(in, b, 0, 0, func(name []byte, ino uint32, ft uint8, next int64) bool {
		if string(name) == "." || string(name) == ".." {
			return true // as ReadDirFrom
		}
		// name is b[off+8:off+8+name_len]: its capacity tells off.
		at := int64(cap(b) - cap(name) - 8)
		ents = append(ents, listEnt{name: string(name), at: at, next: next, ino: ino, typ: dtype(ft)})
		names += len(name)
		return true
	})
	if err != nil {
		return nil
	}
	l := &dirList{ents: ents}
	cost := listCost(len(ents), names)
	if fs.listBytes.Add(cost) > fs.listLimit {
		fs.listBytes.Add(-cost)
		d.list.CompareAndSwap(nil, unlisted) // listings are never freed while mounted
		return nil
	}
	if !d.list.CompareAndSwap(nil, l) {
		fs.listBytes.Add(-cost)
		return d.cachedList()
	}
	return l
}

// read is ReadDir from a cached listing: the entries starting at or
// after off, as walkEntries reports them.
func (l *dirList) read(off int64, fn func(vfs.Dirent) bool) {
	for i := range l.ents {
		e := &l.ents[i]
		if e.at < off {
			continue
		}
		if !fn(vfs.Dirent{Name: e.name, Ino: uint64(e.ino), Type: e.typ, Off: e.next}) {
			return
		}
	}
}
