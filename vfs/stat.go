package vfs

import (
	"time"

	"golang.org/x/sys/unix"
)

// Stat is the metadata of a file, with the fields and meanings of Linux's
// struct stat. Mode holds the file type bits (unix.S_IFREG, S_IFDIR,
// S_IFCHR, S_IFBLK, S_IFLNK...) and the permission bits.
type Stat struct {
	Dev     uint64 // device of the file system that holds the file
	Ino     uint64
	Mode    uint32
	Nlink   uint64
	Uid     uint32
	Gid     uint32
	Rdev    uint64 // device number, for device files
	Size    int64
	Blksize int64
	Blocks  int64 // 512-byte units allocated
	Atime   time.Time
	Mtime   time.Time
	Ctime   time.Time
	// Btime is the creation time (statx's stx_btime), the zero Time when
	// the file system does not record one.
	Btime time.Time
	// Attributes are the file's statx attributes its file system reports
	// (unix.STATX_ATTR_IMMUTABLE, APPEND, NODUMP...: stx_attributes),
	// and AttributesMask those it can report (stx_attributes_mask).
	Attributes, AttributesMask uint32
}

// IsDir reports whether the stat describes a directory.
func (s *Stat) IsDir() bool { return s.Mode&unix.S_IFMT == unix.S_IFDIR }

// IsRegular reports whether the stat describes a regular file.
func (s *Stat) IsRegular() bool { return s.Mode&unix.S_IFMT == unix.S_IFREG }

// Mkdev returns the device number of major and minor, as Linux's makedev.
func Mkdev(major, minor uint32) uint64 { return unix.Mkdev(major, minor) }

// Fstat returns the metadata of the file open as fd.
func (p *Proc) Fstat(fd int) (Stat, error) {
	f := p.files.get(fd)
	if f == nil {
		return Stat{}, errEBADF
	}
	return f.stat()
}

// Stat returns the metadata of the file at path, following symlinks, as
// stat(2) does.
func (p *Proc) Stat(path string) (Stat, error) {
	return p.statAt("stat", unix.AT_FDCWD, path, 0)
}

// Lstat is Stat without following a final symlink, as lstat(2) does.
func (p *Proc) Lstat(path string) (Stat, error) {
	return p.statAt("lstat", unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW)
}

// Fstatat returns the metadata of the file at path relative to the
// directory open as dirfd (or the current directory for AT_FDCWD), as
// fstatat(2) does. flags may hold AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH (an
// empty path names dirfd itself, of any type) and AT_NO_AUTOMOUNT; others
// give EINVAL.
func (p *Proc) Fstatat(dirfd int, path string, flags int) (Stat, error) {
	return p.statAt("fstatat", dirfd, path, flags)
}

// atStatxSyncType is AT_STATX_SYNC_TYPE (AT_STATX_FORCE_SYNC|AT_STATX_DONT_SYNC).
const atStatxSyncType = unix.AT_STATX_FORCE_SYNC | unix.AT_STATX_DONT_SYNC

const statAtFlags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_EMPTY_PATH | unix.AT_NO_AUTOMOUNT

// statAt's Stat is the named result, assigned once: a copy of the
// driver's answer to a local and then to the result cost store-forwarding
// stalls (16-byte loads of fields just stored in 8).
func (p *Proc) statAt(op string, dirfd int, path string, flags int) (st Stat, err error) {
	loc, err := p.lookupAt(dirfd, path, flags, statAtFlags)
	if err != nil {
		return Stat{}, pathErr(op, path, err)
	}
	if st, err = loc.node.Stat(); err != nil {
		return Stat{}, pathErr(op, path, err)
	}
	if st.Dev == 0 && loc.mnt != nil {
		st.Dev = loc.mnt.dev
	}
	return st, nil
}
