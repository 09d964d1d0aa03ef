package vfs

import "golang.org/x/sys/unix"

// Rename moves oldpath to newpath, as rename(2) does: a file replaces a
// file, a directory replaces an empty directory, and if both name the same
// file nothing happens. Different mounts give EXDEV; a last component of
// "." or ".." gives EBUSY; moving a directory into its own subtree gives
// EINVAL; renaming onto an ancestor of oldpath gives ENOTEMPTY; a mount
// point gives EBUSY; a trailing slash on a non-directory gives ENOTDIR.
func (p *Proc) Rename(oldpath, newpath string) error {
	return pathErr("rename", oldpath, p.rename(oldpath, newpath))
}

func (p *Proc) rename(oldpath, newpath string) error {
	odir, oname, otrail, err := p.walkParent(oldpath)
	if err != nil {
		return err
	}
	ndir, nname, ntrail, err := p.walkParent(newpath)
	if err != nil {
		return err
	}
	if odir.mnt != ndir.mnt {
		return unix.EXDEV
	}
	if !isNormal(oname) || !isNormal(nname) {
		return unix.EBUSY
	}
	w := walker{ns: p.ns}
	old, err := w.step(odir, oname, false)
	if err != nil {
		return err
	}
	oldIsDir := isDir(old.node)
	if (otrail || ntrail) && !oldIsDir {
		return errENOTDIR
	}
	if old.mnt != odir.mnt {
		return unix.EBUSY
	}
	target, err := w.step(ndir, nname, false)
	switch {
	case err == nil:
		if target.mnt != ndir.mnt {
			return unix.EBUSY
		}
		if target.node == old.node {
			return nil // the same file under both names
		}
	case err == errENOENT || err == unix.ENOENT:
		target = location{}
	default:
		return err
	}
	if oldIsDir && p.ns.isAncestor(old, ndir) {
		return errEINVAL
	}
	if target.node != nil && p.ns.isAncestor(target, odir) {
		return unix.ENOTEMPTY
	}
	if odir.mnt.readonly {
		return unix.EROFS
	}
	r, ok := odir.node.(Renamer)
	if !ok {
		return unix.EPERM
	}
	defer p.ns.dcache.invalidate2(odir.node, oname, ndir.node, nname).done()
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
