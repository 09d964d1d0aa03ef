package ext4

import (
	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

// Llseek implements vfs.Seeker for a read-only mount's regular file, as
// ext4_llseek does: SEEK_DATA and SEEK_HOLE follow the file's block map
// (iomap_seek_data and iomap_seek_hole over ext4_iomap_report_ops), the
// other whences are generic_file_llseek's. A hole is a run with no blocks
// or an unwritten extent: Linux reports an unwritten extent as data only
// where its page cache holds pages over it, and iovfs keeps no page cache,
// so it is a hole here as on a freshly mounted kernel. An inline_data file
// is data up to its inline size, and ENOENT past it (the kernel's answer
// when a truncate made i_size larger than the inline data). SEEK_DATA and SEEK_HOLE at a negative offset or at or past
// the end give ENXIO; SEEK_DATA with no data after off gives ENXIO, and
// SEEK_HOLE with no hole before the end returns the size (the implicit
// hole at the end of the file).
func (h *handle) Llseek(pos, off int64, whence int) (int64, error) {
	return seekIn(h.fs.vol, h.in, pos, off, whence)
}

// Llseek implements vfs.Seeker for a read-write mount's regular file: the
// read-only handle's rules, over the inode and block map as they are now
// (under the Writer's lock).
func (h *rwHandle) Llseek(pos, off int64, whence int) (int64, error) {
	var n int64
	err := h.fs.w.View(func(v *Volume) error {
		raw, err := h.fs.w.getInode(h.ino)
		if err != nil {
			return err
		}
		in, err := v.parseInode(h.ino, raw)
		if err != nil {
			return err
		}
		n, err = seekIn(v, in, pos, off, whence)
		return err
	})
	return n, h.fs.check("ext4_llseek", err)
}

// seekIn is Llseek for inode in of v at file position pos.
func seekIn(v *Volume, in *Inode, pos, off int64, whence int) (int64, error) {
	size := int64(in.Size)
	switch whence {
	case unix.SEEK_SET:
		pos = off
	case unix.SEEK_CUR:
		pos += off
	case unix.SEEK_END:
		return vfs.SeekInFile(size, off, whence)
	case unix.SEEK_DATA, unix.SEEK_HOLE:
		if _, err := vfs.SeekInFile(size, off, whence); err != nil {
			return 0, err // ENXIO at a negative offset or at or past the end
		}
		if in.Flags&FlagInlineData != 0 {
			// ext4_iomap_begin_report: one inline range [0, n), n the
			// inline size cut at i_size, and ENOENT for an offset at or
			// past n, where a truncate made i_size larger.
			data, err := v.inlineData(in)
			if err != nil {
				return 0, err
			}
			n := min(int64(len(data)), size)
			switch {
			case off >= n:
				return 0, unix.ENOENT
			case whence == unix.SEEK_DATA:
				return off, nil
			case n < size: // the hole's search goes on past n
				return 0, unix.ENOENT
			}
			return size, nil
		}
		return seekData(v, in, off, size, whence == unix.SEEK_DATA)
	default:
		return 0, errEINVAL
	}
	if pos < 0 {
		return 0, errEINVAL
	}
	return pos, nil
}

// seekData returns the first offset at or after off, below size, that is
// data (wantData) or a hole, walking in's block map run by run; size when
// looking for a hole finds none, ENXIO when looking for data.
func seekData(v *Volume, in *Inode, off, size int64, wantData bool) (int64, error) {
	bits := v.bsBits
	for lblk := uint64(off) >> bits; int64(lblk<<bits) < size; {
		m, err := v.MapBlocks(in, nil, lblk)
		if err != nil {
			return 0, err
		}
		if data := !m.Hole && !m.Unwritten; data == wantData {
			return max(off, int64(lblk<<bits)), nil
		}
		next := m.Logical + m.Len
		if next <= lblk { // a mapping always covers lblk; never loop on a bad one
			return 0, unix.EIO
		}
		lblk = next
	}
	if wantData {
		return 0, unix.ENXIO
	}
	return size, nil
}
