package vfs

import "golang.org/x/sys/unix"

// lookupCached is lookup for openat2's RESOLVE_CACHED: the answer must
// come from the cache alone, as Linux's RCU-walk with LOOKUP_CACHED
// completes only from the dcache. A name not cached, one whose stripe a
// change is touching, a directory whose Nodes are not cached (not
// pointers, or the cache off), and a dentry that Revalidate rejects give
// EAGAIN without calling the file system's Lookup; a cached negative
// answer gives ENOENT.
func (c *dcache) lookupCached(node Node, name string) (Node, error) {
	if c.off {
		return nil, unix.EAGAIN
	}
	h, w := c.hash(node, name)
	st := c.stripe(w)
	gen := st.gen.Load()
	if st.active.Load() != 0 {
		return nil, unix.EAGAIN
	}
	e := c.find(h, node, name)
	if e == nil || st.gen.Load() != gen {
		return nil, unix.EAGAIN
	}
	if e.reval != nil && !e.reval.Revalidate(name, e.child) {
		return nil, unix.EAGAIN
	}
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	if e.child == nil {
		return nil, errENOENT
	}
	return e.child, nil
}
