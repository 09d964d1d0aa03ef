package vfs

// fallocate(2) (Linux fs/open.c: vfs_fallocate).

import (
	"math"

	"golang.org/x/sys/unix"
)

// fallocModeMask is Linux's FALLOC_FL_MODE_MASK: the modes, of which a
// call names one (0 being FALLOC_FL_ALLOCATE_RANGE). 0x80 is
// FALLOC_FL_WRITE_ZEROES (Linux 6.17).
const fallocModeMask = unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_COLLAPSE_RANGE |
	unix.FALLOC_FL_ZERO_RANGE | unix.FALLOC_FL_INSERT_RANGE | unix.FALLOC_FL_UNSHARE_RANGE | 0x80

// Fallocate manipulates the space of fd's file from off for length
// bytes, as fallocate(2): mode 0 allocates it (growing the size),
// FALLOC_FL_KEEP_SIZE allocates without growing, FALLOC_FL_PUNCH_HOLE
// (which needs KEEP_SIZE) frees it, and the other FALLOC_FL_* modes are
// the driver's to support. The checks run in vfs_fallocate's order:
//
//   - EBADF for a descriptor that is not open;
//   - EINVAL if off < 0 or length <= 0;
//   - EOPNOTSUPP for an unknown flag, for two modes at once, for
//     PUNCH_HOLE without KEEP_SIZE, and for COLLAPSE_RANGE, INSERT_RANGE
//     or WRITE_ZEROES with KEEP_SIZE;
//   - EBADF if fd is not open for writing;
//   - ESPIPE for a FIFO, EISDIR for a directory (which cannot be open
//     for writing, so EBADF comes first), ENODEV for anything else that
//     is neither a regular file nor a block device;
//   - EFBIG if off+length overflows;
//   - EOPNOTSUPP if the handle is not a Fallocater; the driver answers
//     the rest (its own modes, its maximum file size, ENOSPC).
//
// Errors are bare syscall.Errno values.
func (p *Proc) Fallocate(fd int, mode uint32, off, length int64) error {
	f := p.fdget(fd)
	if f == nil {
		return errEBADF
	}
	if off < 0 || length <= 0 {
		return errEINVAL
	}
	if mode&^(fallocModeMask|unix.FALLOC_FL_KEEP_SIZE) != 0 {
		return errEOPNOTSUP
	}
	switch mode & fallocModeMask {
	case 0, unix.FALLOC_FL_UNSHARE_RANGE, unix.FALLOC_FL_ZERO_RANGE:
	case unix.FALLOC_FL_PUNCH_HOLE:
		if mode&unix.FALLOC_FL_KEEP_SIZE == 0 {
			return errEOPNOTSUP
		}
	case unix.FALLOC_FL_COLLAPSE_RANGE, unix.FALLOC_FL_INSERT_RANGE, 0x80:
		if mode&unix.FALLOC_FL_KEEP_SIZE != 0 {
			return errEOPNOTSUP
		}
	default:
		return errEOPNOTSUP
	}
	if f.mode&fmWrite == 0 {
		return errEBADF
	}
	st, err := f.stat()
	if err != nil {
		return err
	}
	perm := statPerm(f.node, &st)
	if mode&^unix.FALLOC_FL_KEEP_SIZE != 0 && perm&PermAppend != 0 {
		return errEPERM // only a plain allocation on an append-only file
	}
	if perm&PermImmutable != 0 {
		return errEPERM
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return errESPIPE
	case unix.S_IFDIR:
		return errEISDIR
	case unix.S_IFREG, unix.S_IFBLK:
	default:
		return unix.ENODEV
	}
	if off > math.MaxInt64-length {
		return unix.EFBIG
	}
	fa, ok := f.h.(Fallocater)
	if !ok {
		return errEOPNOTSUP
	}
	// file_modified: the set-ID bits and a capability xattr go, as for a
	// write.
	if st.IsRegular() {
		p.removePrivs(f)
	}
	return fa.Fallocate(mode, off, length, p.cred.Load().fsCred())
}
