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
	if err := mknodType(mode); err != nil {
		return pathErr("mknod", path, err)
	}
	dir, name, trailing, err := p.walkParent(path)
	if err == nil {
		err = p.mknodIn(dir, name, trailing, mode, dev)
	}
	return pathErr("mknod", path, err)
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
	if name == "" || name == "." || name == ".." {
		return unix.EEXIST
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
	typ := mode & unix.S_IFMT
	if typ == 0 {
		typ = unix.S_IFREG
	}
	perm := mode & 0o7777 &^ p.umask.Load()
	if typ == unix.S_IFREG {
		if c, ok := dir.node.(Creator); ok {
			_, err := c.Create(name, perm, p.cred)
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
	_, err := m.Mknod(name, typ|perm, dev, p.cred)
	return err
}

// openSpecial opens a node made by mknod that has no driver of its own:
// a FIFO opens as a pipe (fifo.go); a socket gives ENXIO, as opening a
// Unix socket's inode does in Linux. Device nodes are handled by the
// device code when it is present; until then they give ENXIO too, as an
// unregistered device number does (chrdev_open, blkdev_open).
func (p *Proc) openSpecial(loc location, st Stat, flags int) (*file, error) {
	// FIFO (issue 10): a pipe shared by every open of the node; fifo.go.
	if st.Mode&unix.S_IFMT == unix.S_IFIFO {
		return p.openFIFO(loc, flags)
	}
	// end FIFO
	return nil, unix.ENXIO
}
