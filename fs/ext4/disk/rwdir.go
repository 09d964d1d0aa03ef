package disk

// Directories and names for the Writer: linear directory blocks with
// metadata_csum tails, create, mkdir, symlink, link, unlink, rmdir and
// rename, with Linux's errors (ext4_add_entry, ext4_delete_entry,
// ext4_rename).

import (
	"bytes"
	"encoding/binary"
	"syscall"
	"time"
)

// linkMax is EXT4_LINK_MAX.
const linkMax = 65000

func (w *Writer) dirEnd() int {
	if w.v.rocompat&rocompatMetadataCsum != 0 {
		return int(w.v.bs) - 12
	}
	return int(w.v.bs)
}

func (w *Writer) recLenDisk(n int) uint16 {
	if w.v.bs < 65536 {
		return uint16(n)
	}
	if n == 65536 {
		return 0xFFFF
	}
	return uint16(n&65532 | n>>16&3)
}

func putDirent(b []byte, ino uint32, recLen uint16, name string, ft uint8) {
	binary.LittleEndian.PutUint32(b[0:], ino)
	binary.LittleEndian.PutUint16(b[4:], recLen)
	b[6] = byte(len(name))
	b[7] = ft
	copy(b[8:], name)
}

// writeDirBlock sets the checksum tail of directory block buf of dir and
// writes it at phys.
func (w *Writer) writeDirBlock(dir uint32, draw []byte, buf []byte, phys uint64) error {
	w.begin(dir) // live.go
	if phys == 0 {
		return w.writeInlineDir(dir, draw, buf) // rwinline.go
	}
	if w.isDxBlock(draw, buf) {
		w.setDxCsum(dir, draw, buf) // an htree index block (rwhtree.go)
	} else if w.v.rocompat&rocompatMetadataCsum != 0 {
		t := buf[w.v.bs-12:]
		binary.LittleEndian.PutUint32(t[0:], 0)
		binary.LittleEndian.PutUint16(t[4:], 12)
		t[6], t[7] = 0, 0xDE
		binary.LittleEndian.PutUint32(t[8:], crc32c(w.inodeSeed(dir, draw), buf[:w.v.bs-12]))
	}
	return w.writeAt(buf, int64(phys<<w.v.bsBits))
}

// dirent is a directory entry found by a scan.
type dirent struct {
	ino        uint32
	ft         uint8
	phys       uint64
	off, prev  int // offset in the block, previous entry's (-1: first)
	recLen     int
	blockIndex uint64
	name       string // set by find
}

// scanEntries calls fn for every entry (in use or not) of directory dir's
// blocks, with the block's bytes; fn returns true to stop.
func (w *Writer) scanEntries(dir uint32, draw []byte, fn func(buf []byte, e dirent, name []byte) bool) error {
	if iFlags(draw)&FlagExtents == 0 {
		// An inline directory gets its block first (rwinline.go).
		if _, _, err := w.loadExtents(dir, draw); err != nil {
			return err
		}
	}
	v := w.v
	buf := make([]byte, v.bs)
	nb := iSize(draw) >> v.bsBits
	var phys, next uint64 // the run [lblk, next) maps to phys on
	for lblk := uint64(0); lblk < nb; lblk++ {
		if lblk >= next {
			p, ok, end, err := w.dirMap(dir, draw, lblk)
			if err != nil {
				return err
			}
			if !ok {
				lblk, next = end-1, end
				continue
			}
			phys, next = p, end
		} else {
			phys++
		}
		if err := v.readBlock(phys, buf); err != nil {
			return err
		}
		if err := w.checkDirBlock(dir, draw, lblk, buf); err != nil { // rwcheck.go
			return err
		}
		prev := -1
		for off := 0; off < w.dirEnd(); {
			rl := v.recLen(le16(buf, off+4))
			nl := int(buf[off+6])
			if rl < 12 || off+rl > int(v.bs) || 8+nl > rl {
				return corrupt(dir, "bad directory entry in block %d at %d", lblk, off)
			}
			e := dirent{ino: le32(buf, off), ft: buf[off+7], phys: phys, off: off, prev: prev, recLen: rl, blockIndex: lblk}
			if fn(buf, e, buf[off+8:off+8+nl]) {
				return nil
			}
			prev = off
			off += rl
		}
	}
	return nil
}

// dirMap maps logical block lblk of directory dir (raw draw): ok and its
// physical block, or not ok in a hole (unwritten blocks count as holes, as
// ext4_getblk finds them unmapped); next is the first logical block past
// the run or hole holding lblk. Extent trees of any depth are read a path
// at a time (xfind), block maps as runs.
func (w *Writer) dirMap(dir uint32, draw []byte, lblk uint64) (phys uint64, ok bool, next uint64, err error) {
	if lblk >= 1<<32-1 {
		return 0, false, 1 << 32, nil
	}
	if iFlags(draw)&FlagExtents == 0 {
		exts, _, err := w.loadExtents(dir, draw) // a block map's runs (rwblockmap.go)
		if err != nil {
			return 0, false, 0, err
		}
		p, ok, i := lookupExt(exts, lblk)
		switch {
		case ok:
			return p, true, uint64(exts[i-1].l) + uint64(exts[i-1].n), nil
		case i < len(exts):
			return 0, false, uint64(exts[i].l), nil
		}
		return 0, false, 1 << 32, nil
	}
	x, err := w.xfind(dir, draw, uint32(lblk))
	if err != nil {
		return 0, false, 0, err
	}
	e, ok, holeEnd := x.at(uint32(lblk))
	if !ok {
		return 0, false, holeEnd, nil
	}
	if e.u {
		return 0, false, e.end(), nil
	}
	return e.p + (lblk - uint64(e.l)), true, e.end(), nil
}

// scanBlock is scanEntries for logical block lblk of dir only.
func (w *Writer) scanBlock(dir uint32, draw []byte, lblk uint64, fn func(buf []byte, e dirent, name []byte) bool) error {
	if lblk >= iSize(draw)>>w.v.bsBits {
		return nil
	}
	phys, ok, _, err := w.dirMap(dir, draw, lblk)
	if err != nil || !ok {
		return err
	}
	buf := make([]byte, w.v.bs)
	if err := w.v.readBlock(phys, buf); err != nil {
		return err
	}
	if err := w.checkDirBlock(dir, draw, lblk, buf); err != nil { // rwcheck.go
		return err
	}
	prev := -1
	for off := 0; off < w.dirEnd(); {
		rl := w.v.recLen(le16(buf, off+4))
		nl := int(buf[off+6])
		if rl < 12 || off+rl > int(w.v.bs) || 8+nl > rl {
			return corrupt(dir, "bad directory entry in block %d at %d", lblk, off)
		}
		if fn(buf, dirent{ino: le32(buf, off), ft: buf[off+7], phys: phys, off: off, prev: prev, recLen: rl, blockIndex: lblk}, buf[off+8:off+8+nl]) {
			return nil
		}
		prev = off
		off += rl
	}
	return nil
}

// wdir is the Writer's in-memory index of one directory's names, built by
// one scan and kept in step by every change the Writer makes (offsets of
// live entries never move: an insertion splits a free tail, a removal
// merges into the previous entry). It stands in for the htree's lookups.
type wdir struct {
	names map[string]dentLoc
	hint  uint64 // a block that had room
}

type dentLoc struct {
	ino  uint32
	ft   uint8
	lblk uint64
	phys uint64
	off  int
}

const maxCachedDirs = 256

// dirIndex returns dir's name index, scanning it on first use.
func (w *Writer) dirIndex(dir uint32, draw []byte) (*wdir, error) {
	if d := w.dirs[dir]; d != nil {
		return d, nil
	}
	d := &wdir{names: map[string]dentLoc{}}
	err := w.scanEntries(dir, draw, func(_ []byte, e dirent, n []byte) bool {
		if e.ino != 0 {
			d.names[string(n)] = dentLoc{e.ino, e.ft, e.blockIndex, e.phys, e.off}
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	if w.dirs == nil {
		w.dirs = map[uint32]*wdir{}
	}
	if len(w.dirs) >= maxCachedDirs {
		for k := range w.dirs {
			delete(w.dirs, k)
			break
		}
	}
	w.dirs[dir] = d
	return d, nil
}

// find looks name up in dir, through its index; e.prev is found by
// reading the entry's block.
func (w *Writer) find(dir uint32, draw []byte, name string) (e dirent, found bool, err error) {
	if iFlags(draw)&FlagInlineData != 0 {
		return w.inlineFind(dir, draw, name) // rwinline.go
	}
	d, err := w.dirIndex(dir, draw)
	if err != nil {
		return e, false, err
	}
	l, ok := d.names[name]
	if !ok {
		return e, false, nil
	}
	buf := make([]byte, w.v.bs)
	if err := w.v.readBlock(l.phys, buf); err != nil {
		return e, false, err
	}
	prev := -1
	for off := 0; off < l.off; {
		rl := w.v.recLen(le16(buf, off+4))
		if rl < 12 {
			return e, false, corrupt(dir, "bad directory entry in block %d at %d", l.lblk, off)
		}
		prev = off
		off += rl
	}
	if le32(buf, l.off) != l.ino {
		return e, false, corrupt(dir, "directory index out of step at %q", name)
	}
	return dirent{ino: l.ino, ft: l.ft, phys: l.phys, off: l.off, prev: prev, recLen: w.v.recLen(le16(buf, l.off+4)), blockIndex: l.lblk, name: name}, true, nil
}

// dirOpen reads directory dir for a change: ENOTDIR, ENOENT for a removed
// directory.
func (w *Writer) dirOpen(dir uint32) ([]byte, error) {
	raw, err := w.getInode(dir)
	if err != nil {
		return nil, err
	}
	if iMode(raw)&S_IFMT != S_IFDIR {
		return nil, syscall.ENOTDIR
	}
	if iLinks(raw) == 0 {
		return nil, syscall.ENOENT
	}
	return raw, nil
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || bytes.IndexByte([]byte(name), '/') >= 0 {
		return syscall.EINVAL
	}
	if len(name) > 255 {
		return syscall.ENAMETOOLONG
	}
	return nil
}

// addEntry adds name -> ino to dir (raw draw, which it updates and writes
// with new times), growing it by a block when no block has room.
func (w *Writer) addEntry(dir uint32, draw []byte, name string, ino uint32, ft uint8, now time.Time) error {
	if iFlags(draw)&FlagInlineData != 0 { // ext4_try_add_inline_entry (rwinline.go)
		if done, err := w.inlineAddEntry(dir, draw, name, ino, ft, now); done || err != nil {
			return err
		}
	}
	need := (8 + len(name) + 3) &^ 3
	idx, err := w.dirIndex(dir, draw)
	if err != nil {
		return err
	}
	// ext4_add_entry: an index flag on a volume without dir_index is
	// ignored (is_dx), and the entry goes into the blocks.
	fallback := false
	if iFlags(draw)&FlagIndex != 0 && w.v.compat&compatDirIndex != 0 {
		err := w.dxAddEntry(dir, draw, idx, name, ino, ft, now, false)
		if err != errBadDx || w.v.rocompat&rocompatMetadataCsum != 0 {
			return err
		}
		// dx_fallback: without checksums the damaged index is dropped
		// and the directory is linear from now on.
		binary.LittleEndian.PutUint32(draw[0x20:], iFlags(draw)&^FlagIndex)
		if err := w.putInode(dir, draw); err != nil {
			return err
		}
		fallback = true
	}
	done := false
	var werr error
	try := func(buf []byte, e dirent, n []byte) bool {
		used := 0
		if e.ino != 0 {
			used = (8 + len(n) + 3) &^ 3
		}
		if e.recLen-used < need {
			return false
		}
		at := e.off
		if e.ino == 0 {
			putDirent(buf[e.off:], ino, w.recLenDisk(e.recLen), name, ft)
		} else {
			binary.LittleEndian.PutUint16(buf[e.off+4:], w.recLenDisk(used))
			at = e.off + used
			putDirent(buf[at:], ino, w.recLenDisk(e.recLen-used), name, ft)
		}
		werr = w.writeDirBlock(dir, draw, buf, e.phys)
		idx.names[name] = dentLoc{ino, ft, e.blockIndex, e.phys, at}
		idx.hint = e.blockIndex
		done = true
		return true
	}
	nb := iSize(draw) >> w.v.bsBits
	if err := w.scanBlock(dir, draw, idx.hint, try); err != nil {
		return err
	}
	// Linux's linear add_dirent_to_buf tries every block; past a few
	// blocks only the hinted one is tried and the directory grows instead,
	// so a large directory's insertions stay O(1).
	if !done && nb <= 8 {
		if err := w.scanEntries(dir, draw, try); err != nil {
			return err
		}
	}
	if werr != nil {
		return werr
	}
	if !done && nb == 1 && !fallback && w.v.compat&compatDirIndex != 0 {
		// make_indexed_dir: the full first block becomes an htree, the
		// directory's blocks mapped by extents or by a block map.
		return w.dxAddEntry(dir, draw, idx, name, ino, ft, now, true)
	}
	if !done {
		lblk, start, err := w.appendDirBlock(dir, draw)
		if err != nil {
			return err
		}
		buf := make([]byte, w.v.bs)
		putDirent(buf, ino, w.recLenDisk(w.dirEnd()), name, ft)
		if err := w.writeDirBlock(dir, draw, buf, start); err != nil {
			return err
		}
		idx.names[name] = dentLoc{ino, ft, lblk, start, 0}
		idx.hint = lblk
	}
	touch(draw, now, tMtime, tCtime)
	return w.putInode(dir, draw)
}

// removeEntry removes entry e (found in dir) as ext4_generic_delete_entry:
// merged into the previous entry of its block, or its inode cleared when
// it is the first.
func (w *Writer) removeEntry(dir uint32, draw []byte, e dirent, now time.Time) error {
	if e.phys == 0 {
		return w.inlineRemove(dir, draw, e, now) // rwinline.go
	}
	buf := make([]byte, w.v.bs)
	if err := w.v.readBlock(e.phys, buf); err != nil {
		return err
	}
	if e.prev >= 0 {
		prl := w.v.recLen(le16(buf, e.prev+4))
		binary.LittleEndian.PutUint16(buf[e.prev+4:], w.recLenDisk(prl+e.recLen))
	} else {
		binary.LittleEndian.PutUint32(buf[e.off:], 0)
	}
	if err := w.writeDirBlock(dir, draw, buf, e.phys); err != nil {
		return err
	}
	if d := w.dirs[dir]; d != nil {
		delete(d.names, e.name)
	}
	touch(draw, now, tMtime, tCtime)
	return w.putInode(dir, draw)
}

// newInode fills a fresh inode.
func (w *Writer) newInode(ino uint32, mode, uid, gid uint32, now time.Time) []byte {
	raw := make([]byte, w.v.inodeSize)
	binary.LittleEndian.PutUint16(raw[0:], uint16(mode))
	binary.LittleEndian.PutUint16(raw[0x2:], uint16(uid))
	binary.LittleEndian.PutUint16(raw[0x78:], uint16(uid>>16))
	binary.LittleEndian.PutUint16(raw[0x18:], uint16(gid))
	binary.LittleEndian.PutUint16(raw[0x7A:], uint16(gid>>16))
	if w.v.inodeSize > 128 {
		extra := int(le16(w.sb, 0x15C))
		if extra < 32 {
			extra = 32
		}
		extra = min(extra, int(w.v.inodeSize)-128)
		binary.LittleEndian.PutUint16(raw[0x80:], uint16(extra))
	}
	w.gen++
	binary.LittleEndian.PutUint32(raw[0x64:], w.gen)
	touch(raw, now, tAtime, tMtime, tCtime, tCrtime)
	return raw
}

func ftOf(mode uint32) uint8 {
	switch mode & S_IFMT {
	case S_IFREG:
		return FTRegular
	case S_IFDIR:
		return FTDir
	case S_IFLNK:
		return FTSymlink
	case S_IFCHR:
		return FTChrdev
	case S_IFBLK:
		return FTBlkdev
	case S_IFIFO:
		return FTFifo
	case S_IFSOCK:
		return FTSock
	}
	return FTUnknown
}

// prepareNew checks that name can be added to dir.
func (w *Writer) prepareNew(dir uint32, name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	draw, err := w.dirOpen(dir)
	if err != nil {
		return nil, err
	}
	if _, found, err := w.find(dir, draw, name); err != nil {
		return nil, err
	} else if found {
		return nil, syscall.EEXIST
	}
	return draw, nil
}

// Create makes a regular file name in dir with permission bits mode.
// Errors: EEXIST, ENOTDIR, ENOENT (dir removed), ENOSPC, EINVAL and
// ENAMETOOLONG for a bad name.
func (w *Writer) Create(dir uint32, name string, mode, uid, gid uint32) (uint32, error) {
	return w.make(nil, dir, name, S_IFREG|mode&07777, uid, gid, "")
}

// CreateAs is Create acting for c (see lockAs).
func (w *Writer) CreateAs(c *Caller, dir uint32, name string, mode, uid, gid uint32) (uint32, error) {
	return w.make(c, dir, name, S_IFREG|mode&07777, uid, gid, "")
}

// Mkdir makes a directory; EMLINK when dir has EXT4_LINK_MAX links.
func (w *Writer) Mkdir(dir uint32, name string, mode, uid, gid uint32) (uint32, error) {
	return w.make(nil, dir, name, S_IFDIR|mode&07777, uid, gid, "")
}

// MkdirAs is Mkdir acting for c (see lockAs).
func (w *Writer) MkdirAs(c *Caller, dir uint32, name string, mode, uid, gid uint32) (uint32, error) {
	return w.make(c, dir, name, S_IFDIR|mode&07777, uid, gid, "")
}

// Symlink makes a symbolic link to target: fast (in i_block) below 60
// bytes, else in a data block. ENAMETOOLONG past a block, ENOENT if empty.
func (w *Writer) Symlink(dir uint32, name, target string, uid, gid uint32) (uint32, error) {
	return w.SymlinkAs(nil, dir, name, target, uid, gid)
}

// SymlinkAs is Symlink acting for c (see lockAs).
func (w *Writer) SymlinkAs(c *Caller, dir uint32, name, target string, uid, gid uint32) (uint32, error) {
	if target == "" {
		return 0, syscall.ENOENT
	}
	if len(target) >= int(w.v.bs) {
		return 0, syscall.ENAMETOOLONG
	}
	return w.make(c, dir, name, S_IFLNK|0777, uid, gid, target)
}

// make makes name in dir, acting for c (see lockAs).
func (w *Writer) make(c *Caller, dir uint32, name string, mode, uid, gid uint32, target string) (uint32, error) {
	if err := w.lockAs(c); err != nil {
		return 0, err
	}
	defer w.unlock()
	defer w.writeSuper()
	draw, err := w.prepareNew(dir, name)
	if err != nil {
		return 0, err
	}
	mode, gid = inheritGroup(draw, mode, gid) // rwsgid.go
	isDir := mode&S_IFMT == S_IFDIR
	if isDir && iLinks(draw) >= linkMax {
		return 0, syscall.EMLINK
	}
	now := w.Now()
	ino, err := w.allocInode(dir, isDir)
	if err != nil {
		return 0, err
	}
	raw := w.newInode(ino, mode, uid, gid, now)
	inheritFlags(raw, draw, mode) // rwflags.go
	w.markNewInline(ino, mode)    // rwinline.go
	setILinks(raw, 1)
	fail := func(err error) (uint32, error) {
		w.releaseInode(ino, raw, isDir)
		return 0, err
	}
	if err := w.initACL(ino, raw); err != nil { // rwacl.go
		return fail(err)
	}
	switch {
	case isDir && w.newInlineDir(ino, raw, dir): // ext4_try_create_inline_dir (rwinline.go)
		setILinks(raw, 2)
	case isDir:
		setILinks(raw, 2)
		w.initMap(raw)
		g := (ino - 1) / w.v.ipg
		blk, _, err := w.allocBlocks(w.v.firstData+uint64(g)*uint64(w.v.bpg), 1)
		if err != nil {
			return fail(err)
		}
		w.storeExtents(ino, raw, []wext{{0, 1, blk}}, 0)
		w.addIBlocks(raw, 1)
		setISize(raw, w.v.bs)
		buf := make([]byte, w.v.bs)
		putDirent(buf, ino, 12, ".", FTDir)
		putDirent(buf[12:], dir, w.recLenDisk(w.dirEnd()-12), "..", FTDir)
		if err := w.writeDirBlock(ino, raw, buf, blk); err != nil {
			return fail(err)
		}
	case mode&S_IFMT == S_IFLNK && len(target) < 60:
		copy(raw[0x28:0x64], target)
		setISize(raw, uint64(len(target)))
	case mode&S_IFMT == S_IFLNK:
		w.initMap(raw)
		if _, err := w.writeData(ino, raw, []byte(target), 0); err != nil {
			return fail(err)
		}
		setISize(raw, uint64(len(target)))
	default:
		w.initMap(raw)
	}
	if err := w.putInode(ino, raw); err != nil {
		return 0, err
	}
	if err := w.addEntry(dir, draw, name, ino, ftOf(mode), now); err != nil {
		return fail(err)
	}
	if isDir {
		draw, err = w.getInode(dir)
		if err != nil {
			return 0, err
		}
		setILinks(draw, iLinks(draw)+1)
		if err := w.putInode(dir, draw); err != nil {
			return 0, err
		}
	}
	return ino, nil
}

// releaseInode frees ino's blocks and the inode itself, leaving it as
// ext4_free_inode does: no links, no blocks, a deletion time.
func (w *Writer) releaseInode(ino uint32, raw []byte, isDir bool) error {
	w.begin(ino) // live.go: the inode goes, and its Ref
	w.forgetRef(ino)
	if w.onRelease != nil {
		w.onRelease(ino)
	}
	delete(w.dirs, ino)
	delete(w.newInline, ino)
	if iFlags(raw)&FlagExtents != 0 {
		if err := w.xremove(ino, raw, 0, 1<<32); err != nil {
			return err
		}
		clear(raw[0x28:0x64])
		putExtentHeader(raw[0x28:0x64], 0, 4, 0)
	} else if hasBlockMap(raw) {
		if err := w.releaseBlockMap(ino, raw); err != nil { // rwblockmap.go
			return err
		}
	}
	if err := w.dropXattrBlock(ino, raw); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(raw[0x1C:], 0)
	binary.LittleEndian.PutUint16(raw[0x74:], 0)
	setISize(raw, 0)
	setILinks(raw, 0)
	binary.LittleEndian.PutUint32(raw[0x14:], uint32(w.Now().Unix())) // i_dtime
	if err := w.putInode(ino, raw); err != nil {
		return err
	}
	return w.freeInode(ino, isDir)
}

// Link makes name in dir another link to ino. EPERM for a directory,
// EMLINK at EXT4_LINK_MAX links, EEXIST, ENOENT for a removed inode.
func (w *Writer) Link(dir uint32, name string, ino uint32) error {
	return w.LinkAs(nil, dir, name, ino)
}

// LinkAs is Link acting for c (see lockAs).
func (w *Writer) LinkAs(c *Caller, dir uint32, name string, ino uint32) error {
	if err := w.lockAs(c); err != nil {
		return err
	}
	defer w.unlock()
	defer w.writeSuper()
	// do_linkat: the new name (EEXIST) before vfs_link's checks.
	draw, err := w.prepareNew(dir, name)
	if err != nil {
		return err
	}
	raw, err := w.getInode(ino)
	if err != nil {
		return err
	}
	if iMode(raw)&S_IFMT == S_IFDIR {
		return syscall.EPERM
	}
	if iLinks(raw) == 0 {
		if err := w.nameTmpfile(ino, raw); err != nil { // rwtmpfile.go
			return err
		}
	}
	if iLinks(raw) >= linkMax {
		return syscall.EMLINK
	}
	now := w.Now()
	if err := w.addEntry(dir, draw, name, ino, ftOf(iMode(raw)), now); err != nil {
		return err
	}
	setILinks(raw, iLinks(raw)+1)
	touch(raw, now, tCtime)
	return w.putInode(ino, raw)
}

// Unlink removes name, a non-directory, from dir, freeing the inode with
// its last link. EISDIR for a directory, ENOENT.
func (w *Writer) Unlink(dir uint32, name string) error {
	return w.remove(dir, name, false)
}

// Rmdir removes the empty directory name: ENOTDIR, ENOTEMPTY, ENOENT.
func (w *Writer) Rmdir(dir uint32, name string) error {
	return w.remove(dir, name, true)
}

func (w *Writer) remove(dir uint32, name string, wantDir bool) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.unlock()
	defer w.writeSuper()
	if name == "." || name == ".." {
		return syscall.EINVAL
	}
	draw, err := w.dirOpen(dir)
	if err != nil {
		return err
	}
	e, found, err := w.find(dir, draw, name)
	if err != nil {
		return err
	}
	if !found {
		return syscall.ENOENT
	}
	raw, err := w.getInode(e.ino)
	if err != nil {
		return err
	}
	isDir := iMode(raw)&S_IFMT == S_IFDIR
	switch {
	case wantDir && !isDir:
		return syscall.ENOTDIR
	case !wantDir && isDir:
		return syscall.EISDIR
	}
	if isDir {
		if empty, err := w.emptyDir(e.ino, raw); err != nil {
			return err
		} else if !empty {
			return syscall.ENOTEMPTY
		}
	}
	now := w.Now()
	if err := w.removeEntry(dir, draw, e, now); err != nil {
		return err
	}
	return w.dropLink(dir, e.ino, raw, isDir, now)
}

// dropLink takes one name of ino away (all of a directory's), freeing it
// when none is left; a directory's parent loses the link of its "..".
func (w *Writer) dropLink(parent, ino uint32, raw []byte, isDir bool, now time.Time) error {
	if isDir {
		if err := w.dropDir(ino, raw, now); err != nil {
			return err
		}
		draw, err := w.getInode(parent)
		if err != nil {
			return err
		}
		if l := iLinks(draw); l > 2 {
			setILinks(draw, l-1)
		}
		return w.putInode(parent, draw)
	}
	setILinks(raw, iLinks(raw)-1)
	touch(raw, now, tCtime)
	if iLinks(raw) == 0 {
		if w.held[ino] > 0 {
			w.orphan[ino] = true // freed by the last Unhold
			if err := w.orphanAdd(ino, raw); err != nil {
				return err
			}
			return w.putInode(ino, raw)
		}
		return w.releaseInode(ino, raw, false)
	}
	return w.putInode(ino, raw)
}

// dropDir frees removed directory ino, or, while it is open (Hold), makes
// it an orphan that the last Unhold frees, as ext4_rmdir does (clear_nlink,
// i_size 0, ext4_orphan_add): an open directory stays valid, empty, until
// its last close.
func (w *Writer) dropDir(ino uint32, raw []byte, now time.Time) error {
	if w.held[ino] == 0 {
		return w.releaseInode(ino, raw, true)
	}
	delete(w.dirs, ino)
	delete(w.newInline, ino)
	setILinks(raw, 0)
	setISize(raw, 0)
	touch(raw, now, tCtime)
	w.orphan[ino] = true
	if err := w.orphanAdd(ino, raw); err != nil {
		return err
	}
	return w.putInode(ino, raw)
}

func (w *Writer) emptyDir(ino uint32, raw []byte) (bool, error) {
	if iFlags(raw)&FlagInlineData != 0 {
		return w.inlineEmpty(ino, raw) // rwinline.go
	}
	d, err := w.dirIndex(ino, raw)
	if err != nil {
		return false, err
	}
	for n := range d.names {
		if n != "." && n != ".." {
			return false, nil
		}
	}
	return true, nil
}

// renameEnds looks up both ends of a rename or exchange in rename(2)'s
// order: both names' validity, then the old directory and entry (ENOENT
// when it is missing), then the new directory and entry, which may be
// missing (found false).
func (w *Writer) renameEnds(oldDir uint32, oldName string, newDir uint32, newName string) (odraw []byte, src dirent, ndraw []byte, dst dirent, found bool, err error) {
	if err = checkName(oldName); err != nil {
		return
	}
	if err = checkName(newName); err != nil {
		return
	}
	if odraw, err = w.dirOpen(oldDir); err != nil {
		return
	}
	var ok bool
	if src, ok, err = w.find(oldDir, odraw, oldName); err != nil {
		return
	}
	if !ok {
		err = syscall.ENOENT
		return
	}
	if ndraw, err = w.dirOpen(newDir); err != nil {
		return
	}
	dst, found, err = w.find(newDir, ndraw, newName)
	return
}

// Rename moves oldName in oldDir to newName in newDir with rename(2)'s
// rules (see vfs.Renamer): EINVAL for moving a directory under itself,
// ENOTDIR, EISDIR, ENOTEMPTY, EMLINK, ENOENT.
func (w *Writer) Rename(oldDir uint32, oldName string, newDir uint32, newName string) error {
	return w.RenameAs(nil, oldDir, oldName, newDir, newName)
}

// RenameAs is Rename acting for c (see lockAs).
func (w *Writer) RenameAs(c *Caller, oldDir uint32, oldName string, newDir uint32, newName string) error {
	if err := w.lockAs(c); err != nil {
		return err
	}
	defer w.unlock()
	defer w.writeSuper()
	return w.rename(oldDir, oldName, newDir, newName)
}

// rename is Rename under the lock.
func (w *Writer) rename(oldDir uint32, oldName string, newDir uint32, newName string) error {
	_, src, ndraw, dst, dstFound, err := w.renameEnds(oldDir, oldName, newDir, newName)
	var odraw []byte
	if err != nil {
		return err
	}
	sraw, err := w.getInode(src.ino)
	if err != nil {
		return err
	}
	srcDir := iMode(sraw)&S_IFMT == S_IFDIR
	if srcDir {
		// Moving a directory under itself (lock_rename's trap is the source).
		if anc, err := w.isAncestor(src.ino, newDir); err != nil {
			return err
		} else if anc {
			return syscall.EINVAL
		}
	}
	// lock_rename's trap: a destination that is an ancestor of the
	// source gives ENOTEMPTY before any type check (do_renameat2).
	if dstFound {
		if anc, err := w.isAncestor(dst.ino, oldDir); err != nil {
			return err
		} else if anc {
			return syscall.ENOTEMPTY
		}
	}
	var draw []byte
	dstDir := false
	if dstFound {
		if dst.ino == src.ino {
			return nil
		}
		if draw, err = w.getInode(dst.ino); err != nil {
			return err
		}
		dstDir = iMode(draw)&S_IFMT == S_IFDIR
		switch {
		case srcDir && !dstDir:
			return syscall.ENOTDIR
		case !srcDir && dstDir:
			return syscall.EISDIR
		}
		if dstDir {
			if empty, err := w.emptyDir(dst.ino, draw); err != nil {
				return err
			} else if !empty {
				return syscall.ENOTEMPTY
			}
		}
	} else if srcDir && oldDir != newDir && iLinks(ndraw) >= linkMax {
		return syscall.EMLINK
	}
	now := w.Now()
	if dstFound {
		// ext4_setent: point the existing entry at the source.
		buf := make([]byte, w.v.bs)
		if err := w.readDirBlock(newDir, ndraw, dst.phys, buf); err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(buf[dst.off:], src.ino)
		buf[dst.off+7] = ftOf(iMode(sraw))
		if err := w.writeDirBlock(newDir, ndraw, buf, dst.phys); err != nil {
			return err
		}
		if d := w.dirs[newDir]; d != nil {
			d.names[newName] = dentLoc{src.ino, ftOf(iMode(sraw)), dst.blockIndex, dst.phys, dst.off}
		}
		touch(ndraw, now, tMtime, tCtime)
		if err := w.putInode(newDir, ndraw); err != nil {
			return err
		}
	} else if err := w.addEntry(newDir, ndraw, newName, src.ino, ftOf(iMode(sraw)), now); err != nil {
		return err
	}
	// The old entry may have moved if the directories are one: find it again.
	if odraw, err = w.getInode(oldDir); err != nil {
		return err
	}
	var found bool
	if src, found, err = w.find(oldDir, odraw, oldName); err != nil || !found {
		return corrupt(oldDir, "renamed entry vanished")
	}
	if err := w.removeEntry(oldDir, odraw, src, now); err != nil {
		return err
	}
	if dstFound {
		if err := w.dropLink(newDir, dst.ino, draw, dstDir, now); err != nil {
			return err
		}
	}
	if sraw, err = w.getInode(src.ino); err != nil {
		return err
	}
	touch(sraw, now, tCtime)
	if err := w.putInode(src.ino, sraw); err != nil {
		return err
	}
	if srcDir && oldDir != newDir {
		// ".." now names newDir; oldDir loses a link, newDir gains one.
		up, ok, err := w.find(src.ino, sraw, "..")
		if err != nil || !ok {
			return corrupt(src.ino, "directory without ..")
		}
		buf := make([]byte, w.v.bs)
		if err := w.readDirBlock(src.ino, sraw, up.phys, buf); err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(buf[up.off:], newDir)
		if err := w.writeDirBlock(src.ino, sraw, buf, up.phys); err != nil {
			return err
		}
		if d := w.dirs[src.ino]; d != nil {
			l := d.names[".."]
			l.ino = newDir
			d.names[".."] = l
		}
		if odraw, err = w.getInode(oldDir); err != nil {
			return err
		}
		setILinks(odraw, iLinks(odraw)-1)
		if err := w.putInode(oldDir, odraw); err != nil {
			return err
		}
		if ndraw, err = w.getInode(newDir); err != nil {
			return err
		}
		setILinks(ndraw, iLinks(ndraw)+1)
		if err := w.putInode(newDir, ndraw); err != nil {
			return err
		}
	}
	return nil
}

// isAncestor reports whether directory a is d or one of d's ancestors.
func (w *Writer) isAncestor(a, d uint32) (bool, error) {
	for i := 0; i < 1<<16; i++ {
		if d == a {
			return true, nil
		}
		if d == rootIno {
			return false, nil
		}
		r, err := w.getInode(d)
		if err != nil {
			return false, err
		}
		up, ok, err := w.find(d, r, "..")
		if err != nil {
			return false, err
		}
		if !ok || up.ino == d {
			return false, nil
		}
		d = up.ino
	}
	return false, corrupt(d, "directory loop")
}

// Exchange swaps the entries oldName in oldDir and newName in newDir
// (renameat2's RENAME_EXCHANGE, ext4_cross_rename): both must exist
// (ENOENT); either being an ancestor of the other's directory gives
// EINVAL. Directories moved to another parent get their ".." and the
// parents' link counts updated.
func (w *Writer) Exchange(oldDir uint32, oldName string, newDir uint32, newName string) error {
	return w.ExchangeAs(nil, oldDir, oldName, newDir, newName)
}

// ExchangeAs is Exchange acting for c (see lockAs).
func (w *Writer) ExchangeAs(c *Caller, oldDir uint32, oldName string, newDir uint32, newName string) error {
	if err := w.lockAs(c); err != nil {
		return err
	}
	defer w.unlock()
	defer w.writeSuper()
	_, a, _, b, ok, err := w.renameEnds(oldDir, oldName, newDir, newName)
	if err != nil {
		return err
	}
	if !ok {
		return syscall.ENOENT
	}
	// do_renameat2 looks both names up before lock_rename's trap checks.
	if anc, err := w.isAncestor(a.ino, newDir); err != nil {
		return err
	} else if anc {
		return syscall.EINVAL
	}
	if anc, err := w.isAncestor(b.ino, oldDir); err != nil {
		return err
	} else if anc {
		return syscall.EINVAL
	}
	if a.ino == b.ino {
		return nil
	}
	araw, err := w.getInode(a.ino)
	if err != nil {
		return err
	}
	braw, err := w.getInode(b.ino)
	if err != nil {
		return err
	}
	aDir, bDir := iMode(araw)&S_IFMT == S_IFDIR, iMode(braw)&S_IFMT == S_IFDIR
	now := w.Now()
	setent := func(dir uint32, e dirent, ino uint32, ft uint8) error {
		draw, err := w.getInode(dir)
		if err != nil {
			return err
		}
		buf := make([]byte, w.v.bs)
		if err := w.readDirBlock(dir, draw, e.phys, buf); err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(buf[e.off:], ino)
		buf[e.off+7] = ft
		if err := w.writeDirBlock(dir, draw, buf, e.phys); err != nil {
			return err
		}
		if d := w.dirs[dir]; d != nil {
			d.names[e.name] = dentLoc{ino, ft, e.blockIndex, e.phys, e.off}
		}
		touch(draw, now, tMtime, tCtime)
		return w.putInode(dir, draw)
	}
	if err := setent(oldDir, a, b.ino, ftOf(iMode(braw))); err != nil {
		return err
	}
	if err := setent(newDir, b, a.ino, ftOf(iMode(araw))); err != nil {
		return err
	}
	for _, x := range []struct {
		ino    uint32
		isDir  bool
		parent uint32
	}{{a.ino, aDir, newDir}, {b.ino, bDir, oldDir}} {
		raw, err := w.getInode(x.ino)
		if err != nil {
			return err
		}
		touch(raw, now, tCtime)
		if err := w.putInode(x.ino, raw); err != nil {
			return err
		}
		if !x.isDir || oldDir == newDir {
			continue
		}
		up, ok, err := w.find(x.ino, raw, "..")
		if err != nil || !ok {
			return corrupt(x.ino, "directory without ..")
		}
		buf := make([]byte, w.v.bs)
		if err := w.readDirBlock(x.ino, raw, up.phys, buf); err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(buf[up.off:], x.parent)
		if err := w.writeDirBlock(x.ino, raw, buf, up.phys); err != nil {
			return err
		}
		if d := w.dirs[x.ino]; d != nil {
			l := d.names[".."]
			l.ino = x.parent
			d.names[".."] = l
		}
	}
	if oldDir != newDir && aDir != bDir {
		// The directory among the two changes parent: its old parent
		// loses a link, the new one gains it.
		from, to := oldDir, newDir
		if bDir {
			from, to = newDir, oldDir
		}
		for _, d := range []struct {
			ino   uint32
			delta int
		}{{from, -1}, {to, 1}} {
			raw, err := w.getInode(d.ino)
			if err != nil {
				return err
			}
			setILinks(raw, uint32(int(iLinks(raw))+d.delta))
			if err := w.putInode(d.ino, raw); err != nil {
				return err
			}
		}
	}
	return nil
}
