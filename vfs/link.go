package vfs

import "golang.org/x/sys/unix"

// Link makes newpath another name for the file at oldpath, as link(2)
// does (without following a final symlink in oldpath). A directory gives
// EPERM, different mounts EXDEV, an existing newpath EEXIST.
func (p *Proc) Link(oldpath, newpath string) error {
	old, err := p.walk(oldpath, false)
	if err != nil {
		return pathErr("link", oldpath, err)
	}
	dir, name, trailing, err := p.walkParent(newpath)
	if err == nil {
		err = p.linkIn(old, dir, name, trailing)
	}
	return pathErr("link", newpath, err)
}

func (p *Proc) linkIn(old, dir location, name string, trailing bool) error {
	if name == "" || name == "." || name == ".." {
		return unix.EEXIST
	}
	if err := p.mustBeFree(dir, name); err != nil {
		return err
	}
	if trailing {
		return errENOENT // filename_create: a trailing slash on a new non-directory
	}
	if old.mnt != dir.mnt {
		return unix.EXDEV
	}
	if isDir(old.node) {
		return unix.EPERM
	}
	if dir.mnt.readonly {
		return unix.EROFS
	}
	l, ok := dir.node.(Linker)
	if !ok {
		return unix.EPERM
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	return l.Link(name, old.node)
}

// Symlink creates linkpath, a symbolic link whose contents are target, as
// symlink(2) does. An empty target gives ENOENT.
func (p *Proc) Symlink(target, linkpath string) error {
	if target == "" {
		return pathErr("symlink", linkpath, errENOENT)
	}
	if len(target) >= maxPath {
		return pathErr("symlink", linkpath, unix.ENAMETOOLONG)
	}
	dir, name, trailing, err := p.walkParent(linkpath)
	if err == nil {
		err = p.symlinkIn(dir, name, trailing, target)
	}
	return pathErr("symlink", linkpath, err)
}

func (p *Proc) symlinkIn(dir location, name string, trailing bool, target string) error {
	if name == "" || name == "." || name == ".." {
		return unix.EEXIST
	}
	if err := p.mustBeFree(dir, name); err != nil {
		return err
	}
	if trailing {
		return errENOENT
	}
	if dir.mnt.readonly {
		return unix.EROFS
	}
	s, ok := dir.node.(Symlinker)
	if !ok {
		return unix.EPERM
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	_, err := s.Symlink(name, target, p.cred)
	return err
}

// Readlink returns the contents of the symbolic link at path, as
// readlink(2) does; a file that is not a symlink gives EINVAL.
func (p *Proc) Readlink(path string) (string, error) {
	loc, err := p.walk(path, false)
	if err != nil {
		return "", pathErr("readlink", path, err)
	}
	rl, ok := loc.node.(Readlinker)
	if !ok {
		return "", pathErr("readlink", path, errEINVAL)
	}
	s, err := rl.Readlink()
	if err != nil {
		return "", pathErr("readlink", path, err)
	}
	return s, nil
}
