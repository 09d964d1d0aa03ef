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

// rename is do_renameat2 and vfs_rename, in their order of checks.
func (p *Proc) rename(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
	if flags&^renameFlags != 0 {
		return errEINVAL
	}
	exchange := flags&unix.RENAME_EXCHANGE != 0
	if exchange && flags&(unix.RENAME_NOREPLACE|unix.RENAME_WHITEOUT) != 0 {
		return errEINVAL
	}
	odir, oname, otrail, err := p.walkParentAt(olddirfd, oldpath)
	if err != nil {
		return err
	}
	ndir, nname, ntrail, err := p.walkParentAt(newdirfd, newpath)
	if err != nil {
		return err
	}
	if odir.mnt != ndir.mnt {
		return unix.EXDEV
	}
	if !isNormal(oname) {
		return unix.EBUSY
	}
	if !isNormal(nname) {
		if flags&unix.RENAME_NOREPLACE != 0 {
			return unix.EEXIST
		}
		return unix.EBUSY
	}
	if odir.mnt.readonly {
		return unix.EROFS
	}
	oldNode, err := lookupChild(odir, oname)
	if err != nil {
		return err
	}
	old := location{odir.mnt, oldNode}
	var target location
	switch newNode, err := lookupChild(ndir, nname); {
	case err == nil:
		if flags&unix.RENAME_NOREPLACE != 0 {
			return unix.EEXIST
		}
		target = location{ndir.mnt, newNode}
	case err == errENOENT || err == unix.ENOENT:
		if exchange {
			return err
		}
	default:
		return err
	}
	oldIsDir := isDir(old.node)
	newIsDir := target.node != nil && isDir(target.node)
	if exchange && !newIsDir && ntrail {
		return errENOTDIR
	}
	if !oldIsDir && (otrail || !exchange && ntrail) {
		return errENOTDIR
	}
	if oldIsDir && p.ns.isAncestor(old, ndir) {
		return errEINVAL // the source is an ancestor of the target
	}
	if target.node != nil && newIsDir && p.ns.isAncestor(target, odir) {
		if exchange {
			return errEINVAL
		}
		return unix.ENOTEMPTY // the target is an ancestor of the source
	}
	if target.node == old.node {
		return nil // the same file under both names
	}
	c := p.cred.Load()
	if err := c.mayDelete(odir, old.node, oldIsDir); err != nil {
		return err
	}
	if target.node == nil {
		err = c.mayCreate(ndir)
	} else if exchange {
		err = c.mayDelete(ndir, target.node, newIsDir)
	} else {
		err = c.mayDelete(ndir, target.node, oldIsDir)
	}
	if err != nil {
		return err
	}
	if odir.node != ndir.node {
		// The ".." of a directory that changes parent is rewritten.
		if oldIsDir {
			if err := c.permission(old, MayWrite); err != nil {
				return err
			}
		}
		if exchange && newIsDir {
			if err := c.permission(target, MayWrite); err != nil {
				return err
			}
		}
	}
	if p.ns.isMountpoint(odir.mnt, old.node) || target.node != nil && p.ns.isMountpoint(ndir.mnt, target.node) {
		return unix.EBUSY
	}
	p.ns.rename.writeBegin()
	defer p.ns.rename.writeEnd()
	if flags != 0 {
		r, ok := odir.node.(RenameFlagser)
		if !ok {
			return errEINVAL
		}
		defer p.ns.dcache.invalidate2(odir.node, oname, ndir.node, nname).done()
		return r.RenameFlags(oname, ndir.node, nname, flags, c.fsCred())
	}
	r, ok := odir.node.(Renamer)
	if !ok {
		return unix.EPERM
	}
	defer p.ns.dcache.invalidate2(odir.node, oname, ndir.node, nname).done()
	if rf, ok := r.(RenameFlagser); ok {
		// With flags 0 a RenameFlagser renames as Rename does, and
		// gets the caller's credentials (a directory block it adds is
		// charged to them).
		return rf.RenameFlags(oname, ndir.node, nname, 0, c.fsCred())
	}
	return r.Rename(oname, ndir.node, nname)
}

func isNormal(name string) bool { return name != "" && name != "." && name != ".." }

// isAncestor reports whether a is loc or one of its ancestors within the
// mount of loc.
func (ns *Namespace) isAncestor(a, loc location) bool {
	for {
		if loc.node == a.node {
			return true
		}
		if loc.node == loc.mnt.root {
			return false
		}
		up := ns.parentOf(loc)
		if up.node == loc.node || up.mnt != loc.mnt {
			return false
		}
		loc = up
	}
}
