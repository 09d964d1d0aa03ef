package vfs

// HostFile calls fn with the host kernel's descriptor of the file open as
// fd, when its handle is a host file (HostFiler), and returns what fn
// returns. It returns EBADF if fd is not open or is an O_PATH descriptor,
// and EOPNOTSUPP, without calling fn, when the file is not a host file.
// The host descriptor must not outlive the call (see HostFiler).
func (p *Proc) HostFile(fd int, fn func(hostfd int) error) error {
	f := p.files.get(fd)
	if f == nil || f.mode&(fmRead|fmWrite) == 0 {
		return errEBADF
	}
	hf, ok := f.h.(HostFiler)
	if !ok {
		return errEOPNOTSUPP
	}
	return hf.HostFile(fn)
}
