package main

// The two sides a copy moves between: the host (system calls through
// x/sys/unix) and an iovfs namespace holding attached images. Paths on
// the namespace side are namespace paths already resolved inside their
// image (diskimage.Image.Path); below them a copy only ever goes down by
// names read from directories and never follows a symlink.

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

// side is one end of a copy. Errors are syscall.Errno values or wrap one.
type side interface {
	lstat(path string) (vfs.Stat, error)
	stat(path string) (vfs.Stat, error)
	// readDir lists a directory: the names, and for each its type as
	// the directory entry gives it (unix.DT_*, DT_UNKNOWN if unknown).
	readDir(path string) ([]string, []uint8, error)
	readlink(path string) (string, error)
	mkdir(path string, mode uint32) error
	symlink(target, path string) error
	link(old, new string) error
	mknod(path string, mode uint32, rdev uint64) error
	unlink(path string) error
	// open opens a file for reading; create opens one for writing,
	// creating it with mode if needed and truncating it.
	open(path string) (file, error)
	create(path string, mode uint32, excl bool) (file, error)
	lchown(path string, uid, gid int) error
	chmod(path string, mode uint32) error
	lutimes(path string, atime, mtime time.Time) error
	listxattr(path string) ([]string, error)
	getxattr(path, name string) ([]byte, error)
	setxattr(path, name string, v []byte) error
}

type file interface {
	fstat() (vfs.Stat, error)
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Truncate(size int64) error
	Close() error
}

// hostSide is the host.
type hostSide struct{}

func statOf(st *unix.Stat_t) vfs.Stat {
	return vfs.Stat{Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, Nlink: st.Nlink, Uid: st.Uid, Gid: st.Gid, Rdev: st.Rdev,
		Size: st.Size, Blksize: st.Blksize, Blocks: st.Blocks,
		Atime: time.Unix(st.Atim.Unix()), Mtime: time.Unix(st.Mtim.Unix()), Ctime: time.Unix(st.Ctim.Unix())}
}

func (hostSide) lstat(path string) (vfs.Stat, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return vfs.Stat{}, err
	}
	return statOf(&st), nil
}

func (hostSide) stat(path string) (vfs.Stat, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return vfs.Stat{}, err
	}
	return statOf(&st), nil
}

func (hostSide) readDir(path string) ([]string, []uint8, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, unwrapErrno(err)
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	names, types := make([]string, len(ents)), make([]uint8, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
		// The type getdents reports (os.ReadDir lstats where the file
		// system reports none); DT_UNKNOWN for the kinds the walk
		// lstats anyway.
		switch e.Type() {
		case 0:
			types[i] = unix.DT_REG
		case fs.ModeDir:
			types[i] = unix.DT_DIR
		case fs.ModeSymlink:
			types[i] = unix.DT_LNK
		}
	}
	return names, types, unwrapErrno(err)
}

func (hostSide) readlink(path string) (string, error) {
	s, err := os.Readlink(path)
	return s, unwrapErrno(err)
}
func (hostSide) mkdir(path string, mode uint32) error   { return unix.Mkdir(path, mode) }
func (hostSide) symlink(target, path string) error      { return unix.Symlink(target, path) }
func (hostSide) link(old, new string) error             { return unix.Link(old, new) }
func (hostSide) unlink(path string) error               { return unix.Unlink(path) }
func (hostSide) lchown(path string, uid, gid int) error { return unix.Lchown(path, uid, gid) }
func (hostSide) chmod(path string, mode uint32) error   { return unix.Chmod(path, mode) }
func (hostSide) mknod(path string, mode uint32, rdev uint64) error {
	return unix.Mknod(path, mode, int(rdev))
}
func (hostSide) lutimes(path string, atime, mtime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	return unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW)
}
func (hostSide) listxattr(path string) ([]string, error) {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(path, buf)
	if err != nil {
		return nil, err
	}
	return splitNul(buf[:n]), nil
}
func (hostSide) getxattr(path, name string) ([]byte, error) {
	buf := make([]byte, 64<<10)
	n, err := unix.Lgetxattr(path, name, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
func (hostSide) setxattr(path, name string, v []byte) error {
	return unix.Lsetxattr(path, name, v, 0)
}

func (hostSide) open(path string) (file, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return hostFile(fd), nil
}

func (hostSide) create(path string, mode uint32, excl bool) (file, error) {
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC | unix.O_CLOEXEC
	if excl {
		flags |= unix.O_EXCL
	}
	fd, err := unix.Open(path, flags, mode)
	if err != nil {
		return nil, err
	}
	return hostFile(fd), nil
}

type hostFile int

func (f hostFile) fstat() (vfs.Stat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f), &st); err != nil {
		return vfs.Stat{}, err
	}
	return statOf(&st), nil
}
func (f hostFile) ReadAt(p []byte, off int64) (int, error)  { return unix.Pread(int(f), p, off) }
func (f hostFile) WriteAt(p []byte, off int64) (int, error) { return unix.Pwrite(int(f), p, off) }
func (f hostFile) Truncate(size int64) error                { return unix.Ftruncate(int(f), size) }
func (f hostFile) Close() error                             { return unix.Close(int(f)) }

func splitNul(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			if i > start {
				out = append(out, string(b[start:i]))
			}
			start = i + 1
		}
	}
	return out
}

func unwrapErrno(err error) error {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return err
}

// nsSide is an iovfs namespace.
type nsSide struct{ p *vfs.Proc }

func (s nsSide) lstat(path string) (vfs.Stat, error) {
	st, err := s.p.Lstat(path)
	return st, unwrapErrno(err)
}
func (s nsSide) stat(path string) (vfs.Stat, error) {
	st, err := s.p.Stat(path)
	return st, unwrapErrno(err)
}
func (s nsSide) readDir(path string) ([]string, []uint8, error) {
	ents, err := listDir(s.p, path)
	if err != nil {
		return nil, nil, unwrapErrno(err)
	}
	names := make([]string, len(ents))
	types := make([]uint8, len(ents))
	for i, e := range ents {
		names[i], types[i] = e.Name, e.Type
	}
	return names, types, nil
}
func (s nsSide) readlink(path string) (string, error) {
	t, err := s.p.Readlink(path)
	return t, unwrapErrno(err)
}
func (s nsSide) mkdir(path string, mode uint32) error { return unwrapErrno(s.p.Mkdir(path, mode)) }
func (s nsSide) symlink(target, path string) error    { return unwrapErrno(s.p.Symlink(target, path)) }
func (s nsSide) link(old, new string) error           { return unwrapErrno(s.p.Link(old, new)) }
func (s nsSide) unlink(path string) error             { return unwrapErrno(s.p.Unlink(path)) }
func (s nsSide) lchown(path string, uid, gid int) error {
	return unwrapErrno(s.p.Lchown(path, uint32(uid), uint32(gid)))
}
func (s nsSide) chmod(path string, mode uint32) error { return unwrapErrno(s.p.Chmod(path, mode)) }
func (s nsSide) mknod(path string, mode uint32, rdev uint64) error {
	return unwrapErrno(s.p.Mknod(path, mode, rdev))
}
func (s nsSide) lutimes(path string, atime, mtime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	return unwrapErrno(s.p.Utimensat(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW))
}
func (s nsSide) listxattr(path string) ([]string, error) {
	n, err := s.p.Llistxattr(path)
	return n, unwrapErrno(err)
}
func (s nsSide) getxattr(path, name string) ([]byte, error) {
	v, err := s.p.Lgetxattr(path, name)
	return v, unwrapErrno(err)
}
func (s nsSide) setxattr(path, name string, v []byte) error {
	return unwrapErrno(s.p.Lsetxattr(path, name, v, 0))
}
func (s nsSide) open(path string) (file, error) {
	fd, err := s.p.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, unwrapErrno(err)
	}
	return nsFile{s.p, fd}, nil
}
func (s nsSide) create(path string, mode uint32, excl bool) (file, error) {
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC
	if excl {
		flags |= unix.O_EXCL
	}
	fd, err := s.p.Open(path, flags, mode)
	if err != nil {
		return nil, unwrapErrno(err)
	}
	return nsFile{s.p, fd}, nil
}

type nsFile struct {
	p  *vfs.Proc
	fd int
}

func (f nsFile) fstat() (vfs.Stat, error)                 { return f.p.Fstat(f.fd) }
func (f nsFile) ReadAt(b []byte, off int64) (int, error)  { return f.p.Pread(f.fd, b, off) }
func (f nsFile) WriteAt(b []byte, off int64) (int, error) { return f.p.Pwrite(f.fd, b, off) }
func (f nsFile) Truncate(size int64) error                { return f.p.Ftruncate(f.fd, size) }
func (f nsFile) Close() error                             { return f.p.Close(f.fd) }
