package disk

// Block-mapped files for the Writer (ext2, ext3, and ext4 inodes without
// EXTENTS_FL): 12 direct pointers in i_block, then single, double and
// triple indirect blocks, as fs/ext4/indirect.c.
//
// The rest of the Writer works on a file's mapping as a list of extents
// (wext); for a block-mapped inode loadExtents and storeExtents dispatch
// here. loadBlockMap reads the block map as runs of consecutive physical
// blocks; storeBlockMap changes the block map to a new list by setting
// only the pointers whose mapping differs, allocating the indirect blocks
// a new pointer needs (next to the data it maps, so files stay
// contiguous as with ext2's allocator) and freeing the ones that become
// empty (as ext4_ind_truncate frees them). Indirect blocks are metadata:
// they are written through the transaction and charged to i_blocks.
//
// Block numbers in a block map are 32 bits: a data or indirect block at or
// past 2^32 cannot be mapped and gives ENOSPC.

import (
	"encoding/binary"
	"slices"
	"syscall"
)

// indDirect is EXT4_NDIR_BLOCKS.
const indDirect = 12

// maxBitmapBytes is ext4_max_bitmap_size: the size limit of a block-mapped
// file, the largest size whose data and indirect blocks, counted in
// i_blocks' units (512-byte sectors, or file system blocks with
// huge_file), still fit i_blocks, and that the triple indirect tree can
// address.
func (v *Volume) maxBitmapBytes() int64 {
	bits := uint(v.bsBits)
	ppb := uint64(1) << (bits - 2)
	var upper uint64
	if v.rocompat&rocompatHugeFile == 0 {
		upper = (1<<32 - 1) >> (bits - 9)
	} else {
		upper = 1<<48 - 1
	}
	res := uint64(indDirect) + ppb + ppb*ppb + ppb*ppb*ppb
	meta := uint64(1) + 1 + ppb + 1 + ppb + ppb*ppb
	if res+meta > upper {
		res = upper
		upper -= indDirect
		meta = 1
		upper -= ppb
		if upper < ppb*ppb {
			meta += 1 + (upper+ppb-1)/ppb
		} else {
			meta += 1 + ppb
			upper -= ppb * ppb
			meta += 1 + (upper+ppb-1)/ppb + (upper+ppb*ppb-1)/(ppb*ppb)
		}
		res -= meta
	}
	// The Writer's logical block numbers are 32 bits, as ext4's.
	res = min(res, 1<<32-1)
	return int64(res << bits)
}

// maxBytesOf is the size limit of file raw: s_bitmap_maxbytes for a
// block-mapped inode, s_maxbytes for an extent-mapped one.
func (w *Writer) maxBytesOf(raw []byte) int64 {
	if iFlags(raw)&FlagExtents == 0 {
		return w.v.maxBitmapBytes()
	}
	return w.maxBytes()
}

// hasBlockMap reports whether i_block of raw is a block map: regular
// files, directories and slow symlinks without EXTENTS_FL (fast symlinks
// and device numbers keep other bytes there).
func hasBlockMap(raw []byte) bool {
	if iFlags(raw)&(FlagExtents|FlagInlineData) != 0 {
		return false
	}
	switch iMode(raw) & S_IFMT {
	case S_IFREG, S_IFDIR:
		return true
	case S_IFLNK:
		return iSize(raw) >= 60
	}
	return false
}

// bmCache remembers the runs of recently used block maps, so a write does
// not read every indirect block of its file twice (load, then store). An
// entry is valid while the inode's i_block holds the bytes it was made
// from: indirect blocks change only through storeBlockMap, which replaces
// the entry, and releaseBlockMap and uninline drop it.
type bmCache struct {
	iblock [60]byte
	exts   []wext
}

const maxCachedMaps = 64

func (w *Writer) cachedMap(ino uint32, raw []byte) ([]wext, bool) {
	c := w.bmaps[ino]
	if c == nil || string(c.iblock[:]) != string(raw[0x28:0x64]) {
		return nil, false
	}
	return c.exts[:len(c.exts):len(c.exts)], true
}

func (w *Writer) cacheMap(ino uint32, raw []byte, exts []wext) {
	if w.bmaps == nil {
		w.bmaps = map[uint32]*bmCache{}
	}
	if _, ok := w.bmaps[ino]; !ok && len(w.bmaps) >= maxCachedMaps {
		for k := range w.bmaps {
			delete(w.bmaps, k)
			break
		}
	}
	c := &bmCache{exts: slices.Clone(exts)}
	copy(c.iblock[:], raw[0x28:0x64])
	w.bmaps[ino] = c
}

// loadBlockMap reads the block map of inode ino (raw) as runs of
// consecutive physical blocks, in logical order. The result is shared
// with the cache: callers do not change its elements.
func (w *Writer) loadBlockMap(ino uint32, raw []byte) ([]wext, error) {
	if exts, ok := w.cachedMap(ino, raw); ok {
		return exts, nil
	}
	var exts []wext
	add := func(l, p uint64) error {
		if p < w.v.firstData || p >= w.v.blocks {
			return corrupt(ino, "block map points to block %d outside the volume", p)
		}
		if l >= 1<<32-1 {
			return corrupt(ino, "block map maps logical block %d", l)
		}
		if k := len(exts) - 1; k >= 0 {
			e := &exts[k]
			if uint64(e.l)+uint64(e.n) == l && e.p+uint64(e.n) == p && e.n < maxInitExtent {
				e.n++
				return nil
			}
		}
		exts = append(exts, wext{l: uint32(l), n: 1, p: p})
		return nil
	}
	if iFlags(raw)&FlagInlineData != 0 {
		// A change reaches an inline inode's mapping: give it a block
		// first (rwinline.go).
		if err := w.uninline(ino, raw); err != nil {
			return nil, err
		}
		exts, _, err := w.loadExtents(ino, raw)
		return exts, err
	}
	if !hasBlockMap(raw) {
		return nil, nil
	}
	ib := raw[0x28:0x64]
	for i := 0; i < indDirect; i++ {
		if p := le32(ib, 4*i); p != 0 {
			if err := add(uint64(i), uint64(p)); err != nil {
				return nil, err
			}
		}
	}
	ppb := w.v.bs / 4
	base, span := uint64(indDirect), uint64(1)
	for level := 1; level <= 3; level++ {
		span *= ppb
		if p := le32(ib, 4*(indDirect-1+level)); p != 0 {
			if err := w.walkInd(ino, uint64(p), level, base, add); err != nil {
				return nil, err
			}
		}
		base += span
	}
	w.cacheMap(ino, raw, exts)
	return exts, nil
}

// walkInd calls fn for every data pointer under the indirect block ptr of
// the given level (1: it holds data pointers) mapping from logical block
// base.
func (w *Writer) walkInd(ino uint32, ptr uint64, level int, base uint64, fn func(l, p uint64) error) error {
	if ptr < w.v.firstData || ptr >= w.v.blocks {
		return corrupt(ino, "block map points to block %d outside the volume", ptr)
	}
	buf := make([]byte, w.v.bs)
	if err := w.v.readBlock(ptr, buf); err != nil {
		return err
	}
	ppb := w.v.bs / 4
	span := uint64(1)
	for i := 1; i < level; i++ {
		span *= ppb
	}
	for i := uint64(0); i < ppb; i++ {
		p := uint64(le32(buf, int(4*i)))
		if p == 0 {
			continue
		}
		var err error
		if level == 1 {
			err = fn(base+i, p)
		} else {
			err = w.walkInd(ino, p, level-1, base+i*span, fn)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// indBlk is an indirect block loaded by storeBlockMap.
type indBlk struct {
	phys   uint64
	buf    []byte
	parent *indBlk // nil: the slot is in i_block
	slot   int     // index of the pointer to this block in its parent
	level  int     // 1: holds data pointers
	dirty  bool
	freed  bool
}

// bmap is the block map of one inode being changed.
type bmap struct {
	w     *Writer
	ino   uint32
	raw   []byte
	blks  map[uint64]*indBlk
	delta int64 // indirect blocks allocated minus freed
}

// extAt is the mapping of lblk in exts: its physical block (ok false in a
// hole) and the first logical block where that run ends.
func extAt(exts []wext, lblk uint64) (phys uint64, ok bool, end uint64) {
	phys, ok, next := lookupExt(exts, lblk)
	switch {
	case ok:
		e := exts[next-1]
		return phys, true, uint64(e.l) + uint64(e.n)
	case next < len(exts):
		return 0, false, uint64(exts[next].l)
	}
	return 0, false, 1 << 40
}

// storeBlockMap makes the block map of raw map exactly exts, setting the
// pointers that differ from what it maps now. Data blocks are the
// caller's to allocate, free and charge; indirect blocks are allocated,
// freed and charged to i_blocks here.
func (w *Writer) storeBlockMap(ino uint32, raw []byte, exts []wext) error {
	w.begin(ino) // live.go
	for _, e := range exts {
		if e.p+uint64(e.n) > 1<<32 {
			return syscall.ENOSPC
		}
	}
	old, err := w.loadBlockMap(ino, raw)
	if err != nil {
		return err
	}
	m := &bmap{w: w, ino: ino, raw: raw, blks: map[uint64]*indBlk{}}
	var serr error
	for l := uint64(0); l < 1<<40; {
		po, oko, endo := extAt(old, l)
		pn, okn, endn := extAt(exts, l)
		end := min(endo, endn)
		if oko != okn || po != pn {
			for i := uint64(0); i < end-l; i++ {
				p := uint64(0)
				if okn {
					p = pn + i
				}
				if serr = m.set(l+i, p); serr != nil {
					break
				}
			}
		}
		if serr != nil {
			break
		}
		l = end
	}
	// Even after a failed allocation, write what was set: the map stays
	// consistent (each pointer valid, each indirect block charged), and
	// the caller restores the old list with another store.
	delete(w.bmaps, ino)
	if err := m.finish(); err != nil {
		return err
	}
	if serr == nil {
		w.cacheMap(ino, raw, exts)
	}
	return serr
}

// slotOf returns the path of lblk: the level of its top indirect block
// (0 for a direct pointer) and the pointer index at each level from the
// top, in idx[0:level+1] (idx[0] is the slot in i_block).
func (w *Writer) slotOf(lblk uint64) (level int, idx [4]int) {
	if lblk < indDirect {
		idx[0] = int(lblk)
		return 0, idx
	}
	ppb := w.v.bs / 4
	rel := lblk - indDirect
	span := ppb
	for level = 1; level <= 3; level++ {
		if rel < span {
			break
		}
		rel -= span
		span *= ppb
	}
	idx[0] = indDirect - 1 + level
	for k := 1; k <= level; k++ {
		span /= ppb
		idx[k] = int(rel / span)
		rel %= span
	}
	return level, idx
}

// set points lblk at p (0: a hole), allocating the indirect blocks on its
// path when p is not 0.
func (m *bmap) set(lblk, p uint64) error {
	w := m.w
	level, idx := w.slotOf(lblk)
	ib := m.raw[0x28:0x64]
	if level == 0 {
		binary.LittleEndian.PutUint32(ib[4*idx[0]:], uint32(p))
		return nil
	}
	var parent *indBlk
	slot := idx[0]
	for l := level; l >= 1; l-- {
		var ptrs []byte
		if parent == nil {
			ptrs = ib
		} else {
			ptrs = parent.buf
		}
		child := uint64(le32(ptrs, 4*slot))
		var b *indBlk
		if child == 0 {
			if p == 0 {
				return nil // already a hole
			}
			// The new indirect block goes next to the data it maps.
			nb, _, err := w.allocBlocks(p, 1)
			if err != nil {
				return err
			}
			if nb >= 1<<32 {
				w.freeBlocks(nb, 1)
				return syscall.ENOSPC
			}
			b = &indBlk{phys: nb, buf: make([]byte, w.v.bs), dirty: true}
			m.blks[nb] = b
			m.delta++
			binary.LittleEndian.PutUint32(ptrs[4*slot:], uint32(nb))
			if parent != nil {
				parent.dirty = true
			}
		} else if b = m.blks[child]; b == nil {
			if child < w.v.firstData || child >= w.v.blocks {
				return corrupt(m.ino, "block map points to block %d outside the volume", child)
			}
			b = &indBlk{phys: child, buf: make([]byte, w.v.bs)}
			if err := w.v.readBlock(child, b.buf); err != nil {
				return err
			}
			m.blks[child] = b
		}
		b.parent, b.slot, b.level = parent, slot, l
		parent = b
		slot = idx[level-l+1]
	}
	binary.LittleEndian.PutUint32(parent.buf[4*slot:], uint32(p))
	parent.dirty = true
	return nil
}

// finish frees the indirect blocks left empty (the deepest first, so a
// parent emptied by its children's release goes too), writes the others
// that changed and charges i_blocks.
func (m *bmap) finish() error {
	w := m.w
	blks := make([]*indBlk, 0, len(m.blks))
	for _, b := range m.blks {
		blks = append(blks, b)
	}
	slices.SortFunc(blks, func(a, b *indBlk) int {
		if a.level != b.level {
			return a.level - b.level
		}
		return int(int64(a.phys) - int64(b.phys))
	})
	for _, b := range blks {
		if !b.dirty || !allZero(b.buf) {
			continue
		}
		if err := w.freeBlocks(b.phys, 1); err != nil {
			return err
		}
		b.freed = true
		m.delta--
		if b.parent == nil {
			binary.LittleEndian.PutUint32(m.raw[0x28+4*b.slot:], 0)
		} else {
			binary.LittleEndian.PutUint32(b.parent.buf[4*b.slot:], 0)
			b.parent.dirty = true
		}
	}
	for _, b := range blks {
		if b.dirty && !b.freed {
			if err := w.writeAt(b.buf, int64(b.phys<<w.v.bsBits)); err != nil {
				return err
			}
		}
	}
	return w.addIBlocks(m.raw, m.delta)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// releaseBlockMap frees every data and indirect block of block-mapped
// inode raw and clears its i_block (the caller zeroes i_blocks).
func (w *Writer) releaseBlockMap(ino uint32, raw []byte) error {
	exts, err := w.loadBlockMap(ino, raw)
	if err != nil {
		return err
	}
	for _, e := range exts {
		if err := w.freeBlocks(e.p, uint64(e.n)); err != nil {
			return err
		}
	}
	if err := w.storeBlockMap(ino, raw, nil); err != nil {
		return err
	}
	delete(w.bmaps, ino)
	clear(raw[0x28:0x64])
	return nil
}

// initMap makes the empty mapping of a new inode raw: an extent header
// with EXTENTS_FL when the volume has the extents feature (as
// ext4_new_inode), else an empty block map.
func (w *Writer) initMap(raw []byte) {
	if w.v.incompat&incompatExtents == 0 {
		return
	}
	binary.LittleEndian.PutUint32(raw[0x20:], iFlags(raw)|FlagExtents)
	clear(raw[0x28:0x64])
	putExtentHeader(raw[0x28:0x64], 0, 4, 0)
}

// writeDataMap is writeData for a block-mapped inode (rwblockmap.go),
// through loadExtents/storeExtents' runs: it writes p at off into ino's
// blocks, allocating holes, and updates raw's map and i_blocks (the
// caller writes raw).
func (w *Writer) writeDataMap(ino uint32, raw []byte, p []byte, off int64) (int, error) {
	w.begin(ino) // live.go
	v := w.v
	exts, leaf, err := w.loadExtents(ino, raw)
	if err != nil {
		return 0, err
	}
	bs := int(v.bs)
	lastBlk := uint64(off+int64(len(p))-1) >> v.bsBits
	buf := make([]byte, bs)
	done := 0
	var freshLo, freshHi uint64 // blocks allocated by this call: never read
	for done < len(p) {
		pos := off + int64(done)
		lblk := uint64(pos) >> v.bsBits
		within := int(pos & int64(bs-1))
		n := min(bs-within, len(p)-done)
		phys, ok, next := lookupExt(exts, lblk)
		fresh := lblk >= freshLo && lblk < freshHi
		if !ok {
			want := lastBlk - lblk + 1
			if next < len(exts) {
				want = min(want, uint64(exts[next].l)-lblk)
			}
			want = min(want, maxInitExtent)
			start, got, aerr := w.allocBlocks(w.goalFor(ino, exts, next, lblk), uint32(want))
			if aerr != nil {
				return done, aerr
			}
			nexts := insertExt(append([]wext(nil), exts...), next, wext{l: uint32(lblk), n: got, p: start})
			nleaf, serr := w.storeExtents(ino, raw, nexts, leaf)
			if serr != nil {
				w.freeBlocks(start, uint64(got))
				w.storeExtents(ino, raw, exts, leaf)
				return done, serr
			}
			if err := w.addIBlocks(raw, int64(got)); err != nil {
				return done, err
			}
			exts, leaf = nexts, nleaf
			phys, fresh = start, true
			freshLo, freshHi = lblk, lblk+uint64(got)
		}
		dev := int64(phys << v.bsBits)
		if n == bs {
			if err := w.writeDataAt(p[done:done+n], dev); err != nil {
				return done, err
			}
		} else {
			if fresh {
				clear(buf)
			} else if err := v.readBlock(phys, buf); err != nil {
				return done, err
			}
			copy(buf[within:], p[done:done+n])
			if err := w.writeDataAt(buf, dev); err != nil {
				return done, err
			}
		}
		done += n
	}
	return done, nil
}

// cutBlocksMap is cutBlocks for a block-mapped inode: it frees ino's
// blocks past size and zeroes the tail of the block holding size,
// updating raw's map and i_blocks.
func (w *Writer) cutBlocksMap(ino uint32, raw []byte, size uint64) error {
	w.begin(ino) // live.go
	v := w.v
	exts, leaf, err := w.loadExtents(ino, raw)
	if err != nil {
		return err
	}
	keep := (size + v.bs - 1) >> v.bsBits
	var out []wext
	var freed int64
	for _, e := range exts {
		switch {
		case uint64(e.l) >= keep:
			if err := w.freeBlocks(e.p, uint64(e.n)); err != nil {
				return err
			}
			freed += int64(e.n)
		case uint64(e.l)+uint64(e.n) > keep:
			k := keep - uint64(e.l)
			if err := w.freeBlocks(e.p+k, uint64(e.n)-k); err != nil {
				return err
			}
			freed += int64(uint64(e.n) - k)
			e.n = uint32(k)
			out = append(out, e)
		default:
			out = append(out, e)
		}
	}
	if err := w.addIBlocks(raw, -freed); err != nil {
		return err
	}
	if _, err := w.storeExtents(ino, raw, out, leaf); err != nil {
		return err
	}
	if within := size & (v.bs - 1); within != 0 {
		if phys, ok, _ := lookupExt(out, size>>v.bsBits); ok {
			buf := make([]byte, v.bs)
			if err := v.readBlock(phys, buf); err != nil {
				return err
			}
			clear(buf[within:])
			if err := w.writeDataAt(buf, int64(phys<<v.bsBits)); err != nil {
				return err
			}
		}
	}
	return nil
}

// readAtMap is ReadAt's loop for a block-mapped inode: p (already cut at
// the size) from off, holes as zeros, one device read per run.
func (w *Writer) readAtMap(ino uint32, raw []byte, p []byte, off int64) (int, error) {
	exts, _, err := w.loadExtents(ino, raw)
	if err != nil {
		return 0, err
	}
	v := w.v
	bs := int64(v.bs)
	done := 0
	for done < len(p) {
		pos := off + int64(done)
		lblk := uint64(pos) >> v.bsBits
		within := pos & (bs - 1)
		phys, ok, next := lookupExt(exts, lblk)
		if !ok {
			// A hole runs to the next extent.
			end := int64(len(p))
			if next < len(exts) {
				end = min(end, int64(exts[next].l)<<v.bsBits-off)
			}
			clear(p[done:end])
			done = int(end)
			continue
		}
		// The run holding lblk, in one device read.
		e := exts[next-1]
		runEnd := int64(uint64(e.l)+uint64(e.n))<<v.bsBits - off
		n := int(min(int64(len(p)), runEnd) - int64(done))
		if err := w.readData(p[done:done+n], int64(phys<<v.bsBits)+within); err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// removeMapRange frees logical blocks [lo, hi) of block-mapped inode ino
// (a punched hole, as ext4_ind_remove_space), updating raw's map and
// i_blocks; indirect blocks left empty are freed by storeExtents.
func (w *Writer) removeMapRange(ino uint32, raw []byte, lo, hi uint64) error {
	exts, leaf, err := w.loadExtents(ino, raw)
	if err != nil {
		return err
	}
	var out []wext
	var freed int64
	for _, e := range exts {
		s, t := uint64(e.l), uint64(e.l)+uint64(e.n)
		if t <= lo || s >= hi {
			out = append(out, e)
			continue
		}
		a, b := max(s, lo), min(t, hi)
		if err := w.freeBlocks(e.p+(a-s), b-a); err != nil {
			return err
		}
		freed += int64(b - a)
		if s < a {
			out = append(out, wext{l: e.l, n: uint32(a - s), p: e.p})
		}
		if b < t {
			out = append(out, wext{l: uint32(b), n: uint32(t - b), p: e.p + (b - s)})
		}
	}
	if err := w.addIBlocks(raw, -freed); err != nil {
		return err
	}
	_, err = w.storeExtents(ino, raw, out, leaf)
	return err
}
