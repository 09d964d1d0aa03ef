package vfs

// Private mounts (Linux's clone_private_mount): a copy of one mount in a
// namespace of its own, through which a stacking file system (overlayfs)
// acts on its layers. Its calls on a layer then take the private
// namespace's locks, not those of the namespace the stacking file system
// is mounted in: a rename in the overlay, made while the overlay's
// namespace holds its rename locks, renames in the upper layer under the
// private namespace's, as Linux's overlayfs renames through a private
// vfsmount that no lock of the overlay's mount covers. The private
// namespace's locks are never held while a call enters the overlay, so
// they come after the overlay's in the lock order.

import "golang.org/x/sys/unix"

// PrivateMount returns a new process in a namespace of its own whose only
// mount is a copy of the mount that the descriptors fds of p were opened
// through: the same file system, device number and read-only state,
// rooted where that mount is rooted, without the mounts below it, so that
// mounts made later in p's namespace do not change what it shows. The new
// process has p's credentials, a umask of 0 and, as its descriptors 0, 1,
// ... in the order of fds, O_PATH files of the nodes fds refer to. fds
// must name at least one open file (EBADF), all on the same mount
// (EXDEV).
//
// The new namespace shares p's namespace's dentry cache, whose entries
// are keyed by node: what either namespace changes, the other sees. The
// copy shares the file system with the original mount but does not keep
// it mounted: a caller that needs the original to stay (unmount
// gives EBUSY) keeps a file open on it (Backing).
func (p *Proc) PrivateMount(fds ...int) (*Proc, error) {
	if len(fds) == 0 {
		return nil, errEBADF
	}
	var orig *mount
	nodes := make([]Node, len(fds))
	for i, fd := range fds {
		f := p.files.get(fd)
		if f == nil || f.loc.mnt == nil {
			return nil, errEBADF
		}
		if orig != nil && f.loc.mnt != orig {
			return nil, unix.EXDEV
		}
		orig, nodes[i] = f.loc.mnt, f.loc.node
	}
	// The dentry cache is p's namespace's: a change through either
	// namespace invalidates what both cached, as Linux's dcache belongs to
	// the superblock, not the mount.
	ns := &Namespace{dcache: p.ns.dcache, protect: p.ns.protect}
	m := &mount{fs: orig.fs, root: orig.root, dev: orig.dev, id: mountIDs.Add(1),
		readonly: orig.readonly, sbReadonly: orig.sbReadonly}
	m.stFlags.Store(orig.stFlags.Load())
	m.atime.bits.Store(orig.atime.bits.Load())
	ns.root = m
	t := map[mountKey]*mount{}
	ns.mounts.Store(&t)
	ns.mountList.Store(listOf(t))
	q := NewProc(ns)
	c := *p.cred.Load()
	q.cred.Store(&c)
	q.umask.Store(0)
	for i, n := range nodes {
		f, err := q.openLoc(location{m, n}, unix.O_PATH, false)
		if err == nil {
			f.cred = q.cred.Load()
			_, err = q.files.install(f, i)
			if err != nil {
				f.release()
			}
		}
		if err != nil {
			for j := 0; j < i; j++ {
				q.Close(j)
			}
			return nil, err
		}
	}
	return q, nil
}
