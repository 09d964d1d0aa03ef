package vfs

import "golang.org/x/sys/unix"

// Mkdir creates the directory path with permission bits perm less the
// umask, as mkdir(2) does. An existing name, "." or ".." gives EEXIST.
func (p *Proc) Mkdir(path string, perm uint32) error {
	dir, name, _, err := p.walkParent(path)
	if err == nil {
		err = p.mkdirIn(dir, name, perm)
	}
	return pathErr("mkdir", path, err)
}

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
	m, ok := dir.node.(Mkdirer)
	if !ok {
		return unix.EPERM
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	_, err := m.Mkdir(name, perm&0o7777&^p.umask.Load(), p.cred)
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
