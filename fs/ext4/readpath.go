package ext4

// Handles shaped like the other read paths of the ext4-dax experiment
// (reference/seed-lkml-expense-of-read-iter.txt), chosen at mount with
// x-iovfs-read= for "iovfs bench dax". None has a scalar Read, so the VFS
// wraps every read(2) in a one-segment vector and calls ReadIter, as
// Linux's new_sync_read does for ext4, which has only .read_iter.

import (
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/iov"
)

// iterWrapHandle's ReadIter calls the scalar read once per segment: "the
// read_iter method wraps our read method".
type iterWrapHandle struct{ h *handle }

func (w iterWrapHandle) ReadIter(dst iov.Iter, off int64) (int, error) {
	if dst.Kind() == iov.KindDiscard {
		return w.h.ReadIter(dst, off)
	}
	done := 0
	for dst.Len() > 0 {
		seg := dst.Segment()
		n, err := w.h.Read(seg, off+int64(done))
		dst.Advance(n)
		done += n
		if err != nil || n < len(seg) {
			return partial(done, err)
		}
	}
	return done, nil
}

// iter1SegHandle's ReadIter tests for one segment and then calls the
// scalar read (Mikulas Patocka's proposal in the seed thread); other
// vectors take the vectored path.
type iter1SegHandle struct{ h *handle }

func (s iter1SegHandle) ReadIter(dst iov.Iter, off int64) (int, error) {
	if seg := dst.Segment(); len(seg) == dst.Len() && len(seg) > 0 {
		return s.h.Read(seg, off)
	}
	return s.h.ReadIter(dst, off)
}

// iomapHandle reads through a generic mapping interface modelled on
// Linux's dax_iomap_rw: for every call, and every mapping within it,
// iomap_begin looks the range up afresh (ext4_iomap_begin ->
// ext4_map_blocks; here a walk of the extent tree with no cached mapping),
// the actor copies from device memory one dax_direct_access at a time
// (dax_iomap_iter), and iomap_end is called. The callbacks are reached
// through function values, as Linux reaches them through iomap_ops.
type iomapHandle struct{ h *handle }

// iomapping is Linux's struct iomap, reduced to what a read needs.
type iomapping struct {
	offset int64 // file offset of the mapping
	length int64
	addr   int64 // device offset, for iomapMapped
	typ    uint8
}

const (
	iomapHole = iota
	iomapMapped
	iomapUnwritten
)

// iomapOps is Linux's struct iomap_ops.
type iomapOps struct {
	begin func(h *handle, pos, length int64) (iomapping, error)
	end   func(h *handle, pos, length, written int64, m iomapping) error
}

var ext4IomapOps = &iomapOps{begin: ext4IomapBegin, end: ext4IomapEnd}

func ext4IomapBegin(h *handle, pos, length int64) (iomapping, error) {
	fs := h.fs
	in, err := fs.vol.Current(h.ref)
	if err != nil {
		return iomapping{}, err
	}
	m, err := fs.vol.MapBlocks(in, nil, uint64(pos)>>fs.bsBits)
	if err != nil {
		return iomapping{}, err
	}
	n := int64(fs.clip(m, uint64(pos), int(min(length, int64(iov.MaxCount)))))
	im := iomapping{offset: pos, length: n, typ: iomapMapped}
	switch {
	case m.Hole:
		im.typ = iomapHole
	case m.Unwritten:
		im.typ = iomapUnwritten
	default:
		im.addr = fs.devOff(m, uint64(pos))
	}
	return im, nil
}

func ext4IomapEnd(*handle, int64, int64, int64, iomapping) error { return nil }

func (ih iomapHandle) ReadIter(dst iov.Iter, off int64) (int, error) {
	h := ih.h
	if off < 0 {
		return 0, errEINVAL
	}
	in, err := h.fs.vol.Current(h.ref)
	if err != nil {
		return 0, err
	}
	if in.Flags&disk.FlagInlineData != 0 {
		return h.ReadIter(dst, off) // ext4 has no iomap path for inline data either
	}
	dst.Truncate(limit(in, off, dst.Len()))
	ops := ext4IomapOps
	done := 0
	for dst.Len() > 0 { // iomap_iter
		pos := off + int64(done)
		m, err := ops.begin(h, pos, int64(dst.Len()))
		if err != nil {
			return partial(done, err)
		}
		k, err := iomapActor(h.fs, &dst, m)
		ops.end(h, pos, m.length, int64(k), m)
		done += k
		if err != nil || int64(k) < m.length {
			return partial(done, nonNil(err))
		}
	}
	return done, nil
}

// iomapActor is dax_iomap_iter for a read: zeros for holes and unwritten
// extents, otherwise copies one dax_direct_access piece at a time.
func iomapActor(fs *FS, dst *iov.Iter, m iomapping) (int, error) {
	if m.typ != iomapMapped {
		return dst.Zero(int(m.length)), nil
	}
	if fs.dax == nil {
		return fs.readIter(dst, int(m.length), m.addr)
	}
	done := 0
	for int64(done) < m.length {
		b, err := fs.dax.DirectAccess(m.addr+int64(done), int(m.length)-done)
		if err != nil {
			return partial(done, err)
		}
		k, err := copyMC(dst, b)
		done += k
		if err != nil || k == 0 {
			return partial(done, nonNil(err))
		}
	}
	return done, nil
}
