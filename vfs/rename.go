package vfs

import "golang.org/x/sys/unix"

// Rename moves oldpath to newpath, as rename(2) does: a file replaces a
// file, a directory replaces an empty directory, and if both name the same
// file nothing happens. Different mounts give EXDEV; a last component of
// "." or ".." gives EBUSY; moving a directory into its own subtree gives
// EINVAL; renaming onto an ancestor of oldpath gives ENOTEMPTY; a mount
// point gives EBUSY; a trailing slash on a non-directory gives ENOTDIR.
func (p *Proc) Rename(oldpath, newpath string) error {
	return pathErr("rename", oldpath, p.rename(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, 0))
}

// renameFlags are the flags renameat2(2) knows.
const renameFlags = unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE | unix.RENAME_WHITEOUT

// Renameat2 is Rename with each path relative to its own directory
// descriptor, and renameat2(2)'s flags: RENAME_NOREPLACE gives EEXIST if
// newpath exists; RENAME_EXCHANGE swaps the two names, which must both
// exist; RENAME_WHITEOUT leaves a whiteout (a character device 0:0) at
// oldpath. Unknown flags, or RENAME_EXCHANGE with either of the others,
// give EINVAL; a file system that lacks a flag gives EINVAL too.
//
// The caller needs write and search permission on both parents, the
// sticky-directory ownership (EPERM) for each name removed or replaced,
// and write permission on a directory that moves to another parent,
// since its ".." changes (Linux vfs_rename).
func (p *Proc) Renameat2(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
	return pathErr("renameat2", oldpath, p.rename(olddirfd, oldpath, newdirfd, newpath, flags))
}

// renameOp is one rename between its check phases: the two parents and
// names as walked, then the nodes looked up under the parents' locks.
type renameOp struct {
	flags          uint
	odir, ndir     location
	oname, nname   string
	otrail, ntrail bool
	old, target    location // target.node is nil when newpath is free
	oldIsDir       bool
	newIsDir       bool
	// otrap is the child of odir on the path down to ndir when odir is
	// an ancestor of ndir, ntrap the same the other way, else nil
	// (lockRename).
	otrap, ntrap Node
}

// rename is do_renameat2 and vfs_rename, in their order of checks: the
// flags and names, then under the parents' locks and the rename seqlock
// the lookups and rename's own rules, the caller's permissions, and the
// change.
func (p *Proc) rename(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
	if flags&^renameFlags != 0 {
		return errEINVAL
	}
	if flags&unix.RENAME_EXCHANGE != 0 && flags&(unix.RENAME_NOREPLACE|unix.RENAME_WHITEOUT) != 0 {
		return errEINVAL
	}
	r := renameOp{flags: flags}
	var err error
	if r.odir, r.oname, r.otrail, err = p.walkParentAt(olddirfd, oldpath); err != nil {
		return err
	}
	if r.ndir, r.nname, r.ntrail, err = p.walkParentAt(newdirfd, newpath); err != nil {
		return err
	}
	if err := r.checkNames(); err != nil {
		return err
	}
	la, lb := p.ns.lockRename(&r)
	defer p.ns.unlockRename(la, lb)
	p.ns.rename.writeBegin()
	defer p.ns.rename.writeEnd()
	if err := p.ns.lookupRename(&r); err != nil || r.target.node == r.old.node {
		return err // nil: the same file under both names
	}
	c := p.cred.Load()
	if err := c.mayRename(&r, lb); err != nil {
		return err
	}
	return p.renameLocked(&r, c, la, lb)
}

// checkNames is do_renameat2's checks before any lock: the two parents'
// mounts (EXDEV), the last components' form (EBUSY, or EEXIST under
// RENAME_NOREPLACE), and the mount (EROFS).
func (r *renameOp) checkNames() error {
	if r.odir.mnt != r.ndir.mnt {
		return unix.EXDEV
	}
	if !isNormal(r.oname) {
		return unix.EBUSY
	}
	if !isNormal(r.nname) {
		if r.flags&unix.RENAME_NOREPLACE != 0 {
			return unix.EEXIST
		}
		return unix.EBUSY
	}
	if r.odir.mnt.readonly {
		return unix.EROFS
	}
	return nil
}

// lookupRename looks both names up, with the parents locked, and applies
// rename's rules on what it found: ENOENT for a missing source (or target
// under RENAME_EXCHANGE), EEXIST under RENAME_NOREPLACE, ENOTDIR for a
// trailing slash on a non-directory, EINVAL for moving a directory into
// its own subtree and ENOTEMPTY for replacing an ancestor of the source
// (lock_rename's trap).
func (ns *Namespace) lookupRename(r *renameOp) error {
	exchange := r.flags&unix.RENAME_EXCHANGE != 0
	oldNode, err := lookupChild(r.odir, r.oname)
	if err != nil {
		return err
	}
	r.old = location{r.odir.mnt, oldNode}
	switch newNode, err := lookupChild(r.ndir, r.nname); {
	case err == nil:
		if r.flags&unix.RENAME_NOREPLACE != 0 {
			return unix.EEXIST
		}
		r.target = location{r.ndir.mnt, newNode}
	case err == errENOENT || err == unix.ENOENT:
		if exchange {
			return err
		}
	default:
		return err
	}
	r.oldIsDir = isDir(r.old.node)
	r.newIsDir = r.target.node != nil && isDir(r.target.node)
	if exchange && !r.newIsDir && r.ntrail {
		return errENOTDIR
	}
	if !r.oldIsDir && (r.otrail || !exchange && r.ntrail) {
		return errENOTDIR
	}
	if r.oldIsDir && r.old.node == r.otrap {
		return errEINVAL // the source is an ancestor of the target
	}
	if r.target.node != nil && r.newIsDir && r.target.node == r.ntrap {
		if exchange {
			return errEINVAL
		}
		return unix.ENOTEMPTY // the target is an ancestor of the source
	}
	return nil
}

// mayRename is vfs_rename's permission checks: may_delete of the source,
// may_create or may_delete of the target (lb is the new parent's lock,
// for a removed parent's ENOENT), and write permission on a directory
// whose ".." a move to another parent rewrites.
func (c *creds) mayRename(r *renameOp, lb *DirLock) error {
	if err := c.mayDelete(r.odir, r.old.node, r.oldIsDir); err != nil {
		return err
	}
	var err error
	switch {
	case r.target.node == nil:
		err = c.mayCreate(r.ndir, lb)
	case r.flags&unix.RENAME_EXCHANGE != 0:
		err = c.mayDelete(r.ndir, r.target.node, r.newIsDir)
	default:
		err = c.mayDelete(r.ndir, r.target.node, r.oldIsDir)
	}
	if err != nil {
		return err
	}
	if r.odir.node != r.ndir.node {
		if r.oldIsDir {
			if err := c.permission(r.old, MayWrite); err != nil {
				return err
			}
		}
		if r.flags&unix.RENAME_EXCHANGE != 0 && r.newIsDir {
			if err := c.permission(r.target, MayWrite); err != nil {
				return err
			}
		}
	}
	return nil
}

// renameLocked is the change: EPERM for a file system without rename,
// EBUSY for a mount point (checked under the lock of a directory being
// replaced, which a mount on it takes too), then the driver's Rename
// with the dentry cache invalidated for both names. A directory replaced
// by the rename is dead afterwards.
func (p *Proc) renameLocked(r *renameOp, c *creds, la, lb *DirLock) error {
	rn, ok := r.odir.node.(Renamer)
	if !ok {
		return unix.EPERM
	}
	var vl *DirLock
	if r.newIsDir && r.flags&unix.RENAME_EXCHANGE == 0 {
		vl = p.ns.lockVictim(r.target.node, la, lb)
	}
	if p.ns.isMountpoint(r.odir.mnt, r.old.node) || r.target.node != nil && p.ns.isMountpoint(r.ndir.mnt, r.target.node) {
		vl.kill(false)
		return unix.EBUSY
	}
	ch := p.ns.dcache.invalidate2(r.odir.node, r.oname, r.ndir.node, r.nname)
	err := rn.Rename(r.oname, r.ndir.node, r.nname, r.flags, c.fsCred())
	ch.done()
	vl.kill(err == nil)
	return err
}

func isNormal(name string) bool { return name != "" && name != "." && name != ".." }

// childToward returns the child of a on the path up from loc to a, when
// a is a proper ancestor of loc within loc's mount (loc itself when a is
// its parent), and nil otherwise.
func (ns *Namespace) childToward(a, loc location) Node {
	for loc.node != a.node && loc.node != loc.mnt.root {
		up := ns.parentOf(loc)
		if up.node == loc.node || up.mnt != loc.mnt {
			return nil
		}
		if up.node == a.node {
			return loc.node
		}
		loc = up
	}
	return nil
}
