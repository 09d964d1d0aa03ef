package vfs

import "golang.org/x/sys/unix"

// Mknod creates a file system node at path, as mknod(2) does: mode holds
// the file type (unix.S_IFREG, or 0 for a regular file; S_IFIFO, S_IFSOCK,
// S_IFCHR, S_IFBLK) and the permission bits, less the umask; dev is the
// device number of a device node. A directory type gives EPERM, any other
// unknown type EINVAL (before the path is looked at, as Linux's may_mknod
// runs first); an existing name gives EEXIST.
//
// Opening a FIFO gives a pipe; opening a socket gives ENXIO; opening a
// device node gives the driver registered for its number, or ENXIO.
func (p *Proc) Mknod(path string, mode uint32, dev uint64) error {
	return p.mknodAt("mknod", unix.AT_FDCWD, path, mode, dev)
}

// Mknodat is Mknod with path relative to the directory open as dirfd, as
// mknodat(2) does. The caller needs write and search permission on the
// parent (EACCES); a character or block device other than 0:0 (a
// whiteout) needs CAP_MKNOD (EPERM). In a set-group-ID directory whose
// group the caller is not in, a group-executable S_ISGID bit is dropped.
func (p *Proc) Mknodat(dirfd int, path string, mode uint32, dev int) error {
	return p.mknodAt("mknodat", dirfd, path, mode, uint64(uint32(dev)))
}

func (p *Proc) mknodAt(op string, dirfd int, path string, mode uint32, dev uint64) error {
	if err := mknodType(mode); err != nil {
		return pathErr(op, path, err)
	}
	dir, name, trailing, err := p.walkParentAt(dirfd, path)
	if err == nil {
		err = p.mknodIn(dir, name, trailing, mode, dev)
	}
	return pathErr(op, path, err)
}

// mknodType is Linux's may_mknod: the file types mknod(2) can make.
func mknodType(mode uint32) error {
	switch mode & unix.S_IFMT {
	case 0, unix.S_IFREG, unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
		return nil
	case unix.S_IFDIR:
		return unix.EPERM
	}
	return errEINVAL
}

func (p *Proc) mknodIn(dir location, name string, trailing bool, mode uint32, dev uint64) error {
	c, l, err := p.newEntry(dir, name, trailing)
	if err != nil {
		return err
	}
	defer l.unlock()
	typ := mode & unix.S_IFMT
	if typ == 0 {
		typ = unix.S_IFREG
	}
	if (typ == unix.S_IFBLK || typ == unix.S_IFCHR && dev != 0) && !c.capable() {
		return unix.EPERM // CAP_MKNOD; a whiteout (0:0) needs none
	}
	perm, fc, err := p.createMode(c, dir.node, typ, c.stripSgid(dir.node, typ|mode&0o7777)&0o7777)
	if err != nil {
		return err
	}
	defer p.ns.dcache.invalidate(dir.node, name).done()
	if typ == unix.S_IFREG {
		if cr, ok := dir.node.(Creator); ok {
			_, err := cr.Create(name, perm, fc)
			return err
		}
	}
	m, ok := dir.node.(Mknoder)
	if !ok {
		return unix.EPERM
	}
	if typ != unix.S_IFCHR && typ != unix.S_IFBLK {
		dev = 0
	}
	_, err = m.Mknod(name, typ|perm, dev, fc)
	return err
}

// openSpecial opens a node made by mknod that has no driver of its own.
// A FIFO opens as a pipe shared by every open of the node (fifo.go). A
// character or block device node opens the driver registered in the
// namespace for its type and number (RegisterDevice), or gives ENXIO, as
// chrdev_open and blkdev_open do for an unregistered number. A socket
// gives ENXIO, as opening a Unix socket's inode does in Linux.
func (p *Proc) openSpecial(loc location, st Stat, flags int) (*file, error) {
	typ := st.Mode & unix.S_IFMT
	if typ == unix.S_IFIFO {
		return p.openFIFO(loc, flags)
	}
	if typ != unix.S_IFCHR && typ != unix.S_IFBLK {
		return nil, unix.ENXIO
	}
	d := p.ns.device(typ, st.Rdev)
	if d == nil {
		return nil, unix.ENXIO
	}
	h, err := d.Open(flags, p.cred.Load().fsCred())
	if err != nil {
		return nil, err
	}
	f := newFile(loc.node, h, flags)
	f.mnt = loc.mnt
	f.loc = loc
	loc.mnt.openFiles.Add(1)
	return f, nil
}
