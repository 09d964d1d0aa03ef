package disk

// Htree (dir_index) directories for the Writer, as fs/ext4/namei.c keeps
// them: ext4_dx_add_entry (find the leaf by hash, add to it, split a full
// leaf with do_split, split index nodes, add a level when the root is
// full), make_indexed_dir (a linear directory that outgrows its first
// block becomes an htree) and dx_insert_block. Removing a name from a
// leaf is ext4_generic_delete_entry, the linear path's removeEntry; leaves
// are never merged, as in Linux.
//
// Layout: block 0 is the root ("." of 12 bytes, ".." spanning the block,
// the 8-byte dx_root_info, then limit/count and the dx entries), index
// nodes are blocks whose one empty entry spans the block (limit/count at
// 8), every other block is a leaf of ordinary entries. Under
// metadata_csum, index blocks end in a dx_tail (after limit entries) and
// leaves in the 12-byte dirent tail (writeDirBlock picks which).
//
// Names are still looked up through the Writer's in-memory name index
// (wdir): the htree is the hash -> leaf step of an insertion only. Every
// entry moved by a split is re-pointed in the name index.
//
// Locking: all of it runs under Writer.mu; dxScratch is the Writer's,
// used only under it.

import (
	"encoding/binary"
	"syscall"
	"time"
)

// dxScratch holds the Writer's buffers for the htree insertion path, so
// that a create does not allocate blocks' worth of buffers.
type dxScratch struct {
	node [3][]byte // root and index nodes along the path
	leaf []byte
	new  []byte
	mapb []dxMapEntry
}

// dxMapEntry is dx_map_entry: an entry of a leaf being split.
type dxMapEntry struct {
	hash uint32
	off  int
	size int // rec_len
}

// dxFrameW is one index block on the path from the root to a leaf.
type dxFrameW struct {
	lblk, phys uint64
	b          []byte
	co         int // offset of limit/count
	at         int // entry followed
}

func (f *dxFrameW) count() int { return int(le16(f.b, f.co+2)) }
func (f *dxFrameW) limit() int { return int(le16(f.b, f.co)) }
func (f *dxFrameW) setCount(n int) {
	binary.LittleEndian.PutUint16(f.b[f.co+2:], uint16(n))
}
func (f *dxFrameW) hashAt(i int) uint32 { return le32(f.b, f.co+8*i) }
func (f *dxFrameW) blockAt(i int) uint64 {
	return uint64(le32(f.b, f.co+8*i+4) & 0x0fffffff)
}

func (w *Writer) dxScratchBufs() *dxScratch {
	if w.dx == nil {
		s := &dxScratch{leaf: make([]byte, w.v.bs), new: make([]byte, w.v.bs)}
		for i := range s.node {
			s.node[i] = make([]byte, w.v.bs)
		}
		w.dx = s
	}
	return w.dx
}

func (w *Writer) dxTailRoom() int {
	if w.v.rocompat&rocompatMetadataCsum != 0 {
		return 8
	}
	return 0
}

// dxRootLimit and dxNodeLimit are dx_root_limit and dx_node_limit.
func (w *Writer) dxRootLimit() int { return (int(w.v.bs) - 0x20 - w.dxTailRoom()) / 8 }
func (w *Writer) dxNodeLimit() int { return (int(w.v.bs) - 8 - w.dxTailRoom()) / 8 }

// dxMaxLevels is ext4_dir_htree_level: index levels, the root's included.
func (w *Writer) dxMaxLevels() int {
	if w.v.incompat&incompatLargeDir != 0 {
		return 3
	}
	return 2
}

// isDxBlock reports whether buf, a block of directory draw, is an htree
// index block that needs the dx tail checksum (metadata_csum only).
func (w *Writer) isDxBlock(draw, buf []byte) bool {
	return w.v.rocompat&rocompatMetadataCsum != 0 && iFlags(draw)&FlagIndex != 0 && w.v.dxCountOffset(buf) != 0
}

// setDxCsum sets the dx_tail checksum of index block buf of dir, as
// ext4_dx_csum_set: over the block up to the used entries, then the
// tail's reserved word and a zero checksum. dt_reserved is left as is.
func (w *Writer) setDxCsum(dir uint32, draw, buf []byte) {
	co := w.v.dxCountOffset(buf)
	limit, count := int(le16(buf, co)), int(le16(buf, co+2))
	tail := co + limit*8
	if tail+8 > len(buf) {
		return
	}
	c := crc32c(w.inodeSeed(dir, draw), buf[:co+count*8])
	c = crc32c(c, buf[tail:tail+4])
	c = crc32c(c, zero8[:4])
	binary.LittleEndian.PutUint32(buf[tail+4:], c)
}

// dxHashName is name's hash under root's hash version, as dx_probe sets
// up dx_hash_info (the unsigned variants when the superblock says so).
func (w *Writer) dxHashName(root []byte, name []byte) (uint32, bool) {
	hv := root[0x1C]
	if hv <= hashTEA && w.v.hashUnsigned {
		hv += 3
	}
	return dxHash(name, hv, w.v.hashSeed)
}

// dxProbe is dx_probe: it reads the index from the root down to the
// block above the leaf whose range holds hash, filling frames (from
// s.node) and returning how many there are. A malformed index gives
// EUCLEAN.
func (w *Writer) dxProbe(dir uint32, draw []byte, nb uint64, name []byte, frames *[3]dxFrameW, s *dxScratch) (int, uint32, error) {
	phys, ok, _, err := w.dirMap(dir, draw, 0)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, corrupt(dir, "htree root is a hole")
	}
	root := s.node[0]
	if err := w.v.readBlock(phys, root); err != nil {
		return 0, 0, err
	}
	if le32(root, 0x18) != 0 || root[0x1D] != 8 || root[0x1F]&1 != 0 || w.v.dxCountOffset(root) != 0x20 {
		return 0, 0, errBadDx
	}
	hash, ok := w.dxHashName(root, name)
	if !ok {
		return 0, 0, errBadDx
	}
	levels := int(root[0x1E]) + 1
	if levels > w.dxMaxLevels() {
		return 0, 0, errBadDx
	}
	frames[0] = dxFrameW{lblk: 0, phys: phys, b: root, co: 0x20}
	want := w.dxRootLimit()
	for i := 0; i < levels; i++ {
		f := &frames[i]
		count := f.count()
		if f.limit() != want || count == 0 || count > f.limit() {
			return 0, 0, errBadDx
		}
		// The last entry whose hash is at most hash (entry 0 has none).
		lo, hi := 1, count-1
		for lo <= hi {
			m := (lo + hi) / 2
			if f.hashAt(m) > hash {
				hi = m - 1
			} else {
				lo = m + 1
			}
		}
		f.at = lo - 1
		child := f.blockAt(f.at)
		if child == 0 || child >= nb {
			return 0, 0, errBadDx
		}
		if i+1 == levels {
			break
		}
		cphys, ok, _, err := w.dirMap(dir, draw, child)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			return 0, 0, corrupt(dir, "htree node %d is a hole", child)
		}
		b := s.node[i+1]
		if err := w.v.readBlock(cphys, b); err != nil {
			return 0, 0, err
		}
		if w.v.dxCountOffset(b) != 8 {
			return 0, 0, errBadDx
		}
		frames[i+1] = dxFrameW{lblk: child, phys: cphys, b: b, co: 8}
		want = w.dxNodeLimit()
	}
	return levels, hash, nil
}

// writeDx writes index block f with its checksum.
func (w *Writer) writeDx(dir uint32, draw []byte, f *dxFrameW) error {
	return w.writeDirBlock(dir, draw, f.b, f.phys)
}

// dxInsertBlock is dx_insert_block: a new entry (hash, lblk) after f.at.
func dxInsertBlock(f *dxFrameW, hash uint32, lblk uint64) {
	count := f.count()
	at := f.co + 8*(f.at+1)
	copy(f.b[at+8:f.co+8*(count+1)], f.b[at:f.co+8*count])
	binary.LittleEndian.PutUint32(f.b[at:], hash)
	binary.LittleEndian.PutUint32(f.b[at+4:], uint32(lblk))
	f.setCount(count + 1)
}

// dirRecLen is EXT4_DIR_REC_LEN.
func dirRecLen(nameLen int) int { return (8 + nameLen + 3) &^ 3 }

// addToBuf is add_dirent_to_buf: name goes into the first entry of leaf
// block buf with room (ext4_find_dest_de), or right after the entry at
// off when off >= 0 (do_split's choice). It returns the new entry's
// offset, or ok false when there is no room.
func (w *Writer) addToBuf(buf []byte, off int, name string, ino uint32, ft uint8) (int, bool) {
	need := dirRecLen(len(name))
	end := w.dirEnd()
	o := 0
	if off >= 0 {
		o = off
	}
	for o < end {
		rl := w.v.recLen(le16(buf, o+4))
		if rl < 12 || o+rl > end {
			return 0, false
		}
		used := 0
		if le32(buf, o) != 0 {
			used = dirRecLen(int(buf[o+6]))
		}
		if rl-used >= need {
			if used == 0 {
				putDirent(buf[o:], ino, w.recLenDisk(rl), name, ft)
				return o, true
			}
			binary.LittleEndian.PutUint16(buf[o+4:], w.recLenDisk(used))
			putDirent(buf[o+used:], ino, w.recLenDisk(rl-used), name, ft)
			return o + used, true
		}
		if off >= 0 {
			return 0, false
		}
		o += rl
	}
	return 0, false
}

// reindexBlock points the name index at the live entries of leaf buf
// (logical block lblk at phys), after a split moved them.
func (w *Writer) reindexBlock(idx *wdir, buf []byte, lblk, phys uint64) {
	end := w.dirEnd()
	for o := 0; o < end; {
		rl := w.v.recLen(le16(buf, o+4))
		if rl < 12 {
			return
		}
		if ino := le32(buf, o); ino != 0 {
			n := buf[o+8 : o+8+int(buf[o+6])]
			if l, ok := idx.names[string(n)]; ok && l.ino == ino && (l.lblk != lblk || l.off != o) {
				l.lblk, l.phys, l.off = lblk, phys, o
				idx.names[string(n)] = l
			}
		}
		o += rl
	}
}

// dxAdd is ext4_dx_add_entry: it adds name -> ino to htree directory dir.
// It does not touch dir's times (addEntry does). ENOSPC when the index is
// full at its deepest allowed level (2 levels, 3 with largedir), as Linux.
func (w *Writer) dxAdd(dir uint32, draw []byte, idx *wdir, name string, ino uint32, ft uint8) error {
	s := w.dxScratchBufs()
	var frames [3]dxFrameW
	for restart := 0; restart < 8; restart++ {
		nb := iSize(draw) >> w.v.bsBits
		levels, hash, err := w.dxProbe(dir, draw, nb, []byte(name), &frames, s)
		if err != nil {
			return err
		}
		f := &frames[levels-1]
		llblk := f.blockAt(f.at)
		lphys, ok, _, err := w.dirMap(dir, draw, llblk)
		if err != nil {
			return err
		}
		if !ok {
			return corrupt(dir, "htree leaf %d is a hole", llblk)
		}
		if err := w.v.readBlock(lphys, s.leaf); err != nil {
			return err
		}
		if off, ok := w.addToBuf(s.leaf, -1, name, ino, ft); ok {
			if err := w.writeDirBlock(dir, draw, s.leaf, lphys); err != nil {
				return err
			}
			idx.names[name] = dentLoc{ino, ft, llblk, lphys, off}
			return nil
		}
		if f.count() < f.limit() {
			return w.dxSplitLeaf(dir, draw, idx, f, llblk, lphys, hash, name, ino, ft)
		}
		// The leaf's index block is full: split the lowest index level
		// whose parent has room, or add a level; then look again.
		i := levels - 1
		for i > 0 && frames[i-1].count() >= frames[i-1].limit() {
			i--
		}
		if i == 0 && levels == w.dxMaxLevels() {
			return syscall.ENOSPC
		}
		nlblk, nphys, err := w.appendDirBlock(dir, draw)
		if err != nil {
			return err
		}
		n2 := s.new
		clear(n2)
		binary.LittleEndian.PutUint16(n2[4:], w.recLenDisk(int(w.v.bs)))
		fi := &frames[i]
		icount := fi.count()
		if i > 0 {
			// Split node fi in two halves; its parent gets the second.
			c1 := icount / 2
			hash2 := fi.hashAt(c1)
			copy(n2[8:], fi.b[fi.co+8*c1:fi.co+8*icount])
			binary.LittleEndian.PutUint16(n2[8:], uint16(w.dxNodeLimit()))
			binary.LittleEndian.PutUint16(n2[10:], uint16(icount-c1))
			fi.setCount(c1)
			dxInsertBlock(&frames[i-1], hash2, nlblk)
			if err := w.writeDx(dir, draw, &frames[i-1]); err != nil {
				return err
			}
		} else {
			// The root is full: its entries move to a new node under it.
			copy(n2[8:], fi.b[fi.co:fi.co+8*icount])
			binary.LittleEndian.PutUint16(n2[8:], uint16(w.dxNodeLimit()))
			fi.setCount(1)
			binary.LittleEndian.PutUint32(fi.b[fi.co+4:], uint32(nlblk))
			fi.b[0x1E]++
		}
		if err := w.writeDirBlock(dir, draw, n2, nphys); err != nil {
			return err
		}
		if err := w.writeDx(dir, draw, fi); err != nil {
			return err
		}
	}
	return corrupt(dir, "htree insertion does not terminate")
}

// dxSplitLeaf is do_split followed by add_dirent_to_buf: leaf (llblk at
// lphys, in s.leaf) is full; half its entries by size, in hash order, move
// to a new block, f (the index block above it, with room) gets the new
// block's entry, and name goes into whichever half its hash belongs to.
func (w *Writer) dxSplitLeaf(dir uint32, draw []byte, idx *wdir, f *dxFrameW, llblk, lphys uint64, hash uint32, name string, ino uint32, ft uint8) error {
	s := w.dx
	data1 := s.leaf
	root := s.node[0]
	bs := int(w.v.bs)
	// dx_make_map: live entries, last first.
	end := w.dirEnd()
	m := s.mapb[:0]
	for o := 0; o < end; {
		rl := w.v.recLen(le16(data1, o+4))
		if rl < 12 || o+rl > end {
			return corrupt(dir, "bad directory entry in block %d at %d", llblk, o)
		}
		if nl := int(data1[o+6]); nl != 0 && le32(data1, o) != 0 {
			h, _ := w.dxHashName(root, data1[o+8:o+8+nl])
			m = append(m, dxMapEntry{hash: h, off: o, size: rl})
		}
		o += rl
	}
	for i, j := 0, len(m)-1; i < j; i, j = i+1, j-1 {
		m[i], m[j] = m[j], m[i]
	}
	s.mapb = m
	dxSortMap(m)
	count := len(m)
	size, move, i := 0, 0, count-1
	for ; i >= 0; i-- {
		if size+m[i].size/2 > bs/2 {
			break
		}
		size += m[i].size
		move++
	}
	// Split by size where an entry would cross the middle; when all of
	// them fit in half a block, by count.
	split := count / 2
	if i >= 0 {
		split = count - move
	}
	if split >= count {
		return corrupt(dir, "htree leaf %d cannot be split", llblk)
	}
	hash2 := m[split].hash
	continued := uint32(0)
	if split > 0 && m[split-1].hash == hash2 {
		continued = 1
	}
	nlblk, nphys, err := w.appendDirBlock(dir, draw)
	if err != nil {
		return err
	}
	// dx_move_dirents: the upper part, in hash order, to the new block.
	data2 := s.new
	clear(data2)
	to, last2 := 0, 0
	for _, e := range m[split:] {
		nl := int(data1[e.off+6])
		rl := dirRecLen(nl)
		copy(data2[to:], data1[e.off:e.off+rl])
		binary.LittleEndian.PutUint16(data2[to+4:], w.recLenDisk(rl))
		binary.LittleEndian.PutUint32(data1[e.off:], 0)
		clear(data1[e.off+6 : e.off+e.size])
		last2 = to
		to += rl
	}
	// dx_pack_dirents: what stays, in block order, packed at the start.
	to, last1 := 0, 0
	for o := 0; o < end; {
		rl := w.v.recLen(le16(data1, o+4))
		if rl < 12 {
			break
		}
		next := o + rl
		if le32(data1, o) != 0 && data1[o+6] != 0 {
			n := dirRecLen(int(data1[o+6]))
			copy(data1[to:], data1[o:o+n])
			binary.LittleEndian.PutUint16(data1[to+4:], w.recLenDisk(n))
			last1 = to
			to += n
		}
		o = next
	}
	clear(data1[to:])
	binary.LittleEndian.PutUint16(data1[last1+4:], w.recLenDisk(end-last1))
	binary.LittleEndian.PutUint16(data2[last2+4:], w.recLenDisk(end-last2))
	dxInsertBlock(f, hash2+continued, nlblk)
	tb, tl, tp, de := data1, llblk, lphys, last1
	if hash >= hash2 {
		tb, tl, tp, de = data2, nlblk, nphys, last2
	}
	off, ok := w.addToBuf(tb, de, name, ino, ft)
	if !ok {
		// Linux's do_split leaves room for any name in the half it
		// picks; should it not, the split is written without the name.
		off, ok = w.addToBuf(tb, -1, name, ino, ft)
	}
	if err := w.writeDirBlock(dir, draw, data2, nphys); err != nil {
		return err
	}
	if err := w.writeDirBlock(dir, draw, data1, lphys); err != nil {
		return err
	}
	if err := w.writeDx(dir, draw, f); err != nil {
		return err
	}
	w.reindexBlock(idx, data1, llblk, lphys)
	w.reindexBlock(idx, data2, nlblk, nphys)
	if !ok {
		return syscall.ENOSPC
	}
	idx.names[name] = dentLoc{ino, ft, tl, tp, off}
	return nil
}

// dxSortMap sorts a split's map by hash as dx_sort_map does (a comb sort
// finished by a bubble sort), so that entries of equal hash land in the
// halves Linux puts them in.
func dxSortMap(m []dxMapEntry) {
	count := len(m)
	top := count - 1
	for count > 2 {
		count = count * 10 / 13
		if count-9 < 2 && count >= 9 {
			count = 11
		}
		for p := top; p-count >= 0; p-- {
			if m[p].hash < m[p-count].hash {
				m[p], m[p-count] = m[p-count], m[p]
			}
		}
	}
	for more := true; more; {
		more = false
		for q := top - 1; q >= 0; q-- {
			if m[q+1].hash < m[q].hash {
				m[q], m[q+1] = m[q+1], m[q]
				more = true
			}
		}
	}
}

// makeIndexed is make_indexed_dir: linear directory dir has one block,
// full; its entries after ".." move to a new block 1, block 0 becomes the
// htree root pointing at it, and block 1 is split to make room for name.
func (w *Writer) makeIndexed(dir uint32, draw []byte, idx *wdir, name string, ino uint32, ft uint8) error {
	s := w.dxScratchBufs()
	phys0, ok, _, err := w.dirMap(dir, draw, 0)
	if err != nil {
		return err
	}
	if !ok {
		return corrupt(dir, "directory block 0 is a hole")
	}
	root := s.node[0]
	if err := w.v.readBlock(phys0, root); err != nil {
		return err
	}
	bs := int(w.v.bs)
	if w.v.recLen(le16(root, 4)) != 12 || root[6] != 1 || root[8] != '.' {
		return corrupt(dir, "directory block 0 does not start with \".\"")
	}
	de := 12 + w.v.recLen(le16(root, 16))
	if de >= bs || root[18] != 2 {
		return corrupt(dir, "invalid rec_len for \"..\"")
	}
	n := w.dirEnd() - de
	lblk1, phys1, err := w.appendDirBlock(dir, draw)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(draw[0x20:], iFlags(draw)|FlagIndex)
	data := s.leaf
	clear(data)
	copy(data, root[de:de+n])
	clear(root[de : de+n])
	last := 0
	for o := 0; o < n; {
		rl := w.v.recLen(le16(data, o+4))
		if rl < 12 || o+rl > n {
			return corrupt(dir, "bad directory entry in block 0 at %d", de+o)
		}
		last = o
		o += rl
	}
	binary.LittleEndian.PutUint16(data[last+4:], w.recLenDisk(w.dirEnd()-last))
	binary.LittleEndian.PutUint16(root[16:], w.recLenDisk(bs-12))
	clear(root[0x18:0x20])
	root[0x1C] = w.sb[0xFC] // s_def_hash_version
	root[0x1D] = 8
	binary.LittleEndian.PutUint16(root[0x20:], uint16(w.dxRootLimit()))
	binary.LittleEndian.PutUint16(root[0x22:], 1)
	binary.LittleEndian.PutUint32(root[0x24:], uint32(lblk1))
	hash, ok := w.dxHashName(root, []byte(name))
	if !ok {
		return errBadDx
	}
	// Block 1 is written by the split; the root goes with it.
	f := &dxFrameW{lblk: 0, phys: phys0, b: root, co: 0x20}
	size := iSize(draw)
	err = w.dxSplitLeaf(dir, draw, idx, f, lblk1, phys1, hash, name, ino, ft)
	if err != nil && iSize(draw) == size {
		// The split failed before changing anything (no block for it):
		// as make_indexed_dir's out_frames, the root and block 1 are
		// written as they are, an htree of one leaf.
		if werr := w.writeDirBlock(dir, draw, data, phys1); werr != nil {
			return werr
		}
		if werr := w.writeDirBlock(dir, draw, root, phys0); werr != nil {
			return werr
		}
		w.reindexBlock(idx, data, lblk1, phys1)
	}
	return err
}

// appendDirBlock is ext4_append: directory dir grows by one block at its
// end (allocated near its last one, i_blocks and i_size updated in draw,
// which the caller writes). The block's contents are the caller's to
// write.
func (w *Writer) appendDirBlock(dir uint32, draw []byte) (lblk, phys uint64, err error) {
	var exts []wext
	if iFlags(draw)&FlagExtents == 0 {
		// A block map's runs; an inline directory gets its block first
		// (rwinline.go), and may be extent-mapped after.
		if exts, _, err = w.loadExtents(dir, draw); err != nil {
			return 0, 0, err
		}
	}
	lblk = iSize(draw) >> w.v.bsBits
	if lblk >= 1<<32-1 {
		return 0, 0, syscall.ENOSPC
	}
	var start uint64
	if iFlags(draw)&FlagExtents == 0 {
		_, _, next := lookupExt(exts, lblk)
		if start, _, err = w.allocBlocks(w.goalFor(dir, exts, next, lblk), 1); err != nil {
			return 0, 0, err
		}
		nexts := insertExt(append([]wext(nil), exts...), next, wext{l: uint32(lblk), n: 1, p: start})
		if _, err := w.storeExtents(dir, draw, nexts, 0); err != nil {
			w.freeBlocks(start, 1)
			w.storeExtents(dir, draw, exts, 0)
			return 0, 0, err
		}
	} else {
		// The extent tree at any depth (rwextent.go): the block goes
		// after the extent before it, and the tree splits, grows or
		// merges as a file's does; an ENOSPC leaves it as it was.
		x, err := w.xfind(dir, draw, uint32(lblk))
		if err != nil {
			return 0, 0, err
		}
		if start, _, err = w.allocBlocks(w.xgoal(x, dir, lblk), 1); err != nil {
			return 0, 0, err
		}
		if err := w.xinsert(dir, draw, xent{l: uint32(lblk), n: 1, p: start}); err != nil {
			w.freeBlocks(start, 1)
			return 0, 0, err
		}
	}
	if err := w.addIBlocks(draw, 1); err != nil {
		return 0, 0, err
	}
	setISize(draw, iSize(draw)+w.v.bs)
	return lblk, start, nil
}

// dxAddEntry is addEntry for an htree directory (convert false) or for a
// full one-block linear directory that becomes one (convert true):
// name -> ino is added and dir's times and inode written. dir's inode is
// written on an error too when a block was appended before it.
func (w *Writer) dxAddEntry(dir uint32, draw []byte, idx *wdir, name string, ino uint32, ft uint8, now time.Time, convert bool) error {
	size := iSize(draw)
	var err error
	if convert {
		err = w.makeIndexed(dir, draw, idx, name, ino, ft)
	} else {
		err = w.dxAdd(dir, draw, idx, name, ino, ft)
	}
	if err != nil {
		if iSize(draw) != size {
			if perr := w.putInode(dir, draw); perr != nil {
				return perr
			}
		}
		return err
	}
	touch(draw, now, tMtime, tCtime)
	return w.putInode(dir, draw)
}
