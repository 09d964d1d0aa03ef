package fuse

// File handles through the export (the kernel's EXPORT_SUPPORT). The
// kernel's handle of a file on a FUSE mount is its node id and
// generation; once the kernel has forgotten the node (FORGET), it turns
// the handle back into a node by a LOOKUP of "." in that node id, and
// finds a directory's parent by a LOOKUP of "..". So a node id must name
// the same file for the life of the export, whether or not the kernel
// holds it. When the export's root is the root of a mount that shows its
// file system whole, and that file system makes handles (vfs.Exporter),
// each file of that mount has the node id 1<<48 | its inode number and
// the generation of its handle, and LOOKUP "." opens it again by number
// (vfs.Proc.OpenByIno, which cannot reach outside the mount, so outside
// the export). Other files (of other mounts in the exported tree, or of
// an export of a subdirectory) have node ids from a counter, below 1<<48,
// which a handle names only while the kernel holds the node.

import (
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// inoBits is how many bits of a node id hold the inode number; the bit
// above them marks a numbered node id.
const inoBits = 48

// numberRoot makes the files of the root's mount numbered, if the root
// (open as fd, x its attributes) is a mount's root that OpenByIno
// accepts and its file system makes handles. Called once, by Mount.
func (s *Server) numberRoot(fd int, x *unix.Statx_t) {
	if x.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return
	}
	if _, _, err := s.base.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH); err != nil {
		return
	}
	probe, _, err := s.base.OpenByIno(fd, x.Ino, unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		return
	}
	s.base.Close(probe)
	s.numbered, s.numberedMnt, s.rootFd = true, x.Mnt_id, fd
}

// exportID returns the node id and generation a new node for the file
// open as fd (x its attributes) gets from its handle, or 0 if the file
// is not numbered. Not called under mu.
func (s *Server) exportID(fd int, x *unix.Statx_t) (uint64, uint32) {
	if !s.numbered || x.Mnt_id != s.numberedMnt || x.Ino>>inoBits != 0 {
		return 0, 0
	}
	h, _, err := s.base.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		return 0, 0
	}
	id, ok := vfs.ParseFileHandle(h)
	if !ok || id.Ino != x.Ino {
		return 0, 0
	}
	return 1<<inoBits | x.Ino, id.Gen
}

// lookupSelf answers a LOOKUP of "." in node id: the node, which the
// kernel may have forgotten, is found again by its number. A node id
// that names no file now gives ESTALE (the kernel's fuse_get_dentry), and
// so does a file with no name left: the kernel asks only for a node it
// holds no inode of, so no open file of the mount holds it, and the
// export's own descriptor of a node it has not yet been told to forget
// must not keep a removed file reachable.
func (s *Server) lookupSelf(id uint64, out *gofuse.EntryOut) error {
	if n, err := s.get(id); err == nil {
		err = s.again(n, out)
		s.put(n)
		if err != nil {
			return err
		}
	} else {
		if !s.numbered || id>>inoBits != 1 {
			return syscall.ESTALE
		}
		fd, _, err := s.base.OpenByIno(s.rootFd, id&(1<<inoBits-1), unix.O_PATH|unix.O_CLOEXEC)
		if err != nil {
			return syscall.ESTALE
		}
		if err := s.register(fd, out); err != nil {
			return err
		}
	}
	if out.NodeId != id || out.Attr.Nlink == 0 {
		// The root (node id 1) asked for by number, or a removed file:
		// give the reference back.
		s.forget(out.NodeId, 1)
		return syscall.ESTALE
	}
	return nil
}

// lookupParent answers a LOOKUP of ".." in a directory (the kernel's
// fuse_get_parent, reconnecting a directory decoded from a handle): its
// parent, which must be on the numbered mount, so inside the export; the
// export's root is its own parent.
func (r *rawFS) lookupParent(h *gofuse.InHeader, out *gofuse.EntryOut) gofuse.Status {
	q, s := r.begin(h, h.NodeId)
	if !s.Ok() {
		return s
	}
	defer r.done(q)
	if q.n.id == gofuse.FUSE_ROOT_ID {
		return st(r.s.again(q.n, out))
	}
	fd, err := q.p.Openat(q.n.fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return st(err)
	}
	x, err := r.s.statFd(fd)
	if err != nil || !r.s.numbered || x.Mnt_id != r.s.numberedMnt {
		r.s.base.Close(fd)
		return gofuse.Status(syscall.ESTALE)
	}
	return st(r.s.register(fd, out))
}
