package vfs

// O_TMPFILE (Linux's do_tmpfile and vfs_tmpfile): an unnamed regular file
// made in a directory's file system, opened at once; it is freed with its
// last open file unless linkat(fd, "", AT_EMPTY_PATH) or linkat of
// /proc/self/fd/FD (LinkFd) gives it a name first, which O_EXCL forbids.

import "golang.org/x/sys/unix"

// Tmpfiler is a directory of a file system that makes unnamed files.
// Tmpfile makes a regular file with no link, permission bits mode (the
// umask and mode_strip_sgid already applied), owned by c as a file Create
// makes in this directory would be (a set-group-ID directory's group
// included). The VFS opens it at once; the file system frees it when the
// node's last open file is released, as an unlinked open file. When
// linkable is false (O_EXCL) no link may name it: Link gives ENOENT, as
// for any file whose links are gone; when true the first Link gives it
// its first name (Linux's I_LINKABLE), and a file unlinked again after
// that cannot be linked.
type Tmpfiler interface {
	Tmpfile(mode uint32, linkable bool, c Cred) (Node, error)
}

// openTmpfile is open(2) with O_TMPFILE once its flags are checked: path
// names the directory (symlinks followed); the caller needs write and
// search permission on it; EROFS on a read-only mount; EOPNOTSUPP when
// its file system makes no unnamed files.
func (p *Proc) openTmpfile(dirfd int, path string, flags int, perm uint32, resolve uint64) (*file, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	w := p.newWalker()
	w.rflags = resolve
	var start location
	var err error
	if w.scoped() && !(path[0] == '/' && resolve&unix.RESOLVE_BENEATH != 0) {
		start, err = p.dirStart(dirfd, ".")
		w.root = start
		w.seq = p.ns.rename.readBegin()
	} else {
		start, err = p.dirStart(dirfd, path)
	}
	if err != nil {
		return nil, err
	}
	dir, err := w.resolve(start, path, true)
	if err != nil {
		return nil, err
	}
	return p.tmpfileIn(w.cred, dir, flags, perm)
}

// tmpfileIn is O_TMPFILE's open in dir for c, once dir is found: do_tmpfile
// after its walk.
func (p *Proc) tmpfileIn(c *creds, dir location, flags int, perm uint32) (*file, error) {
	if !isDir(dir.node) {
		return nil, errENOTDIR
	}
	if err := c.permission(dir, MayWrite|MayExec); err != nil {
		return nil, err
	}
	if dir.mnt.readonly {
		return nil, unix.EROFS
	}
	tf, ok := dir.node.(Tmpfiler)
	if !ok {
		return nil, errEOPNOTSUP
	}
	mode, fc, err := p.createMode(c, dir.node, unix.S_IFREG, c.stripSgid(dir.node, unix.S_IFREG|perm&0o7777)&0o7777)
	if err != nil {
		return nil, err
	}
	n, err := tf.Tmpfile(mode, flags&unix.O_EXCL == 0, fc)
	if err != nil {
		return nil, err
	}
	f, err := p.openLoc(location{dir.mnt, n}, flags&^(oTmpfile|unix.O_DIRECTORY|unix.O_EXCL|unix.O_CREAT|unix.O_TRUNC), true)
	if f != nil {
		f.cred = c
	}
	return f, err
}
