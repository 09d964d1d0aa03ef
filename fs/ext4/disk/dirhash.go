package disk

// Directory listings in the kernel's order and with its positions
// (fs/ext4/dir.c). On a volume with dir_index, the directories is_dx_dir
// names — indexed ones, any of exactly one block, inline ones — are
// listed by ext4_dx_readdir: in hash order (the entries read a leaf at a
// time by ext4_htree_fill_tree, sorted by major and minor hash), "." and
// ".." among them, f_pos a hash cookie: hash2pos, the major hash's top 31
// bits over the minor hash for 64-bit callers (iovfs's callers all are:
// getdents64, FUSE, WASI), EXT4_HTREE_EOF_64BIT at the end. Other
// directories are listed by ext4_readdir's walk of the blocks, f_pos the
// byte offset, i_size at the end.
//
// A listing's position after an entry is the position of the entry
// reported after it (filldir64 writes d_off when the next entry comes),
// so entries of equal hashes all carry their hash: a seek to it reports
// the whole chain again, as the kernel does.
//
// dirCursor holds what ext4_dx_readdir keeps per open file
// (dir_private_info): the entries of the last fill, where the listing
// is, an entry the caller's buffer had no room for (extra_fname), and
// the directory's version at the fill, so that a listing resumed after
// a change reads the directory again from where it is.

import (
	"cmp"
	"slices"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// htreeEOF is EXT4_HTREE_EOF_64BIT, a hash-order listing's end.
const htreeEOF = 1<<63 - 1

// hash2pos, pos2majHash and pos2minHash convert between hashes and
// positions for 64-bit callers.
func hash2pos(major, minor uint32) int64 { return int64(major>>1)<<32 | int64(minor) }
func pos2majHash(pos int64) uint32       { return uint32(pos>>32) << 1 }
func pos2minHash(pos int64) uint32       { return uint32(pos) }

// isDxDir is is_dx_dir: whether ext4_readdir lists dir in hash order.
// Without dir_index on the volume, an index flag is ignored.
func (v *Volume) isDxDir(dir *Inode) bool {
	return v.compat&compatDirIndex != 0 && dir.IsDir() &&
		(dir.Flags&FlagIndex != 0 || dir.Size>>v.bsBits == 1 || dir.Flags&FlagInlineData != 0)
}

// dirEnd is where a complete listing of dir leaves the position.
func (v *Volume) dirEnd(dir *Inode) int64 {
	if v.isDxDir(dir) {
		return htreeEOF
	}
	return int64(dir.Size)
}

// direntAt is the offset of the entry whose name walkEntries reported,
// next being the offset past it: its header is the 8 bytes before the
// name, rec_len among them.
func (v *Volume) direntAt(name []byte, next int64) int64 {
	hdr := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(name)), -8)), 8)
	return next - int64(v.recLen(le16(hdr, 4)))
}

// fillEnt appends a hash-order entry to out.
func (v *Volume) fillEnt(out []DirEntry, hv uint8, name []byte, ino uint32, ft uint8, hash, minor uint32) ([]DirEntry, bool) {
	h, m, ok := dxHashes(name, hv, v.hashSeed)
	if !ok {
		return out, false
	}
	if h < hash || (h == hash && m < minor) || ino == 0 {
		return out, true
	}
	return append(out, DirEntry{Name: string(name), Pos: hash2pos(h, m), Ino: ino, Type: DType(ft)}), true
}

// sortFill puts a fill's entries, appended in the order they were read,
// in listing order: by hash and minor hash, and entries of equal hashes
// in the order ext4_htree_store_dirent chains them (the first read, then
// the others from the last read back).
func sortFill(ents []DirEntry) {
	slices.SortStableFunc(ents, func(a, b DirEntry) int { return cmp.Compare(a.Pos, b.Pos) })
	for i := 0; i < len(ents); {
		j := i + 1
		for j < len(ents) && ents[j].Pos == ents[i].Pos {
			j++
		}
		if j-i > 2 {
			slices.Reverse(ents[i+1 : j])
		}
		i = j
	}
}

// dxFill is ext4_htree_fill_tree: the entries of dir at or after (hash,
// minor), in listing order, appended to out[:0]. For an indexed
// directory: "." and ".." (from the root block, at hashes 0 and 2) when
// the start allows, then the leaf the index gives for hash and the leaves
// after it, until one entry was found and the next leaf does not continue
// a hash; next is the hash starting the leaf after them, ^0 when none.
// For a one-block or inline directory, every entry ("." and ".." hashed
// as names), next ^0. errBadDx for an index dx_probe refuses.
func (v *Volume) dxFill(dir *Inode, hash, minor uint32, out []DirEntry) (ents []DirEntry, next uint32, err error) {
	out = out[:0]
	defer func() { sortFill(ents) }()
	if dir.Flags&FlagIndex == 0 {
		hv := v.defHashVersion
		if hv <= hashTEA && v.hashUnsigned {
			hv += 3
		}
		ok := true
		fn := func(name []byte, ino uint32, ft uint8, _ int64) bool {
			out, ok = v.fillEnt(out, hv, name, ino, ft, hash, minor)
			return ok
		}
		if dir.Flags&FlagInlineData != 0 {
			_, err = v.scanInlineDir(dir, 0, fn) // ext4_inlinedir_to_tree
		} else {
			err = v.fillBlock(dir, nil, 0, fn) // htree_dirblock_to_tree of block 0
		}
		if !ok {
			return out, ^uint32(0), errBadDx
		}
		return out, ^uint32(0), err
	}
	var p dxPath
	defer p.release(v)
	if _, err := v.dxProbe(dir, &p, nil, hash); err != nil {
		return out, 0, err
	}
	root := p.frames[0].b
	if hash == 0 && minor == 0 {
		out = append(out, DirEntry{Name: ".", Pos: 0, Ino: le32(root, 0), Type: DType(v.dirFT(root[7]))})
	}
	if hash < 2 || (hash == 2 && minor == 0) {
		out = append(out, DirEntry{Name: "..", Pos: hash2pos(2, 0), Ino: le32(root, 12), Type: DType(v.dirFT(root[12+7]))})
	}
	ok := true
	fn := func(name []byte, ino uint32, ft uint8, _ int64) bool {
		out, ok = v.fillEnt(out, p.hashVers, name, ino, ft, hash, minor)
		return ok
	}
	for visits := uint64(0); visits < p.nblocks; visits++ {
		lb := p.leaf()
		if lb >= p.nblocks {
			return out, 0, corrupt(dir.Ino, "htree points to block %d past the directory end", lb)
		}
		if err := v.fillBlock(dir, &p.c, lb, fn); err != nil {
			return out, 0, err
		}
		if !ok {
			return out, 0, errBadDx
		}
		moved, h, err := v.dxNextBlock(dir, &p, 1) // HASH_NB_ALWAYS
		if err != nil {
			return out, 0, err
		}
		if !moved {
			return out, ^uint32(0), nil
		}
		if len(out) > 0 && h&1 == 0 {
			return out, h, nil
		}
	}
	return out, 0, corrupt(dir.Ino, "htree listing does not terminate")
}

// dirFT is a directory entry's file type byte, 0 without the filetype
// feature (get_dtype).
func (v *Volume) dirFT(ft uint8) uint8 {
	if v.incompat&incompatFiletype == 0 {
		return 0
	}
	return ft
}

// fillBlock is htree_dirblock_to_tree's walk of block lblk of dir: its
// entries to fn, up to the first malformed one (the rest of the block is
// ignored, as the kernel ignores it). A hole is EUCLEAN (ext4_read_dirblock's
// "Directory hole found for htree leaf block").
func (v *Volume) fillBlock(dir *Inode, c *ExtentCache, lblk uint64, fn entryFunc) error {
	bp := v.getBuf()
	defer v.putBuf(bp)
	buf := *bp
	if c == nil {
		c = new(ExtentCache)
	}
	hole, _, err := v.dirBlock(dir, c, lblk, buf)
	if err != nil {
		return err
	}
	if hole {
		return corrupt(dir.Ino, "directory hole at htree leaf %d", lblk)
	}
	end := int(v.bs) - 8 // top: the last entry that can start there is the tail
	b := buf[:v.bs]
	for off := 0; off < end; {
		if off+8 > len(b) {
			break
		}
		rl := v.recLen(le16(b, off+4))
		nl := int(b[off+6])
		if rl < 12 || rl%4 != 0 || rl < (8+nl+3)&^3 || off+rl > len(b) || le32(b, off) > v.inodes {
			break // ext4_check_dir_entry failed: "silently ignore the rest of the block"
		}
		if !fn(b[off+8:off+8+nl], le32(b, off), v.dirFT(b[off+7]), int64(off+rl)) {
			return nil
		}
		off += rl
	}
	return nil
}

// linearIterate is ext4_readdir's walk of a directory that is not listed
// by hash: from offset pos, each entry in use to emit with its offset,
// until emit returns false; the offset it stops at (the refused entry's,
// or i_size) is returned. A pos inside an entry starts at the next entry
// boundary, as the kernel's revalidation after a seek or a change.
func (v *Volume) linearIterate(dir *Inode, pos int64, emit func(at int64, e DirEntry) bool) (int64, error) {
	end := int64(dir.Size)
	if pos >= end {
		return pos, nil
	}
	stopped := int64(-1)
	_, err := v.scanDir(dir, pos, func(name []byte, ino uint32, ft uint8, next int64) bool {
		var at int64
		switch {
		case dir.Flags&FlagInlineData != 0 && next <= 4: // "." and "..", not in the data (scanInlineDir)
			at = min(next-1, 1)
		default:
			at = v.direntAt(name, next)
		}
		if !emit(at, DirEntry{Name: string(name), Pos: at, Ino: ino, Type: DType(ft)}) {
			stopped = at
			return false
		}
		return true
	})
	if stopped >= 0 {
		return stopped, err
	}
	return end, err
}

// dirCursor is one open directory's listing state, ext4's
// dir_private_info. The zero value starts at the beginning.
type DirCursor struct {
	ents    []DirEntry // the entries of the last fill, in listing order (info->root)
	curr    int        // the first entry of the chain the listing is at; -1: none (curr_node NULL)
	extra   int        // an entry refused by the caller, reported first next time (extra_fname); -1: none
	lastPos int64      // the position the last call left (info->last_pos)
	gen     uint64     // the directory's version at the fill (info->cookie)
	hash    uint32     // curr_hash, curr_minor_hash: where a fill starts
	minor   uint32
	next    uint32 // the hash of the leaf after the fill, ^0 at the end
	started bool
	linear  bool // the index was refused: listed by offset (ext4_readdir's fallback)
	own     bool // ents is the cursor's own, reusable for the next fill
}

// dirSource is what a cursor lists: directory in of v, its version gen
// (any change to the directory changes it), and the directory's cached
// listing when it has one (listcache.go), which stands for fills and
// block walks alike.
type DirSource struct {
	Vol  *Volume
	In   *Inode
	Gen  uint64
	List *DirList
}

// fill gives the cursor the entries at or after (c.hash, c.minor).
func (c *DirCursor) fill(src DirSource) (int, error) {
	if l := src.List; l != nil {
		i, _ := slices.BinarySearchFunc(l.ents, hash2pos(c.hash, c.minor), func(e DirEntry, p int64) int { return cmp.Compare(e.Pos, p) })
		c.ents, c.next, c.own = l.ents[i:], ^uint32(0), false
		return len(c.ents), nil
	}
	var buf []DirEntry
	if c.own {
		buf = c.ents
	}
	ents, next, err := src.Vol.dxFill(src.In, c.hash, c.minor, buf)
	c.ents, c.next, c.own = ents, next, true
	return len(ents), err
}

// chainEnd is the index past the chain of entries with the hash of
// ents[i].
func (c *DirCursor) chainEnd(i int) int {
	j := i + 1
	for j < len(c.ents) && c.ents[j].Pos == c.ents[i].Pos {
		j++
	}
	return j
}

// iterate lists src from position pos (the file position), giving emit
// each entry with the position the listing is at when it is reported,
// until emit refuses one; it returns the new position. This is
// ext4_readdir: ext4_dx_readdir for hash-order directories, falling back
// to the linear walk when the index is refused.
func (c *DirCursor) Iterate(src DirSource, pos int64, emit func(pos int64, e DirEntry) bool) (int64, error) {
	v, in := src.Vol, src.In
	if !in.IsDir() {
		return pos, syscall.ENOTDIR
	}
	if !c.linear && v.isDxDir(in) {
		np, err := c.dxIterate(src, pos, emit)
		if err != errBadDx {
			return np, err
		}
		// Without metadata_csum the kernel drops the index flag
		// (in memory) and lists by offset from then on; with it, each
		// call tries the index again.
		c.linear = v.rocompat&rocompatMetadataCsum == 0
		c.ents, c.curr, c.extra, c.started = nil, -1, -1, false
	}
	if l := src.List; l != nil && !v.isDxDir(in) {
		return l.linear(pos, emit), nil
	}
	return v.linearIterate(in, pos, emit)
}

// dxIterate is ext4_dx_readdir.
func (c *DirCursor) dxIterate(src DirSource, pos int64, emit func(pos int64, e DirEntry) bool) (int64, error) {
	if !c.started {
		*c = DirCursor{curr: -1, extra: -1, hash: pos2majHash(pos), minor: pos2minHash(pos), started: true, gen: src.Gen - 1, ents: c.ents[:0], own: c.own}
	}
	if pos == htreeEOF {
		return pos, nil
	}
	if c.lastPos != pos { // "Some one has messed with f_pos; reset the world"
		c.curr, c.extra = -1, -1
		c.ents = c.ents[:0]
		c.hash, c.minor = pos2majHash(pos), pos2minHash(pos)
	}
	var err error
	// callFilldir reports the chain at i from entry j on; false when
	// emit refused one (then c.extra names it).
	callFilldir := func(i, j int) bool {
		pos = c.ents[i].Pos
		for end := c.chainEnd(i); j < end; j++ {
			if !emit(pos, c.ents[j]) {
				c.extra = j
				return false
			}
		}
		return true
	}
	skipFill := false
	if c.extra >= 0 {
		x := c.extra
		c.extra = -1
		if !callFilldir(c.curr, x) {
			goto finished
		}
		skipFill = true
	} else if c.curr < 0 && len(c.ents) > 0 {
		c.curr = 0
	}
	for {
		if !skipFill {
			if c.curr < 0 || src.Gen != c.gen {
				c.curr = -1
				c.gen = src.Gen
				n, ferr := c.fill(src)
				if ferr != nil {
					err = ferr
					goto finished
				}
				if n == 0 {
					pos = htreeEOF
					break
				}
				c.curr = 0
			}
			e := &c.ents[c.curr]
			c.hash, c.minor = pos2majHash(e.Pos), pos2minHash(e.Pos)
			if !callFilldir(c.curr, c.curr) {
				break
			}
		}
		skipFill = false
		// next_node
		if n := c.chainEnd(c.curr); n < len(c.ents) {
			c.curr = n
			c.hash, c.minor = pos2majHash(c.ents[n].Pos), pos2minHash(c.ents[n].Pos)
		} else {
			c.curr = -1
			if c.next == ^uint32(0) {
				pos = htreeEOF
				break
			}
			c.hash, c.minor = c.next, 0
		}
	}
finished:
	c.lastPos = pos
	return pos, err
}

// dirSeek is ext4_dir_llseek: hash-order directories as
// generic_file_llseek_size with EXT4_HTREE_EOF_64BIT as both the limit
// and the end, others as ext4_llseek with the maximum file size and
// i_size. SEEK_DATA and SEEK_HOLE treat the directory as all data.
func (v *Volume) DirSeek(dir *Inode, cur, off int64, whence int) (int64, error) {
	limit, eof := int64(htreeEOF), int64(htreeEOF)
	if !v.isDxDir(dir) {
		limit, eof = int64((1<<32-1)<<v.bsBits), int64(dir.Size) // s_maxbytes
		if dir.Flags&FlagExtents == 0 {
			limit = v.maxBitmapBytes()
		}
	}
	var pos int64
	switch whence {
	case 0: // SEEK_SET
		pos = off
	case 1: // SEEK_CUR
		if off == 0 {
			return cur, nil
		}
		pos = cur + off
	case 2: // SEEK_END
		pos = eof + off
	case 3, 4: // SEEK_DATA, SEEK_HOLE
		if off < 0 || off >= eof {
			return 0, syscall.ENXIO
		}
		pos = off
		if whence == 4 {
			pos = eof
		}
	default:
		return 0, syscall.EINVAL
	}
	if pos < 0 || pos > limit {
		return 0, syscall.EINVAL
	}
	return pos, nil
}

// dtype converts an EXT4_FT_* directory entry type to getdents' DT_*;
// without the filetype feature it is DT_UNKNOWN, as in Linux.
func DType(ft uint8) uint8 {
	switch ft {
	case FTRegular:
		return unix.DT_REG
	case FTDir:
		return unix.DT_DIR
	case FTChrdev:
		return unix.DT_CHR
	case FTBlkdev:
		return unix.DT_BLK
	case FTFifo:
		return unix.DT_FIFO
	case FTSock:
		return unix.DT_SOCK
	case FTSymlink:
		return unix.DT_LNK
	}
	return unix.DT_UNKNOWN
}

// dtFT converts a getdents DT_* type back to EXT4_FT_* (dtype's inverse).
func dtFT(dt uint8) uint8 {
	switch dt {
	case unix.DT_REG:
		return FTRegular
	case unix.DT_DIR:
		return FTDir
	case unix.DT_CHR:
		return FTChrdev
	case unix.DT_BLK:
		return FTBlkdev
	case unix.DT_FIFO:
		return FTFifo
	case unix.DT_SOCK:
		return FTSock
	case unix.DT_LNK:
		return FTSymlink
	}
	return FTUnknown
}
