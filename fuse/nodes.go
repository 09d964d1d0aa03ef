package fuse

import (
	"strings"
	"syscall"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// nodeKey names a file for the life of the export: its file system's
// device and inode number.
type nodeKey struct{ dev, ino uint64 }

// A node is what the kernel knows by a node id. It is found again by
// path: the name it was last looked up, created or linked under in its
// parent. A node whose name went away (unlinked, or replaced by a
// rename) is detached: calls that need its path give ENOENT, as the path
// a program resolved is gone, while its open handles keep working.
type node struct {
	id  uint64
	key nodeKey
	// The fields below are protected by Server.mu.
	parent   *node
	name     string
	lookups  uint64 // the kernel's references, from LOOKUP replies
	detached bool
	open     map[*handle]struct{} // handles open on the node
	cache    cacheKey             // the file's state at its last open

	// backingID is the kernel's passthrough backing file of the node,
	// 0 if none, shared by backingRefs open handles (passthrough.go).
	// Protected by Server.bmu.
	backingID   int32
	backingRefs int
}

// cacheKey is what tells a regular file's content unchanged between two
// opens: size, mtime and ctime (every change of content moves ctime).
type cacheKey struct{ size, mtime, ctime int64 }

// path returns the namespace path of node id.
func (s *Server) path(id uint64) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[id]
	if n == nil {
		return "", syscall.ESTALE
	}
	return s.pathLocked(n)
}

func (s *Server) pathLocked(n *node) (string, error) {
	var parts []string
	for ; n.parent != nil; n = n.parent {
		if n.detached {
			return "", syscall.ENOENT
		}
		parts = append(parts, n.name)
	}
	if n.id != gofuse.FUSE_ROOT_ID || n.detached {
		// A node that never had a name (O_TMPFILE) is like one that
		// lost it.
		return "", syscall.ENOENT
	}
	var b strings.Builder
	b.WriteString(s.root)
	for i := len(parts) - 1; i >= 0; i-- {
		if b.Len() > 1 || s.root != "/" {
			b.WriteByte('/')
		}
		b.WriteString(parts[i])
	}
	return b.String(), nil
}

// child returns the path of name in directory node id.
func (s *Server) child(id uint64, name string) (string, error) {
	dir, err := s.path(id)
	if err != nil {
		return "", err
	}
	if dir == "/" {
		return "/" + name, nil
	}
	return dir + "/" + name, nil
}

// register records that the kernel now holds one more reference to the
// file st, found as name in directory parent, and fills out.
func (s *Server) register(parent uint64, name string, st *vfs.Stat, out *gofuse.EntryOut) {
	k := nodeKey{st.Dev, st.Ino}
	s.mu.Lock()
	n := s.byKey[k]
	if n == nil {
		n = &node{id: s.nextID, key: k}
		s.nextID++
		s.nodes[n.id] = n
		s.byKey[k] = n
	}
	if name != "" && name != "." && name != ".." && n.id != gofuse.FUSE_ROOT_ID {
		if p := s.nodes[parent]; p != nil {
			n.parent, n.name, n.detached = p, name, false
		}
	}
	n.lookups++
	s.mu.Unlock()
	out.NodeId = n.id
	out.Generation = 1
	setTTL(&out.EntryValid, &out.EntryValidNsec, s.entryTTL)
	setTTL(&out.AttrValid, &out.AttrValidNsec, s.attrTTL)
	s.fillAttr(&out.Attr, st)
}

// detach marks the node at name in directory parent, if the table holds
// it under that name, as having lost its path.
func (s *Server) detach(parent uint64, name string, k nodeKey) {
	s.mu.Lock()
	if n := s.byKey[k]; n != nil && n.parent != nil && n.parent.id == parent && n.name == name {
		n.detached = true
	}
	s.mu.Unlock()
}

// moved records that the node k is now name in directory parent.
func (s *Server) moved(parent uint64, name string, k nodeKey) {
	s.mu.Lock()
	if n, p := s.byKey[k], s.nodes[parent]; n != nil && p != nil && n.id != gofuse.FUSE_ROOT_ID {
		n.parent, n.name, n.detached = p, name, false
	}
	s.mu.Unlock()
}

// forget drops n of the kernel's references to node id (FORGET). The
// node leaves the table when none are left; the root never does.
func (s *Server) forget(id, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nd := s.nodes[id]
	if nd == nil || id == gofuse.FUSE_ROOT_ID {
		return
	}
	if n >= nd.lookups {
		delete(s.nodes, id)
		if s.byKey[nd.key] == nd {
			delete(s.byKey, nd.key)
		}
		return
	}
	nd.lookups -= n
}

// openOn records h as open on node id, so that the node's attributes
// stay reachable through it once it has lost its name (fstat of an
// unlinked file).
func (s *Server) openOn(id uint64, h *handle) {
	s.mu.Lock()
	if n := s.nodes[id]; n != nil {
		if n.open == nil {
			n.open = map[*handle]struct{}{}
		}
		n.open[h] = struct{}{}
		h.node = n
	}
	s.mu.Unlock()
}

// closedOn undoes openOn.
func (s *Server) closedOn(h *handle) {
	s.mu.Lock()
	if h.node != nil {
		delete(h.node.open, h)
	}
	s.mu.Unlock()
}

// anyHandle returns a handle open on node id, or nil.
func (s *Server) anyHandle(id uint64) *handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.nodes[id]; n != nil {
		for h := range n.open {
			return h
		}
	}
	return nil
}

func setTTL(sec *uint64, nsec *uint32, d time.Duration) {
	*sec = uint64(d / time.Second)
	*nsec = uint32(d % time.Second)
}

// fillAttr converts st for the kernel.
func (s *Server) fillAttr(a *gofuse.Attr, st *vfs.Stat) {
	fillAttr(a, st)
	if t := st.Mode & unix.S_IFMT; s.devFiles && (t == unix.S_IFCHR || t == unix.S_IFBLK) {
		a.Mode = unix.S_IFREG | st.Mode&^unix.S_IFMT
		a.Rdev = 0
	}
}

func fillAttr(a *gofuse.Attr, st *vfs.Stat) {
	a.Ino = st.Ino
	a.Size = uint64(st.Size)
	a.Blocks = uint64(st.Blocks)
	a.Atime, a.Atimensec = uint64(st.Atime.Unix()), uint32(st.Atime.Nanosecond())
	a.Mtime, a.Mtimensec = uint64(st.Mtime.Unix()), uint32(st.Mtime.Nanosecond())
	a.Ctime, a.Ctimensec = uint64(st.Ctime.Unix()), uint32(st.Ctime.Nanosecond())
	a.Mode = st.Mode
	a.Nlink = uint32(st.Nlink)
	a.Uid, a.Gid = st.Uid, st.Gid
	a.Rdev = uint32(st.Rdev)
	a.Blksize = uint32(st.Blksize)
}
