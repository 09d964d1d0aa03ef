package vfs

import "golang.org/x/sys/unix"

// Mkdir creates the directory path with permission bits perm less the
// umask, as mkdir(2) does. An existing name, "." or ".." gives EEXIST.
func (p *Proc) Mkdir(path string, perm uint32) error {
	return p.mkdirAt("mkdir", unix.AT_FDCWD, path, perm)
}

// Mkdirat is Mkdir with path relative to the directory open as dirfd, as
// mkdirat(2) does. The caller needs write and search permission on the
// parent (EACCES); in a set-group-ID directory the new directory takes
// the directory's group and the S_ISGID bit.
func (p *Proc) Mkdirat(dirfd int, path string, perm uint32) error {
	return p.mkdirAt("mkdirat", dirfd, path, perm)
}

func (p *Proc) mkdirAt(op string, dirfd int, path string, perm uint32) error {
	dir, name, _, err := p.walkParentAt(dirfd, path)
	if err == nil {
		err = p.mkdirIn(dir, name, perm)
	}
	return pathErr(op, path, err)
}

// mkdirIn is filename_create then vfs_mkdir: EEXIST, EROFS, then the
// permission on the parent, under the parent's lock.
func (p *Proc) mkdirIn(dir location, name string, perm uint32) error {
	c, l, err := p.newEntry(dir, name, false)
	if err != nil {
		return err
	}
	defer l.unlock()
	m, ok := dir.node.(Mkdirer)
	if !ok {
		return unix.EPERM
	}
	// vfs_prepare_mode: mkdir keeps only the permission and sticky bits.
	mode, fc, err := p.createMode(c, dir.node, unix.S_IFDIR, perm&(0o777|unix.S_ISVTX))
	if err != nil {
		return err
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	_, err = m.Mkdir(name, mode, fc)
	return err
}

// newEntry is filename_create and may_create for the calls that add name
// to dir (mkdir, mknod, symlink): the name's form (EEXIST for "", "." and
// ".."), then under dir's lock the lookup (EEXIST), a trailing slash on a
// new non-directory (ENOENT, when trailing), the mount (EROFS), a removed
// dir (ENOENT) and the caller's write and search permission on it
// (EACCES). On success it returns the caller's credentials and dir's
// lock, held; the caller unlocks it after the change.
func (p *Proc) newEntry(dir location, name string, trailing bool) (*creds, *DirLock, error) {
	if name == "" || name == "." || name == ".." {
		return nil, nil, unix.EEXIST
	}
	l := p.ns.lockDir(dir.node)
	c, err := p.mayAdd(dir, l, name, trailing)
	if err != nil {
		l.unlock()
		return nil, nil, err
	}
	return c, l, nil
}

// mayAdd is newEntry's checks with dir's lock l held. A removed dir gives
// ENOENT before any lookup, as lookup_one_qstr_excl creates no dentry in
// a dead directory.
func (p *Proc) mayAdd(dir location, l *DirLock, name string, trailing bool) (*creds, error) {
	if err := l.alive(); err != nil {
		return nil, err
	}
	if err := p.mustBeFree(dir, name); err != nil {
		return nil, err
	}
	if trailing {
		return nil, errENOENT // filename_create: a trailing slash on a new non-directory
	}
	if dir.mnt.readonly {
		return nil, unix.EROFS
	}
	c := p.cred.Load()
	if err := c.mayCreate(dir, l); err != nil {
		return nil, err
	}
	return c, nil
}

// mustBeFree gives EEXIST if name exists in dir, or the lookup's error
// other than ENOENT.
func (p *Proc) mustBeFree(dir location, name string) error {
	lk, ok := dir.node.(Lookuper)
	if !ok {
		return errENOTDIR
	}
	_, err := lk.Lookup(name)
	switch {
	case err == nil:
		return unix.EEXIST
	case err == errENOENT || err == unix.ENOENT:
		return nil
	}
	return err
}
