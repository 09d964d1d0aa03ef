package vfs

// Host files in the descriptor table. An imported file is a duplicate of a
// host descriptor; every read, write and lseek on it is one host system
// call through golang.org/x/sys/unix, so its semantics are the host
// kernel's own, errno for errno.
//
// The file position is the host's: the handle is Positionless, so read,
// readv, write, writev and lseek reach it with off = -1 and it calls the
// host's read, readv, write, writev and lseek, which use and move the
// offset of the open file description that the host descriptors share,
// as on a dup(2). pread, preadv, pwrite and pwritev pass their offset to
// the host's and leave the offset alone.
//
// Invariant: the host descriptor stays open while a call that uses it is
// in flight. mu is held for reading by every such call and for writing by
// Release, which closes it; a call after Release gives EBADF.

import (
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/iovfs/iovfs/internal/hostio"
	"github.com/iovfs/iovfs/iov"
	"golang.org/x/sys/unix"
)

// ImportFile puts a duplicate of the host file f into the descriptor table
// and returns its descriptor. The caller keeps f and may close it; the
// duplicate shares f's open file description (flags and host offset), as
// dup(2) gives, and is closed when its last iovfs descriptor is closed.
//
// The access mode and O_APPEND come from fcntl(F_GETFL); Fstat comes from
// the host's fstat, with the size of a host block device filled in from
// BLKGETSIZE64. Pipes and sockets are streams: pread on them gives ESPIPE,
// and read and write use the host's read and write.
func (p *Proc) ImportFile(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	var nfd, flags int
	var ctlErr error
	if err := rc.Control(func(fd uintptr) {
		nfd, ctlErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		if ctlErr == nil {
			flags, ctlErr = unix.FcntlInt(fd, unix.F_GETFL, 0)
		}
	}); err != nil {
		return -1, err
	}
	if ctlErr != nil {
		return -1, ctlErr
	}
	if flags&unix.O_PATH != 0 {
		unix.Close(nfd)
		return -1, errEBADF
	}
	var st unix.Stat_t
	if err := unix.Fstat(nfd, &st); err != nil {
		unix.Close(nfd)
		return -1, err
	}
	h := &hostFile{f: os.NewFile(uintptr(nfd), f.Name()), fd: nfd}
	var handle Handle = h
	if t := st.Mode & unix.S_IFMT; t == unix.S_IFIFO || t == unix.S_IFSOCK {
		handle = &hostStream{h}
	}
	file := newFile(h, handle, flags&^unix.O_CLOEXEC)
	fd, err := p.files.install(file, 0)
	if err != nil {
		file.release()
		return -1, err
	}
	return fd, nil
}

// hostFile is both the node and the handle of an imported host file.
type hostFile struct {
	f  *os.File // owns fd
	fd int

	// mu is read-held by calls that use fd and write-held by Release.
	mu     sync.RWMutex
	closed bool
}

// acquire read-locks the descriptor; it fails with EBADF after Release.
func (h *hostFile) acquire() bool {
	h.mu.RLock()
	if h.closed {
		h.mu.RUnlock()
		return false
	}
	return true
}

func (h *hostFile) Stat() (Stat, error) {
	if !h.acquire() {
		return Stat{}, errEBADF
	}
	defer h.mu.RUnlock()
	var st unix.Stat_t
	if err := unix.Fstat(h.fd, &st); err != nil {
		return Stat{}, err
	}
	s := Stat{
		Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, Nlink: uint64(st.Nlink),
		Uid: st.Uid, Gid: st.Gid, Rdev: st.Rdev, Size: st.Size,
		Blksize: int64(st.Blksize), Blocks: st.Blocks,
		Atime: time.Unix(st.Atim.Unix()), Mtime: time.Unix(st.Mtim.Unix()), Ctime: time.Unix(st.Ctim.Unix()),
	}
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		// Linux reports st_size 0 for a block device node; iovfs reports
		// the device size for its own block devices, and does the same
		// here so a loop device over an imported disk sees its size.
		var size uint64
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(h.fd), unix.BLKGETSIZE64, uintptr(unsafe.Pointer(&size))); e == 0 {
			s.Size = int64(size)
		}
	}
	return s, nil
}

// Positionless: the position is the host's (see the top of the file).
func (*hostFile) Positionless() {}

func (h *hostFile) Read(p []byte, off int64) (n int, err error) {
	if !h.acquire() {
		return 0, errEBADF
	}
	if off == noOffset {
		n, err = unix.Read(h.fd, p)
	} else {
		n, err = unix.Pread(h.fd, p, off)
	}
	h.mu.RUnlock()
	return hostCount(n, err)
}

func (h *hostFile) Write(p []byte, off int64) (n int, err error) {
	if !h.acquire() {
		return 0, errEBADF
	}
	if off == noOffset {
		n, err = unix.Write(h.fd, p)
	} else {
		n, err = unix.Pwrite(h.fd, p, off)
	}
	h.mu.RUnlock()
	return hostCount(n, err)
}

func (h *hostFile) ReadIter(dst iov.Iter, off int64) (n int, err error) {
	if !h.acquire() {
		return 0, errEBADF
	}
	if off == noOffset {
		n, err = hostio.Readv(h.fd, dst)
	} else {
		n, err = hostio.Preadv(h.fd, dst, off, 0)
	}
	h.mu.RUnlock()
	return n, err
}

func (h *hostFile) WriteIter(src iov.Iter, off int64) (n int, err error) {
	if !h.acquire() {
		return 0, errEBADF
	}
	if off == noOffset {
		n, err = hostio.Writev(h.fd, src)
	} else {
		n, err = hostio.Pwritev(h.fd, src, off, 0)
	}
	h.mu.RUnlock()
	return n, err
}

// Append writes src through the host, which appends because the host
// descriptor has O_APPEND (Linux pwrite on an O_APPEND file ignores the
// offset). The offset reported is the size after the write less the count,
// which another writer of the host file may make stale.
func (h *hostFile) Append(src iov.Iter) (int64, int, error) {
	if !h.acquire() {
		return 0, 0, errEBADF
	}
	defer h.mu.RUnlock()
	n, err := hostio.Pwritev(h.fd, src, 0, 0)
	if n <= 0 {
		return 0, 0, err
	}
	var st unix.Stat_t
	if unix.Fstat(h.fd, &st) != nil {
		return 0, n, nil
	}
	return st.Size - int64(n), n, nil
}

// Llseek is the host's lseek on the shared offset; pos, the VFS's copy,
// is unused. The host block device's SEEK_END is its size, as Stat's.
func (h *hostFile) Llseek(_, off int64, whence int) (int64, error) {
	if !h.acquire() {
		return 0, errEBADF
	}
	defer h.mu.RUnlock()
	return unix.Seek(h.fd, off, whence)
}

// SetFlags implements FlagSetter: fcntl(F_SETFL) on the host descriptor,
// whose open file description the import shares, so O_APPEND and
// O_NONBLOCK act on the host's own reads and writes (and on the host
// descriptors that share it, as after dup(2)). O_ASYNC is not passed on:
// iovfs has no signals to deliver.
func (h *hostFile) SetFlags(flags int) error {
	if !h.acquire() {
		return errEBADF
	}
	defer h.mu.RUnlock()
	_, err := unix.FcntlInt(uintptr(h.fd), unix.F_SETFL, flags&^unix.O_ASYNC)
	return err
}

func (h *hostFile) Sync() error {
	if !h.acquire() {
		return errEBADF
	}
	defer h.mu.RUnlock()
	return unix.Fsync(h.fd)
}

// Datasync implements DataSyncer: fdatasync on the host.
func (h *hostFile) Datasync() error {
	if !h.acquire() {
		return errEBADF
	}
	defer h.mu.RUnlock()
	return unix.Fdatasync(h.fd)
}

// Setattr changes the host file: ftruncate, fchmod, fchown, futimens.
func (h *hostFile) Setattr(a SetAttr, _ Cred) error {
	if !h.acquire() {
		return errEBADF
	}
	defer h.mu.RUnlock()
	if a.Valid&SetSize != 0 {
		if err := unix.Ftruncate(h.fd, a.Size); err != nil {
			return err
		}
	}
	if a.Valid&SetMode != 0 {
		if err := unix.Fchmod(h.fd, a.Mode&0o7777); err != nil {
			return err
		}
	}
	if a.Valid&(SetUid|SetGid) != 0 {
		uid, gid := -1, -1
		if a.Valid&SetUid != 0 {
			uid = int(a.Uid)
		}
		if a.Valid&SetGid != 0 {
			gid = int(a.Gid)
		}
		if err := unix.Fchown(h.fd, uid, gid); err != nil {
			return err
		}
	}
	if a.Valid&(SetAtime|SetMtime) != 0 {
		ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if a.Valid&SetAtime != 0 {
			ts[0] = unix.NsecToTimespec(a.Atime.UnixNano())
		}
		if a.Valid&SetMtime != 0 {
			ts[1] = unix.NsecToTimespec(a.Mtime.UnixNano())
		}
		if err := unix.UtimesNanoAt(h.fd, "", ts[:], unix.AT_EMPTY_PATH); err != nil {
			return err
		}
	}
	return nil
}

// Release closes the host descriptor once no call is using it.
func (h *hostFile) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	return h.f.Close()
}

// hostStream is an imported pipe or socket: it has no offsets, so it reads
// and writes with the host's read and write.
type hostStream struct{ *hostFile }

func (hostStream) Stream() {}

func (h hostStream) Read(p []byte, _ int64) (int, error) {
	if !h.acquire() {
		return 0, errEBADF
	}
	n, err := unix.Read(h.fd, p)
	h.mu.RUnlock()
	return hostCount(n, err)
}

func (h hostStream) Write(p []byte, _ int64) (int, error) {
	if !h.acquire() {
		return 0, errEBADF
	}
	n, err := unix.Write(h.fd, p)
	h.mu.RUnlock()
	return hostCount(n, err)
}

func (h hostStream) ReadIter(dst iov.Iter, _ int64) (int, error) {
	if !h.acquire() {
		return 0, errEBADF
	}
	n, err := hostio.Readv(h.fd, dst)
	h.mu.RUnlock()
	return n, err
}

func (h hostStream) WriteIter(src iov.Iter, _ int64) (int, error) {
	if !h.acquire() {
		return 0, errEBADF
	}
	n, err := hostio.Writev(h.fd, src)
	h.mu.RUnlock()
	return n, err
}

func hostCount(n int, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return n, nil
}
