package vfs

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Statx returns the metadata of the file at path relative to dirfd as
// statx(2) does, with Fstatat's flags plus the AT_STATX_SYNC_TYPE ones
// (accepted; every iovfs file system is synchronous). STATX__RESERVED
// bits in mask give EINVAL, as does AT_STATX_FORCE_SYNC with
// AT_STATX_DONT_SYNC. The result's Mask says which fields are filled,
// by Linux 6.18's rules for tmpfs, which every iovfs file system follows:
//
//   - STATX_BASIC_STATS, except that STATX_MTIME and STATX_CTIME (and
//     their values) come only when mask asks for one of them (Linux's
//     multigrain timestamps, fill_mg_cmtime);
//   - STATX_BTIME when mask asks for it and the file system records a
//     creation time (Stat.Btime; tmpfs does);
//   - STATX_MNT_ID always, or STATX_MNT_ID_UNIQUE instead when mask asks
//     for it. iovfs numbers mounts from 1 in the order they are made,
//     process-wide and never reused; the unique ID is that number plus
//     1<<31, where Linux's unique IDs start. Neither is a host mount ID.
//
// Attributes_mask is STATX_ATTR_AUTOMOUNT|MOUNT_ROOT|DAX, the ones the VFS
// reports for every file, and those the file system reports (Stat's
// AttributesMask: tmpfs's immutable, append and nodump); Attributes has
// STATX_ATTR_MOUNT_ROOT for the root of a mount and the file system's
// (Stat.Attributes, from the inode flags). STATX_DIOALIGN and the rest
// stay unset: no iovfs file system reports them (Linux's tmpfs does not
// either).
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
	x := statx(st, mask)
	if loc.mnt != nil {
		x.Mnt_id = loc.mnt.id
		if mask&unix.STATX_MNT_ID_UNIQUE != 0 {
			x.Mask |= unix.STATX_MNT_ID_UNIQUE
			x.Mnt_id += 1 << 31
		} else {
			x.Mask |= unix.STATX_MNT_ID
		}
		if loc.node == loc.mnt.root {
			x.Attributes |= unix.STATX_ATTR_MOUNT_ROOT
		}
	}
	return x, nil
}

// mountIDs numbers mounts, process-wide, for stx_mnt_id.
var mountIDs atomic.Uint64

// statxAttrsVFS are the attributes Linux's VFS puts in every statx's
// Attributes_mask (vfs_getattr_nosec, vfs_statx).
const statxAttrsVFS = unix.STATX_ATTR_AUTOMOUNT | unix.STATX_ATTR_MOUNT_ROOT | unix.STATX_ATTR_DAX

// statx converts st to a Statx_t for the request mask.
func statx(st Stat, mask int) unix.Statx_t {
	ts := func(t time.Time) unix.StatxTimestamp {
		return unix.StatxTimestamp{Sec: t.Unix(), Nsec: uint32(t.Nanosecond())}
	}
	x := unix.Statx_t{
		Mask:            unix.STATX_BASIC_STATS &^ (unix.STATX_MTIME | unix.STATX_CTIME),
		Attributes:      uint64(st.Attributes),
		Attributes_mask: statxAttrsVFS | uint64(st.AttributesMask),
		Blksize:         uint32(st.Blksize),
		Nlink:           uint32(st.Nlink),
		Uid:             st.Uid,
		Gid:             st.Gid,
		Mode:            uint16(st.Mode),
		Ino:             st.Ino,
		Size:            uint64(st.Size),
		Blocks:          uint64(st.Blocks),
		Atime:           ts(st.Atime),
		Rdev_major:      unix.Major(st.Rdev),
		Rdev_minor:      unix.Minor(st.Rdev),
		Dev_major:       unix.Major(st.Dev),
		Dev_minor:       unix.Minor(st.Dev),
	}
	if mask&(unix.STATX_MTIME|unix.STATX_CTIME) != 0 {
		x.Mask |= unix.STATX_MTIME | unix.STATX_CTIME
		x.Mtime, x.Ctime = ts(st.Mtime), ts(st.Ctime)
	}
	if mask&unix.STATX_BTIME != 0 && !st.Btime.IsZero() {
		x.Mask |= unix.STATX_BTIME
		x.Btime = ts(st.Btime)
	}
	return x
}
