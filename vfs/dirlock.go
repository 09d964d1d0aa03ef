package vfs

// Directory locks (Linux's i_rwsem on a directory inode). The VFS, not the
// drivers, keeps a namespace change atomic: it holds the parent
// directory's lock from the final lookup of a name to the end of the
// change (create, mkdir, mknod, symlink, link, unlink, rmdir, open with
// O_CREAT), and for a rename the locks of both parents, taken in
// lock_rename's order under the rename seqlock. Lookups take no directory
// lock: the dentry cache stays lock-free, and drivers keep their own data
// consistent for concurrent readers.
//
// Order (the package documentation has the whole list): the namespace's
// cross-directory rename mutex, then directory locks, parents before
// children (an ancestor before its descendants, else by the lock's
// address; the victim of an rmdir or of a rename over a directory, and a
// directory being mounted on, after its parent), then the mount mutex,
// then the rename seqlock's writer side, then whatever a driver takes
// inside its methods.

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// A DirLock is the VFS's lock of one directory, embedded in the
// directory's own node by its file system (DirLocker). Its zero value is
// ready. Only the VFS takes it.
type DirLock struct {
	mu sync.Mutex
	// dead is set, under mu, when the directory is removed (rmdir, or
	// replaced by a rename): nothing can be created in it any more, and
	// it lists nothing, as Linux's S_DEAD on the inode says (IS_DEADDIR
	// gives ENOENT). It is read without mu by readdir.
	dead atomic.Bool
}

// dirLock returns the lock the VFS takes for directory n: its own, or the
// namespace's shared one for a directory that is not a DirLocker.
func (ns *Namespace) dirLock(n Node) *DirLock {
	if l, ok := n.(DirLocker); ok {
		if d := l.DirLock(); d != nil {
			return d
		}
	}
	return &ns.sharedDirLock
}

// lockDir takes the lock of directory n and returns it. A directory that
// was removed gives ENOENT for anything created in it: the caller checks
// with alive.
func (ns *Namespace) lockDir(n Node) *DirLock {
	l := ns.dirLock(n)
	l.mu.Lock()
	return l
}

// unlock drops the lock.
func (l *DirLock) unlock() { l.mu.Unlock() }

// alive gives ENOENT if the locked directory was removed (may_create's
// IS_DEADDIR).
func (l *DirLock) alive() error {
	if l.dead.Load() {
		return errENOENT
	}
	return nil
}

// removedDir reports whether directory n was removed, for readdir's
// IS_DEADDIR check (a directory that is not a DirLocker never is).
func removedDir(n Node) bool {
	if l, ok := n.(DirLocker); ok {
		if d := l.DirLock(); d != nil {
			return d.dead.Load()
		}
	}
	return false
}

// lockRename takes the locks of the parents of rename r, as Linux's
// lock_rename: one lock if they share it; otherwise, under the
// namespace's rename mutex (held until unlockRename), so that no
// directory moves while the ancestry is decided, an ancestor before its
// descendant, and two unrelated directories by the address of their
// locks. It returns the two locks (the same one twice when shared);
// unlockRename drops them. Like lock_rename's trap, it records in r the
// child of either parent on the path to the other (otrap, ntrap), which
// lookupRename compares with the source and the target.
func (ns *Namespace) lockRename(r *renameOp) (*DirLock, *DirLock) {
	a, b := r.odir, r.ndir
	la, lb := ns.dirLock(a.node), ns.dirLock(b.node)
	if la == lb {
		la.mu.Lock()
		if a.node != b.node { // a shared lock: no directory of theirs moves now
			r.otrap = ns.childToward(a, b)
			r.ntrap = ns.childToward(b, a)
		}
		return la, lb
	}
	ns.renameMu.Lock()
	first, second := la, lb
	if pa, pb := ns.parentOf(a), ns.parentOf(b); pa == pb && pa.mnt == a.mnt && pa.node != a.node && pb.node != b.node {
		// Siblings, the common case: neither is the other's ancestor.
		if uintptr(unsafe.Pointer(lb)) < uintptr(unsafe.Pointer(la)) {
			first, second = lb, la
		}
	} else if r.otrap = ns.childToward(a, b); r.otrap == nil {
		if r.ntrap = ns.childToward(b, a); r.ntrap != nil {
			first, second = lb, la
		} else if uintptr(unsafe.Pointer(lb)) < uintptr(unsafe.Pointer(la)) {
			first, second = lb, la
		}
	}
	first.mu.Lock()
	second.mu.Lock()
	return la, lb
}

// unlockRename drops the locks lockRename took.
func (ns *Namespace) unlockRename(la, lb *DirLock) {
	la.mu.Unlock()
	if lb != la {
		lb.mu.Unlock()
		ns.renameMu.Unlock()
	}
}

// lockVictim takes the lock of directory n, which is about to be removed
// or replaced, after its parents' (held: the victim is their child, so
// this keeps parents before children). It returns nil, taking nothing,
// when n shares a lock already held (held1, held2).
func (ns *Namespace) lockVictim(n Node, held1, held2 *DirLock) *DirLock {
	l := ns.dirLock(n)
	if l == held1 || l == held2 {
		return nil
	}
	l.mu.Lock()
	return l
}

// kill marks a locked victim directory removed (it may be nil: the
// shared lock, which records nothing) and unlocks it.
func (l *DirLock) kill(removed bool) {
	if l == nil {
		return
	}
	if removed {
		l.dead.Store(true)
	}
	l.mu.Unlock()
}
