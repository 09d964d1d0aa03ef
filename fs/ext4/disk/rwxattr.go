package disk

// Setting and removing extended attributes on the Writer, as
// fs/ext4/xattr.c does it, so that the bytes on disk are the kernel's:
//
//   - the inode body (after i_extra_isize: the 4-byte ibody header magic,
//     entries in insertion order, values packed down from the inode's end,
//     e_hash 0) is tried first; a value that does not fit there goes to
//     the xattr block (ext4_xattr_set_handle's order, with the name
//     removed from the other place once set in one);
//   - the block (i_file_acl) keeps its entries sorted by (name index, name
//     length, name), values packed down from its end, each entry's e_hash
//     over its name and padded value, h_hash over the entry hashes, and
//     the block checksum under metadata_csum;
//   - a block whose h_refcount is above 1 is shared: a change copies it
//     (copy-on-write), and the old one loses a reference; a block losing
//     its last reference is freed. Like the kernel's mbcache, xcache
//     remembers the blocks this Writer has read or written by h_hash, and
//     a block about to be written that is identical to a remembered one
//     with fewer than xattrRefMax references is shared instead;
//   - i_blocks counts the block in every inode that refers to it.
//
// system.posix_acl_* are not names Setxattr takes (EOPNOTSUPP): POSIX
// ACLs are set with SetACLAs (rwacl.go), which changes the mode with them.
// Not done: values in EA inodes (ea_inode volumes are refused read-write).
//
// Locking: everything here runs under the Writer's mu; xcache is
// protected by it.

import (
	"bytes"
	"encoding/binary"
	"strings"
	"syscall"
)

// xattrRefMax is EXT4_XATTR_REFCOUNT_MAX: a block with this many
// references is not shared further.
const xattrRefMax = 1024

// compatExtAttr is COMPAT_EXT_ATTR, set by the first xattr write
// (ext4_xattr_update_super_block).
const compatExtAttr = 0x8

// xattrIndexOf maps a Linux attribute name to ext4's name index and the
// stored suffix: EOPNOTSUPP for a namespace ext4 does not serve, EINVAL
// for a bare prefix (xattr_resolve_name).
func xattrIndexOf(name string) (uint8, string, error) {
	for _, p := range [...]struct {
		prefix string
		index  uint8
	}{{"user.", xUser}, {"trusted.", xTrusted}, {"security.", xSecurity}} {
		if strings.HasPrefix(name, p.prefix) {
			if len(name) == len(p.prefix) {
				return 0, "", syscall.EINVAL
			}
			return p.index, name[len(p.prefix):], nil
		}
	}
	return 0, "", syscall.EOPNOTSUPP
}

// xattrLen is EXT4_XATTR_LEN: an entry with its name, padded to 4.
func xattrLen(nameLen int) int { return (nameLen + 16 + 3) &^ 3 }

// xattrPad is EXT4_XATTR_SIZE: a value padded to 4.
func xattrPad(n int) int { return (n + 3) &^ 3 }

// xregion is one entry table with its values (ext4_xattr_search): buf
// runs from the base value offsets count from to the end of the space,
// and the entries start at first.
type xregion struct {
	buf   []byte
	first int
	block bool // sorted entries and hashes
}

func (s xregion) isLast(off int) bool { return le32(s.buf, off) == 0 }

func (s xregion) next(off int) int { return off + xattrLen(int(s.buf[off])) }

// find is ext4_xattr_find_entry: the offset of the entry (index, name),
// or of the entry before which it would be inserted (block) or the end
// (body), and whether it exists.
func (s xregion) find(index uint8, name string) (int, bool, error) {
	off := s.first
	for ; off+4 <= len(s.buf) && !s.isLast(off); off = s.next(off) {
		if s.next(off) > len(s.buf) {
			return 0, false, syscall.EUCLEAN
		}
		cmp := int(index) - int(s.buf[off+1])
		if cmp == 0 {
			cmp = len(name) - int(s.buf[off])
		}
		if cmp == 0 {
			cmp = bytes.Compare([]byte(name), s.buf[off+16:off+16+len(name)])
		}
		if cmp <= 0 && (s.block || cmp == 0) {
			return off, cmp == 0, nil
		}
	}
	if off+4 > len(s.buf) {
		return 0, false, syscall.EUCLEAN
	}
	return off, false, nil
}

// check is xattr_check_inode/ext4_xattr_check_block's walk: every entry
// and its name inside the space before the 4-byte terminator, every value
// inside it, after the entries' start and padded, no EA-inode values
// (refused volumes). set and find rely on it.
func (s xregion) check() bool {
	off := s.first
	for {
		if off+4 > len(s.buf) {
			return false
		}
		if s.isLast(off) {
			return true
		}
		if off+16 > len(s.buf) || s.next(off)+4 > len(s.buf) || le32(s.buf, off+4) != 0 {
			return false
		}
		vo, n := int(le16(s.buf, off+2)), int(le32(s.buf, off+8))
		if n != 0 && (vo < s.first+4 || vo+xattrPad(n) > len(s.buf) || n > len(s.buf)) {
			return false
		}
		off = s.next(off)
	}
}

// value is the value of the entry at off.
func (s xregion) value(off int) []byte {
	vo, n := int(le16(s.buf, off+2)), int(le32(s.buf, off+8))
	return s.buf[vo : vo+n]
}

// set is ext4_xattr_set_entry on s: it replaces, inserts (value non-nil)
// or removes (value nil) the entry (index, name) at here (found tells
// whether it exists), or gives ENOSPC and changes nothing.
func (s xregion) set(index uint8, name string, value []byte, here int, found bool) error {
	oldSize := 0
	if found {
		oldSize = xattrPad(int(le32(s.buf, here+8)))
	}
	newSize := xattrPad(len(value))
	if value != nil && newSize != 0 && newSize == oldSize {
		// The same padded size: the value is replaced where it is.
		vo := int(le16(s.buf, here+2))
		binary.LittleEndian.PutUint32(s.buf[here+8:], uint32(len(value)))
		copy(s.buf[vo:], value)
		clear(s.buf[vo+len(value) : vo+newSize])
		s.hashEntry(here)
		return nil
	}
	minOffs := len(s.buf)
	last := s.first
	for ; !s.isLast(last); last = s.next(last) {
		if le32(s.buf, last+4) == 0 && le32(s.buf, last+8) != 0 {
			minOffs = min(minOffs, int(le16(s.buf, last+2)))
		}
	}
	if value != nil {
		free := minOffs - last - 4
		if found {
			free += xattrLen(len(name)) + oldSize
		}
		if free < xattrLen(len(name))+newSize {
			return syscall.ENOSPC
		}
	}
	if found && le32(s.buf, here+8) != 0 {
		// Remove the old value, moving the ones below it up.
		offs := int(le16(s.buf, here+2))
		copy(s.buf[minOffs+oldSize:], s.buf[minOffs:offs])
		clear(s.buf[minOffs : minOffs+oldSize])
		minOffs += oldSize
		for e := s.first; !s.isLast(e); e = s.next(e) {
			if o := int(le16(s.buf, e+2)); le32(s.buf, e+4) == 0 && le32(s.buf, e+8) != 0 && o < offs {
				binary.LittleEndian.PutUint16(s.buf[e+2:], uint16(o+oldSize))
			}
		}
	}
	size := xattrLen(len(name))
	switch {
	case value == nil:
		last -= size
		copy(s.buf[here:], s.buf[here+size:last+size+4])
		clear(s.buf[last : last+size])
		if s.block {
			s.rehash()
		}
		return nil
	case !found:
		copy(s.buf[here+size:], s.buf[here:last+4])
		clear(s.buf[here : here+size])
		s.buf[here] = byte(len(name))
		s.buf[here+1] = index
		copy(s.buf[here+16:], name)
	default:
		clear(s.buf[here+2 : here+16])
	}
	if len(value) > 0 {
		vo := minOffs - newSize
		binary.LittleEndian.PutUint16(s.buf[here+2:], uint16(vo))
		copy(s.buf[vo:], value)
		clear(s.buf[vo+len(value) : vo+newSize])
	}
	binary.LittleEndian.PutUint32(s.buf[here+8:], uint32(len(value)))
	s.hashEntry(here)
	return nil
}

// hashEntry sets the hash of the entry at here, changed, and the block's:
// in a block only (e_hash stays 0 in the inode body).
func (s xregion) hashEntry(here int) {
	if s.block {
		binary.LittleEndian.PutUint32(s.buf[here+12:], s.entryHash(here))
		s.rehash()
	}
}

// entryHash is ext4_xattr_hash_entry over the entry's name and padded value.
func (s xregion) entryHash(off int) uint32 {
	var h uint32
	for _, c := range s.buf[off+16 : off+16+int(s.buf[off])] {
		h = h<<5 ^ h>>27 ^ uint32(c)
	}
	vo, n := int(le16(s.buf, off+2)), xattrPad(int(le32(s.buf, off+8)))
	for i := vo; i < vo+n; i += 4 {
		h = h<<16 ^ h>>16 ^ le32(s.buf, i)
	}
	return h
}

// rehash is ext4_xattr_rehash: h_hash from the entry hashes, 0 (never
// shared) if one of them is 0.
func (s xregion) rehash() {
	var h uint32
	for e := s.first; !s.isLast(e); e = s.next(e) {
		eh := le32(s.buf, e+12)
		if eh == 0 {
			h = 0
			break
		}
		h = h<<16 ^ h>>16 ^ eh
	}
	binary.LittleEndian.PutUint32(s.buf[0xC:], h)
}

// body is the inode's in-body xattr space, ok false when it has none
// (EXT4_INODE_HAS_XATTR_SPACE). Without the magic the space is empty.
func (w *Writer) body(raw []byte) (xregion, bool) {
	start := extraEnd(raw)
	if len(raw) <= 128 || le16(raw, 0x80) == 0 || start+4+4 > len(raw) {
		return xregion{}, false
	}
	if le32(raw, start) != xattrMagic {
		clear(raw[start:])
	}
	return xregion{buf: raw[start+4:]}, true
}

// setBodyMagic is ext4_xattr_ibody_set's ending: the magic marks a body
// with entries.
func setBodyMagic(raw []byte, s xregion) {
	m := uint32(0)
	if !s.isLast(0) {
		m = xattrMagic
	}
	binary.LittleEndian.PutUint32(raw[extraEnd(raw):], m)
}

func fileACL(raw []byte) uint64 { return uint64(le32(raw, 0x68)) | uint64(le16(raw, 0x76))<<32 }

func setFileACL(raw []byte, b uint64) {
	binary.LittleEndian.PutUint32(raw[0x68:], uint32(b))
	binary.LittleEndian.PutUint16(raw[0x76:], uint16(b>>32))
}

// xblockCsum is the checksum of xattr block nr (ext4_xattr_block_csum).
func (v *Volume) xblockCsum(nr uint64, b []byte) uint32 {
	var le [8]byte
	binary.LittleEndian.PutUint64(le[:], nr)
	c := crc32c(v.csumSeed, le[:])
	c = crc32c(c, b[:0x10])
	c = crc32c(c, zero8[:4])
	return crc32c(c, b[0x14:v.bs])
}

// readXBlock reads and checks xattr block nr of inode ino.
func (w *Writer) readXBlock(ino uint32, nr uint64) ([]byte, error) {
	v := w.v
	if nr < v.firstData || nr >= v.blocks {
		return nil, corrupt(ino, "bad extended attribute block %d", nr)
	}
	b := make([]byte, v.bs)
	if err := v.readBlock(nr, b); err != nil {
		return nil, err
	}
	if le32(b, 0) != xattrMagic || le32(b, 8) != 1 {
		return nil, corrupt(ino, "xattr block %d: bad header", nr)
	}
	if v.csum && v.xblockCsum(nr, b) != le32(b, 0x10) {
		return nil, badCsum(ino, "xattr block %d", nr)
	}
	return b, nil
}

// writeXBlock sets block nr's checksum and writes it.
func (w *Writer) writeXBlock(nr uint64, b []byte) error {
	if w.v.csum {
		binary.LittleEndian.PutUint32(b[0x10:], w.v.xblockCsum(nr, b))
	}
	return w.writeAt(b, int64(nr<<w.v.bsBits))
}

// xcacheAdd remembers block nr under hash (ext4_xattr_block_cache_insert:
// after a block is read by getxattr or listxattr, changed in place or
// written new); a block with xattrRefMax references stays but is not
// shared (the entry's e_reusable), and hash 0 is never shared.
func (w *Writer) xcacheAdd(hash uint32, nr uint64) {
	w.xcacheDel(hash, nr)
	if hash == 0 {
		return
	}
	if w.xcache == nil {
		w.xcache = map[uint32][]uint64{}
	}
	w.xcache[hash] = append(w.xcache[hash], nr)
}

func (w *Writer) xcacheDel(hash uint32, nr uint64) {
	l := w.xcache[hash]
	for i, b := range l {
		if b == nr {
			w.xcache[hash] = append(l[:i:i], l[i+1:]...)
			return
		}
	}
}

// xcacheFind is ext4_xattr_block_cache_find: the most recent remembered
// block other than skip whose entries equal s's (ext4_xattr_cmp).
func (w *Writer) xcacheFind(s xregion, skip uint64) (uint64, []byte) {
	h := le32(s.buf, 0xC)
	if h == 0 {
		return 0, nil
	}
	l := w.xcache[h]
	for i := len(l) - 1; i >= 0; i-- {
		if l[i] == skip {
			continue
		}
		b := make([]byte, w.v.bs)
		if w.v.readBlock(l[i], b) != nil || le32(b, 0) != xattrMagic || le32(b, 0xC) != h || le32(b, 4) >= xattrRefMax {
			continue
		}
		if c := (xregion{buf: b, first: 32, block: true}); c.check() && xattrSame(s, c) {
			return l[i], b
		}
	}
	return 0, nil
}

// xattrSame is ext4_xattr_cmp: the same entries (index, name, hash,
// value) in the same order.
func xattrSame(a, b xregion) bool {
	x, y := a.first, b.first
	for ; !a.isLast(x) && !b.isLast(y); x, y = a.next(x), b.next(y) {
		if !bytes.Equal(a.buf[x:x+2], b.buf[y:y+2]) || !bytes.Equal(a.buf[x+4:x+16], b.buf[y+4:y+16]) ||
			!bytes.Equal(a.buf[x+16:x+16+int(a.buf[x])], b.buf[y+16:y+16+int(b.buf[y])]) ||
			!bytes.Equal(a.value(x), b.value(y)) {
			return false
		}
	}
	return a.isLast(x) && b.isLast(y)
}

// Setxattr sets attribute name ("user.x", "trusted.x", "security.x") of
// ino to value, as setxattr(2) on ext4: flags XATTR_CREATE (EEXIST if it
// exists) and XATTR_REPLACE (ENODATA if not). ENOSPC when it fits neither
// in the inode nor in the block (a block holds values up to its size less
// the 32-byte header, the entry and 4 bytes), or no block is free;
// EOPNOTSUPP for another namespace, EINVAL for a bare prefix. Setting the
// value an attribute already has changes nothing, not even ctime, as
// ext4_xattr_set_handle.
func (w *Writer) Setxattr(ino uint32, name string, value []byte, flags int) error {
	if value == nil {
		value = []byte{}
	}
	return w.SetxattrAs(nil, ino, name, value, flags)
}

// Removexattr removes attribute name of ino: ENODATA if absent.
func (w *Writer) Removexattr(ino uint32, name string) error {
	return w.SetxattrAs(nil, ino, name, nil, 2) // XATTR_REPLACE, as __vfs_removexattr
}

// RemovexattrAs is Removexattr acting for c (see lockAs).
func (w *Writer) RemovexattrAs(c *Caller, ino uint32, name string) error {
	return w.SetxattrAs(c, ino, name, nil, 2) // XATTR_REPLACE, as __vfs_removexattr
}

// SetxattrAs sets (value nil: removes) attribute name of ino, acting for c
// (see lockAs).
func (w *Writer) SetxattrAs(c *Caller, ino uint32, name string, value []byte, flags int) error {
	index, suffix, err := xattrIndexOf(name)
	if err != nil {
		return err
	}
	if len(suffix) > 255 {
		return syscall.ERANGE
	}
	if err := w.lockAs(c); err != nil {
		return err
	}
	defer w.unlock()
	defer w.writeSuper()
	raw, err := w.getInode(ino)
	if err != nil {
		return err
	}
	changed, err := w.setXattrRaw(ino, raw, index, suffix, value, flags)
	if err != nil || !changed {
		return err
	}
	touch(raw, w.Now(), tCtime)
	return w.putInode(ino, raw)
}

// setXattrRaw is the body of ext4_xattr_set_handle on raw, inode ino's
// bytes (not yet written back): it sets (value nil: removes) the
// attribute index/name with flags XATTR_CREATE and XATTR_REPLACE, and
// reports whether anything changed (a removal of a missing attribute and
// a set to the value it has change nothing). Called with mu held.
func (w *Writer) setXattrRaw(ino uint32, raw []byte, index uint8, suffix string, value []byte, flags int) (bool, error) {
	var err error
	is, hasBody := w.body(raw)
	ihere, ifound := 0, false
	if hasBody {
		if !is.check() {
			return false, corrupt(ino, "in-inode xattrs")
		}
		if ihere, ifound, err = is.find(index, suffix); err != nil {
			return false, corrupt(ino, "in-inode xattrs")
		}
	}
	// The block, read when the name is not in the body.
	blk := fileACL(raw)
	var bs xregion
	bhere, bfound := 0, false
	loadBlock := func() error {
		if blk == 0 || bs.buf != nil {
			return nil
		}
		b, err := w.readXBlock(ino, blk)
		if err != nil {
			return err
		}
		bs = xregion{buf: b, first: 32, block: true}
		if !bs.check() {
			return corrupt(ino, "xattr block %d", blk)
		}
		if bhere, bfound, err = bs.find(index, suffix); err != nil {
			return corrupt(ino, "xattr block %d", blk)
		}
		return nil
	}
	if !ifound {
		if err := loadBlock(); err != nil {
			return false, err
		}
	}
	const create, replace = 1, 2
	if !ifound && !bfound {
		if flags&replace != 0 {
			return false, syscall.ENODATA
		}
		if value == nil {
			return false, nil
		}
	} else if flags&create != 0 {
		return false, syscall.EEXIST
	}
	if value != nil {
		if ifound && le32(is.buf, ihere+4) == 0 && bytes.Equal(is.value(ihere), value) ||
			bfound && le32(bs.buf, bhere+4) == 0 && bytes.Equal(bs.value(bhere), value) {
			return false, nil
		}
	}
	// ext4_xattr_set_handle: the body first; on ENOSPC the block, then
	// the name leaves the body.
	switch {
	case value == nil && ifound:
		err = is.set(index, suffix, nil, ihere, true)
		setBodyMagic(raw, is)
	case value == nil:
		err = w.blockSet(ino, raw, &bs, blk, index, suffix, nil, bhere, true)
	default:
		err = syscall.ENOSPC
		if hasBody {
			err = is.set(index, suffix, value, ihere, ifound)
		}
		if err == nil {
			setBodyMagic(raw, is)
			if bfound {
				err = w.blockSet(ino, raw, &bs, blk, index, suffix, nil, bhere, true)
			}
		} else if err == syscall.ENOSPC {
			if err = loadBlock(); err != nil {
				return false, err
			}
			err = w.blockSet(ino, raw, &bs, blk, index, suffix, value, bhere, bfound)
			if err == nil && ifound {
				err = is.set(index, suffix, nil, ihere, true)
				setBodyMagic(raw, is)
			}
		}
	}
	if err != nil {
		return false, err
	}
	if le32(w.sb, 0x5C)&compatExtAttr == 0 {
		binary.LittleEndian.PutUint32(w.sb[0x5C:], le32(w.sb, 0x5C)|compatExtAttr)
	}
	return true, nil
}

// blockSet is ext4_xattr_block_set: it changes the entry in the block
// (bs, empty when the inode has none; blk its number), in place when the
// block is the inode's alone, else in a copy; then shares an identical
// remembered block, keeps the one changed in place, or writes a new one,
// and points raw's i_file_acl at the result, releasing the old block.
// Nothing is changed on ENOSPC.
func (w *Writer) blockSet(ino uint32, raw []byte, bs *xregion, blk uint64, index uint8, name string, value []byte, here int, found bool) error {
	w.begin(ino) // live.go
	var s xregion
	inPlace := false
	if bs.buf != nil {
		if le32(bs.buf, 4) == 1 {
			// Modified in place: a copy first, so that ENOSPC changes nothing.
			inPlace = true
			w.xcacheDel(le32(bs.buf, 0xC), blk)
		}
		s = xregion{buf: bytes.Clone(bs.buf), first: 32, block: true}
		binary.LittleEndian.PutUint32(s.buf[4:], 1)
	} else {
		s = xregion{buf: make([]byte, w.v.bs), first: 32, block: true}
		here, found = 32, false
		binary.LittleEndian.PutUint32(s.buf[0:], xattrMagic)
		binary.LittleEndian.PutUint32(s.buf[4:], 1)
		binary.LittleEndian.PutUint32(s.buf[8:], 1)
	}
	if err := s.set(index, name, value, here, found); err != nil {
		return err // in place, the block has left the cache all the same
	}
	newBlk := uint64(0)
	if !s.isLast(32) {
		if nb, b := w.xcacheFind(s, 0); nb != 0 {
			if nb != blk {
				// Share the identical block: one more reference.
				binary.LittleEndian.PutUint32(b[4:], le32(b, 4)+1)
				if err := w.writeXBlock(nb, b); err != nil {
					return err
				}
				if err := w.addIBlocks(raw, 1); err != nil {
					return err
				}
			}
			newBlk = nb
		} else if inPlace {
			if err := w.writeXBlock(blk, s.buf); err != nil {
				return err
			}
			w.xcacheAdd(le32(s.buf, 0xC), blk)
			newBlk = blk
		} else {
			g := (ino - 1) / w.v.ipg
			nb, _, err := w.allocBlocks(w.v.firstData+uint64(g)*uint64(w.v.bpg), 1)
			if err != nil {
				return err
			}
			if err := w.writeXBlock(nb, s.buf); err != nil {
				return err
			}
			w.xcacheAdd(le32(s.buf, 0xC), nb)
			if err := w.addIBlocks(raw, 1); err != nil {
				return err
			}
			newBlk = nb
		}
	}
	setFileACL(raw, newBlk)
	if blk != 0 && blk != newBlk {
		return w.releaseXBlock(raw, blk, bs.buf)
	}
	return nil
}

// releaseXBlock is ext4_xattr_release_block: block nr (contents b) loses
// raw's reference, and is freed with its last one; raw's i_blocks drops it.
func (w *Writer) releaseXBlock(raw []byte, nr uint64, b []byte) error {
	if err := w.addIBlocks(raw, -1); err != nil {
		return err
	}
	refs := le32(b, 4)
	if refs <= 1 {
		w.xcacheDel(le32(b, 0xC), nr)
		return w.freeBlocks(nr, 1)
	}
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[4:], refs-1)
	return w.writeXBlock(nr, b)
}

// noteXattrBlock is the cache insertion of ext4_xattr_block_get and
// ext4_xattr_block_list: a getxattr of name (all names for a listxattr,
// name "") that reaches ino's block puts the block in xcache. Called
// with mu held.
func (w *Writer) noteXattrBlock(ino uint32, name string) {
	raw, err := w.getInode(ino)
	if err != nil || fileACL(raw) == 0 {
		return
	}
	if name != "" {
		index, suffix, err := xattrIndexOf(name)
		if err != nil {
			return
		}
		if is, ok := w.body(bytes.Clone(raw)); ok && is.check() {
			if _, found, _ := is.find(index, suffix); found {
				return
			}
		}
	}
	if b, err := w.readXBlock(ino, fileACL(raw)); err == nil {
		w.xcacheAdd(le32(b, 0xC), fileACL(raw))
	}
}

// Getxattr returns attribute name of ino (Volume.GetXattr), under the lock.
func (w *Writer) Getxattr(ino uint32, name string) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in, err := w.v.Inode(ino)
	if err != nil {
		return nil, err
	}
	b, err := w.v.GetXattr(in, name)
	w.noteXattrBlock(ino, name)
	return b, err
}

// Listxattr returns the attribute names of ino (Volume.ListXattr).
func (w *Writer) Listxattr(ino uint32) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in, err := w.v.Inode(ino)
	if err != nil {
		return nil, err
	}
	l, err := w.v.ListXattr(in)
	w.noteXattrBlock(ino, "")
	return l, err
}

// dropXattrBlock releases the xattr block of an inode being freed
// (ext4_xattr_delete_inode), leaving i_file_acl 0.
func (w *Writer) dropXattrBlock(ino uint32, raw []byte) error {
	nr := fileACL(raw)
	if nr == 0 {
		return nil
	}
	b, err := w.readXBlock(ino, nr)
	if err != nil {
		return err
	}
	setFileACL(raw, 0)
	return w.releaseXBlock(raw, nr, b)
}
