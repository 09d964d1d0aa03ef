package disk

// Extent trees of any depth for the Writer's regular files, following the
// on-disk results of the kernel's fs/ext4/extents.c:
//
//   - A change reads the path from the root (i_block, 4 entries) to one
//     leaf and rewrites that leaf; an ancestor is written only when it
//     changes: its key, when a node's first key changed
//     (ext4_ext_correct_indexes); a new entry, when a node split
//     (ext4_ext_split: the new node takes the entries from the change on,
//     so appends start a new leaf and leave the old one full); growth,
//     when the root overflows (ext4_ext_grow_indepth: the root's entries
//     move to a new block and the depth grows by one); removal, when a
//     node empties (its block is freed; a root left empty goes back to
//     depth 0, as ext4_ext_remove_space ends); and a lone leaf under a
//     depth-1 root moves back into i_block when it fits
//     (ext4_ext_try_to_merge_up).
//   - Adjacent extents merge when they continue each other logically and
//     physically, have the same state and their sum fits: 32768 blocks
//     initialised, 32767 unwritten (ext4_can_extents_be_merged).
//   - A write into an unwritten extent splits it exactly at the written
//     blocks and marks those initialised (what the kernel's dioread_nolock
//     writeback leaves, checked with FIEMAP: no zero-out of neighbours).
//   - Tree blocks have eh_max = (block size - 12) / 12, eh_generation 0,
//     the extent tail checksum under metadata_csum, and are charged to
//     i_blocks.
//
// Locking: the Writer's mu. w.xp is the Writer's one path (its buffers
// are reused, so a change allocates nothing); one operation uses it at a
// time and every function here that takes it re-reads it (xfind) first.

import (
	"encoding/binary"
	"fmt"
	"syscall"
)

const maxUnwrittenExtent = 32767

// xent is one extent of a leaf.
type xent struct {
	l uint32 // first logical block
	n uint32 // length
	p uint64 // first physical block
	u bool   // unwritten
}

func (e xent) end() uint64 { return uint64(e.l) + uint64(e.n) }

// xmerge reports whether b continues a and the two fit one extent.
func xmerge(a, b xent) bool {
	lim := uint32(maxInitExtent)
	if a.u {
		lim = maxUnwrittenExtent
	}
	return a.u == b.u && a.end() == uint64(b.l) && a.p+uint64(a.n) == b.p && a.n+b.n <= lim
}

// xlevel is one node on a path: the root (blk 0, buf aliasing i_block)
// or a tree block.
type xlevel struct {
	blk uint64
	buf []byte
	idx int // index nodes: the entry followed; the leaf: the extent at or before the key, -1 if none
}

// xpath is a path from the root to a leaf, with the scratch it needs.
type xpath struct {
	ino   uint32
	raw   []byte
	depth int
	lv    [maxExtentDepth + 1]xlevel
	bufs  [maxExtentDepth + 1][]byte
	sib   []byte
	ents  []xent
}

func xentries(b []byte) int { return int(le16(b, 2)) }
func xkey(b []byte, i int) uint32 {
	return le32(b, 12*(i+1))
}
func xchild(b []byte, i int) uint64 {
	e := b[12*(i+1):]
	return uint64(le32(e, 4)) | uint64(le16(e, 8))<<32
}
func putXIndex(b []byte, i int, key uint32, child uint64) {
	e := b[12*(i+1):]
	binary.LittleEndian.PutUint32(e[0:], key)
	binary.LittleEndian.PutUint32(e[4:], uint32(child))
	binary.LittleEndian.PutUint16(e[8:], uint16(child>>32))
	binary.LittleEndian.PutUint16(e[10:], 0)
}
func getXent(b []byte, i int) xent {
	e := b[12*(i+1):]
	n := uint32(le16(e, 4))
	u := n > maxInitExtent
	if u {
		n -= maxInitExtent
	}
	return xent{l: le32(e, 0), n: n, p: uint64(le32(e, 8)) | uint64(le16(e, 6))<<32, u: u}
}
func putXent(b []byte, i int, x xent) {
	n := x.n
	if x.u {
		n += maxInitExtent
	}
	putExtent(b[12*(i+1):], wext{l: x.l, n: n, p: x.p})
}
func setXentries(b []byte, n int) { binary.LittleEndian.PutUint16(b[2:], uint16(n)) }

// xsearch is the last entry of node whose key is at most lblk, or -1.
func xsearch(node []byte, lblk uint32) int {
	lo, hi := 0, xentries(node) // first entry with key > lblk in [lo, hi]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if xkey(node, m) <= lblk {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// xblockMax is eh_max of a tree block (ext4_ext_space_block).
func (w *Writer) xblockMax() int { return int(w.v.bs-12) / 12 }

// xfind reads the path of ino's tree to the leaf that holds, or would
// hold, logical block lblk, into w.xp. raw is the inode, changed in place
// when the root changes (the caller writes it).
func (w *Writer) xfind(ino uint32, raw []byte, lblk uint32) (*xpath, error) {
	x := &w.xp
	if x.sib == nil || len(x.sib) != int(w.v.bs) {
		for i := range x.bufs {
			x.bufs[i] = make([]byte, w.v.bs)
		}
		x.sib = make([]byte, w.v.bs)
		x.ents = make([]xent, 0, 2*w.xblockMax()+8)
	}
	if iFlags(raw)&FlagExtents == 0 {
		return nil, fmt.Errorf("ext4: inode %d is block-mapped: %w", ino, syscall.EOPNOTSUPP)
	}
	x.ino, x.raw = ino, raw
	node := raw[0x28:0x64]
	if err := checkExtentHeader(ino, node, 4, -1); err != nil {
		return nil, err
	}
	x.depth = int(le16(node, 6))
	x.lv[0] = xlevel{buf: node}
	for d := 0; d < x.depth; d++ {
		i := max(xsearch(node, lblk), 0)
		x.lv[d].idx = i
		blk := xchild(node, i)
		b := x.bufs[d+1]
		if err := w.v.readBlock(blk, b); err != nil {
			return nil, err
		}
		if err := checkExtentHeader(ino, b, w.xblockMax(), x.depth-d-1); err != nil {
			return nil, err
		}
		if w.v.rocompat&rocompatMetadataCsum != 0 {
			tail := 12 * (1 + int(le16(b, 4)))
			if tail+4 <= len(b) && le32(b, tail) != crc32c(w.inodeSeed(ino, raw), b[:tail]) {
				return nil, badCsum(ino, "extent block %d", blk)
			}
		}
		x.lv[d+1] = xlevel{blk: blk, buf: b}
		node = b
	}
	x.lv[x.depth].idx = xsearch(node, lblk)
	return x, nil
}

// leafEnts decodes the leaf's extents into x.ents.
func (x *xpath) leafEnts() []xent {
	leaf := x.lv[x.depth].buf
	ents := x.ents[:0]
	for i, n := 0, xentries(leaf); i < n; i++ {
		ents = append(ents, getXent(leaf, i))
	}
	return ents
}

// at returns the extent holding lblk, or ok false and the first block
// past the hole holding it (1<<32 when nothing follows).
func (x *xpath) at(lblk uint32) (e xent, ok bool, holeEnd uint64) {
	leaf := x.lv[x.depth]
	if leaf.idx >= 0 {
		e = getXent(leaf.buf, leaf.idx)
		if uint64(lblk) < e.end() {
			return e, true, 0
		}
	}
	if leaf.idx+1 < xentries(leaf.buf) {
		return xent{}, false, uint64(xkey(leaf.buf, leaf.idx+1))
	}
	return xent{}, false, x.pastLeaf()
}

// pastLeaf is the first key after the leaf's subtree: the next index key
// of the nearest ancestor that has one, or 1<<32.
func (x *xpath) pastLeaf() uint64 {
	for d := x.depth - 1; d >= 0; d-- {
		l := x.lv[d]
		if l.idx+1 < xentries(l.buf) {
			return uint64(xkey(l.buf, l.idx+1))
		}
	}
	return 1 << 32
}

// xput writes the node at level d (the root is in raw, which the caller
// writes), with its tail checksum.
func (w *Writer) xput(x *xpath, d int) error {
	if d == 0 {
		return nil
	}
	return w.xwriteBlock(x, x.lv[d].blk, x.lv[d].buf)
}

func (w *Writer) xwriteBlock(x *xpath, blk uint64, b []byte) error {
	w.begin(x.ino) // live.go
	if w.v.rocompat&rocompatMetadataCsum != 0 {
		tail := 12 * (1 + int(le16(b, 4))) // EXT4_EXTENT_TAIL_OFFSET: after eh_max entries
		binary.LittleEndian.PutUint32(b[tail:], crc32c(w.inodeSeed(x.ino, x.raw), b[:tail]))
	}
	return w.writeAt(b, int64(blk<<w.v.bsBits))
}

// xnewBlock allocates a tree block near goal and charges it to i_blocks.
func (w *Writer) xnewBlock(x *xpath, goal uint64) (uint64, error) {
	class := w.aclass
	w.aclass = w.tclass // rwspace.go: what tree blocks may take
	b, _, err := w.allocBlocks(goal, 1)
	w.aclass = class
	if err != nil {
		return 0, err
	}
	if err := w.addIBlocks(x.raw, 1); err != nil {
		w.freeBlocks(b, 1)
		return 0, err
	}
	return b, nil
}

func (w *Writer) xfreeBlock(x *xpath, blk uint64) error {
	if err := w.freeBlocks(blk, 1); err != nil {
		return err
	}
	return w.addIBlocks(x.raw, -1)
}

// xfixKeys sets the keys leading to the node at level d to its first key,
// up to the first ancestor where it is not the first entry.
func (w *Writer) xfixKeys(x *xpath, d int) error {
	if xentries(x.lv[d].buf) == 0 {
		return nil
	}
	k := xkey(x.lv[d].buf, 0)
	for d--; d >= 0; d-- {
		l := x.lv[d]
		if xkey(l.buf, l.idx) == k {
			return nil
		}
		binary.LittleEndian.PutUint32(l.buf[12*(l.idx+1):], k)
		if err := w.xput(x, d); err != nil {
			return err
		}
		if l.idx != 0 {
			return nil
		}
	}
	return nil
}

// xstore replaces the leaf's extents with ents; at is the first entry
// that changed (where an overflowing leaf splits).
func (w *Writer) xstore(x *xpath, ents []xent, at int) error {
	d := x.depth
	node := x.lv[d].buf
	lim := int(le16(node, 4))
	switch {
	case len(ents) == 0 && d > 0:
		return w.xremoveNode(x, d)
	case len(ents) <= lim:
		for i, e := range ents {
			putXent(node, i, e)
		}
		setXentries(node, len(ents))
		if err := w.xput(x, d); err != nil {
			return err
		}
		if err := w.xfixKeys(x, d); err != nil {
			return err
		}
		return w.xmergeUp(x)
	case d == 0:
		// The root overflows: its extents move to a new leaf under a
		// depth-1 root (ext4_ext_grow_indepth).
		blk, err := w.xnewBlock(x, ents[0].p)
		if err != nil {
			return err
		}
		b := x.sib
		clear(b)
		putExtentHeader(b, len(ents), w.xblockMax(), 0)
		for i, e := range ents {
			putXent(b, i, e)
		}
		if err := w.xwriteBlock(x, blk, b); err != nil {
			return err
		}
		clear(node)
		putExtentHeader(node, 1, 4, 1)
		putXIndex(node, 0, ents[0].l, blk)
		return nil
	}
	if err := w.xroomToSplit(x); err != nil {
		return err
	}
	split := min(max(at, 1), len(ents)-1, lim)
	split = max(split, len(ents)-lim)
	blk, err := w.xnewBlock(x, ents[split].p)
	if err != nil {
		return err
	}
	b := x.sib
	clear(b)
	right := ents[split:]
	putExtentHeader(b, len(right), w.xblockMax(), 0)
	for i, e := range right {
		putXent(b, i, e)
	}
	if err := w.xwriteBlock(x, blk, b); err != nil {
		return err
	}
	for i, e := range ents[:split] {
		putXent(node, i, e)
	}
	setXentries(node, split)
	clear(node[12*(split+1) : 12*(lim+1)])
	if err := w.xput(x, d); err != nil {
		return err
	}
	if err := w.xfixKeys(x, d); err != nil {
		return err
	}
	return w.xinsertIndex(x, d-1, x.lv[d-1].idx+1, ents[split].l, blk)
}

// xroomToSplit checks, before a leaf split changes anything, that the
// blocks it needs can be had: one per full node from the leaf up, and one
// more when the root is full too (growth); else ENOSPC with the tree
// unchanged.
func (w *Writer) xroomToSplit(x *xpath) error {
	need := uint64(1)
	for d := x.depth - 1; d >= 0; d-- {
		if xentries(x.lv[d].buf) < int(le16(x.lv[d].buf, 4)) {
			break
		}
		need++
	}
	if free := w.sbFreeBlocks(); free < need+uint64(len(w.pendingFree)) || !w.hasFree(need, w.tclass) {
		return syscall.ENOSPC
	}
	return nil
}

// xinsertIndex inserts (key, child) at position pos of the index node at
// level d, splitting it, or growing the tree at the root, when full.
func (w *Writer) xinsertIndex(x *xpath, d, pos int, key uint32, child uint64) error {
	node := x.lv[d].buf
	n, lim := xentries(node), int(le16(node, 4))
	if n < lim {
		copy(node[12*(pos+2):12*(n+2)], node[12*(pos+1):12*(n+1)])
		putXIndex(node, pos, key, child)
		setXentries(node, n+1)
		return w.xput(x, d)
	}
	b := x.sib
	clear(b)
	if d == 0 {
		if x.depth >= maxExtentDepth {
			return fmt.Errorf("ext4: inode %d: extent tree deeper than %d: %w", x.ino, maxExtentDepth, syscall.ENOSPC)
		}
		blk, err := w.xnewBlock(x, child)
		if err != nil {
			return err
		}
		putExtentHeader(b, n+1, w.xblockMax(), x.depth)
		copy(b[12:], node[12:12*(pos+1)])
		putXIndex(b, pos, key, child)
		copy(b[12*(pos+2):], node[12*(pos+1):12*(n+1)])
		if err := w.xwriteBlock(x, blk, b); err != nil {
			return err
		}
		clear(node)
		putExtentHeader(node, 1, 4, x.depth+1)
		putXIndex(node, 0, xkey(b, 0), blk)
		return nil
	}
	// Split: the new node takes the new entry and those after it.
	blk, err := w.xnewBlock(x, child)
	if err != nil {
		return err
	}
	putExtentHeader(b, n-pos+1, lim, int(le16(node, 6)))
	putXIndex(b, 0, key, child)
	copy(b[24:], node[12*(pos+1):12*(n+1)])
	if err := w.xwriteBlock(x, blk, b); err != nil {
		return err
	}
	setXentries(node, pos)
	clear(node[12*(pos+1) : 12*(n+1)])
	if err := w.xput(x, d); err != nil {
		return err
	}
	return w.xinsertIndex(x, d-1, x.lv[d-1].idx+1, key, blk)
}

// xremoveNode frees the empty node at level d > 0 and removes its entry
// from its parent, recursively; an emptied root goes back to depth 0.
func (w *Writer) xremoveNode(x *xpath, d int) error {
	if err := w.xfreeBlock(x, x.lv[d].blk); err != nil {
		return err
	}
	p := x.lv[d-1]
	n := xentries(p.buf)
	copy(p.buf[12*(p.idx+1):], p.buf[12*(p.idx+2):12*(n+1)])
	clear(p.buf[12*n : 12*(n+1)])
	setXentries(p.buf, n-1)
	switch {
	case n > 1:
		if err := w.xput(x, d-1); err != nil {
			return err
		}
		if p.idx == 0 {
			return w.xfixKeys(x, d-1)
		}
		return nil
	case d-1 == 0:
		clear(p.buf)
		putExtentHeader(p.buf, 0, 4, 0)
		x.depth = 0
		return nil
	default:
		return w.xremoveNode(x, d-1)
	}
}

// xmergeUp moves the only child of a depth-1 root back into i_block when
// its entries fit there (ext4_ext_try_to_merge_up).
func (w *Writer) xmergeUp(x *xpath) error {
	root := x.lv[0].buf
	if le16(root, 6) != 1 || xentries(root) != 1 || x.depth != 1 {
		return nil
	}
	child := x.lv[1]
	n := xentries(child.buf)
	if n > 4 {
		return nil
	}
	blk := child.blk
	putExtentHeader(root, n, 4, 0)
	copy(root[12:], child.buf[12:12*(n+1)])
	clear(root[12*(n+1):])
	x.depth = 0
	x.lv[0].idx = -1
	return w.xfreeBlock(x, blk)
}

// xinsert adds extent e, which lies in a hole, merging it with its
// neighbours in the leaf.
func (w *Writer) xinsert(ino uint32, raw []byte, e xent) error {
	x, err := w.xfind(ino, raw, e.l)
	if err != nil {
		return err
	}
	ents := x.leafEnts()
	i := x.lv[x.depth].idx + 1
	at := i
	ents = append(ents, xent{})
	copy(ents[i+1:], ents[i:])
	ents[i] = e
	if i > 0 && xmerge(ents[i-1], ents[i]) {
		ents[i-1].n += ents[i].n
		ents = append(ents[:i], ents[i+1:]...)
		i--
	}
	if i+1 < len(ents) && xmerge(ents[i], ents[i+1]) {
		ents[i].n += ents[i+1].n
		ents = append(ents[:i+1], ents[i+2:]...)
	}
	return w.xstore(x, ents, at)
}

// xsetState marks blocks [lo, hi) of ino unwritten (u) or initialised,
// splitting the extents it cuts and merging the results with their
// neighbours; holes are left alone.
func (w *Writer) xsetState(ino uint32, raw []byte, lo, hi uint64, u bool) error {
	if u {
		return w.xrewrite(ino, raw, lo, hi, xopUnwritten, 0)
	}
	return w.xrewrite(ino, raw, lo, hi, xopWritten, 0)
}

// xremove unmaps blocks [lo, hi) of ino and frees them (punch, truncate),
// freeing the tree blocks that empty.
func (w *Writer) xremove(ino uint32, raw []byte, lo, hi uint64) error {
	return w.xrewrite(ino, raw, lo, hi, xopRemove, 0)
}

// What xrewrite does to the blocks in its range.
const (
	xopRemove = iota
	xopUnwritten
	xopWritten
	xopShiftLeft // by shift blocks, over a hole at least that long
)

// part is the piece [a, b) of e.
func (e xent) part(a, b uint64) xent {
	return xent{l: uint32(a), n: uint32(b - a), p: e.p + (a - uint64(e.l)), u: e.u}
}

// xrewrite rebuilds, leaf by leaf, the extents holding blocks of [lo, hi):
// the blocks in the range are removed (and freed), given a state or moved
// left by shift blocks; the parts outside it are kept, and the results
// merged where they continue each other. Each new leaf list is built after
// the old one in w.xp's scratch.
func (w *Writer) xrewrite(ino uint32, raw []byte, lo, hi uint64, op int, shift uint32) error {
	for lo < hi {
		x, err := w.xfind(ino, raw, uint32(lo))
		if err != nil {
			return err
		}
		past := x.pastLeaf()
		src := x.leafEnts()
		out := src[len(src):]
		at := -1
		for _, e := range src {
			if e.end() <= lo || uint64(e.l) >= hi || ((op == xopWritten || op == xopUnwritten) && e.u == (op == xopUnwritten)) {
				out = xappend(out, e)
				continue
			}
			if at < 0 {
				at = len(out)
			}
			a, b := max(uint64(e.l), lo), min(e.end(), hi)
			if uint64(e.l) < a {
				out = xappend(out, e.part(uint64(e.l), a))
			}
			switch mid := e.part(a, b); op {
			case xopRemove:
				if err := w.freeBlocks(mid.p, b-a); err != nil {
					return err
				}
				if err := w.addIBlocks(raw, -int64(b-a)); err != nil {
					return err
				}
			case xopShiftLeft:
				mid.l -= shift
				out = xappend(out, mid)
			default:
				mid.u = op == xopUnwritten
				out = xappend(out, mid)
			}
			if b < e.end() {
				out = xappend(out, e.part(b, e.end()))
			}
		}
		if at >= 0 {
			if err := w.xstore(x, out, at); err != nil {
				return err
			}
		}
		lo = past
	}
	return nil
}

// xappend appends e to out, merging it into the last extent when it
// continues it.
func xappend(out []xent, e xent) []xent {
	if n := len(out); n > 0 && xmerge(out[n-1], e) {
		out[n-1].n += e.n
		return out
	}
	return append(out, e)
}
