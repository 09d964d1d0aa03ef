package vfs

import (
	"golang.org/x/sys/unix"
)

// Seek sets the file position of fd, as lseek(2) does, and returns it.
// whence is unix.SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA or SEEK_HOLE. A
// resulting negative position or an unknown whence gives EINVAL; a file
// that cannot seek gives ESPIPE. Devices without a position, such as
// /dev/zero, always report 0 (Linux null_lseek).
func (p *Proc) Seek(fd int, off int64, whence int) (int64, error) {
	f := p.files.get(fd)
	if f == nil {
		return 0, errEBADF
	}
	if whence < unix.SEEK_SET || whence > unix.SEEK_HOLE { // ksys_lseek: whence > SEEK_MAX
		return 0, errEINVAL
	}
	if f.mode&fmStream != 0 {
		return 0, errESPIPE
	}
	if f.seek == nil && f.mode&fmNoPos != 0 {
		return 0, nil
	}
	f.posMu.Lock()
	defer f.posMu.Unlock()
	var pos int64
	var err error
	if f.seek != nil {
		pos, err = f.seek.Llseek(f.pos, off, whence)
	} else if isDir(f.node) {
		pos, err = f.dirSeek(off, whence)
	} else {
		pos, err = f.genericSeek(off, whence)
	}
	if err != nil {
		return 0, err
	}
	f.pos = pos
	return pos, nil
}

// genericSeek is Linux's generic_file_llseek: SEEK_DATA treats the whole
// file as data and SEEK_HOLE finds the implicit hole at its end.
func (f *file) genericSeek(off int64, whence int) (int64, error) {
	var pos int64
	switch whence {
	case unix.SEEK_SET:
		pos = off
	case unix.SEEK_CUR:
		if off == 0 {
			return f.pos, nil
		}
		pos = f.pos + off
	case unix.SEEK_END, unix.SEEK_DATA, unix.SEEK_HOLE:
		st, err := f.stat()
		if err != nil {
			return 0, err
		}
		return SeekInFile(st.Size, off, whence)
	default:
		return 0, errEINVAL
	}
	if pos < 0 {
		return 0, errEINVAL
	}
	return pos, nil
}

// SeekInFile computes SEEK_END, SEEK_DATA and SEEK_HOLE for a file of size
// bytes with no holes, as Linux's generic_file_llseek_size does. Drivers
// with holes implement Seeker themselves.
func SeekInFile(size, off int64, whence int) (int64, error) {
	var pos int64
	switch whence {
	case unix.SEEK_END:
		pos = size + off
	case unix.SEEK_DATA:
		if off < 0 || off >= size {
			return 0, unix.ENXIO
		}
		pos = off
	case unix.SEEK_HOLE:
		if off < 0 || off >= size {
			return 0, unix.ENXIO
		}
		pos = size
	default:
		return 0, errEINVAL
	}
	if pos < 0 {
		return 0, errEINVAL
	}
	return pos, nil
}

// dirSeek is Linux's dcache_dir_lseek for directories: SEEK_SET and
// SEEK_CUR only.
func (f *file) dirSeek(off int64, whence int) (int64, error) {
	switch whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		off += f.pos
	default:
		return 0, errEINVAL
	}
	if off < 0 {
		return 0, errEINVAL
	}
	return off, nil
}
