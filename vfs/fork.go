package vfs

import "sync/atomic"

// Fork returns a new process made as fork(2) makes one: a copy of the
// descriptor table (each descriptor refers to the same open file as the
// parent's, so positions, file-status flags and open-file-description
// locks are shared), the same current directory, umask and credentials,
// in the same namespace. Closing a descriptor in one process does not
// close it in the other; process-associated locks belong to each process
// alone (the child starts with none). The credentials are immutable
// values, so changing the child's ids never changes the parent's.
func (p *Proc) Fork() (*Proc, error) {
	child := &Proc{ns: p.ns, pid: newPid(), files: new(fdTable)}
	child.group = child
	child.cwd.Store(p.cwd.Load())
	child.umask.Store(p.umask.Load())
	c := *p.cred.Load() // copy_creds: the child has credentials of its own
	child.cred.Store(&c)
	p.files.forkInto(child.files)
	return child, nil
}

// forkInto makes t2 a copy of t that holds a reference to each open file.
// Under t.mu no descriptor is being removed, so every file in t has a
// reference to copy. The FD_CLOEXEC bits are copied with the descriptors,
// as fork(2) keeps them.
func (t *fdTable) forkInto(t2 *fdTable) {
	t.mu.Lock()
	defer t.mu.Unlock()
	src := *t.slots.Load()
	dst := make([]atomic.Pointer[file], len(src))
	t2.lowest = len(src)
	for i := range src {
		f := src[i].Load()
		if f == nil || !f.tryRef() {
			t2.lowest = min(t2.lowest, i)
			continue
		}
		dst[i].Store(f)
	}
	t2.slots.Store(&dst)
	t2.cloexec = append([]uint64(nil), t.cloexec...)
	for i := range src {
		if dst[i].Load() == nil && i/64 < len(t2.cloexec) {
			t2.cloexec[i/64] &^= 1 << (i % 64)
		}
	}
}
