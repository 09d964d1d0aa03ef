package vfs

// Dup returns a new descriptor, the lowest free one, for the open file of
// fd, as dup(2) does. Both share the file position and flags.
func (p *Proc) Dup(fd int) (int, error) {
	f := p.files.get(fd)
	if f == nil || !f.tryRef() {
		return -1, errEBADF
	}
	nfd, err := p.files.install(f, 0)
	if err != nil {
		f.release()
		return -1, err
	}
	return nfd, nil
}

// Dup2 makes newfd refer to the open file of oldfd, closing what newfd
// referred to, as dup2(2) does. If oldfd is valid and equals newfd, it
// does nothing and returns newfd.
func (p *Proc) Dup2(oldfd, newfd int) (int, error) {
	f := p.files.get(oldfd)
	if f == nil {
		return -1, errEBADF
	}
	if oldfd == newfd {
		return newfd, nil
	}
	if !f.tryRef() {
		return -1, errEBADF
	}
	old, err := p.files.replace(newfd, f)
	if err != nil {
		f.release()
		return -1, err
	}
	if old != nil {
		p.closeFile(old) // dup2 ignores errors from the implicit close
	}
	return newfd, nil
}
