package hostfs

// Open regular files: every read and write is one host call on the
// handle's own descriptor, with the caller's buffers (pread, preadv,
// pwrite, pwritev), so counts, short transfers and errnos are the host's.
//
// Invariant: the descriptor stays open while a call that uses it is in
// flight. mu is held for reading by every such call and for writing by
// Release, which closes it; a call after Release gives EBADF.

import (
	"sync"

	"github.com/iovfs/iovfs/internal/hostio"
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// openFlags are the open(2) flags passed on to the host; O_APPEND is not
// among them, because the VFS sends appends to Append, which uses
// RWF_APPEND, and other writes must land at their offset.
const openFlags = unix.O_ACCMODE | unix.O_SYNC | unix.O_DSYNC | unix.O_DIRECT | unix.O_NOATIME

// Open opens the host file again with the access mode and the status
// flags of flags. O_TRUNC is the VFS's (Setattr after Open).
func (f *File) Open(flags int, _ vfs.Cred) (vfs.Handle, error) {
	if f.fs.opts.ReadOnly {
		flags &^= unix.O_ACCMODE // the VFS refused write modes already
	}
	fd, err := (*inode)(f).reopen(flags & openFlags)
	if err != nil {
		return nil, err
	}
	return &Handle{fd: fd}, nil
}

// Handle is an open host file.
type Handle struct {
	fd int

	// mu is read-held by calls that use fd and write-held by Release.
	mu     sync.RWMutex
	closed bool
}

// acquire read-locks the descriptor; it fails after Release.
func (h *Handle) acquire() bool {
	h.mu.RLock()
	if h.closed {
		h.mu.RUnlock()
		return false
	}
	return true
}

// Read is one pread.
func (h *Handle) Read(p []byte, off int64) (int, error) {
	if !h.acquire() {
		return 0, unix.EBADF
	}
	n, err := unix.Pread(h.fd, p, off)
	h.mu.RUnlock()
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ReadIter is one preadv over dst's buffers.
func (h *Handle) ReadIter(dst iov.Iter, off int64) (int, error) {
	if !h.acquire() {
		return 0, unix.EBADF
	}
	n, err := hostio.Preadv(h.fd, dst, off, 0)
	h.mu.RUnlock()
	return n, err
}

// ReadIterFlags is one preadv2 with the caller's RWF_* flags, which the
// host applies (RWF_NOWAIT, RWF_HIPRI...), errnos included.
func (h *Handle) ReadIterFlags(dst iov.Iter, off int64, flags int) (int, error) {
	if !h.acquire() {
		return 0, unix.EBADF
	}
	n, err := hostio.Preadv(h.fd, dst, off, flags)
	h.mu.RUnlock()
	return n, err
}

// NoWait lets preadv2 and pwritev2 take RWF_NOWAIT, which the host then
// honours or refuses (EOPNOTSUPP, EAGAIN).
func (h *Handle) NoWait() {}

// Write is one pwrite.
func (h *Handle) Write(p []byte, off int64) (int, error) {
	if !h.acquire() {
		return 0, unix.EBADF
	}
	n, err := unix.Pwrite(h.fd, p, off)
	h.mu.RUnlock()
	if err != nil {
		return 0, err
	}
	return n, nil
}

// WriteIter is one pwritev from src's buffers.
func (h *Handle) WriteIter(src iov.Iter, off int64) (int, error) {
	if !h.acquire() {
		return 0, unix.EBADF
	}
	n, err := hostio.Pwritev(h.fd, src, off, 0)
	h.mu.RUnlock()
	return n, err
}

// WriteIterFlags is one pwritev2 with the caller's RWF_* flags
// (RWF_DSYNC, RWF_SYNC, RWF_NOWAIT...), which the host applies.
func (h *Handle) WriteIterFlags(src iov.Iter, off int64, flags int) (int, error) {
	if !h.acquire() {
		return 0, unix.EBADF
	}
	n, err := hostio.Pwritev(h.fd, src, off, flags)
	h.mu.RUnlock()
	return n, err
}

// Append is one pwritev2 with RWF_APPEND: the host appends atomically
// with respect to its own writers. The offset reported is the size after
// the write less the count, which a concurrent host writer can make stale.
func (h *Handle) Append(src iov.Iter) (int64, int, error) {
	if !h.acquire() {
		return 0, 0, unix.EBADF
	}
	defer h.mu.RUnlock()
	n, err := hostio.Pwritev(h.fd, src, 0, unix.RWF_APPEND)
	if err != nil {
		return 0, 0, err
	}
	var st unix.Stat_t
	if unix.Fstat(h.fd, &st) != nil {
		return 0, n, nil
	}
	return st.Size - int64(n), n, nil
}

// Llseek is generic_file_llseek for SEEK_SET, SEEK_CUR and SEEK_END (the
// host's size now); SEEK_DATA and SEEK_HOLE ask the host, on this
// handle's own descriptor, from off.
func (h *Handle) Llseek(pos, off int64, whence int) (int64, error) {
	if !h.acquire() {
		return 0, unix.EBADF
	}
	defer h.mu.RUnlock()
	switch whence {
	case unix.SEEK_SET:
		pos = off
	case unix.SEEK_CUR:
		pos += off
	case unix.SEEK_END:
		var st unix.Stat_t
		if err := unix.Fstat(h.fd, &st); err != nil {
			return 0, err
		}
		pos = st.Size + off
	case unix.SEEK_DATA, unix.SEEK_HOLE:
		return unix.Seek(h.fd, off, whence)
	default:
		return 0, unix.EINVAL
	}
	if pos < 0 {
		return 0, unix.EINVAL
	}
	return pos, nil
}

// Sync is fsync.
func (h *Handle) Sync() error {
	if !h.acquire() {
		return unix.EBADF
	}
	defer h.mu.RUnlock()
	return unix.Fsync(h.fd)
}

// Datasync is fdatasync.
func (h *Handle) Datasync() error {
	if !h.acquire() {
		return unix.EBADF
	}
	defer h.mu.RUnlock()
	return unix.Fdatasync(h.fd)
}

// Fallocate is the host's fallocate, modes and errnos included.
func (h *Handle) Fallocate(mode uint32, off, length int64, _ vfs.Cred) error {
	if !h.acquire() {
		return unix.EBADF
	}
	defer h.mu.RUnlock()
	return unix.Fallocate(h.fd, mode, off, length)
}

// setflFlags are the file-status flags the host descriptor carries;
// O_APPEND stays with the VFS (see openFlags).
const setflFlags = unix.O_DIRECT | unix.O_NOATIME | unix.O_NONBLOCK

// SetFlags gives the host descriptor the new file-status flags, so the
// host decides them: EINVAL for O_DIRECT where the host file system cannot,
// EPERM for O_NOATIME on another user's file.
func (h *Handle) SetFlags(flags int) error {
	if !h.acquire() {
		return unix.EBADF
	}
	defer h.mu.RUnlock()
	cur, err := unix.FcntlInt(uintptr(h.fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if cur&setflFlags == flags&setflFlags {
		return nil
	}
	_, err = unix.FcntlInt(uintptr(h.fd), unix.F_SETFL, cur&^setflFlags|flags&setflFlags)
	return err
}

// HostFD returns the host descriptor, for callers that map the file (a
// loop device's direct access) or splice from it. It stays valid until
// Release.
func (h *Handle) HostFD() int { return h.fd }

// Release closes the host descriptor once no call is using it.
func (h *Handle) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	return unix.Close(h.fd)
}
