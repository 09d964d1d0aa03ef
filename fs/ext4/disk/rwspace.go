package disk

// Free space as Linux's ext4 accounts it (fs/ext4/balloc.c, inode.c,
// super.c): which allocations may take the last blocks, where a write
// stops near a full volume, and what statfs reports on a read-write
// mount.
//
//   - ext4_has_free_clusters: an ordinary allocation leaves
//     s_r_blocks_count (root's reserve) and s_resv_clusters (2% of the
//     volume, at most 4096 clusters, with extents only:
//     ext4_calculate_resv_clusters) free; a caller that is s_resuid, in
//     s_resgid or has CAP_SYS_RESOURCE may take the root reserve; tree
//     blocks of writeback, of unwritten-extent conversion and of the
//     splits of truncate and punch (METADATA_NOFAIL, so
//     EXT4_MB_USE_RESERVED) may take s_resv_clusters too.
//   - A non-delalloc allocation (fallocate, directory and symlink blocks,
//     xattr blocks) asks for fewer blocks, halving, until the claim
//     passes (ext4_mb_new_blocks).
//   - Writes go through the page cache in folios (generic_perform_write):
//     each write_begin reserves (ext4_da_write_begin) or allocates
//     (ext4_write_begin, after ext4_nonda_switch) every hole block of its
//     folio range and fails whole, so a write near a full volume stops at
//     a folio boundary with a short count (ENOSPC if nothing was
//     written). The folio is what __filemap_get_folio makes of the
//     write_begin length: the order of its size (from 8 KiB) up to 2 MiB,
//     lowered to the alignment of the page index. A failed write_begin
//     keeps the holes it got inside i_size (zeroed), truncates what is
//     past i_size when it extended the file (ext4_truncate_failed_write),
//     and is retried by ext4_should_retry_alloc, with a new folio for the
//     trimmed length when the truncate took the old one.
//   - Delayed allocation's reservations are the kernel's dirty clusters;
//     the Writer allocates at once, so its free count is the kernel's
//     free less dirty after a sync. It decides a write's folios on the
//     kernel's counts (free, and dirty as the folios before are reserved)
//     and then writes what was admitted in one go, as writeback does.
//   - The page cache is modelled, not kept: every folio is made fresh,
//     where the kernel reuses the folios it has cached.

import (
	"encoding/binary"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Caller is who the Writer's operations run for, as far as the blocks
// reserved for root go (ext4_has_free_clusters): the zero value is root.
//
// Uid and Gid are the fsuid and fsgid, Groups the supplementary groups.
// A caller with Uid 0 has CAP_SYS_RESOURCE unless NoSysResource; one with
// another Uid has it only with SysResource (an effective uid 0 under
// another fsuid).
type Caller struct {
	Uid, Gid uint32
	Groups   []uint32
	// NoSysResource: a caller with uid 0 without CAP_SYS_RESOURCE.
	NoSysResource bool
	// SysResource: a caller with another uid than 0 that has
	// CAP_SYS_RESOURCE.
	SysResource bool
	// ACLAccess and ACLDefault, in the kernel's xattr format, are the
	// ACLs a node made for the caller gets (what posix_acl_create
	// computed from its directory's default ACL): the access ACL, and a
	// directory's default ACL. nil for none.
	ACLAccess, ACLDefault []byte
}

// allocClass is what an allocation may take (ext4_mb_new_blocks' flags).
type allocClass uint8

const (
	allocNormal   allocClass = iota // flags 0: the reserves stay free
	allocReserved                   // EXT4_MB_USE_RESERVED: s_resv_clusters too
	allocAdmitted                   // EXT4_MB_DELALLOC_RESERVED: claimed before
)

// resvClusters is s_resv_clusters (ext4_calculate_resv_clusters).
func (w *Writer) resvClusters() uint64 {
	if w.v.incompat&incompatExtents == 0 {
		return 0
	}
	return min(w.v.blocks/50, 4096)
}

// rBlocks is s_r_blocks_count.
func (w *Writer) rBlocks() uint64 {
	n := uint64(le32(w.sb, 0x8))
	if w.v.incompat&incompat64bit != 0 {
		n |= uint64(le32(w.sb, 0x154)) << 32
	}
	return n
}

// rootBlocksOK reports whether the caller may take the root reserve:
// s_resuid, a member of s_resgid (when not 0), or CAP_SYS_RESOURCE.
func (w *Writer) rootBlocksOK() bool {
	c := w.cur
	if c == nil {
		c = &w.Caller
	}
	resuid, resgid := uint32(le16(w.sb, 0x50)), uint32(le16(w.sb, 0x52))
	if c.Uid == resuid || c.SysResource || (c.Uid == 0 && !c.NoSysResource) {
		return true
	}
	if resgid == 0 {
		return false
	}
	if c.Gid == resgid {
		return true
	}
	for _, g := range c.Groups {
		if g == resgid {
			return true
		}
	}
	return false
}

// hasFree is ext4_has_free_clusters for n blocks (no dirty clusters: the
// Writer allocates at once).
func (w *Writer) hasFree(n uint64, class allocClass) bool {
	return w.hasFreeOf(w.sbFreeBlocks(), n, class)
}

// hasFreeOf is hasFree with free blocks free.
func (w *Writer) hasFreeOf(free, n uint64, class allocClass) bool {
	resv := w.resvClusters()
	switch {
	case class == allocAdmitted:
		return free >= n
	case free >= w.rBlocks()+resv+n:
		return true
	case w.rootBlocksOK() && free >= n+resv:
		return true
	}
	return class == allocReserved && free >= n
}

// claim lowers *n, halving, until hasFree admits it, as ext4_mb_new_blocks
// does without delalloc; false when not even one block is admitted.
func (w *Writer) claim(n *uint32) bool {
	for *n > 0 && !w.hasFree(uint64(*n), w.aclass) {
		*n >>= 1
	}
	return *n > 0
}

// freeClustersWatermark is EXT4_FREECLUSTERS_WATERMARK: 4 x
// percpu_counter_batch (max(32, 2 x CPUs)) x CPUs.
var freeClustersWatermark = func() uint64 {
	n := uint64(runtime.NumCPU())
	return 4 * max(32, 2*n) * n
}()

// Folio sizes of the page cache (4 KiB pages, MAX_PAGECACHE_ORDER 9).
const (
	kernelPageShift = 12
	maxFolioOrder   = 9
)

// folioChunk is how many bytes of a write at pos with rest bytes left one
// write_begin takes: generic_perform_write's chunk (up to the 2 MiB
// boundary), trimmed to the end of the folio __filemap_get_folio makes
// for it (fgf_set_order of the length, lowered to the index's alignment),
// its order at most maxOrder.
func folioChunk(pos, rest int64, maxOrder int) (int64, int) {
	const maxChunk = int64(1) << (kernelPageShift + maxFolioOrder)
	n := min(maxChunk-pos&(maxChunk-1), rest)
	order := 0
	for order+1 <= maxOrder && int64(1)<<(kernelPageShift+order+1) <= n {
		order++
	}
	index := pos >> kernelPageShift
	if index&(int64(1)<<order-1) != 0 {
		order = 0
		for index&(int64(1)<<(order+1)-1) == 0 {
			order++
		}
	}
	end := (index + int64(1)<<order) << kernelPageShift
	return min(n, end-pos), order
}

// holeBlocks counts the blocks of [lo, hi) that ino maps to nothing (a
// write_begin's reservations: unwritten blocks need none).
func (w *Writer) holeBlocks(ino uint32, raw []byte, lo, hi uint64) (uint64, error) {
	var n uint64
	for b := lo; b < hi; {
		ok, runEnd, err := w.mappedAt(ino, raw, b)
		if err != nil {
			return 0, err
		}
		if ok {
			b = runEnd
			continue
		}
		end := min(hi, runEnd)
		n += end - b
		b = end
	}
	return n, nil
}

// Statfs is statfs(2) of the volume as ext4_statfs reports it on a
// read-write mount: f_blocks less the overhead (s_overhead_clusters, else
// ext4_calculate_overhead), f_bfree the free count (the kernel's free
// less dirty clusters: the Writer has none), f_bavail less
// s_r_blocks_count and s_resv_clusters (0 below them), f_files and
// f_ffree from the inode counts.
func (w *Writer) Statfs() unix.Statfs_t {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.v
	overhead := uint64(le32(w.sb, 0x248))
	if overhead == 0 {
		overhead, _ = v.overhead(w.sb)
	}
	st := unix.Statfs_t{
		Type:    0xEF53,
		Bsize:   int64(v.bs),
		Frsize:  int64(v.bs),
		Blocks:  v.blocks - overhead,
		Bfree:   w.sbFreeBlocks(),
		Files:   uint64(le32(w.sb, 0x0)),
		Ffree:   uint64(le32(w.sb, 0x10)),
		Namelen: 255,
	}
	if r := w.rBlocks() + w.resvClusters(); st.Bfree >= r {
		st.Bavail = st.Bfree - r
	}
	lo := binary.LittleEndian.Uint64(w.sb[0x68:]) ^ binary.LittleEndian.Uint64(w.sb[0x70:])
	st.Fsid.Val = [2]int32{int32(uint32(lo)), int32(uint32(lo >> 32))}
	return st
}

// writeFolios is writeData as the kernel's page-cache write sees free
// space (see the file comment): with room for every block of p above the
// reserves and the watermark, one writeData; else the folios admitted one
// after the other, written together, then the failed one's aftermath and
// retries, the count short at a folio boundary (ENOSPC if nothing was
// written). raw's size grows with what is written; the caller writes raw.
func (w *Writer) writeFolios(ino uint32, raw []byte, p []byte, off int64) (int, error) {
	v := w.v
	defer func() { w.aclass, w.tclass = allocNormal, allocNormal }()
	blocks := uint64(off+int64(len(p))-1)>>v.bsBits - uint64(off)>>v.bsBits + 1
	free := w.sbFreeBlocks()
	journalled := w.Data == DataJournal && w.j != nil // no delalloc, no large folios
	if !journalled && free >= w.rBlocks()+w.resvClusters()+blocks+freeClustersWatermark && free >= 3*blocks {
		// Every folio is admitted and stays delayed (ext4_nonda_switch
		// never switches): tree blocks come from the reserve.
		w.aclass, w.tclass = allocAdmitted, allocReserved
		n, err := w.writeData(ino, raw, p, off)
		if end := uint64(off) + uint64(n); n > 0 && end > iSize(raw) {
			setISize(raw, end)
		}
		return n, err
	}
	retries := 0    // ext4_should_retry_alloc's, per write_begin
	var again int64 // a retried delalloc write_begin's length
	done := 0
	for done < len(p) {
		// The folios admitted from here, as the kernel takes them: their
		// holes reserved (delayed) or allocated (write time) one folio
		// after the other, on the kernel's counts (free, and dirty: what
		// is reserved but not yet written back).
		kfree, dirty := w.sbFreeBlocks(), uint64(0)
		admitted := int64(0)
		var failPos, failLen int64 = -1, 0
		var failLo, failHi uint64
		for int64(done)+admitted < int64(len(p)) {
			pos := off + int64(done) + admitted
			c := int64(len(p)-done) - admitted
			if again > 0 {
				c = again
			}
			if journalled {
				c = min(c, int64(kernelPage)-pos&int64(kernelPage-1))
			} else {
				c, _ = folioChunk(pos, c, w.folioOrder())
			}
			lo, hi := uint64(pos)>>v.bsBits, uint64(pos+c-1)>>v.bsBits+1
			need, err := w.holeBlocks(ino, raw, lo, hi)
			if err != nil {
				return done, err
			}
			// ext4_nonda_switch: writeback starts when half the free
			// space is dirty; write-time allocation below 150% or the
			// watermark.
			if dirty > 0 && kfree < 2*dirty {
				kfree, dirty = kfree-min(kfree, dirty), 0
			}
			delayed := !journalled && 2*kfree >= 3*dirty && kfree >= dirty+freeClustersWatermark
			if again > 0 {
				delayed = true // a retried write_begin stays in its mode
			}
			if !w.hasFreeOf(kfree-min(kfree, dirty), need, allocNormal) {
				failPos, failLen, failLo, failHi = pos, c, lo, hi
				break
			}
			retries, again = 0, 0
			if delayed {
				dirty += need
			} else {
				kfree -= min(kfree, need)
			}
			admitted += c
		}
		// What was admitted is written in one go, as writeback and the
		// conversion of unwritten extents at I/O completion do it: their
		// tree blocks may take the reserve (METADATA_NOFAIL).
		if admitted > 0 {
			w.aclass, w.tclass = allocAdmitted, allocReserved
			n, err := w.writeData(ino, raw, p[done:done+int(admitted)], off+int64(done))
			if end := uint64(off) + uint64(done) + uint64(n); n > 0 && end > iSize(raw) {
				setISize(raw, end)
			}
			done += n
			if err != nil || int64(n) < admitted {
				return done, err
			}
		}
		if failPos < 0 {
			return done, nil
		}
		// A failed write_begin took the holes it could before the one
		// that failed (reserved, or allocated at write time); those
		// inside i_size stay, zeroed (folio_zero_new_buffers) and
		// written back.
		eof := (iSize(raw) + v.bs - 1) >> v.bsBits
		if keep := min(failHi, eof); failLo < keep {
			if err := w.keepZeroed(ino, raw, failLo, keep); err != nil {
				return done, err
			}
		}
		// ext4_truncate_failed_write when it extended the file.
		freed := false
		extended := uint64(failPos+failLen) > iSize(raw)
		if extended {
			before := w.sbFreeBlocks()
			if err := w.cutBlocks(ino, raw, iSize(raw)); err != nil {
				return done, err
			}
			freed = w.sbFreeBlocks() > before
		}
		// ext4_should_retry_alloc: with a journal, three times, after a
		// commit when blocks were freed, else while one block could be
		// had. The truncate took the failed folio out of the page
		// cache, so the retry makes a new one for the length trimmed to
		// the failed folio (one order smaller when it started inside a
		// page); else it finds the same folio.
		if w.j != nil && retries < 3 && (freed || w.hasFree(1, allocNormal)) {
			retries++
			if freed {
				if err := w.putInode(ino, raw); err != nil {
					return done, err
				}
				w.commitOrFail()
			}
			if extended {
				again = failLen
			}
			continue
		}
		if done == 0 {
			return 0, syscall.ENOSPC
		}
		return done, nil
	}
	return done, nil
}

// folioOrder is the largest folio order the modelled page cache gives:
// maxFolioOrder unless lowered (w.maxFolio, the kernel's allocation of a
// large folio failing under memory fragmentation).
func (w *Writer) folioOrder() int {
	if w.maxFolio > 0 {
		return w.maxFolio - 1
	}
	return maxFolioOrder
}

// mappedAt reports whether block b of ino is mapped (written or
// unwritten) and where its run or hole ends, for an extent tree or a
// block map.
func (w *Writer) mappedAt(ino uint32, raw []byte, b uint64) (ok bool, end uint64, err error) {
	if iFlags(raw)&FlagExtents == 0 {
		exts, err := w.loadBlockMap(ino, raw)
		if err != nil {
			return false, 0, err
		}
		_, ok, end := extAt(exts, b)
		return ok, end, nil
	}
	x, err := w.xfind(ino, raw, uint32(b))
	if err != nil {
		return false, 0, err
	}
	e, ok, holeEnd := x.at(uint32(b))
	if ok {
		return true, uint64(e.end()), nil
	}
	return false, holeEnd, nil
}

// keepZeroed gives the holes of blocks [lo, hi) of ino zeroed blocks, in
// order, as far as ordinary allocations may go (a failed write_begin's
// new buffers).
func (w *Writer) keepZeroed(ino uint32, raw []byte, lo, hi uint64) error {
	bs := w.v.bs
	for b := lo; b < hi; {
		ok, runEnd, err := w.mappedAt(ino, raw, b)
		if err != nil {
			return err
		}
		if ok {
			b = runEnd
			continue
		}
		end := min(hi, runEnd)
		zeros := make([]byte, (end-b)*bs) // a rare path: the volume is full
		w.aclass, w.tclass = allocNormal, allocNormal
		n, err := w.writeData(ino, raw, zeros, int64(b*bs))
		if err != nil || uint64(n) < uint64(len(zeros)) {
			if err == syscall.ENOSPC {
				err = nil
			}
			return err
		}
		b = end
	}
	return nil
}
