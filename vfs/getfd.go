package vfs

// Getfd installs in p a new descriptor, the lowest free one, for the open
// file that fd refers to in src, as pidfd_getfd(2) does: both descriptors
// share the open file description (position, file-status flags, open-file
// locks). The new descriptor has FD_CLOEXEC set, as pidfd_getfd sets it.
// An fd that is not open in src gives EBADF. Process-associated (POSIX)
// locks taken through the new descriptor belong to p, which is what a
// FUSE server needs to give each lock owner its own process.
func (p *Proc) Getfd(src *Proc, fd int) (int, error) {
	f := src.files.get(fd)
	if f == nil || !f.tryRef() {
		return -1, errEBADF
	}
	nfd, err := p.files.installFlags(f, 0, true)
	if err != nil {
		f.release()
		return -1, err
	}
	return nfd, nil
}
