package fuse

// FUSE passthrough for host files: a regular file whose iovfs handle is
// an open host file (vfs.HostFiler, hostfs) is opened with
// FOPEN_PASSTHROUGH and a backing file registered from that descriptor,
// so the kernel reads and writes the host file itself and no READ or
// WRITE reaches the server. This is what go-fuse's loopback does; iovfs
// still serves the OPEN, so its permission checks, as the caller, decide
// whether the file opens at all. The kernel opens its own file on the
// backing file's path with the FUSE file's flags, so the access mode of
// the descriptor registered does not matter.
//
// The kernel allows one backing file per inode while passthrough files
// are open on it, so a node keeps its backing id for as long as a handle
// uses it, counted in backingRefs, and unregisters it at the last
// RELEASE.

import (
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// passthrough makes the open of handle h, whose reply is out, a
// passthrough open when h's file is a host file. It leaves out alone
// otherwise: for files opened direct_io (not regular files), files of
// other file systems, and once the kernel has refused a registration
// (then for the rest of the export).
func (s *Server) passthrough(h *handle, out *gofuse.OpenOut) {
	if s.noPassthrough.Load() || h.node == nil || out.OpenFlags&gofuse.FOPEN_DIRECT_IO != 0 {
		return
	}
	s.bmu.Lock()
	defer s.bmu.Unlock()
	n := h.node
	if n.backingID == 0 {
		var id int32
		var errno syscall.Errno
		err := s.base.HostFile(h.fd, func(fd int) error {
			id, errno = s.srv.RegisterBackingFd(&gofuse.BackingMap{Fd: int32(fd)})
			if errno != 0 {
				return errno
			}
			return nil
		})
		if err != nil {
			if errno != 0 {
				// EPERM (not root), EOPNOTSUPP (no passthrough
				// negotiated): it will not work later either.
				s.noPassthrough.Store(true)
			}
			return
		}
		n.backingID = id
	}
	n.backingRefs++
	h.backing = true
	out.BackingID = n.backingID
	out.OpenFlags |= gofuse.FOPEN_PASSTHROUGH
	out.OpenFlags &^= gofuse.FOPEN_KEEP_CACHE
}

// dropBacking releases h's reference to its node's backing file, at
// RELEASE, and unregisters the file with the last one.
func (s *Server) dropBacking(h *handle) {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	if !h.backing {
		return
	}
	h.backing = false
	n := h.node
	if n.backingRefs--; n.backingRefs == 0 {
		s.srv.UnregisterBackingFd(n.backingID)
		n.backingID = 0
	}
}
