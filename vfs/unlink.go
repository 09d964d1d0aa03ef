package vfs

import "golang.org/x/sys/unix"

// Unlink removes the name path of a non-directory, as unlink(2) does. A
// directory gives EISDIR; a trailing slash on a non-directory ENOTDIR.
func (p *Proc) Unlink(path string) error {
	return pathErr("unlink", path, p.unlink(path))
}

func (p *Proc) unlink(path string) error {
	dir, name, trailing, err := p.walkParent(path)
	if err != nil {
		return err
	}
	if name == "" || name == "." || name == ".." {
		return errEISDIR
	}
	w := walker{ns: p.ns}
	loc, err := w.step(dir, name, false)
	if err != nil {
		return err
	}
	if isDir(loc.node) || loc.mnt != dir.mnt {
		return errEISDIR
	}
	if trailing {
		return errENOTDIR
	}
	if dir.mnt.readonly {
		return unix.EROFS
	}
	u, ok := dir.node.(Unlinker)
	if !ok {
		return unix.EPERM
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	return u.Unlink(name)
}

// Rmdir removes the empty directory path, as rmdir(2) does: a last
// component of "." gives EINVAL, ".." ENOTEMPTY, a mount point or the root
// EBUSY, a non-directory ENOTDIR, entries ENOTEMPTY.
func (p *Proc) Rmdir(path string) error {
	return pathErr("rmdir", path, p.rmdir(path))
}

func (p *Proc) rmdir(path string) error {
	dir, name, _, err := p.walkParent(path)
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
	w := walker{ns: p.ns}
	loc, err := w.step(dir, name, false)
	if err != nil {
		return err
	}
	if loc.mnt != dir.mnt {
		return unix.EBUSY // a mount point
	}
	if !isDir(loc.node) {
		return errENOTDIR
	}
	if dir.mnt.readonly {
		return unix.EROFS
	}
	r, ok := dir.node.(Rmdirer)
	if !ok {
		return unix.EPERM
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	return r.Rmdir(name)
}
