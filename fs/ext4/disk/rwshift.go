package disk

// FALLOC_FL_COLLAPSE_RANGE and FALLOC_FL_INSERT_RANGE for the Writer, as
// ext4_collapse_range and ext4_insert_range: the extents after the range
// move left over it (after its blocks are freed) or right to open a hole,
// with every index key that leads to them (ext4_ext_shift_extents).

import "syscall"

// shiftRange is collapse (insert false) or insert of blocks [lo, hi) of
// ino, whose inode raw the caller writes; size is i_size. Errors: EINVAL
// for a range not block-aligned, reaching the end (collapse) or starting
// at or past it (insert); EFBIG when the size would pass the maximum.
func (w *Writer) shiftRange(ino uint32, raw []byte, off, length int64, insert bool) error {
	v := w.v
	size := int64(iSize(raw))
	if (off|length)&int64(v.bs-1) != 0 {
		return syscall.EINVAL
	}
	lo, n := uint64(off)>>v.bsBits, uint64(length)>>v.bsBits
	if !insert {
		if off+length >= size {
			return syscall.EINVAL
		}
		if err := w.xremove(ino, raw, lo, lo+n); err != nil {
			return err
		}
		if err := w.xshiftLeft(ino, raw, lo+n, n); err != nil {
			return err
		}
		setISize(raw, uint64(size-length))
		return nil
	}
	if length > w.maxBytes()-size {
		return syscall.EFBIG
	}
	if off >= size {
		return syscall.EINVAL
	}
	if err := w.xsplitAt(ino, raw, lo); err != nil {
		return err
	}
	if err := w.xshiftRight(ino, raw, lo, n); err != nil {
		return err
	}
	setISize(raw, uint64(size+length))
	return nil
}

// xsplitAt splits the extent holding lblk in two at lblk, unless lblk
// starts it (ext4_split_extent_at).
func (w *Writer) xsplitAt(ino uint32, raw []byte, lblk uint64) error {
	x, err := w.xfind(ino, raw, uint32(lblk))
	if err != nil {
		return err
	}
	e, ok, _ := x.at(uint32(lblk))
	if !ok || uint64(e.l) == lblk {
		return nil
	}
	ents := x.leafEnts()
	i := x.lv[x.depth].idx
	ents = append(ents, xent{})
	copy(ents[i+1:], ents[i:])
	ents[i], ents[i+1] = e.part(uint64(e.l), lblk), e.part(lblk, e.end())
	return w.xstore(x, ents, i+1)
}

// xshiftLeft moves the extents at or after from left by n blocks (over a
// hole at least that long, so none straddles from), leaf by leaf from the
// first, merging an extent with the one before it when they now continue
// each other.
func (w *Writer) xshiftLeft(ino uint32, raw []byte, from, n uint64) error {
	return w.xrewrite(ino, raw, from, 1<<32, xopShiftLeft, uint32(n))
}

// xshiftRight moves the extents at or after from right by n blocks, leaf
// by leaf from the last (so the keys stay ordered at every step).
func (w *Writer) xshiftRight(ino uint32, raw []byte, from, n uint64) error {
	for lblk := uint64(1<<32 - 1); ; {
		x, err := w.xfind(ino, raw, uint32(lblk))
		if err != nil {
			return err
		}
		ents := x.leafEnts()
		if len(ents) == 0 {
			return nil
		}
		if last := ents[len(ents)-1]; last.end() > from && last.end()+n > 1<<32-1 {
			return syscall.EFBIG
		}
		first := uint64(ents[0].l)
		leftmost := true // no leaf before this one
		for d := 0; d < x.depth; d++ {
			leftmost = leftmost && x.lv[d].idx == 0
		}
		at := -1
		for i := range ents {
			if uint64(ents[i].l) >= from {
				if at < 0 {
					at = i
				}
				ents[i].l += uint32(n)
			}
		}
		if at >= 0 {
			if err := w.xstore(x, ents, at); err != nil {
				return err
			}
		}
		if first <= from || leftmost {
			return nil
		}
		lblk = first - 1
	}
}
