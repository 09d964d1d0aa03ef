package hostfs

import "golang.org/x/sys/unix"

// HostFile implements vfs.HostFiler: fn runs with the handle's host
// descriptor, held open against Release for the call.
func (h *Handle) HostFile(fn func(fd int) error) error {
	if !h.acquire() {
		return unix.EBADF
	}
	defer h.mu.RUnlock()
	return fn(h.fd)
}
