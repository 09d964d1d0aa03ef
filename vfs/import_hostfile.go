package vfs

// HostFile implements HostFiler: an imported file is an open file of the
// host kernel, so calls the VFS does not model (shutdown(2) of an
// imported socket, for WASI's sock_shutdown) can reach it.
func (h *hostFile) HostFile(fn func(fd int) error) error {
	if !h.acquire() {
		return errEBADF
	}
	defer h.mu.RUnlock()
	return fn(h.fd)
}
