package disk

// SEEK_DATA and SEEK_HOLE over a file's block map.

import "syscall"

// SeekData returns the first offset at or after off, below size, that is
// data (wantData) or a hole, walking in's block map run by run, as
// iomap_seek_data and iomap_seek_hole do over ext4_iomap_report_ops: a
// hole is a run with no blocks or an unwritten extent (Linux reports an
// unwritten extent as data only where its page cache holds pages over
// it). Looking for a hole and finding none gives size (the implicit hole
// at the end); looking for data and finding none gives ENXIO. An inline
// file (no blocks) is the caller's.
func (v *Volume) SeekData(in *Inode, off, size int64, wantData bool) (int64, error) {
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
			return 0, syscall.EIO
		}
		lblk = next
	}
	if wantData {
		return 0, syscall.ENXIO
	}
	return size, nil
}
