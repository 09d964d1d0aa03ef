package vfs

import "golang.org/x/sys/unix"

// Unlink removes the name path of a non-directory, as unlink(2) does. A
// directory gives EISDIR; a trailing slash on a non-directory ENOTDIR.
func (p *Proc) Unlink(path string) error {
	return pathErr("unlink", path, p.unlink(unix.AT_FDCWD, path))
}

// Rmdir removes the empty directory path, as rmdir(2) does: a last
// component of "." gives EINVAL, ".." ENOTEMPTY, a mount point or the root
// EBUSY, a non-directory ENOTDIR, entries ENOTEMPTY.
func (p *Proc) Rmdir(path string) error {
	return pathErr("rmdir", path, p.rmdir(unix.AT_FDCWD, path))
}

// Unlinkat removes path relative to the directory open as dirfd, as
// unlinkat(2) does: as Unlink, or as Rmdir with AT_REMOVEDIR; other flags
// give EINVAL. The caller needs write and search permission on the parent
// (EACCES); in a sticky directory it must also own the entry or the
// directory (EPERM).
func (p *Proc) Unlinkat(dirfd int, path string, flags int) error {
	if flags&^unix.AT_REMOVEDIR != 0 {
		return pathErr("unlinkat", path, errEINVAL)
	}
	if flags&unix.AT_REMOVEDIR != 0 {
		return pathErr("unlinkat", path, p.rmdir(dirfd, path))
	}
	return pathErr("unlinkat", path, p.unlink(dirfd, path))
}

// lookupChild looks name up in dir without crossing a mount on it, as the
// calls that change an entry see it.
func lookupChild(dir location, name string) (Node, error) {
	lk, ok := dir.node.(Lookuper)
	if !ok {
		return nil, errENOTDIR
	}
	return lk.Lookup(name)
}

// unlink is do_unlinkat: EISDIR for "." and "..", EROFS, then under the
// parent's lock the lookup, a trailing slash, may_delete and the change.
func (p *Proc) unlink(dirfd int, path string) error {
	dir, name, trailing, err := p.walkParentAt(dirfd, path)
	if err != nil {
		return err
	}
	if name == "" || name == "." || name == ".." {
		return errEISDIR
	}
	if dir.mnt.readonly {
		return unix.EROFS
	}
	if len(name) > maxName {
		return unix.ENAMETOOLONG
	}
	l := p.ns.lockDir(dir.node)
	defer l.unlock()
	victim, err := lookupChild(dir, name)
	if err != nil {
		return err
	}
	if trailing {
		if isDir(victim) {
			return errEISDIR
		}
		return errENOTDIR
	}
	if err := p.cred.Load().mayDelete(dir, victim, false); err != nil {
		return err
	}
	u, ok := dir.node.(Unlinker)
	if !ok {
		return unix.EPERM
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	return u.Unlink(name, p.cred.Load().fsCred())
}

// rmdir is do_rmdir: the "."/".."/root names, EROFS, then under the
// parent's lock the lookup, may_delete, EBUSY for a mount point, and
// under the victim's lock too the change, after which the victim is dead
// (nothing can be created in it).
func (p *Proc) rmdir(dirfd int, path string) error {
	dir, name, _, err := p.walkParentAt(dirfd, path)
	if err != nil {
		return err
	}
	switch name {
	case ".":
		return errEINVAL
	case "..":
		return unix.ENOTEMPTY
	case "":
		return unix.EBUSY
	}
	if dir.mnt.readonly {
		return unix.EROFS
	}
	if len(name) > maxName {
		return unix.ENAMETOOLONG
	}
	l := p.ns.lockDir(dir.node)
	defer l.unlock()
	victim, err := lookupChild(dir, name)
	if err != nil {
		return err
	}
	c := p.cred.Load()
	if err := c.mayDelete(dir, victim, true); err != nil {
		return err
	}
	r, ok := dir.node.(Rmdirer)
	if !ok {
		return unix.EPERM
	}
	// The mount check is made under the victim's lock, which a mount on
	// it takes too (lock_mount).
	vl := p.ns.lockVictim(victim, l, l)
	if p.ns.isMountpoint(dir.mnt, victim) {
		vl.kill(false)
		return unix.EBUSY
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	err = r.Rmdir(name, c.fsCred())
	vl.kill(err == nil)
	return err
}
