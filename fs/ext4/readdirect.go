package ext4

// ReadDirect: the file's bytes handed out in place, from the whole-device
// view a dax mount takes (FS.mem), for callers that only pass them on
// (the FUSE export's READ).

import "github.com/iovfs/iovfs/fs/ext4/disk"
import "syscall"

// ReadDirect implements vfs.DirectReader: a view of the file's bytes from
// off, up to n of them, as far as they are contiguous on the device. It
// returns EOPNOTSUPP when the mount has no whole-device view (not dax, or
// a device that cannot map all of itself), on a read-write mount (a view
// kept after a truncate would show the blocks' next owner), for inline
// data, and where the data at off reads as zeros (a hole or an unwritten
// extent).
func (h *handle) ReadDirect(off int64, n int) ([]byte, error) {
	if off < 0 || n < 0 {
		return nil, errEINVAL
	}
	mem := h.fs.mem
	if mem == nil || h.fs.w != nil {
		return nil, syscall.EOPNOTSUPP // read-write: a view could outlive its blocks' owner
	}
	in, err := h.fs.vol.Current(h.ref)
	if err != nil {
		return nil, err
	}
	if in.Flags&disk.FlagInlineData != 0 {
		return nil, syscall.EOPNOTSUPP
	}
	n = limit(in, off, n)
	if n == 0 {
		return nil, nil
	}
	pos := uint64(off)
	r, ok := h.c.lookup(pos>>h.fs.bsBits, 0)
	if !ok {
		var err error
		if r, err = h.mapSlow(in, 0, pos>>h.fs.bsBits); err != nil {
			return nil, err
		}
	}
	if r.zeros() {
		return nil, syscall.EOPNOTSUPP
	}
	k := int64(h.fs.clipRun(r, pos, n))
	dev := h.fs.devOffRun(r, pos)
	if dev < 0 || dev > int64(len(mem))-k {
		return nil, syscall.EIO // a mapping past the device: a corrupt extent
	}
	return mem[dev : dev+k : dev+k], nil
}
