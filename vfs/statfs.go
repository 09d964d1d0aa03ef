package vfs

// statfs(2) and fstatfs(2) (Linux fs/statfs.c).

import "golang.org/x/sys/unix"

// stValid is Linux's ST_VALID, which statfs sets in every f_flags; x/sys
// does not define it.
const stValid = 0x0020

// Statfs reports the file system that holds path (following symlinks),
// as statfs(2): the figures come from the file system's Statfser, and the
// VFS adds f_flags from the mount (ST_VALID, ST_RELATIME, which is how
// every iovfs mount keeps atime, and ST_RDONLY for a read-only mount),
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
