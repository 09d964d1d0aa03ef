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
// permission on the parent.
func (p *Proc) mkdirIn(dir location, name string, perm uint32) error {
	if name == "" || name == "." || name == ".." {
		return unix.EEXIST
	}
	if err := p.mustBeFree(dir, name); err != nil {
		return err
	}
	if dir.mnt.readonly {
		return unix.EROFS
	}
	c := p.cred.Load()
	if err := c.mayCreate(dir); err != nil {
		return err
	}
	m, ok := dir.node.(Mkdirer)
	if !ok {
		return unix.EPERM
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	// vfs_prepare_mode: mkdir keeps only the permission and sticky bits.
	_, err := m.Mkdir(name, perm&(0o777|unix.S_ISVTX)&^p.umask.Load(), c.fsCred())
	return err
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
