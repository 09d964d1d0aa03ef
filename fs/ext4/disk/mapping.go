package disk

// File block mapping: extent trees (Documentation/filesystems/ext4/
// ifork.rst) and the legacy direct/indirect block maps of ext2/ext3.

import (
	"syscall"
)

// Mapping is a run of logical blocks of one file that map the same way.
//
// For a mapped run, logical block Logical+i lives in physical block
// Physical+i for i < Len, that is at device byte offset
// (Physical+i)*BlockSize(). Hole and Unwritten runs read as zeros; a hole's
// Physical is 0.
type Mapping struct {
	Logical   uint64
	Physical  uint64
	Len       uint64 // ≥ 1
	Hole      bool   // nothing allocated
	Unwritten bool   // allocated but uninitialized (an unwritten extent)
}

// ExtentCache holds the last Mapping of one file, so that reads inside a
// known run cost a bounds check. The zero value is empty and ready to use.
// An ExtentCache belongs to one inode of one Volume (the volume is
// read-only, so a cached mapping never goes stale) and is not safe for
// concurrent use: keep one per open file, under the file's own lock, or one
// per goroutine.
type ExtentCache struct {
	m   Mapping // m.Len == 0: empty
	ino uint32
}

// Lookup returns the cached mapping if it covers logical block lblk of inode
// ino. It never allocates.
func (c *ExtentCache) Lookup(ino uint32, lblk uint64) (Mapping, bool) {
	if c.ino == ino && lblk-c.m.Logical < c.m.Len {
		return c.m, true
	}
	return Mapping{}, false
}

// Reset empties the cache.
func (c *ExtentCache) Reset() { *c = ExtentCache{} }

// ErrNoBlocks is returned by MapBlocks for an inode whose data does not live
// in blocks: inline_data files, fast symlinks and device or fifo inodes. It
// matches syscall.EINVAL.
var ErrNoBlocks error = &noBlocksError{}

type noBlocksError struct{}

func (*noBlocksError) Error() string { return "ext4: inode has no block-mapped data" }
func (*noBlocksError) Unwrap() error { return syscall.EINVAL }

// MapBlocks returns the run covering logical block lblk of in: the whole
// extent (or block-map run of consecutive blocks) holding it, or a hole
// starting at lblk and ending no later than the next mapped block. A hole's
// Len may stop short of the next mapped block, and past the last block it
// runs to the end of the addressable range; callers clamp to the file size
// and map again at the run's end.
//
// If c is non-nil it is consulted first and updated on a miss; a hit costs
// a bounds check and no allocation (callers on the hottest path may call
// c.Lookup, which inlines, before MapBlocks). MapBlocks does not read beyond the
// metadata it needs, so it suits a DAX reader that copies the run straight
// from device memory.
func (v *Volume) MapBlocks(in *Inode, c *ExtentCache, lblk uint64) (Mapping, error) {
	// Small enough to inline: the hit path is the bounds check alone.
	if c != nil && c.ino == in.Ino && lblk-c.m.Logical < c.m.Len {
		return c.m, nil
	}
	return v.mapBlocks(in, c, lblk)
}

func (v *Volume) mapBlocks(in *Inode, c *ExtentCache, lblk uint64) (Mapping, error) {
	if !in.hasData() || in.Flags&FlagInlineData != 0 {
		return Mapping{}, ErrNoBlocks
	}
	var m Mapping
	var err error
	if in.Flags&FlagExtents != 0 {
		m, err = v.mapExtents(in, lblk)
	} else {
		m, err = v.mapIndirect(in, lblk)
	}
	if err != nil {
		return Mapping{}, err
	}
	if c != nil {
		*c = ExtentCache{m: m, ino: in.Ino}
	}
	return m, nil
}

const extentEntry = 12 // header, index and leaf entries are all 12 bytes

// checkExtentHeader validates an extent node header as __ext4_ext_check does.
// maxEntries is the room in the node; wantDepth < 0 accepts any depth up to
// maxExtentDepth (the root).
func checkExtentHeader(ino uint32, b []byte, maxEntries int, wantDepth int) error {
	if le16(b, 0) != 0xF30A {
		return corrupt(ino, "extent header: bad magic %#x", le16(b, 0))
	}
	entries, max, depth := int(le16(b, 2)), int(le16(b, 4)), int(le16(b, 6))
	if depth > maxExtentDepth {
		return corrupt(ino, "extent tree too deep (%d)", depth)
	}
	if wantDepth >= 0 && depth != wantDepth {
		return corrupt(ino, "extent node depth %d, expected %d", depth, wantDepth)
	}
	if max > maxEntries || max == 0 {
		return corrupt(ino, "extent header: eh_max %d (room for %d)", max, maxEntries)
	}
	if entries > max {
		return corrupt(ino, "extent header: %d entries > eh_max %d", entries, max)
	}
	if entries == 0 && depth > 0 {
		return corrupt(ino, "extent index node with no entries")
	}
	return nil
}

// mapExtents walks the extent tree from the root in i_block. Depth is
// bounded by maxExtentDepth and every child must have exactly its parent's
// depth minus one, so the walk ends even on a crafted image.
func (v *Volume) mapExtents(in *Inode, lblk uint64) (Mapping, error) {
	if lblk >= 1<<32 {
		return Mapping{Logical: lblk, Len: 1 << 32, Hole: true}, nil
	}
	node := in.iblock()
	next := uint64(1 << 32) // first logical block past this subtree
	depth := int(le16(node, 6))
	var bp *[]byte
	defer func() {
		if bp != nil {
			v.putBuf(bp)
		}
	}()
	for {
		entries := int(le16(node, 2))
		if depth == 0 {
			return v.searchLeaf(in, node, entries, lblk, next)
		}
		// Index node: the last entry with ei_block <= lblk, or the first.
		i, err := searchNode(in.Ino, node, entries, lblk)
		if err != nil {
			return Mapping{}, err
		}
		e := node[extentEntry*(i+1):]
		if i+1 < entries {
			if nb := uint64(le32(node, extentEntry*(i+2))); nb < next {
				next = nb
			}
		}
		child := uint64(le32(e, 4)) | uint64(le16(e, 8))<<32
		if child < v.firstData || child >= v.blocks {
			return Mapping{}, corrupt(in.Ino, "extent index points to block %d outside the volume", child)
		}
		if bp == nil {
			bp = v.getBuf()
		}
		buf := *bp
		if err := v.readBlock(child, buf); err != nil {
			return Mapping{}, err
		}
		depth--
		if err := checkExtentHeader(in.Ino, buf, int(v.bs-extentEntry)/extentEntry, depth); err != nil {
			return Mapping{}, err
		}
		if v.csum {
			tail := extentEntry * (1 + int(le16(buf, 4)))
			if crc32c(in.csumSeed, buf[:tail]) != le32(buf, tail) {
				return Mapping{}, badCsum(in.Ino, "extent block %d", child)
			}
		}
		node = buf
	}
}

// searchNode checks that the index entries of node are strictly ascending
// and returns the one to descend into for lblk.
func searchNode(ino uint32, node []byte, entries int, lblk uint64) (int, error) {
	pos := 0
	for i := 0; i < entries; i++ {
		b := uint64(le32(node, extentEntry*(i+1)))
		if i > 0 && b <= uint64(le32(node, extentEntry*i)) {
			return 0, corrupt(ino, "extent index entries out of order")
		}
		if b <= lblk {
			pos = i
		}
	}
	return pos, nil
}

func (v *Volume) searchLeaf(in *Inode, node []byte, entries int, lblk, next uint64) (Mapping, error) {
	var prevEnd uint64
	found := -1
	for i := 0; i < entries; i++ {
		e := node[extentEntry*(i+1):]
		start := uint64(le32(e, 0))
		n := uint64(le16(e, 4))
		if n > 32768 {
			n -= 32768
		}
		phys := uint64(le32(e, 8)) | uint64(le16(e, 6))<<32
		if n == 0 || (i > 0 && start < prevEnd) || start+n > 1<<32 {
			return Mapping{}, corrupt(in.Ino, "extent %d: bad logical range %d+%d", i, start, n)
		}
		if phys < v.firstData || phys+n > v.blocks {
			return Mapping{}, corrupt(in.Ino, "extent %d: blocks %d+%d outside the volume", i, phys, n)
		}
		prevEnd = start + n
		if start <= lblk {
			found = i
		} else if start < next {
			next = start
			break
		}
	}
	if found >= 0 {
		e := node[extentEntry*(found+1):]
		start := uint64(le32(e, 0))
		raw := le16(e, 4)
		n := uint64(raw)
		if n > 32768 {
			n -= 32768
		}
		if lblk < start+n {
			return Mapping{
				Logical:   start,
				Physical:  uint64(le32(e, 8)) | uint64(le16(e, 6))<<32,
				Len:       n,
				Unwritten: raw > 32768,
			}, nil
		}
	}
	if next <= lblk {
		return Mapping{}, corrupt(in.Ino, "extent tree: index range does not cover its extents")
	}
	return Mapping{Logical: lblk, Len: next - lblk, Hole: true}, nil
}

// mapIndirect resolves lblk through the ext2/ext3 block map: 12 direct
// pointers, then single, double and triple indirect blocks. The depth is
// fixed, so no cycle can make the walk loop.
func (v *Volume) mapIndirect(in *Inode, lblk uint64) (Mapping, error) {
	ib := in.iblock()
	if lblk < 12 {
		return v.runOf(in, ib[:48], 12, lblk, lblk)
	}
	p := v.bs / 4
	base := uint64(12)
	span := uint64(1) // blocks covered by one pointer at the top level
	for level := 1; level <= 3; level++ {
		span *= p
		if lblk-base < span {
			ptr := uint64(le32(ib, 4*(11+level)))
			rel := lblk - base
			if ptr == 0 {
				return Mapping{Logical: lblk, Len: span - rel, Hole: true}, nil
			}
			bp := v.getBuf()
			defer v.putBuf(bp)
			buf := *bp
			for l := level; ; l-- {
				if ptr < v.firstData || ptr >= v.blocks {
					return Mapping{}, corrupt(in.Ino, "block map points to block %d outside the volume", ptr)
				}
				if err := v.readBlock(ptr, buf); err != nil {
					return Mapping{}, err
				}
				span /= p
				idx := rel / span
				rel %= span
				if l == 1 {
					return v.runOf(in, buf, p, lblk, idx)
				}
				ptr = uint64(le32(buf, int(4*idx)))
				if ptr == 0 {
					return Mapping{Logical: lblk, Len: span - rel, Hole: true}, nil
				}
			}
		}
		base += span
		if base > 1<<48 {
			break
		}
	}
	return Mapping{Logical: lblk, Len: 1 << 48, Hole: true}, nil
}

// runOf builds the run starting at slot idx (logical block lblk) of a
// pointer array of n slots: consecutive physical blocks, or consecutive
// zero (hole) pointers.
func (v *Volume) runOf(in *Inode, ptrs []byte, n, lblk, idx uint64) (Mapping, error) {
	ptr := uint64(le32(ptrs, int(4*idx)))
	j := idx + 1
	if ptr == 0 {
		for j < n && le32(ptrs, int(4*j)) == 0 {
			j++
		}
		return Mapping{Logical: lblk, Len: j - idx, Hole: true}, nil
	}
	for j < n && uint64(le32(ptrs, int(4*j))) == ptr+(j-idx) {
		j++
	}
	if ptr < v.firstData || ptr+(j-idx) > v.blocks {
		return Mapping{}, corrupt(in.Ino, "block map points to block %d outside the volume", ptr)
	}
	return Mapping{Logical: lblk, Physical: ptr, Len: j - idx}, nil
}
