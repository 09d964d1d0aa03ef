package ext4

// inline_data for the Writer: files and directories whose data lives in
// i_block (60 bytes) and the in-inode system.data attribute.
//
// The Writer reads them (ReadAt, Readlink) and, before the first change
// that reaches their mapping (a write, a truncate, a directory entry
// added or removed, a directory's ".." rewritten), converts them to a
// block as ext4_convert_inline_data does: the data is copied to a newly
// allocated block (a directory gets ".", ".." and its entries), i_block
// becomes an empty extent tree (or block map without the extents
// feature), INLINE_DATA_FL is cleared and system.data removed from the
// inode body. New inodes are never made inline: where the kernel would
// keep a small new file or directory inline, the Writer gives it a block
// (e2fsck accepts both; contents, sizes and SEEK_DATA/SEEK_HOLE maps are
// the same, st_blocks differs).

import "encoding/binary"

// uninline converts inline_data inode ino to a block mapping; raw is
// updated in place and written. A copy of raw read before an earlier
// conversion in the same operation is refreshed instead.
func (w *Writer) uninline(ino uint32, raw []byte) error {
	cur, err := w.getInode(ino)
	if err != nil {
		return err
	}
	if iFlags(cur)&FlagInlineData == 0 {
		copy(raw, cur)
		return nil
	}
	in, err := w.v.parseInode(ino, raw)
	if err != nil {
		return err
	}
	data, err := w.v.inlineData(in)
	if err != nil {
		return err
	}
	isDir := iMode(raw)&S_IFMT == S_IFDIR
	var block []byte
	switch {
	case isDir:
		if block, err = w.inlineDirBlock(ino, raw, in); err != nil {
			return err
		}
	case iSize(raw) > 0:
		block = make([]byte, w.v.bs)
		copy(block, data[:min(uint64(len(data)), iSize(raw))])
	}
	removeIbodyXattr(raw, xSystem, "data")
	binary.LittleEndian.PutUint32(raw[0x20:], iFlags(raw)&^FlagInlineData)
	clear(raw[0x28:0x64])
	w.initMap(raw)
	delete(w.dirs, ino)
	delete(w.bmaps, ino)
	if block != nil {
		g := (ino - 1) / w.v.ipg
		blk, _, err := w.allocBlocks(w.v.firstData+uint64(g)*uint64(w.v.bpg), 1)
		if err != nil {
			return err
		}
		if _, err := w.storeExtents(ino, raw, []wext{{0, 1, blk}}, 0); err != nil {
			w.freeBlocks(blk, 1)
			return err
		}
		if err := w.addIBlocks(raw, 1); err != nil {
			return err
		}
		if isDir {
			setISize(raw, w.v.bs)
			err = w.writeDirBlock(ino, raw, block, blk)
		} else {
			err = w.writeDataAt(block, int64(blk<<w.v.bsBits))
		}
		if err != nil {
			return err
		}
	}
	return w.putInode(ino, raw)
}

// inlineDirBlock lays the entries of inline directory in out in one
// directory block: ".", "..", then each entry, the last one reaching the
// end of the block (or its checksum tail).
func (w *Writer) inlineDirBlock(ino uint32, raw []byte, in *Inode) ([]byte, error) {
	type ent struct {
		name string
		ino  uint32
		ft   uint8
	}
	var ents []ent
	parent := uint32(0)
	_, err := w.v.scanDir(in, 0, func(name []byte, e uint32, ft uint8, _ int64) bool {
		switch string(name) {
		case ".":
		case "..":
			parent = e
		default:
			ents = append(ents, ent{string(name), e, ft})
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	buf := make([]byte, w.v.bs)
	putDirent(buf, ino, 12, ".", FTDir)
	at, end := 12, w.dirEnd()
	last := func(n int) bool { return n == len(ents)-1 }
	rl := 12
	if len(ents) == 0 {
		rl = end - at
	}
	putDirent(buf[at:], parent, w.recLenDisk(rl), "..", FTDir)
	at += rl
	for i, e := range ents {
		rl = (8 + len(e.name) + 3) &^ 3
		if last(i) {
			rl = end - at
		}
		if at+rl > end {
			return nil, corrupt(ino, "inline directory larger than a block")
		}
		putDirent(buf[at:], e.ino, w.recLenDisk(rl), e.name, e.ft)
		at += rl
	}
	return buf, nil
}

// removeIbodyXattr removes attribute index/name from the attributes in the
// body of inode raw, as ext4_xattr_ibody_set with no value: its entry is
// taken out of the table, its value out of the value area (the values
// below it move up by its size), and the area's magic is cleared when no
// entry is left.
func removeIbodyXattr(raw []byte, index uint8, name string) {
	start := extraEnd(raw)
	if start+4 > len(raw) || le32(raw, start) != xattrMagic {
		return
	}
	base := raw[start+4:]
	entLen := func(off int) int { return (int(base[off]) + 16 + 3) &^ 3 }
	// Find the entry and the end of the table.
	found, tableEnd := -1, 0
	for off := 0; off+4 <= len(base) && le32(base, off) != 0; off += entLen(off) {
		if off+16 > len(base) || off+entLen(off) > len(base) {
			return // damaged: leave it to e2fsck rather than guess
		}
		if base[off+1] == index && string(base[off+16:off+16+int(base[off])]) == name {
			found = off
		}
		tableEnd = off + entLen(off)
	}
	if found < 0 {
		return
	}
	voff, vsize := int(le16(base, found+2)), int(le32(base, found+8))
	vlen := (vsize + 3) &^ 3
	if vsize > 0 && le32(base, found+4) == 0 && voff+vlen <= len(base) {
		// The lowest value offset: values between it and this one move up.
		low := voff
		for off := 0; off < tableEnd; off += entLen(off) {
			if off != found && le32(base, off+8) > 0 && le32(base, off+4) == 0 {
				if o := int(le16(base, off+2)); o < low {
					low = o
				}
			}
		}
		copy(base[low+vlen:voff+vlen], base[low:voff])
		clear(base[low : low+vlen])
		for off := 0; off < tableEnd; off += entLen(off) {
			if off != found && le32(base, off+8) > 0 && le32(base, off+4) == 0 {
				if o := int(le16(base, off+2)); o < voff {
					binary.LittleEndian.PutUint16(base[off+2:], uint16(o+vlen))
				}
			}
		}
	}
	n := entLen(found)
	copy(base[found:], base[found+n:tableEnd+4])
	clear(base[tableEnd+4-n : tableEnd+4])
	if le32(base, 0) == 0 {
		binary.LittleEndian.PutUint32(raw[start:], 0)
	}
}

// readInline is ReadAt for an inline_data file: the bytes of i_block and
// system.data, zeros up to the size past them.
func (w *Writer) readInline(ino uint32, raw []byte, p []byte, off int64) (int, error) {
	in, err := w.v.parseInode(ino, raw)
	if err != nil {
		return 0, err
	}
	data, err := w.v.inlineData(in)
	if err != nil {
		return 0, err
	}
	size := int64(iSize(raw))
	if off >= size {
		return 0, nil
	}
	p = p[:min(int64(len(p)), size-off)]
	n := 0
	if off < int64(len(data)) {
		n = copy(p, data[off:])
	}
	clear(p[n:])
	return len(p), nil
}
