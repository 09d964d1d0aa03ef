package disk

// Block and inode allocation for the Writer: bitmaps, group descriptor and
// superblock counts, bitmap checksums. A BLOCK_UNINIT group's bitmap is
// built when it is first allocated from (initBlockBitmap).

import (
	"encoding/binary"
	"math/bits"
	"syscall"
)

// blockBitmap returns group g's block bitmap, read on first use.
func (w *Writer) blockBitmap(g uint32) ([]byte, error) {
	if b := w.bbm[g]; b != nil {
		return b, nil
	}
	b := make([]byte, w.v.bs)
	if w.descField(g, gdFlags, -1, 16)&bgBlockUninit != 0 {
		w.initBlockBitmap(g, b)
	} else if err := w.v.readBlock(w.descField(g, gdBlockBitmap, 0x20, 32), b); err != nil {
		return nil, err
	}
	w.bbm[g] = b
	return b, nil
}

// initBlockBitmap builds the bitmap of a BLOCK_UNINIT group as
// ext4_init_block_bitmap: the superblock backup and descriptor blocks
// (with the reserved ones) when the group has them, the group's own
// bitmaps and inode table when they lie in it, and the bits past the
// group's end. The flag is cleared when the bitmap is first written.
func (w *Writer) initBlockBitmap(g uint32, b []byte) {
	v := w.v
	start := v.firstData + uint64(g)*uint64(v.bpg)
	mark := func(blk uint64) {
		if blk >= start && blk < start+uint64(w.groupBlocks(g)) {
			setBit(b, uint32(blk-start))
		}
	}
	if v.groupHasSuper(uint64(g)) {
		n := uint64(1)
		if v.incompat&incompatMetaBG == 0 {
			perBlock := v.bs / uint64(v.descSize)
			n += (uint64(v.groups)+perBlock-1)/perBlock + uint64(le16(w.sb, 0xCE))
		}
		for i := uint64(0); i < n; i++ {
			mark(start + i)
		}
	}
	if v.incompat&incompatMetaBG != 0 {
		perBlock := uint32(v.bs / uint64(v.descSize))
		if idx := g % perBlock; idx == 0 || idx == 1 || idx == perBlock-1 {
			hs := uint64(0)
			if v.groupHasSuper(uint64(g)) {
				hs = 1
			}
			mark(start + hs)
		}
	}
	mark(w.descField(g, gdBlockBitmap, 0x20, 32))
	mark(w.descField(g, gdInodeBitmap, 0x24, 32))
	it := w.descField(g, 0x8, 0x28, 32)
	for i := uint64(0); i < v.itableBlocks; i++ {
		mark(it + i)
	}
	for i := w.groupBlocks(g); i < uint32(v.bs*8); i++ {
		setBit(b, i)
	}
}

// inodeBitmap returns group g's inode bitmap; an INODE_UNINIT group's is
// all clear, with the padding past the group's inodes set, as
// ext4_read_inode_bitmap builds it.
func (w *Writer) inodeBitmap(g uint32) ([]byte, error) {
	if b := w.ibm[g]; b != nil {
		return b, nil
	}
	b := make([]byte, w.v.bs)
	if w.descField(g, gdFlags, -1, 16)&bgInodeUninit != 0 {
		for i := w.v.ipg; i < uint32(w.v.bs*8); i++ {
			b[i/8] |= 1 << (i % 8)
		}
	} else if err := w.v.readBlock(w.descField(g, gdInodeBitmap, 0x24, 32), b); err != nil {
		return nil, err
	}
	w.ibm[g] = b
	return b, nil
}

// bitmap checksums (ext4_block_bitmap_csum_set, ext4_inode_bitmap_csum_set).
func (w *Writer) writeBlockBitmap(g uint32) error {
	b := w.bbm[g]
	if f := w.descField(g, gdFlags, -1, 16); f&bgBlockUninit != 0 {
		w.setDescField(g, gdFlags, -1, 16, f&^bgBlockUninit)
	}
	if w.v.rocompat&rocompatMetadataCsum != 0 {
		c := crc32c(w.v.csumSeed, b[:w.v.bpg/8])
		w.setDescField(g, gdBBCsum, 0x38, 16, uint64(c))
		if w.v.descSize < 64 {
			w.setDescField(g, gdBBCsum, -1, 16, uint64(c&0xFFFF))
		}
	}
	return w.writeAt(b, int64(w.descField(g, gdBlockBitmap, 0x20, 32)<<w.v.bsBits))
}

func (w *Writer) writeInodeBitmap(g uint32) error {
	b := w.ibm[g]
	if w.v.rocompat&rocompatMetadataCsum != 0 {
		c := crc32c(w.v.csumSeed, b[:w.v.ipg/8])
		w.setDescField(g, gdIBCsum, 0x3A, 16, uint64(c))
	}
	return w.writeAt(b, int64(w.descField(g, gdInodeBitmap, 0x24, 32)<<w.v.bsBits))
}

func bit(b []byte, i uint32) bool { return b[i/8]&(1<<(i%8)) != 0 }

// nextZero returns the first clear bit of b at or after i and below end,
// or end if there is none, passing over 64 set bits at a time: a group
// filled from its start is crossed in a few dozen steps, not one a block.
func nextZero(b []byte, i, end uint32) uint32 {
	for i < end {
		if i%64 == 0 && i+64 <= end && int(i/8)+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i/8:])
			if w == ^uint64(0) {
				i += 64
				continue
			}
			return i + uint32(bits.TrailingZeros64(^w))
		}
		if !bit(b, i) {
			return i
		}
		i++
	}
	return end
}
func setBit(b []byte, i uint32)   { b[i/8] |= 1 << (i % 8) }
func clearBit(b []byte, i uint32) { b[i/8] &^= 1 << (i % 8) }

// groupBlocks is the number of blocks in group g (the last may be short).
func (w *Writer) groupBlocks(g uint32) uint32 {
	v := w.v
	if g == v.groups-1 {
		return uint32(v.blocks - v.firstData - uint64(g)*uint64(v.bpg))
	}
	return v.bpg
}

// allocBlocks allocates up to n contiguous blocks, preferring goal
// (mballoc's goal-directed simple case: the first free run at or after the
// goal in its group, then the other groups in order). It returns the first
// block and the count, at least 1, or ENOSPC. The count is first lowered
// to what the reserves allow (claim, rwspace.go: ext4_mb_new_blocks).
func (w *Writer) allocBlocks(goal uint64, n uint32) (uint64, uint32, error) {
	v := w.v
	if n == 0 {
		n = 1
	}
	if w.sbFreeBlocks() == 0 || !w.claim(&n) {
		return 0, 0, syscall.ENOSPC
	}
	if goal < v.firstData || goal >= v.blocks {
		goal = v.firstData
	}
	g0 := uint32((goal - v.firstData) / uint64(v.bpg))
	start0 := uint32((goal - v.firstData) % uint64(v.bpg))
	for k := uint32(0); k <= v.groups; k++ {
		g := (g0 + k) % v.groups
		from := uint32(0)
		if k == 0 {
			from = start0
		}
		if w.descField(g, gdFreeBlocks, 0x2C, 16) == 0 {
			continue
		}
		bm, err := w.blockBitmap(g)
		if err != nil {
			return 0, 0, err
		}
		gb := w.groupBlocks(g)
		base := v.firstData + uint64(g)*uint64(v.bpg)
		for i := from; i < gb; i++ {
			if i = nextZero(bm, i, gb); i >= gb {
				break
			}
			if w.freedNow(base + uint64(i)) {
				continue
			}
			got := uint32(0)
			for i+got < gb && got < n && !bit(bm, i+got) && !w.freedNow(base+uint64(i+got)) {
				setBit(bm, i+got)
				got++
			}
			w.setDescField(g, gdFreeBlocks, 0x2C, 16, w.descField(g, gdFreeBlocks, 0x2C, 16)-uint64(got))
			w.setSbFreeBlocks(w.sbFreeBlocks() - uint64(got))
			if err := w.writeBlockBitmap(g); err != nil {
				return 0, 0, err
			}
			if err := w.writeDesc(g); err != nil {
				return 0, 0, err
			}
			return v.firstData + uint64(g)*uint64(v.bpg) + uint64(i), got, nil
		}
	}
	return 0, 0, syscall.ENOSPC
}

// freeBlocks returns n blocks from start to their groups.
func (w *Writer) freeBlocks(start uint64, n uint64) error {
	v := w.v
	for n > 0 {
		if start < v.firstData || start+n > v.blocks {
			return corrupt(0, "freeing blocks %d+%d outside the volume", start, n)
		}
		g := uint32((start - v.firstData) / uint64(v.bpg))
		i := uint32((start - v.firstData) % uint64(v.bpg))
		bm, err := w.blockBitmap(g)
		if err != nil {
			return err
		}
		cnt := uint32(0)
		for i+cnt < w.groupBlocks(g) && uint64(cnt) < n {
			if !bit(bm, i+cnt) {
				return corrupt(0, "freeing free block %d", start+uint64(cnt))
			}
			clearBit(bm, i+cnt)
			w.pendingFree[start+uint64(cnt)] = struct{}{}
			cnt++
		}
		w.setDescField(g, gdFreeBlocks, 0x2C, 16, w.descField(g, gdFreeBlocks, 0x2C, 16)+uint64(cnt))
		w.setSbFreeBlocks(w.sbFreeBlocks() + uint64(cnt))
		if err := w.writeBlockBitmap(g); err != nil {
			return err
		}
		if err := w.writeDesc(g); err != nil {
			return err
		}
		start += uint64(cnt)
		n -= uint64(cnt)
	}
	return nil
}

// allocInode allocates an inode near parent's group; directories go to
// the initialised group with the most free inodes at or above the average
// free blocks (a simple Orlov spread), files to the parent's group first.
func (w *Writer) allocInode(parent uint32, dir bool) (uint32, error) {
	v := w.v
	if le32(w.sb, 0x10) == 0 {
		return 0, syscall.ENOSPC
	}
	pg := (parent - 1) / v.ipg
	order := make([]uint32, 0, v.groups)
	if dir && v.groups > 1 {
		avgFree := w.sbFreeBlocks() / uint64(v.groups)
		best, bestFree := int64(-1), uint64(0)
		for g := uint32(0); g < v.groups; g++ {
			fi := w.descField(g, gdFreeInodes, 0x2E, 16)
			if fi > bestFree && w.descField(g, gdFreeBlocks, 0x2C, 16) >= avgFree {
				best, bestFree = int64(g), fi
			}
		}
		if best >= 0 {
			order = append(order, uint32(best))
		}
	}
	for k := uint32(0); k < v.groups; k++ {
		order = append(order, (pg+k)%v.groups)
	}
	for _, g := range order {
		if w.descField(g, gdFreeInodes, 0x2E, 16) == 0 {
			continue
		}
		if w.descField(g, gdFlags, -1, 16)&bgBlockUninit != 0 {
			// ext4_new_inode initialises the group's block bitmap too.
			if _, err := w.blockBitmap(g); err != nil {
				return 0, err
			}
			if err := w.writeBlockBitmap(g); err != nil {
				return 0, err
			}
		}
		bm, err := w.inodeBitmap(g)
		if err != nil {
			return 0, err
		}
		for i := w.ihint[g]; i < v.ipg; i++ {
			if i%64 == 0 && i+64 <= v.ipg && binary.LittleEndian.Uint64(bm[i/8:]) == ^uint64(0) {
				i += 63 // a word of used inodes: no per-bit scan of a full group
				continue
			}
			ino := g*v.ipg + i + 1
			if bit(bm, i) || ino < v.firstIno {
				continue
			}
			setBit(bm, i)
			if w.ihint == nil {
				w.ihint = map[uint32]uint32{}
			}
			w.ihint[g] = i + 1
			flags := w.descField(g, gdFlags, -1, 16)
			if flags&bgInodeUninit != 0 {
				w.setDescField(g, gdFlags, -1, 16, flags&^bgInodeUninit)
			}
			if v.rocompat&(rocompatGdtCsum|rocompatMetadataCsum) != 0 {
				if un := w.descField(g, gdItUnused, 0x32, 16); uint64(i) >= uint64(v.ipg)-un {
					w.setDescField(g, gdItUnused, 0x32, 16, uint64(v.ipg-i-1))
				}
			}
			w.setDescField(g, gdFreeInodes, 0x2E, 16, w.descField(g, gdFreeInodes, 0x2E, 16)-1)
			if dir {
				w.setDescField(g, gdUsedDirs, 0x30, 16, w.descField(g, gdUsedDirs, 0x30, 16)+1)
			}
			w.addSbFreeInodes(-1)
			if err := w.writeInodeBitmap(g); err != nil {
				return 0, err
			}
			if err := w.writeDesc(g); err != nil {
				return 0, err
			}
			return ino, nil
		}
	}
	return 0, syscall.ENOSPC
}

// freeInode clears ino's bitmap bit and counts it free.
func (w *Writer) freeInode(ino uint32, dir bool) error {
	v := w.v
	g := (ino - 1) / v.ipg
	i := (ino - 1) % v.ipg
	bm, err := w.inodeBitmap(g)
	if err != nil {
		return err
	}
	if !bit(bm, i) {
		return corrupt(ino, "freeing a free inode")
	}
	clearBit(bm, i)
	if i < w.ihint[g] { // a nil map reads 0
		w.ihint[g] = i
	}
	w.setDescField(g, gdFreeInodes, 0x2E, 16, w.descField(g, gdFreeInodes, 0x2E, 16)+1)
	if dir {
		w.setDescField(g, gdUsedDirs, 0x30, 16, w.descField(g, gdUsedDirs, 0x30, 16)-1)
	}
	w.addSbFreeInodes(1)
	if err := w.writeInodeBitmap(g); err != nil {
		return err
	}
	return w.writeDesc(g)
}

var _ = binary.LittleEndian

// freedNow reports whether blk was freed by the running transaction.
func (w *Writer) freedNow(blk uint64) bool {
	if len(w.pendingFree) == 0 {
		return false
	}
	_, ok := w.pendingFree[blk]
	return ok
}
