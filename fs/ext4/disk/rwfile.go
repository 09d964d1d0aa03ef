package disk

// File data for the Writer: WriteAt and Truncate over extent trees of any
// depth (rwextent.go). loadExtents and storeExtents see a block map as a
// list of runs (rwblockmap.go); on an extent-mapped inode they handle only
// the extents in i_block (depth 0), for an inode given its first block.
// Directories map and grow their blocks through the tree code
// (dirBlock, appendDirBlock), at any depth.

import (
	"encoding/binary"
	"fmt"
	"syscall"
)

// wext is one initialised extent.
type wext struct {
	l uint32 // first logical block
	n uint32 // length, 1..32768
	p uint64 // first physical block
}

const maxInitExtent = 32768

// loadExtents reads the block map of raw as runs, or the extents of a
// depth-0 extent tree (a tree with index blocks gives EOPNOTSUPP: those
// are read through rwextent.go's paths). Unwritten extents give
// EOPNOTSUPP. The second result is always 0.
func (w *Writer) loadExtents(ino uint32, raw []byte) ([]wext, uint64, error) {
	if iFlags(raw)&FlagExtents == 0 {
		exts, err := w.loadBlockMap(ino, raw) // rwblockmap.go
		return exts, 0, err
	}
	node := raw[0x28:0x64]
	if depth := le16(node, 6); depth != 0 {
		return nil, 0, fmt.Errorf("ext4: inode %d: extent tree of depth %d: %w", ino, depth, syscall.EOPNOTSUPP)
	}
	n := min(int(le16(node, 2)), 4)
	exts := make([]wext, 0, n+1)
	for i := 0; i < n; i++ {
		e := node[12*(i+1):]
		l := uint32(le16(e, 4))
		if l > maxInitExtent {
			return nil, 0, fmt.Errorf("ext4: inode %d has unwritten extents: %w", ino, syscall.EOPNOTSUPP)
		}
		exts = append(exts, wext{l: le32(e, 0), n: l, p: uint64(le32(e, 8)) | uint64(le16(e, 6))<<32})
	}
	return exts, 0, nil
}

func putExtent(b []byte, e wext) {
	binary.LittleEndian.PutUint32(b[0:], e.l)
	binary.LittleEndian.PutUint16(b[4:], uint16(e.n))
	binary.LittleEndian.PutUint16(b[6:], uint16(e.p>>32))
	binary.LittleEndian.PutUint32(b[8:], uint32(e.p))
}

func putExtentHeader(b []byte, entries, max, depth int) {
	binary.LittleEndian.PutUint16(b[0:], 0xF30A)
	binary.LittleEndian.PutUint16(b[2:], uint16(entries))
	binary.LittleEndian.PutUint16(b[4:], uint16(max))
	binary.LittleEndian.PutUint16(b[6:], uint16(depth))
	binary.LittleEndian.PutUint32(b[8:], 0)
}

// storeExtents writes exts into raw: a block map's pointers (allocating
// and freeing indirect blocks, rwblockmap.go), or up to four extents in
// i_block as a depth-0 tree, for an extent-mapped inode that has no tree
// blocks (a new directory, an inline inode given its block). More extents
// are the tree code's (xinsert). leaf is unused; the result is always 0.
func (w *Writer) storeExtents(ino uint32, raw []byte, exts []wext, leaf uint64) (uint64, error) {
	if iFlags(raw)&FlagExtents == 0 {
		return 0, w.storeBlockMap(ino, raw, exts) // rwblockmap.go
	}
	ib := raw[0x28:0x64]
	if len(exts) > 4 || le16(ib, 6) != 0 {
		return 0, fmt.Errorf("ext4: inode %d: %d extents for i_block: %w", ino, len(exts), syscall.EINVAL)
	}
	clear(ib)
	putExtentHeader(ib, len(exts), 4, 0)
	for i, e := range exts {
		putExtent(ib[12*(i+1):], e)
	}
	return 0, nil
}

// lookupExt returns the physical block of lblk, or ok false in a hole, and
// the index of the first extent after lblk.
func lookupExt(exts []wext, lblk uint64) (phys uint64, ok bool, next int) {
	for i, e := range exts {
		if lblk < uint64(e.l) {
			return 0, false, i
		}
		if lblk < uint64(e.l)+uint64(e.n) {
			return e.p + lblk - uint64(e.l), true, i + 1
		}
	}
	return 0, false, len(exts)
}

// insertExt adds e at index i and merges neighbours that continue each
// other logically and physically.
func insertExt(exts []wext, i int, e wext) []wext {
	exts = append(exts, wext{})
	copy(exts[i+1:], exts[i:])
	exts[i] = e
	out := exts[:1]
	for _, x := range exts[1:] {
		last := &out[len(out)-1]
		if last.l+last.n == x.l && last.p+uint64(last.n) == x.p && last.n+x.n <= maxInitExtent {
			last.n += x.n
			continue
		}
		out = append(out, x)
	}
	return out
}

// maxBytes is the largest file size with extents: 2^32-1 blocks
// (ext4_max_size for extent files).
func (w *Writer) maxBytes() int64 { return int64((1<<32 - 1) << w.v.bsBits) }

// goalFor is the block to allocate logical block lblk near: right after
// the previous extent's mapping of it, or the start of the inode's group.
func (w *Writer) goalFor(ino uint32, exts []wext, next int, lblk uint64) uint64 {
	if next > 0 {
		e := exts[next-1]
		return e.p + (lblk - uint64(e.l))
	}
	g := (ino - 1) / w.v.ipg
	return w.v.firstData + uint64(g)*uint64(w.v.bpg)
}

// xgoal is goalFor on the path x found for lblk.
func (w *Writer) xgoal(x *xpath, ino uint32, lblk uint64) uint64 {
	if leaf := x.lv[x.depth]; leaf.idx >= 0 {
		e := getXent(leaf.buf, leaf.idx)
		return e.p + (lblk - uint64(e.l))
	}
	return w.goalFor(ino, nil, 0, lblk)
}

// inodeScratch reads inode ino into the Writer's scratch inode buffer
// (valid until the next call), checking it as getInode does without
// allocating.
func (w *Writer) inodeScratch(ino uint32) ([]byte, error) {
	v := w.v
	if ino == 0 || ino > v.inodes {
		return nil, corrupt(ino, "inode number out of range")
	}
	if len(w.iraw) != int(v.inodeSize) {
		w.iraw = make([]byte, v.inodeSize)
	}
	raw := w.iraw
	if err := v.readMeta(raw, w.inodeOff(ino)); err != nil {
		return nil, err
	}
	in := Inode{Ino: ino, raw: raw, extraEnd: 128}
	if v.inodeSize > 128 {
		extra := int(le16(raw, 0x80))
		if 128+extra > int(v.inodeSize) || extra&3 != 0 {
			return nil, corrupt(ino, "bad extra_isize %d (inode size %d)", extra, v.inodeSize)
		}
		in.extraEnd = 128 + extra
	}
	if v.csum && v.linuxOS {
		in.csumSeed = w.inodeSeed(ino, raw)
		if !v.inodeCsumOK(&in) {
			return nil, badCsum(ino, "inode")
		}
	}
	return raw, nil
}

// regular checks that raw is a regular file: EISDIR for a directory,
// other for anything else.
func regular(raw []byte, other syscall.Errno) error {
	switch iMode(raw) & S_IFMT {
	case S_IFREG:
		return nil
	case S_IFDIR:
		return syscall.EISDIR
	}
	return other
}

// WriteAt writes p at off in regular file ino, allocating blocks for the
// holes it covers and converting the unwritten blocks it covers, and
// returns the count: short only when the volume ran out of space (then
// err is nil if anything was written, as write(2)). It allocates nothing
// when the blocks it touches are already in the running transaction.
// Errors: EINVAL for a negative offset, EFBIG at or past the maximum file
// size, ENOSPC, EISDIR for a directory, EINVAL for other non-regular files.
func (w *Writer) WriteAt(ino uint32, p []byte, off int64) (int, error) {
	return w.WriteAtAs(nil, ino, p, off)
}

// WriteAtAs is WriteAt acting for c (see lockAs).
func (w *Writer) WriteAtAs(c *Caller, ino uint32, p []byte, off int64) (int, error) {
	if w.Data == DataJournal && w.j != nil && len(p) > w.journalChunk() {
		return w.writeChunks(c, ino, p, off, w.journalChunk()) // rwjournal.go
	}
	if err := w.lockAs(c); err != nil {
		return 0, err
	}
	defer w.unlock()
	raw, err := w.inodeScratch(ino)
	if err != nil {
		return 0, err
	}
	if err := regular(raw, syscall.EINVAL); err != nil {
		return 0, err
	}
	if iFlags(raw)&flImmutable != 0 {
		return 0, syscall.EPERM // ext4_generic_write_checks, for a file opened before chattr +i
	}
	if off < 0 {
		return 0, syscall.EINVAL
	}
	if len(p) == 0 {
		return 0, nil
	}
	if max := w.maxBytesOf(raw); off >= max {
		return 0, syscall.EFBIG
	} else if int64(len(p)) > max-off {
		p = p[:max-off]
	}
	var n int
	if w.mayInline(ino, raw) {
		// ext4_generic_write_inline_data (rwinline.go).
		if ok, err := w.tryWriteInline(ino, raw, p, off); err != nil {
			return 0, err
		} else if ok {
			n = len(p)
		}
	}
	if n == 0 {
		n, err = w.writeFolios(ino, raw, p, off) // rwspace.go
	}
	if n > 0 {
		if end := uint64(off) + uint64(n); end > iSize(raw) {
			setISize(raw, end)
		}
		touch(raw, w.Now(), tMtime, tCtime)
		if perr := w.putInode(ino, raw); perr != nil {
			return 0, perr
		}
		if serr := w.writeSuper(); serr != nil {
			return 0, serr
		}
		return n, nil
	}
	// Nothing written, but blocks may have been mapped before an error.
	if perr := w.putInode(ino, raw); perr != nil {
		return 0, perr
	}
	w.writeSuper()
	return 0, err
}

// writeData writes p at off into ino's blocks, allocating holes and
// converting unwritten extents, and updates raw's extent tree and
// i_blocks (the caller writes raw). Each run of blocks contiguous on the
// device is one device write for its whole blocks, straight from p.
func (w *Writer) writeData(ino uint32, raw []byte, p []byte, off int64) (int, error) {
	w.begin(ino) // live.go
	if iFlags(raw)&FlagExtents == 0 {
		if iFlags(raw)&FlagInlineData != 0 {
			if err := w.uninline(ino, raw); err != nil { // rwinline.go
				return 0, err
			}
		}
		if iFlags(raw)&FlagExtents == 0 {
			return w.writeDataMap(ino, raw, p, off) // rwblockmap.go
		}
	}
	v := w.v
	lastBlk := uint64(off+int64(len(p))-1) >> v.bsBits
	done := 0
	for done < len(p) {
		pos := off + int64(done)
		lblk := uint64(pos) >> v.bsBits
		x, err := w.xfind(ino, raw, uint32(lblk))
		if err != nil {
			return done, err
		}
		e, ok, holeEnd := x.at(uint32(lblk))
		var phys, runEnd uint64
		fresh := false // the run's blocks read as zeros: pad, never read
		switch {
		case !ok:
			want := min(min(lastBlk+1, holeEnd)-lblk, maxInitExtent)
			start, got, err := w.allocBlocks(w.xgoal(x, ino, lblk), uint32(want))
			if err != nil {
				return done, err
			}
			if err := w.addIBlocks(raw, int64(got)); err != nil {
				w.freeBlocks(start, uint64(got))
				return done, err
			}
			if err := w.xinsert(ino, raw, xent{l: uint32(lblk), n: got, p: start}); err != nil {
				w.freeBlocks(start, uint64(got))
				w.addIBlocks(raw, -int64(got))
				return done, err
			}
			phys, runEnd, fresh = start, lblk+uint64(got), true
		default:
			phys = e.p + (lblk - uint64(e.l))
			runEnd = min(e.end(), lastBlk+1)
			if e.u {
				// ext4_ext_convert_to_initialized: exactly the blocks written.
				if err := w.xsetState(ino, raw, lblk, runEnd, false); err != nil {
					return done, err
				}
				fresh = true
			}
		}
		n, err := w.writeRun(p[done:], pos, phys, runEnd, fresh)
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// writeRun writes the head of p at byte pos, whose block is at phys, up
// to the end of logical block runEnd-1 (contiguous on the device): partial
// blocks through w.dbuf (read first unless fresh), whole blocks in one
// write from p.
func (w *Writer) writeRun(p []byte, pos int64, phys, runEnd uint64, fresh bool) (int, error) {
	v := w.v
	bs := int(v.bs)
	n := int(min(int64(len(p)), int64(runEnd<<v.bsBits)-pos))
	dev := int64(phys<<v.bsBits) + pos&int64(bs-1)
	done := 0
	if within := int(pos & int64(bs-1)); within != 0 || n < bs {
		k := min(bs-within, n)
		if err := w.writePartial(phys, within, p[:k], fresh); err != nil {
			return 0, err
		}
		done = k
	}
	if whole := (n - done) &^ (bs - 1); whole > 0 {
		if err := w.writeDataAt(p[done:done+whole], dev+int64(done)); err != nil {
			return done, err
		}
		done += whole
	}
	if done < n {
		blk := uint64(dev+int64(done)) >> v.bsBits
		if err := w.writePartial(blk, 0, p[done:n], fresh); err != nil {
			return done, err
		}
		done = n
	}
	return done, nil
}

// writePartial writes data at byte within of block blk, keeping the rest
// of the block (zeros when fresh).
func (w *Writer) writePartial(blk uint64, within int, data []byte, fresh bool) error {
	if len(w.dbuf) != int(w.v.bs) {
		w.dbuf = make([]byte, w.v.bs)
	}
	buf := w.dbuf
	if fresh {
		clear(buf)
	} else if err := w.v.readBlock(blk, buf); err != nil {
		return err
	}
	copy(buf[within:], data)
	return w.writeDataAt(buf, int64(blk<<w.v.bsBits))
}

// Truncate sets regular file ino's size, freeing the blocks past a
// smaller size and zeroing the rest of its last block, as truncate(2).
// Errors: EISDIR, EINVAL (other types, negative size), EFBIG.
func (w *Writer) Truncate(ino uint32, size int64) error {
	return w.TruncateAs(nil, ino, size)
}

// TruncateAs is Truncate acting for c (see lockAs): an extent split it
// needs a block for is charged to c.
func (w *Writer) TruncateAs(c *Caller, ino uint32, size int64) error {
	if err := w.lockAs(c); err != nil {
		return err
	}
	defer w.unlock()
	raw, err := w.getInode(ino)
	if err != nil {
		return err
	}
	if err := regular(raw, syscall.EINVAL); err != nil {
		return err
	}
	if iFlags(raw)&flImmutable != 0 {
		return syscall.EPERM // ext4_setattr
	}
	if size < 0 {
		return syscall.EINVAL
	}
	if size > w.maxBytesOf(raw) {
		return syscall.EFBIG
	}
	if iFlags(raw)&FlagInlineData != 0 {
		// ext4_inline_data_truncate (rwinline.go): the data stays inline.
		if uint64(size) <= iSize(raw) {
			if err := w.truncateInline(ino, raw, uint64(size)); err != nil {
				return err
			}
		}
		setISize(raw, uint64(size))
		touch(raw, w.Now(), tMtime, tCtime)
		return w.putInode(ino, raw)
	}
	// ext4_setattr truncates at an unchanged size too, dropping blocks
	// preallocated past the end (fallocate KEEP_SIZE). Splits take the
	// reserve (ext4_ext_remove_space's METADATA_NOFAIL).
	w.tclass = allocReserved
	if uint64(size) <= iSize(raw) {
		if err := w.cutBlocks(ino, raw, uint64(size)); err != nil {
			return err
		}
	}
	setISize(raw, uint64(size))
	touch(raw, w.Now(), tMtime, tCtime)
	if err := w.putInode(ino, raw); err != nil {
		return err
	}
	return w.writeSuper()
}

// cutBlocks frees ino's blocks past size and zeroes the tail of the block
// holding size, updating raw's extent tree and i_blocks.
func (w *Writer) cutBlocks(ino uint32, raw []byte, size uint64) error {
	w.begin(ino) // live.go
	if iFlags(raw)&FlagExtents == 0 {
		return w.cutBlocksMap(ino, raw, size) // rwblockmap.go
	}
	v := w.v
	keep := (size + v.bs - 1) >> v.bsBits
	if err := w.xremove(ino, raw, keep, 1<<32); err != nil {
		return err
	}
	return w.zeroPartial(ino, raw, size, keep<<v.bsBits)
}

// zeroPartial zeroes bytes [from, to) of ino, which lie in one block,
// when that block is mapped and initialised (holes and unwritten blocks
// read as zeros already), as ext4_block_zero_page_range.
func (w *Writer) zeroPartial(ino uint32, raw []byte, from, to uint64) error {
	w.begin(ino) // live.go
	v := w.v
	if from >= to {
		return nil
	}
	lblk := from >> v.bsBits
	var phys uint64
	if iFlags(raw)&FlagExtents == 0 {
		exts, _, err := w.loadExtents(ino, raw) // block map (rwblockmap.go)
		if err != nil {
			return err
		}
		p, ok, _ := lookupExt(exts, lblk)
		if !ok {
			return nil
		}
		phys = p
	} else {
		x, err := w.xfind(ino, raw, uint32(lblk))
		if err != nil {
			return err
		}
		e, ok, _ := x.at(uint32(lblk))
		if !ok || e.u {
			return nil
		}
		phys = e.p + (lblk - uint64(e.l))
	}
	if len(w.dbuf) != int(v.bs) {
		w.dbuf = make([]byte, v.bs)
	}
	buf := w.dbuf
	if err := v.readBlock(phys, buf); err != nil {
		return err
	}
	clear(buf[from&(v.bs-1) : (to-1)&(v.bs-1)+1])
	return w.writeDataAt(buf, int64(phys<<v.bsBits))
}
