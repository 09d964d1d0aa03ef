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

func (p *Proc) statAt(op string, dirfd int, path string, flags int) (Stat, error) {
	loc, err := p.lookupAt(dirfd, path, flags, statAtFlags)
	if err != nil {
		return Stat{}, pathErr(op, path, err)
	}
	st, err := loc.node.Stat()
	if err != nil {
		return Stat{}, pathErr(op, path, err)
	}
	if st.Dev == 0 && loc.mnt != nil {
		st.Dev = loc.mnt.dev
	}
	return st, nil
}

// Statx returns the metadata of the file at path relative to dirfd as
// statx(2) does, with Fstatat's flags plus the AT_STATX_SYNC_TYPE ones
// (accepted; every iovfs file system is synchronous). mask is the
// STATX_* fields wanted: iovfs fills STATX_BASIC_STATS whatever it is,
// and says so in the result's Mask, as Linux may; STATX__RESERVED bits
// give EINVAL, as does AT_STATX_FORCE_SYNC with AT_STATX_DONT_SYNC.
func (p *Proc) Statx(dirfd int, path string, flags, mask int) (unix.Statx_t, error) {
	if mask&unix.STATX__RESERVED != 0 || flags&atStatxSyncType == atStatxSyncType {
		return unix.Statx_t{}, pathErr("statx", path, errEINVAL)
	}
	loc, err := p.lookupAt(dirfd, path, flags&^atStatxSyncType, statAtFlags)
	if err != nil {
		return unix.Statx_t{}, pathErr("statx", path, err)
	}
	st, err := loc.node.Stat()
	if err != nil {
		return unix.Statx_t{}, pathErr("statx", path, err)
	}
	if st.Dev == 0 && loc.mnt != nil {
		st.Dev = loc.mnt.dev
	}
	return statx(st), nil
}

// statx converts st to a Statx_t with the basic fields.
func statx(st Stat) unix.Statx_t {
	ts := func(t time.Time) unix.StatxTimestamp {
		return unix.StatxTimestamp{Sec: t.Unix(), Nsec: uint32(t.Nanosecond())}
	}
	return unix.Statx_t{
		Mask:       unix.STATX_BASIC_STATS,
		Blksize:    uint32(st.Blksize),
		Nlink:      uint32(st.Nlink),
		Uid:        st.Uid,
		Gid:        st.Gid,
		Mode:       uint16(st.Mode),
		Ino:        st.Ino,
		Size:       uint64(st.Size),
		Blocks:     uint64(st.Blocks),
		Atime:      ts(st.Atime),
		Ctime:      ts(st.Ctime),
		Mtime:      ts(st.Mtime),
		Rdev_major: unix.Major(st.Rdev),
		Rdev_minor: unix.Minor(st.Rdev),
		Dev_major:  unix.Major(st.Dev),
		Dev_minor:  unix.Minor(st.Dev),
	}
}
