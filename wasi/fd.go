package wasi

// The descriptor functions other than the four transfers (rw.go).

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"github.com/tetratelabs/wazero/api"
	"golang.org/x/sys/unix"
)

// WASI filetype values.
const (
	filetypeUnknown uint8 = iota
	filetypeBlockDevice
	filetypeCharacterDevice
	filetypeDirectory
	filetypeRegularFile
	filetypeSocketDgram
	filetypeSocketStream
	filetypeSymbolicLink
)

// filetypeOf maps a Linux file type. A FIFO has no WASI type; like
// wasi-libc's own reading of S_IFIFO, it is "unknown".
func filetypeOf(mode uint32) uint8 {
	switch mode & unix.S_IFMT {
	case unix.S_IFBLK:
		return filetypeBlockDevice
	case unix.S_IFCHR:
		return filetypeCharacterDevice
	case unix.S_IFDIR:
		return filetypeDirectory
	case unix.S_IFREG:
		return filetypeRegularFile
	case unix.S_IFSOCK:
		return filetypeSocketStream
	case unix.S_IFLNK:
		return filetypeSymbolicLink
	}
	return filetypeUnknown
}

// direntType maps a getdents d_type.
func direntType(t uint8) uint8 {
	switch t {
	case unix.DT_BLK:
		return filetypeBlockDevice
	case unix.DT_CHR:
		return filetypeCharacterDevice
	case unix.DT_DIR:
		return filetypeDirectory
	case unix.DT_REG:
		return filetypeRegularFile
	case unix.DT_SOCK:
		return filetypeSocketStream
	case unix.DT_LNK:
		return filetypeSymbolicLink
	}
	return filetypeUnknown
}

func nanos(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

// writeFilestat stores st as a WASI filestat (64 bytes) at ptr.
func writeFilestat(mem api.Memory, ptr uint32, st *vfs.Stat) uint32 {
	b, ok := mem.Read(ptr, 64)
	if !ok {
		return errnoFault
	}
	le := binary.LittleEndian
	le.PutUint64(b[0:], st.Dev)
	le.PutUint64(b[8:], st.Ino)
	clear(b[16:24])
	b[16] = filetypeOf(st.Mode)
	le.PutUint64(b[24:], st.Nlink)
	le.PutUint64(b[32:], uint64(st.Size))
	le.PutUint64(b[40:], nanos(st.Atime))
	le.PutUint64(b[48:], nanos(st.Mtime))
	le.PutUint64(b[56:], nanos(st.Ctime))
	return errnoSuccess
}

// fd_advise(fd, offset, len, advice) errno: posix_fadvise. iovfs keeps no
// page cache to advise, so after fadvise64's checks (an unknown advice or
// a negative length is EINVAL, a pipe ESPIPE) it does nothing, as Linux
// does on tmpfs.
func (w *instance) fdAdvise(_ context.Context, _ api.Module, stack []uint64) {
	fd, length, advice := int32(stack[0]), int64(stack[2]), uint32(stack[3])
	if e := w.check(fd, rightFdAdvise); e != 0 {
		stack[0] = uint64(e)
		return
	}
	st, err := w.p.Fstat(int(fd))
	switch {
	case err != nil:
		stack[0] = uint64(errnoOf(err))
	case st.Mode&unix.S_IFMT == unix.S_IFIFO:
		stack[0] = uint64(errnoSpipe)
	case advice > 5 || length < 0:
		stack[0] = uint64(errnoInval)
	default:
		stack[0] = 0
	}
}

// fd_close(fd) errno
func (w *instance) fdClose(_ context.Context, _ api.Module, stack []uint64) {
	fd := int32(stack[0])
	if fd < 0 {
		stack[0] = uint64(errnoBadf)
		return
	}
	err := w.p.Close(int(fd))
	if err == nil || err != unix.EBADF {
		w.clearEntry(int(fd))
	}
	stack[0] = uint64(errnoOf(err))
}

// fd_fdstat_set_rights(fd, base, inheriting) errno: rights can only be
// dropped; asking for one the descriptor lacks gives ENOTCAPABLE.
func (w *instance) fdFdstatSetRights(_ context.Context, _ api.Module, stack []uint64) {
	fd, base, inherit := int32(stack[0]), stack[1], stack[2]
	st, err := w.fstat(fd)
	if err != 0 {
		stack[0] = uint64(err)
		return
	}
	e := w.rightsOf(fd, &st)
	if base&^e.base != 0 || inherit&^e.inherit != 0 {
		stack[0] = uint64(errnoNotcapable)
		return
	}
	e.base, e.inherit, e.known = base, inherit, true
	w.setEntry(int(fd), e)
	stack[0] = 0
}

// rightsOf returns fd's entry, with the rights of its file type when the
// module did not open it. A character device handed in that way (a
// standard descriptor on a terminal) lacks fd_seek and fd_tell, which is
// how wasi-libc's isatty recognises a terminal.
func (w *instance) rightsOf(fd int32, st *vfs.Stat) fdEntry {
	e := w.entry(fd)
	if !e.known {
		switch {
		case st.IsDir():
			e.base, e.inherit = dirRights, allRights
		case st.Mode&unix.S_IFMT == unix.S_IFCHR:
			e.base = fileRights &^ (rightFdSeek | rightFdTell)
		default:
			e.base = fileRights
		}
	}
	return e
}

func (w *instance) fstat(fd int32) (vfs.Stat, uint32) {
	if fd < 0 {
		return vfs.Stat{}, errnoBadf
	}
	st, err := w.p.Fstat(int(fd))
	return st, errnoOf(err)
}

// fd_filestat_get(fd, buf) errno
func (w *instance) fdFilestatGet(_ context.Context, mod api.Module, stack []uint64) {
	fd, buf := int32(stack[0]), uint32(stack[1])
	if e := w.check(fd, rightFdFilestatGet); e != 0 {
		stack[0] = uint64(e)
		return
	}
	st, e := w.fstat(fd)
	if e != 0 {
		stack[0] = uint64(e)
		return
	}
	stack[0] = uint64(writeFilestat(mod.Memory(), buf, &st))
}

// fd_filestat_set_size(fd, size) errno: ftruncate.
func (w *instance) fdFilestatSetSize(_ context.Context, _ api.Module, stack []uint64) {
	fd, size := int32(stack[0]), int64(stack[1])
	if e := w.check(fd, rightFdFilestatSetSize); e != 0 {
		stack[0] = uint64(e)
		return
	}
	stack[0] = uint64(errnoOf(w.p.Ftruncate(int(fd), size)))
}

// WASI fstflags.
const (
	fstAtim = 1 << iota
	fstAtimNow
	fstMtim
	fstMtimNow
)

// timespecs turns WASI's times and fstflags into utimensat's pair: a time
// not named is UTIME_OMIT; a time both set and "now" is EINVAL.
func timespecs(atim, mtim uint64, flags uint32) ([]unix.Timespec, uint32) {
	if flags&^(fstAtim|fstAtimNow|fstMtim|fstMtimNow) != 0 ||
		flags&(fstAtim|fstAtimNow) == fstAtim|fstAtimNow ||
		flags&(fstMtim|fstMtimNow) == fstMtim|fstMtimNow {
		return nil, errnoInval
	}
	one := func(t uint64, set, now bool) unix.Timespec {
		switch {
		case now:
			return unix.Timespec{Nsec: unix.UTIME_NOW}
		case set:
			return unix.NsecToTimespec(int64(t))
		}
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	return []unix.Timespec{
		one(atim, flags&fstAtim != 0, flags&fstAtimNow != 0),
		one(mtim, flags&fstMtim != 0, flags&fstMtimNow != 0),
	}, 0
}

// fd_filestat_set_times(fd, atim, mtim, fst_flags) errno: futimens.
func (w *instance) fdFilestatSetTimes(_ context.Context, _ api.Module, stack []uint64) {
	fd := int32(stack[0])
	if e := w.check(fd, rightFdFilestatSetTimes); e != 0 {
		stack[0] = uint64(e)
		return
	}
	ts, e := timespecs(stack[1], stack[2], uint32(stack[3]))
	if e != 0 {
		stack[0] = uint64(e)
		return
	}
	stack[0] = uint64(errnoOf(w.p.Futimens(int(fd), ts)))
}

// fd_prestat_get(fd, buf) errno: a preopen is a directory whose name has
// prestat's length; any other descriptor gives EBADF.
func (w *instance) fdPrestatGet(_ context.Context, mod api.Module, stack []uint64) {
	fd, buf := int32(stack[0]), uint32(stack[1])
	e := w.entry(fd)
	if !e.isPreopen {
		stack[0] = uint64(errnoBadf)
		return
	}
	mem := mod.Memory()
	b, ok := mem.Read(buf, 8)
	if !ok {
		stack[0] = uint64(errnoFault)
		return
	}
	clear(b)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(e.preopen)))
	stack[0] = 0
}

// fd_prestat_dir_name(fd, path, path_len) errno: a buffer shorter than
// the name gives ENAMETOOLONG.
func (w *instance) fdPrestatDirName(_ context.Context, mod api.Module, stack []uint64) {
	fd, buf, n := int32(stack[0]), uint32(stack[1]), uint32(stack[2])
	e := w.entry(fd)
	if !e.isPreopen {
		stack[0] = uint64(errnoBadf)
		return
	}
	if n < uint32(len(e.preopen)) {
		stack[0] = uint64(errnoNametoolong)
		return
	}
	if !mod.Memory().WriteString(buf, e.preopen) {
		stack[0] = uint64(errnoFault)
		return
	}
	stack[0] = 0
}

// fd_readdir(fd, buf, buf_len, cookie, bufused) errno: the directory is
// sought to cookie (a getdents d_off, 0 for the start) and listed into
// buf as WASI dirents (24 bytes and the name). The last entry may be cut
// off; bufused == buf_len tells the guest to ask again from the cookie of
// the last whole entry.
func (w *instance) fdReaddir(_ context.Context, mod api.Module, stack []uint64) {
	fd, buf, n, cookie, used := int32(stack[0]), uint32(stack[1]), uint32(stack[2]), int64(stack[3]), uint32(stack[4])
	if e := w.check(fd, rightFdReaddir); e != 0 {
		stack[0] = uint64(e)
		return
	}
	mem := mod.Memory()
	out, ok := mem.Read(buf, n)
	if !ok {
		stack[0] = uint64(errnoFault)
		return
	}
	if _, ok := mem.Read(used, 4); !ok {
		stack[0] = uint64(errnoFault)
		return
	}
	if _, err := w.p.Seek(int(fd), cookie, unix.SEEK_SET); err != nil {
		stack[0] = uint64(errnoOf(err))
		return
	}
	pos := 0
	var hdr [24]byte
fill:
	for pos < len(out) {
		ents, err := w.p.Getdents(int(fd))
		if err != nil {
			stack[0] = uint64(errnoOf(err))
			return
		}
		if len(ents) == 0 {
			break
		}
		for _, d := range ents {
			binary.LittleEndian.PutUint64(hdr[0:], uint64(d.Off))
			binary.LittleEndian.PutUint64(hdr[8:], d.Ino)
			binary.LittleEndian.PutUint32(hdr[16:], uint32(len(d.Name)))
			hdr[20], hdr[21], hdr[22], hdr[23] = direntType(d.Type), 0, 0, 0
			pos += copy(out[pos:], hdr[:])
			pos += copy(out[pos:], d.Name)
			if pos == len(out) {
				break fill
			}
		}
	}
	mem.WriteUint32Le(used, uint32(pos))
	stack[0] = 0
}

// fd_renumber(fd, to) errno: dup2 then close, as wasi-libc's dup2 needs.
// Both descriptors must be open (EBADF).
func (w *instance) fdRenumber(_ context.Context, _ api.Module, stack []uint64) {
	from, to := int32(stack[0]), int32(stack[1])
	if _, e := w.fstat(from); e != 0 {
		stack[0] = uint64(e)
		return
	}
	if _, e := w.fstat(to); e != 0 {
		stack[0] = uint64(e)
		return
	}
	if from == to {
		stack[0] = 0
		return
	}
	if _, err := w.p.Dup2(int(from), int(to)); err != nil {
		stack[0] = uint64(errnoOf(err))
		return
	}
	w.setEntry(int(to), w.entry(from))
	w.p.Close(int(from))
	w.clearEntry(int(from))
	stack[0] = 0
}

// fd_seek(fd, offset, whence, newoffset) errno: lseek. WASI's whence
// values are SET 0, CUR 1, END 2, as Linux's. It needs fd_seek, or
// fd_tell for a seek that only reads the position (0, CUR).
func (w *instance) fdSeek(_ context.Context, mod api.Module, stack []uint64) {
	fd, off, whence, result := int32(stack[0]), int64(stack[1]), uint32(stack[2]), uint32(stack[3])
	e := w.check(fd, rightFdSeek)
	if e == errnoNotcapable && off == 0 && whence == unix.SEEK_CUR {
		e = w.check(fd, rightFdTell)
	}
	if e != 0 {
		stack[0] = uint64(e)
		return
	}
	mem := mod.Memory()
	if _, ok := mem.Read(result, 8); !ok {
		stack[0] = uint64(errnoFault)
		return
	}
	if whence > 2 {
		stack[0] = uint64(errnoInval)
		return
	}
	pos, err := w.p.Seek(int(fd), off, int(whence))
	if err != nil {
		stack[0] = uint64(errnoOf(err))
		return
	}
	mem.WriteUint64Le(result, uint64(pos))
	stack[0] = 0
}

// fd_tell(fd, offset) errno: lseek(fd, 0, SEEK_CUR).
func (w *instance) fdTell(_ context.Context, mod api.Module, stack []uint64) {
	fd, result := int32(stack[0]), uint32(stack[1])
	if e := w.check(fd, rightFdTell); e != 0 {
		stack[0] = uint64(e)
		return
	}
	mem := mod.Memory()
	if _, ok := mem.Read(result, 8); !ok {
		stack[0] = uint64(errnoFault)
		return
	}
	pos, err := w.p.Seek(int(fd), 0, unix.SEEK_CUR)
	if err != nil {
		stack[0] = uint64(errnoOf(err))
		return
	}
	mem.WriteUint64Le(result, uint64(pos))
	stack[0] = 0
}
