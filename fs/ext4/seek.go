package ext4

import (
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

// Llseek implements vfs.Seeker for a regular file, as ext4_llseek does:
// SEEK_DATA and SEEK_HOLE follow the file's block map (iomap_seek_data
// and iomap_seek_hole over ext4_iomap_report_ops), the other whences are
// generic_file_llseek's. A hole is a run with no blocks or an unwritten
// extent: Linux reports an unwritten extent as data only where its page
// cache holds pages over it, and iovfs keeps no page cache, so it is a
// hole here as on a freshly mounted kernel. An inline_data file is data
// up to its inline size, and ENOENT past it (the kernel's answer when a
// truncate made i_size larger than the inline data). SEEK_DATA and
// SEEK_HOLE at a negative offset or at or past the end give ENXIO;
// SEEK_DATA with no data after off gives ENXIO, and SEEK_HOLE with no
// hole before the end returns the size (the implicit hole at the end of
// the file). A read-write mount's file is seen as it is now.
func (h *handle) Llseek(pos, off int64, whence int) (n int64, err error) {
	err = h.fs.vol.Read(h.ref, func(in *disk.Inode) error {
		var err error
		n, err = seekIn(h.fs.vol, in, pos, off, whence)
		return err
	})
	if err == unix.ENXIO || err == unix.EINVAL || err == unix.ENOENT {
		return n, err
	}
	return n, h.fs.check("ext4_llseek", err)
}

// seekIn is Llseek for inode in of v at file position pos.
func seekIn(v *disk.Volume, in *disk.Inode, pos, off int64, whence int) (int64, error) {
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
		if in.Flags&disk.FlagInlineData != 0 {
			// ext4_iomap_begin_report: one inline range [0, n), n the
			// inline size cut at i_size, and ENOENT for an offset at or
			// past n, where a truncate made i_size larger.
			data, err := v.InlineData(in)
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
		return v.SeekData(in, off, size, whence == unix.SEEK_DATA)
	default:
		return 0, errEINVAL
	}
	if pos < 0 {
		return 0, errEINVAL
	}
	return pos, nil
}
