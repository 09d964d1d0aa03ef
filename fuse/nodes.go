package fuse

import (
	"syscall"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// nodeKey names a file for as long as the export holds it: its mount's id
// and its inode number. The node's O_PATH descriptor keeps the file alive,
// so no other file of that mount takes the number meanwhile; the mount id
// keeps apart the views of one file through two mounts (a read-only bind
// mount and its source), which must not share a descriptor.
type nodeKey struct{ mnt, ino uint64 }

// A node is what the kernel knows by a node id: one file, held by an
// O_PATH descriptor in the server's descriptor table, through which every
// request on it is served (the *at calls relative to it, the magic-link
// calls on it). A node has no name: a file keeps working through any of
// its names while it has one, renames never leave it stale, and a file
// whose last name went away still answers fstat and fchmod of the
// descriptors programs hold, as on Linux.
type node struct {
	id  uint64
	key nodeKey
	fd  int // O_PATH, in Server.base's table; set once, closed by unref
	// gen is the generation the kernel is given (handles.go); set once.
	gen uint32

	// The fields below are protected by Server.mu.
	lookups uint64   // the kernel's references, from LOOKUP-like replies
	refs    int      // requests using fd now
	dead    bool     // forgotten: fd is closed when refs reaches 0
	cache   cacheKey // the file's state at its last open

	// backingID is the kernel's passthrough backing file of the node,
	// 0 if none, shared by backingRefs open handles (passthrough.go).
	// Protected by Server.bmu.
	backingID   int32
	backingRefs int
}

// cacheKey is what tells a regular file's content unchanged between two
// opens: size, mtime and ctime (every change of content moves ctime).
type cacheKey struct{ size, mtime, ctime int64 }

// get returns node id for a request, which must put it back: ESTALE if
// the kernel names a node the export does not know.
func (s *Server) get(id uint64) (*node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[id]
	if n == nil {
		return nil, syscall.ESTALE
	}
	n.refs++
	return n, nil
}

// put ends a request's use of n.
func (s *Server) put(n *node) {
	s.mu.Lock()
	n.refs--
	closeFd := n.dead && n.refs == 0
	s.mu.Unlock()
	if closeFd {
		s.base.Close(n.fd)
	}
}

// attrMask is what the export asks statx for: everything FUSE shows.
const attrMask = unix.STATX_BASIC_STATS

// statFd returns the attributes of the file open as fd (O_PATH or not),
// a symlink itself included.
func (s *Server) statFd(fd int) (unix.Statx_t, error) {
	return s.base.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, attrMask)
}

// register records that the kernel holds one more reference to the file
// open as fd, an O_PATH descriptor in the server's table that register
// takes over, and fills out as the reply that gives the reference. If the
// export already holds the file, the node it has is used and fd closed.
func (s *Server) register(fd int, out *gofuse.EntryOut) error {
	x, err := s.statFd(fd)
	if err != nil {
		s.base.Close(fd)
		return err
	}
	k := nodeKey{x.Mnt_id, x.Ino}
	s.mu.Lock()
	n := s.byKey[k]
	if n == nil {
		s.mu.Unlock()
		id, gen := s.exportID(fd, &x) // not under mu: it calls into vfs
		s.mu.Lock()
		if n = s.byKey[k]; n == nil {
			if id == 0 {
				id, gen = s.nextID, 1
				s.nextID++
			}
			n = &node{id: id, key: k, fd: fd, gen: gen}
			s.nodes[n.id] = n
			s.byKey[k] = n
			fd = -1
		}
	}
	n.lookups++
	s.mu.Unlock()
	if fd >= 0 {
		s.base.Close(fd)
	}
	s.entryOut(n, &x, out)
	return nil
}

// again records one more reference to n, a node the request holds (the
// file LINK gave a new name), and fills out.
func (s *Server) again(n *node, out *gofuse.EntryOut) error {
	x, err := s.statFd(n.fd)
	if err != nil {
		return err
	}
	s.mu.Lock()
	n.lookups++
	s.mu.Unlock()
	s.entryOut(n, &x, out)
	return nil
}

func (s *Server) entryOut(n *node, x *unix.Statx_t, out *gofuse.EntryOut) {
	out.NodeId = n.id
	out.Generation = uint64(n.gen)
	setTTL(&out.EntryValid, &out.EntryValidNsec, s.entryTTL)
	setTTL(&out.AttrValid, &out.AttrValidNsec, s.attrTTL)
	s.fillAttr(&out.Attr, x)
}

// forget drops count of the kernel's references to node id (FORGET). A
// node with none left leaves the table at once, so a later LOOKUP of its
// file makes a new node, and its descriptor is closed when the last
// request using it ends. The root is never forgotten.
func (s *Server) forget(id, count uint64) {
	s.mu.Lock()
	n := s.nodes[id]
	if n == nil || id == gofuse.FUSE_ROOT_ID {
		s.mu.Unlock()
		return
	}
	if count < n.lookups {
		n.lookups -= count
		s.mu.Unlock()
		return
	}
	n.lookups = 0
	delete(s.nodes, id)
	if s.byKey[n.key] == n {
		delete(s.byKey, n.key)
	}
	n.dead = true
	closeFd := n.refs == 0
	s.mu.Unlock()
	if closeFd {
		s.base.Close(n.fd)
	}
}

func setTTL(sec *uint64, nsec *uint32, d time.Duration) {
	*sec = uint64(d / time.Second)
	*nsec = uint32(d % time.Second)
}

// fillAttr converts x for the kernel.
func (s *Server) fillAttr(a *gofuse.Attr, x *unix.Statx_t) {
	fillAttr(a, x)
	if t := uint32(x.Mode) & unix.S_IFMT; s.devFiles && (t == unix.S_IFCHR || t == unix.S_IFBLK) {
		a.Mode = unix.S_IFREG | uint32(x.Mode)&^unix.S_IFMT
		a.Rdev = 0
	}
}

func fillAttr(a *gofuse.Attr, x *unix.Statx_t) {
	a.Ino = x.Ino
	a.Size = x.Size
	a.Blocks = x.Blocks
	a.Atime, a.Atimensec = uint64(x.Atime.Sec), x.Atime.Nsec
	a.Mtime, a.Mtimensec = uint64(x.Mtime.Sec), x.Mtime.Nsec
	a.Ctime, a.Ctimensec = uint64(x.Ctime.Sec), x.Ctime.Nsec
	a.Mode = uint32(x.Mode)
	a.Nlink = x.Nlink
	a.Uid, a.Gid = x.Uid, x.Gid
	a.Rdev = uint32(unix.Mkdev(x.Rdev_major, x.Rdev_minor))
	a.Blksize = x.Blksize
}
