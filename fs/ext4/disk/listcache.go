package disk

// Parsed directory listings. A warm walk spends most of its getdents
// time re-reading and re-parsing directory blocks: one 1 KiB block per
// directory for the 65,000-directory bench tree, several per directory
// of the nested tree, and 1,600 for the flat tree's root. Linux keeps
// those blocks in the page cache, bounded only by memory. Here a
// directory can keep, after its first getdents, the entries it parsed in
// listing order (name, inode, type, position, "." and ".." included; the
// names in one string): 107 bytes for a directory holding only "." and
// "..", against its 1 KiB block, and no block read, checksum or parse on
// the next getdents. A DirList stands for the kernel's fills and block
// walks (dirhash.go's DirSource).
//
// The VFS glue decides which directories keep one and charges each to
// the mount's buffer-cache budget (block.View.Charge, at Cost), so that
// one bound covers blocks and listings; DemoteDir then lets the
// directory's blocks go first. A DirList is immutable once made.

import (
	"cmp"
	"slices"
	"unsafe"
)

// DirList is a directory's entries, "." and ".." among them, in the
// kernel's listing order (dirhash.go): by hash, with hash cookies as
// positions, for the directories ext4_dx_readdir lists; by offset
// otherwise.
type DirList struct {
	ents []DirEntry
	end  int64 // the position after the last entry: EXT4_HTREE_EOF_64BIT or i_size
	cost int64 // what it takes in memory (listCost)
}

// Cost is what the listing takes in memory: what a budget charges it.
func (l *DirList) Cost() int64 { return l.cost }

type DirEntry struct {
	Name string
	Pos  int64 // the entry's position: its hash cookie or offset
	Ino  uint32
	Type uint8 // DT_*
}

// listCost is what a listing of n entries (room for n) holding nameBytes
// of names is charged: its header, entries and the name bytes.
func listCost(n, nameBytes int) int64 {
	return int64(unsafe.Sizeof(DirList{})) + int64(n)*int64(unsafe.Sizeof(DirEntry{})) + int64(nameBytes)
}

// demoteDir demotes directory in's blocks in the buffer cache, now that
// its listing holds what getdents needs from them: a walk of many small
// directories then evicts their blocks before the listings (a Lookup
// that still reads a block promotes it again).
func (v *Volume) DemoteDir(in *Inode) {
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

// parseList reads directory in as a listing from its start would, with
// the same checks, and returns its entries in listing order. A hash-order
// listing whose fills do not come out in hash order (a damaged index) is
// not cached: the cursor reads such a directory fill by fill, as the
// kernel.
func (v *Volume) ParseList(in *Inode) (*DirList, error) {
	var ents []DirEntry
	if v.isDxDir(in) {
		var fill []DirEntry
		var hash, minor uint32
		for {
			var next uint32
			var err error
			fill, next, err = v.dxFill(in, hash, minor, fill)
			if err != nil {
				return nil, err
			}
			if len(ents) > 0 && len(fill) > 0 && fill[0].Pos < ents[len(ents)-1].Pos {
				return nil, errBadDx
			}
			ents = append(ents, fill...)
			if len(fill) == 0 || next == ^uint32(0) {
				break
			}
			hash, minor = next, 0
		}
	} else {
		if _, err := v.linearIterate(in, 0, func(_ int64, e DirEntry) bool {
			ents = append(ents, e)
			return true
		}); err != nil {
			return nil, err
		}
	}
	// The names in one string.
	n := 0
	for i := range ents {
		n += len(ents[i].Name)
	}
	names := make([]byte, 0, n)
	for i := range ents {
		names = append(names, ents[i].Name...)
	}
	all := string(names)
	l := &DirList{ents: make([]DirEntry, len(ents)), end: v.dirEnd(in)}
	off := 0
	for i := range ents {
		l.ents[i] = ents[i]
		l.ents[i].Name = all[off : off+len(ents[i].Name)]
		off += len(ents[i].Name)
	}
	l.cost = listCost(len(l.ents), len(all))
	return l, nil
}

// from is the index of the first entry at or after position pos.
func (l *DirList) from(pos int64) int {
	i, _ := slices.BinarySearchFunc(l.ents, pos, func(e DirEntry, p int64) int { return cmp.Compare(e.Pos, p) })
	return i
}

// read lists the entries but "." and ".." at or after position off, as
// Volume.ReadDirFrom does from the blocks: fn gets each with the position
// after it (the next entry's, or the end) as its cookie, until it
// returns false.
func (l *DirList) Read(off int64, fn func(name string, ino uint32, typ uint8, next int64) bool) {
	for i := l.from(off); i < len(l.ents); i++ {
		e := &l.ents[i]
		if e.Name == "." || e.Name == ".." {
			continue
		}
		next := l.end
		if i+1 < len(l.ents) {
			next = l.ents[i+1].Pos
		}
		if !fn(e.Name, e.Ino, e.Type, next) {
			return
		}
	}
}

// linear is linearIterate from a cached listing of a directory listed by
// offset.
func (l *DirList) linear(pos int64, emit func(at int64, e DirEntry) bool) int64 {
	for i := l.from(pos); i < len(l.ents); i++ {
		if !emit(l.ents[i].Pos, l.ents[i]) {
			return l.ents[i].Pos
		}
	}
	return max(pos, l.end)
}
