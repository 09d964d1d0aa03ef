package vfs

// statfs(2) and fstatfs(2) (Linux fs/statfs.c).

import "golang.org/x/sys/unix"

// stValid is Linux's ST_VALID, which statfs sets in every f_flags; x/sys
// does not define it.
const stValid = 0x0020

// stNosymfollow is Linux's ST_NOSYMFOLLOW, also missing from x/sys.
const stNosymfollow = 0x2000

// Statfs reports the file system that holds path (following symlinks),
// as statfs(2): the figures come from the file system's Statfser, and the
// VFS adds f_flags from the mount (ST_VALID; ST_RDONLY, ST_NOSUID,
// ST_NODEV, ST_NOEXEC, ST_SYNCHRONOUS, ST_NOATIME, ST_NODIRATIME,
// ST_NOSYMFOLLOW from the mount(2) flags; ST_RELATIME unless MS_NOATIME or
// MS_STRICTATIME, and for mounts not made by Mount),
// f_frsize (f_bsize when the file system leaves it 0) and f_fsid (from
// the mount's device number when the file system leaves it 0). A file
// system without a Statfser gives ENOSYS, as Linux does for a super block
// without ->statfs. Errors are *fs.PathError values.
func (p *Proc) Statfs(path string) (unix.Statfs_t, error) {
	loc, err := p.walk(path, true)
	if err != nil {
		return unix.Statfs_t{}, pathErr("statfs", path, err)
	}
	st, err := statfsMount(loc.mnt)
	if err != nil {
		return st, pathErr("statfs", path, err)
	}
	return st, nil
}

// Fstatfs is Statfs for the file open as fd; an imported host file
// reports its host file system. Errors are bare syscall.Errno values.
func (p *Proc) Fstatfs(fd int) (unix.Statfs_t, error) {
	f := p.files.get(fd)
	if f == nil {
		return unix.Statfs_t{}, errEBADF
	}
	if f.mnt == nil {
		if h, ok := f.node.(*hostFile); ok && h.acquire() {
			defer h.mu.RUnlock()
			var st unix.Statfs_t
			err := unix.Fstatfs(h.fd, &st)
			return st, err
		}
		return unix.Statfs_t{}, unix.ENOSYS
	}
	return statfsMount(f.mnt)
}

// stFlagsSet marks mount.stFlags as set by mount(2).
const stFlagsSet = 1 << 63

// mountStFlags turns mount(2) flags into the f_flags statfs reports, as
// Linux's path_mount and flags_by_mnt/flags_by_sb: relatime unless
// MS_NOATIME or MS_STRICTATIME, and the flags that have an ST_ twin.
func mountStFlags(ms uintptr) uint64 {
	var f uint64 = stFlagsSet
	if ms&unix.MS_NOATIME == 0 {
		f |= unix.ST_RELATIME
	}
	for _, b := range [...]struct{ ms, st uint64 }{
		{unix.MS_NOSUID, unix.ST_NOSUID}, {unix.MS_NODEV, unix.ST_NODEV},
		{unix.MS_NOEXEC, unix.ST_NOEXEC}, {unix.MS_NOATIME, unix.ST_NOATIME},
		{unix.MS_NODIRATIME, unix.ST_NODIRATIME}, {unix.MS_SYNCHRONOUS, unix.ST_SYNCHRONOUS},
		{unix.MS_MANDLOCK, unix.ST_MANDLOCK},
		{unix.MS_NOSYMFOLLOW, stNosymfollow},
	} {
		if uint64(ms)&b.ms != 0 {
			f |= b.st
		}
	}
	if ms&unix.MS_STRICTATIME != 0 {
		f &^= unix.ST_RELATIME | unix.ST_NOATIME
	}
	return f
}

func statfsMount(m *mount) (unix.Statfs_t, error) {
	s, ok := m.fs.(Statfser)
	if !ok {
		return unix.Statfs_t{}, unix.ENOSYS
	}
	st, err := s.Statfs()
	if err != nil {
		return unix.Statfs_t{}, err
	}
	if st.Frsize == 0 {
		st.Frsize = st.Bsize
	}
	if st.Flags == 0 {
		st.Flags = stValid | unix.ST_RELATIME
		if f := m.stFlags.Load(); f&stFlagsSet != 0 {
			st.Flags = stValid | int64(f&^stFlagsSet)
		}
		if m.readonly {
			st.Flags |= unix.ST_RDONLY
		}
	}
	if st.Fsid == (unix.Fsid{}) {
		st.Fsid.Val[0] = int32(m.dev)
		st.Fsid.Val[1] = int32(m.dev >> 32)
	}
	return st, nil
}
