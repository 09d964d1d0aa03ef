package vfs

import "golang.org/x/sys/unix"

// Link makes newpath another name for the file at oldpath, as link(2)
// does (without following a final symlink in oldpath). A directory gives
// EPERM, different mounts EXDEV, an existing newpath EEXIST.
func (p *Proc) Link(oldpath, newpath string) error {
	return p.linkAt("link", unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, 0)
}

// Linkat is Link with each path relative to its own directory descriptor,
// as linkat(2) does. AT_SYMLINK_FOLLOW follows a final symlink in
// oldpath; AT_EMPTY_PATH with an empty oldpath links the file open as
// olddirfd, which must have been opened with the caller's current
// credentials (not changed since by a set*id call) or needs
// CAP_DAC_READ_SEARCH: ENOENT otherwise, as Linux 6.10+;
// other flags give EINVAL. With the namespace's Hardlinks protection
// (LinkProtection), a caller that does not own the file may link it only
// if it is a regular file without set-user-ID (or executable set-group-ID)
// bits that it may read and write (EPERM otherwise); it also needs write
// and search permission on the new parent (EACCES).
func (p *Proc) Linkat(olddirfd int, oldpath string, newdirfd int, newpath string, flags int) error {
	return p.linkAt("linkat", olddirfd, oldpath, newdirfd, newpath, flags)
}

func (p *Proc) linkAt(op string, olddirfd int, oldpath string, newdirfd int, newpath string, flags int) error {
	if flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return pathErr(op, oldpath, errEINVAL)
	}
	c := p.cred.Load()
	if flags&unix.AT_EMPTY_PATH != 0 && oldpath == "" && !c.capable() {
		// Linux 6.10+: a descriptor opened with the caller's very
		// credentials (f_cred == current_cred), or CAP_DAC_READ_SEARCH.
		if f := p.files.get(olddirfd); f != nil && f.cred != c {
			return pathErr(op, oldpath, errENOENT)
		}
	}
	lf := unix.AT_EMPTY_PATH
	if flags&unix.AT_SYMLINK_FOLLOW == 0 {
		lf |= unix.AT_SYMLINK_NOFOLLOW
	}
	old, err := p.lookupAt(olddirfd, oldpath, lf&^(unix.AT_EMPTY_PATH&^flags), lf)
	if err != nil {
		return pathErr(op, oldpath, err)
	}
	dir, name, trailing, err := p.walkParentAt(newdirfd, newpath)
	if err == nil {
		err = p.linkIn(c, old, dir, name, trailing)
	}
	return pathErr(op, newpath, err)
}

// linkIn is filename_create, may_linkat and vfs_link, in their order,
// under the new parent's lock.
func (p *Proc) linkIn(c *creds, old, dir location, name string, trailing bool) error {
	if name == "" || name == "." || name == ".." {
		return unix.EEXIST
	}
	dl := p.ns.lockDir(dir.node)
	defer dl.unlock()
	if err := dl.alive(); err != nil {
		return err
	}
	if err := p.mustBeFree(dir, name); err != nil {
		return err
	}
	if trailing {
		return errENOENT // filename_create: a trailing slash on a new non-directory
	}
	if dir.mnt.readonly {
		return unix.EROFS
	}
	if old.mnt != dir.mnt {
		return unix.EXDEV
	}
	if err := c.mayLinkat(p.ns, old); err != nil {
		return err
	}
	if err := c.mayCreate(dir, dl); err != nil {
		return err
	}
	if mode, _, _, err := nodeAttrs(old.node); err == nil && mode&(PermAppend|PermImmutable) != 0 {
		return unix.EPERM // vfs_link: no link to an append-only or immutable file
	}
	if isDir(old.node) {
		return unix.EPERM
	}
	l, ok := dir.node.(Linker)
	if !ok {
		return unix.EPERM
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	return l.Link(name, old.node, c.fsCred())
}

// mayLinkat is may_linkat: with the Hardlinks protection, the owner (or
// CAP_FOWNER) links anything; anyone else only a safe source, a regular
// file that is not set-user-ID, not executable set-group-ID, and that the
// caller may read and write.
func (c *creds) mayLinkat(ns *Namespace, old location) error {
	mode, uid, gid, err := nodeAttrs(old.node)
	if err != nil {
		return err
	}
	if c.ownerOrCapable(uid) || ns.prot().load().Hardlinks == 0 {
		return nil
	}
	safe := mode&unix.S_IFMT == unix.S_IFREG && mode&unix.S_ISUID == 0 &&
		mode&(unix.S_ISGID|unix.S_IXGRP) != unix.S_ISGID|unix.S_IXGRP &&
		c.permissionAttrs(old.mnt, old.node, mode, uid, gid, MayRead|MayWrite) == nil
	if !safe {
		return errEPERM
	}
	return nil
}

// Symlink creates linkpath, a symbolic link whose contents are target, as
// symlink(2) does. An empty target gives ENOENT.
func (p *Proc) Symlink(target, linkpath string) error {
	return p.symlinkAt("symlink", target, unix.AT_FDCWD, linkpath)
}

// Symlinkat is Symlink with linkpath relative to the directory open as
// newdirfd, as symlinkat(2) does. The caller needs write and search
// permission on the parent (EACCES).
func (p *Proc) Symlinkat(target string, newdirfd int, linkpath string) error {
	return p.symlinkAt("symlinkat", target, newdirfd, linkpath)
}

func (p *Proc) symlinkAt(op, target string, newdirfd int, linkpath string) error {
	if target == "" {
		return pathErr(op, linkpath, errENOENT)
	}
	if len(target) >= maxPath {
		return pathErr(op, linkpath, unix.ENAMETOOLONG)
	}
	dir, name, trailing, err := p.walkParentAt(newdirfd, linkpath)
	if err == nil {
		err = p.symlinkIn(dir, name, trailing, target)
	}
	return pathErr(op, linkpath, err)
}

func (p *Proc) symlinkIn(dir location, name string, trailing bool, target string) error {
	c, l, err := p.newEntry(dir, name, trailing)
	if err != nil {
		return err
	}
	defer l.unlock()
	s, ok := dir.node.(Symlinker)
	if !ok {
		return unix.EPERM
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	_, err = s.Symlink(name, target, c.fsCred())
	return err
}

// Readlink returns the contents of the symbolic link at path, as
// readlink(2) does; a file that is not a symlink gives EINVAL.
func (p *Proc) Readlink(path string) (string, error) {
	return p.readlinkAt("readlink", unix.AT_FDCWD, path)
}

// Readlinkat is Readlink with path relative to the directory open as
// dirfd, as readlinkat(2) does. An empty path reads the symlink open as
// dirfd (opened with O_PATH|O_NOFOLLOW); if dirfd is not a symlink that
// gives ENOENT.
func (p *Proc) Readlinkat(dirfd int, path string) (string, error) {
	return p.readlinkAt("readlinkat", dirfd, path)
}

func (p *Proc) readlinkAt(op string, dirfd int, path string) (string, error) {
	loc, err := p.lookupAt(dirfd, path, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return "", pathErr(op, path, err)
	}
	rl, ok := loc.node.(Readlinker)
	if !ok {
		if path == "" {
			return "", pathErr(op, path, errENOENT)
		}
		return "", pathErr(op, path, errEINVAL)
	}
	s, err := readlinkAccess(rl, loc)
	if err != nil {
		return "", pathErr(op, path, err)
	}
	return s, nil
}
