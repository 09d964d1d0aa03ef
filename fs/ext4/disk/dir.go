package disk

// Directories, Documentation/filesystems/ext4/directory.rst: linear blocks
// of ext4_dir_entry_2, an htree index over them (dx root in block 0, dx
// nodes elsewhere), or inline_data entries in the inode.

import (
	"bytes"
	"syscall"
	"unsafe"
)

const compatDirIndex = 0x20

// File types in directory entries (EXT4_FT_*).
const (
	FTUnknown = 0
	FTRegular = 1
	FTDir     = 2
	FTChrdev  = 3
	FTBlkdev  = 4
	FTFifo    = 5
	FTSock    = 6
	FTSymlink = 7
)

// recLen decodes rec_len, which for 64 KiB blocks uses its low two bits as
// bits 16-17 (ext2fs_get_rec_len).
func (v *Volume) recLen(raw uint16) int {
	if v.bs < 65536 {
		return int(raw)
	}
	if raw == 0xFFFF || raw == 0 {
		return int(v.bs)
	}
	return int(raw&65532) | int(raw&3)<<16
}

// entryFunc receives a directory entry and the directory offset just past
// it; it returns false to stop the walk.
type entryFunc func(name []byte, ino uint32, ft uint8, next int64) bool

// walkEntries calls fn for each in-use entry of the directory entries in b,
// after the checks of ext4_check_dir_entry. b starts at directory offset
// base; entries starting before from are checked but not reported. fn
// returns false to stop; then walkEntries returns stop == true.
func (v *Volume) walkEntries(dir *Inode, b []byte, base, from int64, fn entryFunc) (stop bool, err error) {
	for off := 0; off < len(b); {
		if off+8 > len(b) {
			return false, corrupt(dir.Ino, "directory entry at %d: truncated header", off)
		}
		ino := le32(b, off)
		rl := v.recLen(le16(b, off+4))
		nl := int(b[off+6])
		if rl < 12 || rl%4 != 0 || rl < (8+nl+3)&^3 || off+rl > len(b) {
			return false, corrupt(dir.Ino, "bad directory entry at %d: rec_len %d, name_len %d", off, rl, nl)
		}
		if ino > v.inodes {
			return false, corrupt(dir.Ino, "directory entry at %d: inode %d out of range", off, ino)
		}
		if ino != 0 && base+int64(off) >= from {
			var ft uint8
			if v.incompat&incompatFiletype != 0 {
				ft = b[off+7]
			}
			if !fn(b[off+8:off+8+nl], ino, ft, base+int64(off+rl)) {
				return true, nil
			}
		}
		off += rl
	}
	return false, nil
}

func (v *Volume) isDx(dir *Inode) bool {
	return v.compat&compatDirIndex != 0 && dir.Flags&FlagIndex != 0 && dir.Flags&FlagInlineData == 0
}

// dirBlock reads logical block lblk of dir into buf and verifies its
// checksum as __ext4_read_dirblock does: dx blocks (block 0 and blocks whose
// first entry spans the block, in an indexed directory) against the dx
// tail, leaves against the dirent tail. hole reports an unallocated block.
func (v *Volume) dirBlock(dir *Inode, c *ExtentCache, lblk uint64, buf []byte) (hole bool, phys uint64, err error) {
	m, err := v.MapBlocks(dir, c, lblk)
	if err != nil {
		return false, 0, err
	}
	if m.Hole || m.Unwritten {
		return true, 0, nil
	}
	phys = m.Physical + (lblk - m.Logical)
	cb, err := v.readBlockCached(phys, buf)
	if err != nil {
		return false, 0, err
	}
	if cb != nil {
		defer cb.Release()
		if cb.Verified(verifyTag(dir)) {
			return false, phys, nil // checked when it was read (buffer_verified)
		}
	}
	if !v.csum {
		return false, phys, nil
	}
	if err := v.dirBlockCsum(dir, lblk, buf); err != nil {
		return false, 0, err
	}
	if cb != nil {
		cb.SetVerified(verifyTag(dir))
	}
	return false, phys, nil
}

// dirBlockCsum checks the metadata_csum checksum of buf, logical block
// lblk of dir: a dx block (block 0 and blocks whose first entry spans the
// block, in an indexed directory) against the dx tail, a leaf against the
// dirent tail.
func (v *Volume) dirBlockCsum(dir *Inode, lblk uint64, buf []byte) error {
	if v.isDx(dir) && (lblk == 0 || v.recLen(le16(buf, 4)) == int(v.bs)) {
		if !v.dxCsumOK(dir, buf) {
			return badCsum(dir.Ino, "htree node (directory block %d)", lblk)
		}
		return nil
	}
	t := buf[v.bs-12:]
	if le32(t, 0) != 0 || le16(t, 4) != 12 || t[6] != 0 || t[7] != 0xDE {
		return badCsum(dir.Ino, "directory block %d (no checksum tail)", lblk)
	}
	if crc32c(dir.csumSeed, buf[:v.bs-12]) != le32(t, 8) {
		return badCsum(dir.Ino, "directory block %d", lblk)
	}
	return nil
}

// dxCountOffset is get_dx_countlimit: where the limit/count pair sits in a
// dx root (after "." , ".." and the 8-byte root info) or a dx node (after
// an empty entry spanning the block). 0 if b is neither.
func (v *Volume) dxCountOffset(b []byte) int {
	rl := v.recLen(le16(b, 4))
	if rl == int(v.bs) {
		return 8
	}
	if rl == 12 && v.recLen(le16(b, 16)) == int(v.bs)-12 && b[0x1D] == 8 {
		return 0x20
	}
	return 0
}

func (v *Volume) dxCsumOK(dir *Inode, b []byte) bool {
	co := v.dxCountOffset(b)
	if co == 0 {
		return false
	}
	limit, count := int(le16(b, co)), int(le16(b, co+2))
	tail := co + limit*8
	if count > limit || tail+8 > int(v.bs) {
		return false
	}
	c := crc32c(dir.csumSeed, b[:co+count*8])
	c = crc32c(c, b[tail:tail+4])
	c = crc32c(c, zero8[:4])
	return c == le32(b, tail+4)
}

// dirBlocks is how many blocks ReadDir and a linear Lookup visit: the
// directory size in blocks, never more than the volume has.
func (v *Volume) dirBlocks(dir *Inode) uint64 {
	n := (dir.Size + v.bs - 1) >> v.bsBits
	return min(n, v.blocks)
}

// ReadDir calls fn for each entry of dir in the order Linux's getdents
// lists them (dirhash.go: by hash for the directories ext4_dx_readdir
// lists, else in block order), skipping "." and "..", until fn returns
// false. ftype is the entry's EXT4_FT_* type (FTUnknown without the
// filetype feature). name is valid only during the call. Unallocated
// directory blocks are skipped, as Linux's readdir skips them.
//
// Errors: ENOTDIR; EBADMSG for a block failing its checksum; EUCLEAN for a
// malformed entry or a block shared by two offsets of a directory listed
// by offset. This is stricter than Linux's linear readdir, which logs such
// a block and skips it; a hash-order listing ignores the rest of a block
// from a malformed entry on, as the kernel, and a damaged index is listed
// by offset (ext4_readdir's fallback). Lookup matches Linux.
func (v *Volume) ReadDir(dir *Inode, fn func(name []byte, ino uint32, ftype uint8) bool) error {
	return v.ReadDirFrom(dir, 0, func(name []byte, ino uint32, ftype uint8, _ int64) bool {
		return fn(name, ino, ftype)
	})
}

// ReadDirFrom is ReadDir starting at position pos, for a reader that
// lists a directory in pieces (getdents). fn also receives next, the
// position after the entry, as getdents64's d_off: passing it back as pos
// resumes there. Positions are Linux's: hash cookies (hash2pos) for a
// directory listed by hash, where entries of equal hashes share theirs
// and are listed again from it; byte offsets in the directory otherwise
// (in the inline area for an inline_data directory on a volume without
// dir_index), a pos inside an entry resuming at the next entry boundary;
// 0 is the start.
func (v *Volume) ReadDirFrom(dir *Inode, pos int64, fn func(name []byte, ino uint32, ftype uint8, next int64) bool) error {
	if pos < 0 {
		return syscall.EINVAL
	}
	var c DirCursor
	var prev DirEntry
	have, stop := false, false
	give := func(next int64) bool {
		return fn(unsafe.Slice(unsafe.StringData(prev.Name), len(prev.Name)), prev.Ino, dtFT(prev.Type), next)
	}
	end, err := c.Iterate(DirSource{Vol: v, In: dir}, pos, func(at int64, e DirEntry) bool {
		if have && !give(at) {
			stop = true
			return false
		}
		prev, have = e, e.Name != "." && e.Name != ".."
		return true
	})
	if have && !stop {
		give(end)
	}
	return err
}

// scanDir is the linear walk under ReadDir and the non-indexed Lookup,
// from directory offset from on.
func (v *Volume) scanDir(dir *Inode, from int64, fn entryFunc) (bool, error) {
	if !dir.IsDir() {
		return false, syscall.ENOTDIR
	}
	if dir.Flags&FlagInlineData != 0 {
		return v.scanInlineDir(dir, from, fn)
	}
	bp := v.getBuf()
	defer v.putBuf(bp)
	buf := *bp
	var c ExtentCache
	var seen blockSet
	n := v.dirBlocks(dir)
	for lblk := uint64(from) >> v.bsBits; lblk < n; {
		m, err := v.MapBlocks(dir, &c, lblk)
		if err != nil {
			return false, err
		}
		if m.Hole || m.Unwritten {
			lblk = m.Logical + m.Len
			continue
		}
		_, phys, err := v.dirBlock(dir, &c, lblk, buf)
		if err != nil {
			return false, err
		}
		if !seen.add(phys) {
			return false, corrupt(dir.Ino, "directory block %d appears twice", phys)
		}
		stop, err := v.walkEntries(dir, buf[:v.bs], int64(lblk<<v.bsBits), from, fn)
		if stop || err != nil {
			return stop, err
		}
		lblk++
	}
	return false, nil
}

// scanInlineDir walks an inline_data directory: a 4-byte parent inode
// number, then entries in the rest of i_block, then in system.data.
// Offsets are positions in the inline data; "." and ".." stand for the
// 4-byte header, at 0 and 1.
func (v *Volume) scanInlineDir(dir *Inode, from int64, fn entryFunc) (bool, error) {
	data, err := v.InlineData(dir)
	if err != nil {
		return false, err
	}
	if len(data) < 4 {
		return false, corrupt(dir.Ino, "inline directory too short")
	}
	// "." stands at 0 and ".." at 1 (both before the first entry, at 4),
	// so that a listing stopped at ".." resumes with it.
	if from == 0 && !fn([]byte("."), dir.Ino, FTDir, 1) {
		return true, nil
	}
	if from <= 1 && !fn([]byte(".."), le32(data, 0), FTDir, 4) {
		return true, nil
	}
	end := min(uint64(len(data)), max(dir.Size, 60))
	if stop, err := v.walkEntries(dir, data[4:min(60, end)], 4, from, fn); stop || err != nil {
		return stop, err
	}
	if end > 60 {
		return v.walkEntries(dir, data[60:end], 60, from, fn)
	}
	return false, nil
}

// Lookup returns the inode number that name has in directory dir. Indexed
// directories are searched through their htree (falling back to a linear
// scan when the index itself is unusable, as ext4_find_entry does); others
// linearly. "." and ".." are found too.
//
// Errors: ENOTDIR, ENAMETOOLONG for names over 255 bytes, ENOENT when
// absent, EBADMSG or EUCLEAN for damaged directory blocks.
func (v *Volume) Lookup(dir *Inode, name string) (uint32, error) {
	if !dir.IsDir() {
		return 0, syscall.ENOTDIR
	}
	if len(name) > 255 {
		return 0, syscall.ENAMETOOLONG
	}
	if name == "" {
		return 0, syscall.ENOENT
	}
	if name == "." {
		return dir.Ino, nil
	}
	if v.isDx(dir) && name != ".." {
		ino, err := v.dxLookup(dir, []byte(name))
		if err != errBadDx {
			return ino, err
		}
	}
	var found uint32
	_, err := v.scanDir(dir, 0, func(n []byte, ino uint32, _ uint8, _ int64) bool {
		if string(n) == name {
			found = ino
			return false
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	if found == 0 {
		return 0, syscall.ENOENT
	}
	return found, nil
}

var errBadDx = &CorruptError{Errno: syscall.EUCLEAN, What: "unusable htree index"}

type dxFrame struct {
	b     []byte // the node block
	co    int    // count offset
	count int
	at    int // entry index followed
}

// dxPath is a path down an htree, dx_probe's frames: the root, then the
// index nodes, to the entry naming a leaf. Its blocks come from the
// volume's pool (release gives them back): a lookup per path component
// must not allocate a block's worth each time.
type dxPath struct {
	frames   [3]dxFrame
	n        int    // frames in use
	nblocks  uint64 // the directory's blocks
	c        ExtentCache
	held     [3]*[]byte
	nheld    int
	hashVers uint8 // the hash, with the volume's unsigned variant
}

func (p *dxPath) buf(v *Volume) []byte {
	bp := v.getBuf()
	p.held[p.nheld] = bp
	p.nheld++
	return *bp
}

func (p *dxPath) release(v *Volume) {
	for _, bp := range p.held[:p.nheld] {
		v.putBuf(bp)
	}
	p.nheld = 0
}

// leaf is the leaf block the path names.
func (p *dxPath) leaf() uint64 {
	f := &p.frames[p.n-1]
	return uint64(le32(f.b, f.co+8*f.at+4) & 0x0fffffff)
}

// dxProbe is dx_probe: it checks dir's htree root, sets the hash version,
// and descends to the leaf whose range holds hash (name's hash when name
// is not nil, returned). errBadDx for an index it refuses (Linux's
// ERR_BAD_DX_DIR, which sends the caller to a linear scan).
func (v *Volume) dxProbe(dir *Inode, p *dxPath, name []byte, hash uint32) (uint32, error) {
	p.nblocks = v.dirBlocks(dir)
	root := p.buf(v)
	if hole, _, err := v.dirBlock(dir, &p.c, 0, root); err != nil {
		return 0, err
	} else if hole {
		return 0, corrupt(dir.Ino, "htree root is a hole")
	}
	if le32(root, 0x18) != 0 || root[0x1D] != 8 || root[0x1F]&1 != 0 || v.dxCountOffset(root) != 0x20 {
		return 0, errBadDx
	}
	p.hashVers = root[0x1C]
	if p.hashVers <= hashTEA && v.hashUnsigned {
		p.hashVers += 3
	}
	if name != nil {
		var ok bool
		if hash, ok = dxHash(name, p.hashVers, v.hashSeed); !ok {
			return 0, errBadDx
		}
	} else if _, ok := dxHash(nil, p.hashVers, v.hashSeed); !ok {
		return 0, errBadDx
	}
	levels := int(root[0x1E])
	maxLevels := 2
	if v.incompat&incompatLargeDir != 0 {
		maxLevels = 3
	}
	if levels >= maxLevels {
		return 0, errBadDx
	}
	nodeLimit := v.dxNodeLimit()
	blk := root
	co := 0x20
	wantLimit := (int(v.bs) - 0x20 - v.dxTailRoom()) / 8
	p.n = 0
	for level := 0; ; level++ {
		limit, count := int(le16(blk, co)), int(le16(blk, co+2))
		if limit != wantLimit || count == 0 || count > limit {
			return 0, errBadDx
		}
		at := 0
		for i := 1; i < count; i++ {
			if le32(blk, co+8*i) <= hash {
				at = i
			} else {
				break
			}
		}
		p.frames[p.n] = dxFrame{b: blk, co: co, count: count, at: at}
		p.n++
		if level == levels {
			return hash, nil
		}
		child := uint64(le32(blk, co+8*at+4) & 0x0fffffff)
		if child == 0 || child >= p.nblocks {
			return 0, errBadDx
		}
		blk = p.buf(v)
		if hole, _, err := v.dirBlock(dir, &p.c, child, blk); err != nil {
			return 0, err
		} else if hole {
			return 0, corrupt(dir.Ino, "htree node %d is a hole", child)
		}
		co = 8
		if v.dxCountOffset(blk) != 8 {
			return 0, errBadDx
		}
		wantLimit = nodeLimit
	}
}

// dxTailRoom is the dx_tail's size under metadata_csum.
func (v *Volume) dxTailRoom() int {
	if v.rocompat&rocompatMetadataCsum != 0 {
		return 8
	}
	return 0
}

// dxNodeLimit is dx_node_limit.
func (v *Volume) dxNodeLimit() int { return (int(v.bs) - 8 - v.dxTailRoom()) / 8 }

// dxNextBlock is ext4_htree_next_block: it moves the path to the next
// leaf, at the deepest level that has one, and returns false when there
// is none. next is the hash the new leaf's index entry starts at (with
// its continuation bit). When want is not 1 (HASH_NB_ALWAYS), the path
// moves only if that hash continues want (false otherwise).
func (v *Volume) dxNextBlock(dir *Inode, p *dxPath, want uint32) (moved bool, next uint32, err error) {
	i := p.n - 1
	for i >= 0 && p.frames[i].at+1 >= p.frames[i].count {
		i--
	}
	if i < 0 {
		return false, 0, nil
	}
	p.frames[i].at++
	next = le32(p.frames[i].b, p.frames[i].co+8*p.frames[i].at)
	if want&1 == 0 && next&^1 != want {
		return false, next, nil
	}
	nodeLimit := v.dxNodeLimit()
	for j := i + 1; j < p.n; j++ {
		child := uint64(le32(p.frames[j-1].b, p.frames[j-1].co+8*p.frames[j-1].at+4) & 0x0fffffff)
		if child == 0 || child >= p.nblocks {
			return false, 0, corrupt(dir.Ino, "htree node points to block %d", child)
		}
		if hole, _, err := v.dirBlock(dir, &p.c, child, p.frames[j].b); err != nil {
			return false, 0, err
		} else if hole || v.dxCountOffset(p.frames[j].b) != 8 {
			return false, 0, corrupt(dir.Ino, "htree node %d invalid", child)
		}
		cnt := int(le16(p.frames[j].b, 10))
		if cnt == 0 || cnt > nodeLimit || int(le16(p.frames[j].b, 8)) != nodeLimit {
			return false, 0, corrupt(dir.Ino, "htree node %d: bad count", child)
		}
		p.frames[j].count, p.frames[j].at = cnt, 0
	}
	return true, next, nil
}

// dxLookup is ext4_dx_find_entry: descend from the root to the leaf whose
// hash range holds name's hash, search it, and continue into following
// leaves while their start hash is a collision continuation of ours.
func (v *Volume) dxLookup(dir *Inode, name []byte) (uint32, error) {
	var p dxPath
	defer p.release(v)
	hash, err := v.dxProbe(dir, &p, name, 0)
	if err != nil {
		return 0, err
	}
	bp := v.getBuf()
	defer v.putBuf(bp)
	leaf := *bp
	for visits := uint64(0); visits < p.nblocks; visits++ {
		lb := p.leaf()
		if lb >= p.nblocks {
			return 0, corrupt(dir.Ino, "htree points to block %d past the directory end", lb)
		}
		hole, _, err := v.dirBlock(dir, &p.c, lb, leaf)
		if err != nil {
			return 0, err
		}
		if hole {
			return 0, corrupt(dir.Ino, "htree leaf %d is a hole", lb)
		}
		var found uint32
		if _, err := v.walkEntries(dir, leaf, 0, 0, func(nm []byte, ino uint32, _ uint8, _ int64) bool {
			if bytes.Equal(nm, name) {
				found = ino
				return false
			}
			return true
		}); err != nil {
			return 0, err
		}
		if found != 0 {
			return found, nil
		}
		moved, _, err := v.dxNextBlock(dir, &p, hash)
		if err != nil {
			return 0, err
		}
		if !moved {
			return 0, syscall.ENOENT
		}
	}
	return 0, corrupt(dir.Ino, "htree lookup does not terminate")
}
