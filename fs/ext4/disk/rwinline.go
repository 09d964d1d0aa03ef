package disk

// inline_data for the Writer, as fs/ext4/inline.c on this machine's kernel
// (6.18) leaves the inode: data in i_block (60 bytes) and the value of the
// in-inode attribute system.data.
//
//   - EXT4_STATE_MAY_INLINE_DATA: an inode with INLINE_DATA_FL has it
//     (ext4_iget_extra_inode), and so does every regular file this Writer
//     creates until its data first leaves the inode (newInline; the state
//     is in memory, as the kernel's, so a file created by an earlier
//     Writer and still empty gets blocks). Directories are made inline at
//     mkdir (ext4_init_new_dir -> ext4_try_create_inline_dir); symlinks
//     never are (ext4_symlink: fast below 60 bytes, else a block).
//   - Files: a write ending at or below the maximum inline size
//     (ext4_get_max_inline_size: i_block plus what the inode body's free
//     xattr space can give system.data's value) stays inline: the value
//     grows to exactly the write's end past 60 bytes
//     (ext4_prepare_inline_data, ext4_create_inline_data,
//     ext4_update_inline_data) and the bytes land in i_block and the value
//     (ext4_write_inline_data). A write past it converts the file
//     (ext4_convert_inline_data_to_extent), as does every fallocate
//     (ext4_fallocate -> ext4_convert_inline_data, punches included; on a
//     file without inline data it only clears the state). A truncate down
//     stays inline, shrinking the value and zeroing i_block past the size
//     (ext4_inline_data_truncate); one up only sets the size. An xattr
//     never evicts the data (6.18's ext4_xattr_ibody_set has no
//     ext4_try_to_evict_inline_data): it goes to the xattr block when the
//     body is full, and the inline maximum shrinks.
//   - Directories: i_block holds the parent's inode number, then entries
//     to byte 60; the value holds more entries. An entry goes in the first
//     gap of i_block's part, else the value is grown to the body's maximum
//     once (ext4_update_inline_dir, one empty entry over it) and tried,
//     else the directory is converted and the entry added to its block
//     (ext4_try_add_inline_entry). Removal is ext4_delete_inline_entry's
//     (ext4_generic_delete_entry within one part, the entry wiped);
//     rename rewrites entries and ".." in place.
//   - Conversion (ext4_convert_inline_data_nolock) allocates logical block
//     0, copies the inline bytes (a directory's as
//     ext4_finish_convert_inline_dir lays them: ".", "..", then the inline
//     entries byte for byte, the last one stretched to the block's end or
//     its checksum tail), removes system.data, clears INLINE_DATA_FL and
//     gives the inode an empty extent tree (or block map).
//
// Directory entries of an inline directory are addressed as if i_block and
// the value were one buffer (ext4_get_inline_entry's offsets): dirent.phys
// 0 means that buffer, off the offset in it.

import (
	"encoding/binary"
	"syscall"
	"time"
)

// inlineMin is EXT4_MIN_INLINE_DATA_SIZE (i_block); inlineDotdot is
// EXT4_INLINE_DOTDOT_SIZE, the parent's number that starts an inline
// directory.
const (
	inlineMin    = 60
	inlineDotdot = 4
)

// mayInline reports EXT4_STATE_MAY_INLINE_DATA for ino.
func (w *Writer) mayInline(ino uint32, raw []byte) bool {
	return iFlags(raw)&FlagInlineData != 0 || (len(w.newInline) > 0 && w.newInline[ino])
}

// inlineAttr finds system.data in raw's body: the body, the entry's offset
// and whether it exists.
func (w *Writer) inlineAttr(ino uint32, raw []byte) (xregion, int, bool, error) {
	s, ok := w.body(raw)
	if !ok {
		return s, 0, false, nil
	}
	if !s.check() {
		return s, 0, false, corrupt(ino, "bad in-inode extended attributes")
	}
	here, found, err := s.find(xSystem, "data")
	if err != nil {
		return s, 0, false, corrupt(ino, "bad in-inode extended attributes")
	}
	return s, here, found, nil
}

// inlineSize is ext4_get_inline_size: 60 plus the length of system.data's
// value, 0 without the attribute.
func (w *Writer) inlineSize(ino uint32, raw []byte) (int, error) {
	s, here, found, err := w.inlineAttr(ino, raw)
	if err != nil || !found {
		return 0, err
	}
	return inlineMin + int(le32(s.buf, here+8)), nil
}

// maxInline is ext4_get_max_inline_size (get_max_inline_xattr_value_size
// plus i_block): 0 when the body has no room for the attribute.
func (w *Writer) maxInline(raw []byte) int {
	if len(raw) <= 128 || le16(raw, 0x80) == 0 {
		return 0
	}
	start := extraEnd(raw)
	minOffs := len(raw) - start - 4
	if minOffs < 4+xattrLen(4) {
		return 0
	}
	var free int
	if le32(raw, start) != xattrMagic {
		free = xattrPad(minOffs - xattrLen(4) - 3 - 4)
	} else {
		s := xregion{buf: raw[start+4:]}
		if !s.check() {
			return 0
		}
		last, inl := 0, -1
		for ; !s.isLast(last); last = s.next(last) {
			if le32(s.buf, last+4) == 0 && le32(s.buf, last+8) != 0 {
				minOffs = min(minOffs, int(le16(s.buf, last+2)))
			}
			if s.buf[last+1] == xSystem && string(s.buf[last+16:last+16+int(s.buf[last])]) == "data" {
				inl = last
			}
		}
		free = minOffs - last - 4
		if inl >= 0 {
			free += xattrPad(int(le32(s.buf, inl+8)))
		} else if free -= xattrLen(4); free > 3 {
			free = xattrPad(free - 3)
		} else {
			free = 0
		}
	}
	if free <= 0 {
		return 0
	}
	return free + inlineMin
}

// setInlineValue sets system.data's value in raw's body (removes it when
// value is nil), as ext4_xattr_ibody_set: ENOSPC changes nothing.
func (w *Writer) setInlineValue(ino uint32, raw []byte, value []byte) error {
	s, here, found, err := w.inlineAttr(ino, raw)
	if err != nil {
		return err
	}
	if s.buf == nil {
		return syscall.ENOSPC
	}
	if value == nil && !found {
		return nil
	}
	if err := s.set(xSystem, "data", value, here, found); err != nil {
		return err
	}
	setBodyMagic(raw, s)
	return nil
}

// inlineBytes returns i_block followed by system.data's value, size bytes
// (ext4_read_inline_data), in a new slice; a missing value reads as
// nothing past i_block.
func (w *Writer) inlineBytes(ino uint32, raw []byte, size int) ([]byte, error) {
	buf := make([]byte, size)
	copy(buf, raw[0x28:0x64])
	if size <= inlineMin {
		return buf, nil
	}
	s, here, found, err := w.inlineAttr(ino, raw)
	if err != nil || !found {
		return buf, err
	}
	copy(buf[inlineMin:], s.value(here))
	return buf, nil
}

// storeInline writes buf over i_block and system.data's value (whose
// length stays), ext4_write_inline_data at offset 0.
func (w *Writer) storeInline(ino uint32, raw []byte, buf []byte) error {
	copy(raw[0x28:0x64], buf)
	if len(buf) <= inlineMin {
		return nil
	}
	s, here, found, err := w.inlineAttr(ino, raw)
	if err != nil {
		return err
	}
	if !found {
		return corrupt(ino, "inline data without system.data")
	}
	copy(s.value(here), buf[inlineMin:])
	return nil
}

// prepareInline is ext4_prepare_inline_data: room for n bytes of inline
// data in raw (system.data made, or its value grown to n-60 bytes), or
// ENOSPC.
func (w *Writer) prepareInline(ino uint32, raw []byte, n int) error {
	if !w.mayInline(ino, raw) || w.maxInline(raw) < n {
		return syscall.ENOSPC
	}
	s, here, found, err := w.inlineAttr(ino, raw)
	if err != nil {
		return err
	}
	if found {
		// ext4_update_inline_data: only ever grown, the old value kept.
		old := s.value(here)
		if n <= inlineMin+len(old) {
			return nil
		}
		v := make([]byte, n-inlineMin)
		copy(v, old)
		return w.setInlineValue(ino, raw, v)
	}
	// ext4_create_inline_data: an empty value up to 60 bytes.
	v := []byte{}
	if n > inlineMin {
		v = make([]byte, n-inlineMin)
	}
	if err := w.setInlineValue(ino, raw, v); err != nil {
		if err == syscall.ENOSPC {
			delete(w.newInline, ino)
		}
		return err
	}
	clear(raw[0x28:0x64])
	binary.LittleEndian.PutUint32(raw[0x20:], iFlags(raw)&^FlagExtents|FlagInlineData)
	delete(w.newInline, ino) // INLINE_DATA_FL carries the state now
	return nil
}

// tryWriteInline is ext4_generic_write_inline_data for WriteAt: when ino
// may hold inline data and off+len(p) fits, p is written into the inode
// (raw, which the caller stores) and ok is true. Otherwise an inline
// inode is converted (ext4_convert_inline_data_to_extent) and the state
// cleared, and the caller writes to blocks.
func (w *Writer) tryWriteInline(ino uint32, raw []byte, p []byte, off int64) (ok bool, err error) {
	end := off + int64(len(p))
	if end <= int64(w.maxInline(raw)) {
		switch err := w.prepareInline(ino, raw, int(end)); err {
		case nil:
			size, err := w.inlineSize(ino, raw)
			if err != nil {
				return false, err
			}
			buf, err := w.inlineBytes(ino, raw, size)
			if err != nil {
				return false, err
			}
			copy(buf[off:], p)
			return true, w.storeInline(ino, raw, buf)
		case syscall.ENOSPC:
		default:
			return false, err
		}
	}
	return false, w.convertInline(ino, raw)
}

// convertInline is ext4_convert_inline_data: an inode with inline data is
// moved to a block; on any other the state is cleared.
func (w *Writer) convertInline(ino uint32, raw []byte) error {
	delete(w.newInline, ino)
	if iFlags(raw)&FlagInlineData == 0 {
		return nil
	}
	return w.uninline(ino, raw)
}

// truncateInline is ext4_inline_data_truncate for a size at most the
// current one: the value shrinks to what lies past 60 bytes and i_block
// is zeroed past the size; raw is updated, not written.
func (w *Writer) truncateInline(ino uint32, raw []byte, size uint64) error {
	isz, err := w.inlineSize(ino, raw)
	if err != nil {
		return err
	}
	if size >= uint64(isz) {
		return nil
	}
	if isz > inlineMin {
		s, here, _, _ := w.inlineAttr(ino, raw)
		v := []byte{}
		if size > inlineMin {
			v = append(v, s.value(here)[:size-inlineMin]...)
		}
		if err := w.setInlineValue(ino, raw, v); err != nil {
			return err
		}
	}
	if size < inlineMin {
		clear(raw[0x28+size : 0x64])
	}
	return nil
}

// uninline converts inline_data inode ino to a block mapping
// (ext4_convert_inline_data_nolock); raw is updated in place and written.
// A copy of raw read before an earlier conversion in the same operation
// is refreshed instead.
func (w *Writer) uninline(ino uint32, raw []byte) error {
	w.begin(ino) // live.go
	cur, err := w.getInode(ino)
	if err != nil {
		return err
	}
	delete(w.newInline, ino)
	if iFlags(cur)&FlagInlineData == 0 {
		copy(raw, cur)
		return nil
	}
	size, err := w.inlineSize(ino, raw)
	if err != nil {
		return err
	}
	data, err := w.inlineBytes(ino, raw, max(size, inlineMin))
	if err != nil {
		return err
	}
	isDir := iMode(raw)&S_IFMT == S_IFDIR
	block := make([]byte, w.v.bs)
	if isDir {
		if err := w.inlineDirBlock(ino, data, block); err != nil {
			return err
		}
	} else {
		copy(block, data)
	}
	g := (ino - 1) / w.v.ipg
	blk, _, err := w.allocBlocks(w.v.firstData+uint64(g)*uint64(w.v.bpg), 1)
	if err != nil {
		return err
	}
	// ext4_destroy_inline_data_nolock.
	if err := w.setInlineValue(ino, raw, nil); err != nil {
		w.freeBlocks(blk, 1)
		return err
	}
	binary.LittleEndian.PutUint32(raw[0x20:], iFlags(raw)&^FlagInlineData)
	clear(raw[0x28:0x64])
	w.initMap(raw)
	delete(w.dirs, ino)
	delete(w.bmaps, ino)
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
	return w.putInode(ino, raw)
}

// inlineDirBlock lays inline directory ino's bytes (data, i_block then
// the value) in block as ext4_finish_convert_inline_dir does: "." and
// ".." of 12 bytes each, the inline entries copied as they are, and
// ext4_update_final_de's stretch of the last one to the end of the block
// (or its checksum tail). ext4_check_all_de first: a damaged entry gives
// EUCLEAN and nothing is changed.
func (w *Writer) inlineDirBlock(ino uint32, data, block []byte) error {
	if err := w.scanInline(ino, data, func(inlineEnt) bool { return false }); err != nil {
		return err
	}
	if 24+len(data)-inlineDotdot > w.dirEnd() {
		return corrupt(ino, "inline directory larger than a block")
	}
	putDirent(block, ino, 12, ".", FTDir)
	putDirent(block[12:], le32(data, 0), 12, "..", FTDir)
	copy(block[24:], data[inlineDotdot:])
	old := 24 + len(data) - inlineDotdot
	prev, dl := 0, 0
	for at := 0; at < old; at += dl {
		prev, dl = at, int(le16(block, at+4))
	}
	binary.LittleEndian.PutUint16(block[prev+4:], w.recLenDisk(dl+w.dirEnd()-old))
	return nil
}

// inlineEnt is an entry of an inline directory's buffer.
type inlineEnt struct {
	off, prev int // offset in the buffer; the previous entry's in its part (-1: first)
	recLen    int
	ino       uint32
	ft        uint8
	name      []byte
	partEnd   int // the end of its part (60 or the buffer's end)
}

// scanInline calls fn for every entry (in use or not) of inline directory
// buffer data, i_block's part then the value's, until fn returns true.
// An entry outside its part gives EUCLEAN (ext4_check_dir_entry).
func (w *Writer) scanInline(ino uint32, data []byte, fn func(inlineEnt) bool) error {
	for _, part := range [2][2]int{{inlineDotdot, inlineMin}, {inlineMin, len(data)}} {
		prev := -1
		for off := part[0]; off < part[1]; {
			if off+8 > part[1] {
				return corrupt(ino, "bad inline directory entry at %d", off)
			}
			rl, nl := int(le16(data, off+4)), int(data[off+6])
			if rl < 12 || rl&3 != 0 || off+rl > part[1] || 8+nl > rl {
				return corrupt(ino, "bad inline directory entry at %d", off)
			}
			e := inlineEnt{off: off, prev: prev, recLen: rl, ino: le32(data, off), ft: data[off+7], name: data[off+8 : off+8+nl], partEnd: part[1]}
			if fn(e) {
				return nil
			}
			prev, off = off, off+rl
		}
	}
	return nil
}

// inlineDir returns inline directory ino's buffer.
func (w *Writer) inlineDir(ino uint32, raw []byte) ([]byte, error) {
	size, err := w.inlineSize(ino, raw)
	if err != nil {
		return nil, err
	}
	return w.inlineBytes(ino, raw, max(size, inlineMin))
}

// inlineFind is find for an inline directory (ext4_find_inline_entry);
// ".." is the parent's number at offset 0.
func (w *Writer) inlineFind(dir uint32, draw []byte, name string) (e dirent, found bool, err error) {
	data, err := w.inlineDir(dir, draw)
	if err != nil {
		return e, false, err
	}
	if name == ".." {
		return dirent{ino: le32(data, 0), ft: FTDir, off: 0, prev: -1, recLen: inlineDotdot, name: name}, true, nil
	}
	err = w.scanInline(dir, data, func(x inlineEnt) bool {
		if x.ino != 0 && string(x.name) == name {
			e = dirent{ino: x.ino, ft: x.ft, off: x.off, prev: x.prev, recLen: x.recLen, name: name}
			found = true
		}
		return found
	})
	return e, found, err
}

// inlineEmpty is empty_inline_dir.
func (w *Writer) inlineEmpty(dir uint32, draw []byte) (bool, error) {
	data, err := w.inlineDir(dir, draw)
	if err != nil {
		return false, err
	}
	empty := true
	err = w.scanInline(dir, data, func(x inlineEnt) bool {
		empty = x.ino == 0
		return !empty
	})
	return empty, err
}

// inlineAddEntry is ext4_try_add_inline_entry: done when name went into
// the inode (draw written with new times); otherwise the directory has
// been converted and the caller adds name to its block.
func (w *Writer) inlineAddEntry(dir uint32, draw []byte, name string, ino uint32, ft uint8, now time.Time) (bool, error) {
	data, err := w.inlineDir(dir, draw)
	if err != nil {
		return false, err
	}
	need := (8 + len(name) + 3) &^ 3
	// ext4_add_dirent_to_inline: ext4_find_dest_de's first fit in one
	// part, ext4_insert_dentry.
	add := func(data []byte, lo, hi int) (bool, error) {
		at := -1
		err := w.scanInline(dir, data, func(x inlineEnt) bool {
			if x.off < lo || x.off >= hi {
				return false
			}
			used := 0
			if x.ino != 0 {
				used = (8 + len(x.name) + 3) &^ 3
			}
			if x.recLen-used >= need {
				at = x.off
				if used > 0 {
					binary.LittleEndian.PutUint16(data[x.off+4:], uint16(used))
					at = x.off + used
					binary.LittleEndian.PutUint16(data[at+4:], uint16(x.recLen-used))
				}
				return true
			}
			return false
		})
		if err != nil || at < 0 {
			return false, err
		}
		binary.LittleEndian.PutUint32(data[at:], ino)
		data[at+6] = byte(len(name))
		data[at+7] = ft
		copy(data[at+8:], name)
		if err := w.storeInline(dir, draw, data); err != nil {
			return false, err
		}
		touch(draw, now, tMtime, tCtime)
		return true, w.putInode(dir, draw)
	}
	if ok, err := add(data, inlineDotdot, inlineMin); ok || err != nil {
		return ok, err
	}
	if len(data) == inlineMin {
		// ext4_update_inline_dir: the value grown to the body's maximum
		// when that gives more than a one-character entry, one empty
		// entry over it (ext4_update_final_de); i_size follows.
		if grow := w.maxInline(draw) - inlineMin; grow > 12 {
			if err := w.setInlineValue(dir, draw, make([]byte, grow)); err != nil {
				return false, err
			}
			data = append(data, make([]byte, grow)...)
			binary.LittleEndian.PutUint16(data[inlineMin+4:], uint16(grow))
			setISize(draw, uint64(len(data)))
			if err := w.storeInline(dir, draw, data); err != nil {
				return false, err
			}
		}
	}
	if len(data) > inlineMin {
		if ok, err := add(data, inlineMin, len(data)); ok || err != nil {
			return ok, err
		}
	}
	return false, w.uninline(dir, draw)
}

// inlineRemove is ext4_delete_inline_entry: e merged into the previous
// entry of its part and wiped, or, first in its part, its inode and name
// cleared (ext4_generic_delete_entry); draw is written with new times.
func (w *Writer) inlineRemove(dir uint32, draw []byte, e dirent, now time.Time) error {
	data, err := w.inlineDir(dir, draw)
	if err != nil {
		return err
	}
	if e.off+e.recLen > len(data) || e.off < inlineDotdot {
		return corrupt(dir, "inline directory entry out of place")
	}
	if e.prev >= 0 {
		prl := int(le16(data, e.prev+4))
		binary.LittleEndian.PutUint16(data[e.prev+4:], uint16(prl+e.recLen))
		clear(data[e.off : e.off+e.recLen])
	} else {
		binary.LittleEndian.PutUint32(data[e.off:], 0)
		clear(data[e.off+6 : e.off+e.recLen])
	}
	if err := w.storeInline(dir, draw, data); err != nil {
		return err
	}
	touch(draw, now, tMtime, tCtime)
	return w.putInode(dir, draw)
}

// readDirBlock reads directory block phys of dir into buf; phys 0 is an
// inline directory's buffer (zeros past it).
func (w *Writer) readDirBlock(dir uint32, draw []byte, phys uint64, buf []byte) error {
	if phys != 0 {
		return w.v.readBlock(phys, buf)
	}
	data, err := w.inlineDir(dir, draw)
	if err != nil {
		return err
	}
	clear(buf)
	copy(buf, data)
	return nil
}

// writeInlineDir is writeDirBlock for an inline directory's buffer: the
// bytes go back into draw, which is written.
func (w *Writer) writeInlineDir(dir uint32, draw []byte, buf []byte) error {
	size, err := w.inlineSize(dir, draw)
	if err != nil {
		return err
	}
	if err := w.storeInline(dir, draw, buf[:max(size, inlineMin)]); err != nil {
		return err
	}
	return w.putInode(dir, draw)
}

// newInlineDir is ext4_try_create_inline_dir for new directory ino in
// parent: system.data with an empty value, the parent's number and one
// empty entry over the rest of i_block, i_size 60. False (nothing
// changed) when the inode has no room (the caller gives it a block).
func (w *Writer) newInlineDir(ino uint32, raw []byte, parent uint32) bool {
	if w.v.incompat&incompatInlineData == 0 {
		return false
	}
	if w.newInline == nil {
		w.newInline = map[uint32]bool{}
	}
	w.newInline[ino] = true
	defer delete(w.newInline, ino)
	if w.prepareInline(ino, raw, inlineMin) != nil {
		return false
	}
	binary.LittleEndian.PutUint32(raw[0x28:], parent)
	binary.LittleEndian.PutUint16(raw[0x28+inlineDotdot+4:], inlineMin-inlineDotdot)
	setISize(raw, inlineMin)
	return true
}

// newInode's inline state: a new regular file on an inline_data volume may
// take inline data (__ext4_new_inode sets EXT4_STATE_MAY_INLINE_DATA).
func (w *Writer) markNewInline(ino uint32, mode uint32) {
	if w.v.incompat&incompatInlineData == 0 {
		return
	}
	if mode&S_IFMT == S_IFREG {
		if w.newInline == nil {
			w.newInline = map[uint32]bool{}
		}
		w.newInline[ino] = true
	} else {
		delete(w.newInline, ino)
	}
}

// readInline is ReadAt for an inline_data file: the bytes of i_block and
// system.data, zeros up to the size past them.
func (w *Writer) readInline(ino uint32, raw []byte, p []byte, off int64) (int, error) {
	in, err := w.v.parseInode(ino, raw)
	if err != nil {
		return 0, err
	}
	data, err := w.v.InlineData(in)
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
