package tmpfs

// File handles (vfs.Exporter), as Linux's shmem_export_ops: a handle is
// the inode number and a random generation (shmem's i_generation), and a
// table finds the inode again while it is linked or open (shmem's
// ilookup5 in the inode hash). As shmem_encode_fh hashes an inode only
// when a handle of it is first made, an inode enters the table then:
// files nobody takes a handle of cost nothing.

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// newGeneration returns a random non-zero generation: 0 in a handle
// matches any inode.
func newGeneration() uint32 {
	for {
		if g := rand.Uint32(); g != 0 {
			return g
		}
	}
}

// inodeShards spreads the table's lock, so concurrent creates in
// different directories rarely meet.
const inodeShards = 64

// inodeTable maps the numbers of live inodes to their nodes: entered by
// EncodeFH, left by evict.
type inodeTable struct {
	shards [inodeShards]struct {
		mu sync.Mutex // protects m
		m  map[uint64]node
	}
}

// The states of inode.hashed.
const (
	unhashed = iota
	hashed   // in the table
	evicted  // gone: never to enter the table
)

// add enters n, unless it is there or evicted.
func (t *inodeTable) add(n node) {
	b := n.base()
	if b.hashed.Load() != unhashed {
		return
	}
	s := &t.shards[b.ino%inodeShards]
	s.mu.Lock()
	if b.hashed.CompareAndSwap(unhashed, hashed) {
		if s.m == nil {
			s.m = make(map[uint64]node)
		}
		s.m[b.ino] = n
	}
	s.mu.Unlock()
}

// remove marks n evicted, and takes it out of the table if it is there:
// an add that won the race has finished under the shard's lock first.
func (t *inodeTable) remove(n *inode) {
	if n.hashed.Swap(evicted) != hashed {
		return
	}
	s := &t.shards[n.ino%inodeShards]
	s.mu.Lock()
	delete(s.m, n.ino)
	s.mu.Unlock()
}

func (t *inodeTable) get(ino uint64) node {
	s := &t.shards[ino%inodeShards]
	s.mu.Lock()
	n := s.m[ino]
	s.mu.Unlock()
	return n
}

// EncodeFH implements vfs.Exporter.
func (fs *FS) EncodeFH(n vfs.Node) (vfs.FileID, error) {
	t, ok := n.(node)
	if !ok || t.base().fs != fs {
		return vfs.FileID{}, unix.EINVAL
	}
	fs.table.add(t)
	return vfs.FileID{Ino: t.base().ino, Gen: t.base().gen}, nil
}

// NodeByIno implements vfs.Exporter (shmem_fh_to_dentry's ilookup5; the
// VFS compares the generation, as shmem_match does). The node is held as
// an O_PATH open holds it (openpath.go) until the caller releases it, so
// that a last close or unlink racing with the lookup cannot free it in
// between, as ilookup5's reference holds the inode.
func (fs *FS) NodeByIno(ino uint64) (vfs.Node, vfs.Releaser, error) {
	n := fs.table.get(ino)
	if n == nil {
		return nil, nil, unix.ESTALE
	}
	// Not under the table's lock: free takes the node's lock, then the
	// table's (evict).
	r, alive := hold(n)
	if !alive {
		r.Release()
		return nil, nil, unix.ESTALE
	}
	return n, r, nil
}

// hold pins n as an O_PATH open does and reports whether n was still
// alive when pinned: a node freed before the pin stays freed, one pinned
// first is not freed until the pin is released.
func hold(n node) (vfs.Releaser, bool) {
	if f, ok := n.(*File); ok {
		r, _ := f.OpenPath()
		f.mu.RLock()
		alive := !f.freed
		f.mu.RUnlock()
		return r, alive
	}
	r := pin(n)
	var freed *atomic.Bool
	switch t := n.(type) {
	case *Dir:
		freed = &t.freed
	case *Symlink:
		freed = &t.freed
	case *Special:
		freed = &t.freed
	default:
		return r, false
	}
	return r, !freed.Load()
}
