package disk

// fallocate(2) for the Writer, as ext4_fallocate on this machine's kernel
// (6.18; the block-level results below were checked with FIEMAP on a
// kernel loop mount):
//
//   - mode 0 and KEEP_SIZE: the holes of the block range covering
//     [off, off+len) get unwritten extents; mapped blocks stay as they
//     are. Mode 0 grows the size to off+len.
//   - PUNCH_HOLE|KEEP_SIZE: nothing at or past the size; otherwise the
//     range is cut at the end of the page holding the size, the whole
//     blocks in it are unmapped and freed, and the partial blocks at its
//     edges zeroed when initialised (unwritten ones read as zeros already).
//   - ZERO_RANGE (KEEP_SIZE optional): when an edge is partial, the holes
//     of the covering block range get unwritten extents; the whole blocks
//     get unwritten extents in their holes and initialised extents are
//     marked unwritten; initialised partial edge blocks are zeroed.
//   - COLLAPSE_RANGE and INSERT_RANGE: rwshift.go. The rest: EOPNOTSUPP.

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// kernelPage is the page size that bounds a punch past the size.
var kernelPage = uint64(os.Getpagesize())

// Fallocate manipulates the space of regular file ino from off for length
// bytes, as fallocate(2) (see the file comment for the modes). The
// caller has checked what vfs_fallocate checks (off >= 0, length > 0,
// the mode combination, off+length not overflowing).
// Errors: EISDIR for a directory, ENODEV for other non-regular files,
// EOPNOTSUPP for a mode not built, EFBIG past the maximum file size,
// ENOSPC (blocks allocated before it stay, and mode 0 grows the size over
// them, as the kernel's).
func (w *Writer) Fallocate(ino uint32, mode uint32, off, length int64) error {
	return w.FallocateAs(nil, ino, mode, off, length)
}

// FallocateAs is Fallocate acting for c (see lockAs).
func (w *Writer) FallocateAs(c *Caller, ino uint32, mode uint32, off, length int64) error {
	if err := w.lockAs(c); err != nil {
		return err
	}
	defer w.unlock()
	raw, err := w.getInode(ino)
	if err != nil {
		return err
	}
	if err := regular(raw, syscall.ENODEV); err != nil {
		return err
	}
	if off < 0 || length <= 0 {
		return syscall.EINVAL
	}
	keep := mode&unix.FALLOC_FL_KEEP_SIZE != 0
	v := w.v
	size := iSize(raw)
	end := uint64(off) + uint64(length)
	now := w.Now()
	var newSize uint64
	if end > uint64(w.maxBytes()) {
		return syscall.EFBIG // vfs_fallocate's s_maxbytes check, for every mode
	}
	switch mode &^ unix.FALLOC_FL_KEEP_SIZE {
	case 0, unix.FALLOC_FL_ZERO_RANGE:
		if !keep && end > size {
			newSize = end
		}
	case unix.FALLOC_FL_PUNCH_HOLE:
		if !keep {
			return syscall.EOPNOTSUPP
		}
	case unix.FALLOC_FL_COLLAPSE_RANGE, unix.FALLOC_FL_INSERT_RANGE:
		if keep {
			return syscall.EOPNOTSUPP
		}
	default:
		return syscall.EOPNOTSUPP
	}
	// ext4_fallocate: inline data leaves the inode first, in every mode
	// (rwinline.go).
	if w.mayInline(ino, raw) {
		if err := w.convertInline(ino, raw); err != nil {
			return err
		}
		if err := w.writeSuper(); err != nil {
			return err
		}
	}
	if iFlags(raw)&FlagExtents == 0 && mode != unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE {
		// Only ext4_punch_hole handles block-mapped files
		// (ext4_ind_remove_space); preallocation needs extents.
		return syscall.EOPNOTSUPP
	}
	if mode&^unix.FALLOC_FL_KEEP_SIZE == unix.FALLOC_FL_PUNCH_HOLE || mode == unix.FALLOC_FL_COLLAPSE_RANGE || mode == unix.FALLOC_FL_INSERT_RANGE {
		// Their extent splits pass METADATA_NOFAIL (rwspace.go).
		w.tclass = allocReserved
	}
	if mode == unix.FALLOC_FL_COLLAPSE_RANGE || mode == unix.FALLOC_FL_INSERT_RANGE {
		if err := w.shiftRange(ino, raw, off, length, mode == unix.FALLOC_FL_INSERT_RANGE); err != nil {
			w.putInode(ino, raw)
			w.writeSuper()
			return err
		}
		touch(raw, now, tMtime, tCtime)
		if err := w.putInode(ino, raw); err != nil {
			return err
		}
		return w.writeSuper()
	}
	first := uint64(off) >> v.bsBits                        // first block touched
	last := (end + v.bs - 1) >> v.bsBits                    // past the last block touched
	lo, hi := (uint64(off)+v.bs-1)>>v.bsBits, end>>v.bsBits // whole blocks
	var ferr error
	var reached uint64 // mode 0: the end of what was allocated
	switch mode &^ unix.FALLOC_FL_KEEP_SIZE {
	case 0:
		reached, ferr = w.fallocUnwritten(ino, raw, first, last)
		if ferr == nil {
			reached = end
		}
	case unix.FALLOC_FL_PUNCH_HOLE:
		if uint64(off) >= size {
			return nil
		}
		if end > size {
			end = (size + kernelPage - 1) &^ (kernelPage - 1)
			hi = end >> v.bsBits
		}
		ferr = w.zeroEdges(ino, raw, uint64(off), end)
		if ferr == nil && lo < hi {
			if iFlags(raw)&FlagExtents == 0 {
				ferr = w.removeMapRange(ino, raw, lo, hi) // rwblockmap.go
			} else {
				ferr = w.xremove(ino, raw, lo, hi)
			}
		}
		touch(raw, now, tMtime, tCtime)
	case unix.FALLOC_FL_ZERO_RANGE:
		if uint64(off)&(v.bs-1) != 0 || end&(v.bs-1) != 0 {
			reached, ferr = w.fallocUnwritten(ino, raw, first, last)
		}
		if ferr == nil && lo < hi {
			if ferr = w.xsetState(ino, raw, lo, hi, true); ferr == nil {
				reached, ferr = w.fallocUnwritten(ino, raw, lo, hi)
			}
		}
		if ferr == nil {
			ferr = w.zeroEdges(ino, raw, uint64(off), end)
		}
		if ferr == nil {
			reached = end
		}
		touch(raw, now, tMtime, tCtime)
	}
	if newSize != 0 {
		if s := min(newSize, reached); s > size {
			setISize(raw, s)
			touch(raw, now, tMtime)
		}
	}
	touch(raw, now, tCtime)
	if err := w.putInode(ino, raw); err != nil {
		return err
	}
	if err := w.writeSuper(); err != nil {
		return err
	}
	return ferr
}

// fallocUnwritten gives the holes of blocks [lo, hi) unwritten extents.
// It returns how far (in bytes) the range is allocated.
func (w *Writer) fallocUnwritten(ino uint32, raw []byte, lo, hi uint64) (uint64, error) {
	for lblk := lo; lblk < hi; {
		x, err := w.xfind(ino, raw, uint32(lblk))
		if err != nil {
			return lblk << w.v.bsBits, err
		}
		e, ok, holeEnd := x.at(uint32(lblk))
		if ok {
			lblk = e.end()
			continue
		}
		want := min(min(hi, holeEnd)-lblk, maxUnwrittenExtent)
		start, got, err := w.allocBlocks(w.xgoal(x, ino, lblk), uint32(want))
		if err != nil {
			return lblk << w.v.bsBits, err
		}
		if err := w.addIBlocks(raw, int64(got)); err != nil {
			w.freeBlocks(start, uint64(got))
			return lblk << w.v.bsBits, err
		}
		if err := w.xinsert(ino, raw, xent{l: uint32(lblk), n: got, p: start, u: true}); err != nil {
			w.freeBlocks(start, uint64(got))
			w.addIBlocks(raw, -int64(got))
			return lblk << w.v.bsBits, err
		}
		lblk += uint64(got)
	}
	return hi << w.v.bsBits, nil
}

// zeroEdges zeroes the partial blocks at the edges of [from, to)
// (ext4_zero_partial_blocks).
func (w *Writer) zeroEdges(ino uint32, raw []byte, from, to uint64) error {
	bs := w.v.bs
	if from>>w.v.bsBits == (to-1)>>w.v.bsBits {
		if from&(bs-1) != 0 || to&(bs-1) != 0 {
			return w.zeroPartial(ino, raw, from, to)
		}
		return nil
	}
	if from&(bs-1) != 0 {
		if err := w.zeroPartial(ino, raw, from, (from+bs)&^(bs-1)); err != nil {
			return err
		}
	}
	if to&(bs-1) != 0 {
		return w.zeroPartial(ino, raw, to&^(bs-1), to)
	}
	return nil
}
