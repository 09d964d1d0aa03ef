package overlay

// Namespace changes (Linux fs/overlayfs/dir.c): every change is made in
// the upper layer, after the parent directory is copied up; removing a
// name a lower layer has leaves a whiteout, and an object made where a
// whiteout is replaces it atomically through the work directory.

import (
	"runtime"
	"unsafe"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Create makes a regular file (ovl_create).
func (d *dirNode) Create(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	return (*node)(d).create(name, unix.S_IFREG|mode&0o7777, 0, "", c)
}

// Mkdir makes a directory (ovl_mkdir).
func (d *dirNode) Mkdir(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	return (*node)(d).create(name, unix.S_IFDIR|mode&0o7777, 0, "", c)
}

// Symlink makes a symbolic link (ovl_symlink).
func (d *dirNode) Symlink(name, target string, c vfs.Cred) (vfs.Node, error) {
	return (*node)(d).create(name, unix.S_IFLNK|0o777, 0, target, c)
}

// Mknod makes a special file or a regular one (ovl_mknod); a whiteout
// (a character device 0:0) gives EPERM, as the overlay shows none.
func (d *dirNode) Mknod(name string, mode uint32, rdev uint64, c vfs.Cred) (vfs.Node, error) {
	if mode&unix.S_IFMT == 0 {
		mode |= unix.S_IFREG
	}
	if mode&unix.S_IFMT == unix.S_IFCHR && rdev == 0 {
		return nil, unix.EPERM
	}
	return (*node)(d).create(name, mode, rdev, "", c)
}

func (d *node) create(name string, mode uint32, rdev uint64, target string, c vfs.Cred) (vfs.Node, error) {
	n, err := d.createObject(name, mode, rdev, target, c)
	if err != nil {
		return nil, err
	}
	return n.vnode(), nil
}

// createObject is ovl_create_object: the object is made in the upper
// directory, owned by c (the directory's group where it is set-group-ID,
// as inode_init_owner gives it). Where the name is a whiteout, or the
// owner is not the mounter's, it is made in the work directory first and
// renamed into place (ovl_create_over_whiteout), so that the name never
// shows a half-made object; a directory that replaces a whiteout is made
// opaque.
func (d *node) createObject(name string, mode uint32, rdev uint64, target string, c vfs.Cred) (*node, error) {
	fs := d.fs
	if fs.upper == nil {
		return nil, unix.EROFS
	}
	if err := d.copyUp(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.removed.Load() {
		return nil, unix.ENOENT
	}
	wh, err := d.upperWhiteout(name)
	if err != nil {
		return nil, err
	}
	typ := mode & unix.S_IFMT
	uid, gid := c.Uid, c.Gid
	muid, mgid := fs.mounter()
	if d.mode.Load()&unix.S_ISGID != 0 {
		gid, mgid = d.gid.Load(), d.gid.Load()
		if typ == unix.S_IFDIR {
			mode |= unix.S_ISGID // inode_init_owner
		}
	}
	up := fs.upper.p
	u := d.upper.Load()
	defer runtime.KeepAlive(d)
	var fd int
	if !wh && uid == muid && gid == mgid {
		if fd, err = fs.makeReal(u.fd, name, mode, rdev, target); err != nil {
			return nil, err
		}
	} else {
		tmp := fs.tempName()
		if fd, err = fs.makeReal(fs.work, tmp, mode, rdev, target); err != nil {
			fs.cleanupWork(tmp, typ == unix.S_IFDIR)
			return nil, err
		}
		undo := func(err error) (*node, error) {
			up.Close(fd)
			fs.cleanupWork(tmp, typ == unix.S_IFDIR)
			return nil, err
		}
		if uid != muid || gid != mgid {
			if err := up.Fchownat(fd, "", int(uid), int(gid), unix.AT_EMPTY_PATH); err != nil {
				return undo(errno(err))
			}
		}
		if typ != unix.S_IFLNK {
			// The mode the upper directory would have given: the set-ID
			// bits chown cleared, and a set-group-ID parent's bit, which
			// the work directory does not pass on.
			if err := up.Fchmodat(fd, "", mode&0o7777, unix.AT_EMPTY_PATH); err != nil {
				return undo(errno(err))
			}
		}
		flags := uint(0)
		if typ == unix.S_IFDIR && wh {
			if err := up.SetxattrFd(fd, fs.prefix+"opaque", []byte("y"), 0); err != nil {
				return undo(errno(err))
			}
			flags = unix.RENAME_EXCHANGE
		}
		if err := up.Renameat2(fs.work, tmp, u.fd, name, flags); err != nil {
			return undo(errno(err))
		}
		if flags != 0 {
			fs.cleanupWork(tmp, false) // the whiteout it replaced
		}
	}
	r, err := newReal(fs.upper, fd)
	if err != nil {
		return nil, err
	}
	st, err := r.stat()
	if err != nil {
		r.close()
		return nil, err
	}
	n := fs.newNode(d, name, &r, nil, st)
	n.opaque.Store(typ == unix.S_IFDIR && wh)
	if typ != unix.S_IFDIR {
		fs.registerUpper(st.Ino, n)
	}
	d.children[name] = weakOf(n)
	return n, nil
}

// mounter returns the fsuid and fsgid the upper layer's objects get.
func (fs *FS) mounter() (uid, gid uint32) {
	return uint32(fs.upper.p.Geteuid()), uint32(fs.upper.p.Getegid())
}

// makeReal makes an object in the upper directory dirfd and returns it
// open with O_PATH.
func (fs *FS) makeReal(dirfd int, name string, mode uint32, rdev uint64, target string) (int, error) {
	up := fs.upper.p
	var err error
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		err = up.Mkdirat(dirfd, name, mode&0o7777)
	case unix.S_IFLNK:
		err = up.Symlinkat(target, dirfd, name)
	default:
		err = up.Mknodat(dirfd, name, mode, int(rdev))
	}
	if err != nil {
		return -1, errno(err)
	}
	fd, err := up.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW, 0)
	return fd, errno(err)
}

// makeWhiteout makes a whiteout in the work directory and returns its
// name: a hard link to the mount's shared whiteout, or a character device
// 0:0 of its own where links fail (ovl_whiteout).
func (fs *FS) makeWhiteout() (string, error) {
	up := fs.upper.p
	tmp := fs.tempName()
	fs.whMu.Lock()
	defer fs.whMu.Unlock()
	if fs.whLinks && fs.whiteout < 0 {
		shared := fs.tempName()
		if err := up.Mknodat(fs.work, shared, unix.S_IFCHR, 0); err != nil {
			return "", errno(err)
		}
		fd, err := up.Openat(fs.work, shared, unix.O_PATH|unix.O_NOFOLLOW, 0)
		if err != nil {
			return "", errno(err)
		}
		fs.whiteout = fd
	}
	if fs.whLinks {
		if err := up.Linkat(fs.whiteout, "", fs.work, tmp, unix.AT_EMPTY_PATH); err == nil {
			return tmp, nil
		}
		fs.whLinks = false
	}
	if err := up.Mknodat(fs.work, tmp, unix.S_IFCHR, 0); err != nil {
		return "", errno(err)
	}
	return tmp, nil
}

// Link makes name another link to target (ovl_link): target is copied up
// and its upper object linked.
func (d *dirNode) Link(name string, target vfs.Node, c vfs.Cred) error {
	dn := (*node)(d)
	fs := dn.fs
	t := asNode(target)
	if t == nil || t.fs != fs {
		return unix.EXDEV
	}
	if fs.upper == nil {
		return unix.EROFS
	}
	if err := t.copyUp(); err != nil {
		return err
	}
	if err := dn.copyUp(); err != nil {
		return err
	}
	dn.mu.Lock()
	defer dn.mu.Unlock()
	if dn.removed.Load() {
		return unix.ENOENT
	}
	wh, err := dn.upperWhiteout(name)
	if err != nil {
		return err
	}
	up := fs.upper.p
	tu, u := t.upper.Load(), dn.upper.Load()
	defer runtime.KeepAlive(dn)
	defer runtime.KeepAlive(t)
	if !wh {
		if err := up.Linkat(tu.fd, "", u.fd, name, unix.AT_EMPTY_PATH); err != nil {
			return errno(err)
		}
	} else {
		tmp := fs.tempName()
		if err := up.Linkat(tu.fd, "", fs.work, tmp, unix.AT_EMPTY_PATH); err != nil {
			return errno(err)
		}
		if err := up.Renameat2(fs.work, tmp, u.fd, name, 0); err != nil {
			fs.cleanupWork(tmp, false)
			return errno(err)
		}
	}
	dn.children[name] = weakOf(t)
	return nil
}

// Unlink removes a non-directory (ovl_unlink).
func (d *dirNode) Unlink(name string, c vfs.Cred) error { return (*node)(d).remove(name, false) }

// Rmdir removes an empty directory (ovl_rmdir): empty in the merged view,
// whatever whiteouts its upper directory holds.
func (d *dirNode) Rmdir(name string, c vfs.Cred) error { return (*node)(d).remove(name, true) }

// remove is ovl_do_remove: the name goes from the upper directory; where
// a lower layer has it, a whiteout takes its place, renamed over it from
// the work directory (over a directory by exchange, the directory then
// removed from the work directory with the whiteouts it held).
func (d *node) remove(name string, isDir bool) error {
	fs := d.fs
	if fs.upper == nil {
		return unix.EROFS
	}
	ch, err := d.child(name)
	if err != nil {
		return err
	}
	if isDir && len(ch.lower) > 0 {
		if err := ch.checkEmpty(); err != nil {
			return err
		}
	}
	if err := d.copyUp(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cached(name) != ch {
		return unix.ENOENT
	}
	up := fs.upper.p
	u := d.upper.Load()
	defer runtime.KeepAlive(d)
	cu := ch.upper.Load()
	if cu != nil && !d.lowerPositive(name) {
		if err := up.Unlinkat(u.fd, name, unlinkFlags(ch.typ)); err != nil {
			return errno(err)
		}
	} else {
		tmp, err := fs.makeWhiteout()
		if err != nil {
			return err
		}
		flags := uint(0)
		if cu != nil && isDir {
			flags = unix.RENAME_EXCHANGE
		}
		if err := up.Renameat2(fs.work, tmp, u.fd, name, flags); err != nil {
			fs.cleanupWork(tmp, false)
			return errno(err)
		}
		if flags != 0 {
			fs.cleanupWork(tmp, true) // the directory, with its whiteouts
		}
	}
	delete(d.children, name)
	fs.dropName(ch)
	return nil
}

// dropName notes that one of n's names went: a node without another is
// forgotten.
func (fs *FS) dropName(n *node) {
	if u := n.upper.Load(); u != nil && n.typ != unix.S_IFDIR {
		st, err := u.l.p.Fstat(u.fd)
		runtime.KeepAlive(n)
		if err == nil && st.Nlink > 0 {
			return
		}
	}
	fs.forget(n)
}

// checkEmpty gives ENOTEMPTY for a directory whose merged view has
// entries (ovl_check_empty_dir).
func (n *node) checkEmpty() error {
	ents, err := n.entries()
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return unix.ENOTEMPTY
	}
	return nil
}

// Rename is ovl_rename without redirect_dir: a directory with a lower
// part cannot move (EXDEV, for the caller to copy it as mv does). The
// source, the target directory and, for an exchange, the target are
// copied up; the rename is the upper layer's, with RENAME_WHITEOUT where
// a lower layer has the source's name, an exchange where the target name
// is a whiteout to keep or to drop after, and a moved directory made
// opaque when its new parent is merged. RENAME_WHITEOUT gives EINVAL.
func (d *dirNode) Rename(oldName string, newDir vfs.Node, newName string, flags uint, c vfs.Cred) error {
	od := (*node)(d)
	fs := od.fs
	nd := asNode(newDir)
	if nd == nil || nd.fs != fs || nd.typ != unix.S_IFDIR {
		return unix.EXDEV
	}
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 {
		return unix.EINVAL
	}
	if fs.upper == nil {
		return unix.EROFS
	}
	exchange := flags&unix.RENAME_EXCHANGE != 0
	old, err := od.child(oldName)
	if err != nil {
		return err
	}
	newc, err := nd.child(newName)
	if err != nil && err != unix.ENOENT {
		return err
	}
	isDir := old.typ == unix.S_IFDIR
	newIsDir := newc != nil && newc.typ == unix.S_IFDIR
	if isDir && !old.pureUpper() {
		return unix.EXDEV
	}
	if exchange && newIsDir && !newc.pureUpper() {
		return unix.EXDEV
	}
	if !exchange && newIsDir && !newc.pureUpper() {
		if err := newc.checkEmpty(); err != nil {
			return err
		}
	}
	if err := old.copyUp(); err != nil {
		return err
	}
	if err := nd.copyUp(); err != nil {
		return err
	}
	if exchange {
		if err := newc.copyUp(); err != nil {
			return err
		}
	}
	unlock := lockPair(od, nd)
	defer unlock()
	if od.cached(oldName) != old || (newc != nil && nd.cached(newName) != newc) {
		return unix.ENOENT
	}
	up := fs.upper.p
	ou, nu := od.upper.Load(), nd.upper.Load()
	defer runtime.KeepAlive(od)
	defer runtime.KeepAlive(nd)
	rflags := flags &^ unix.RENAME_NOREPLACE
	if !exchange && newIsDir && newc.upper.Load() != nil && newc.merged() {
		if err := newc.clearEmpty(nd, newName); err != nil {
			return err
		}
		// Its upper object is gone: a lookup must not find the node.
		delete(nd.children, newName)
	}
	newWh := false
	if newc == nil {
		if newWh, err = nd.upperWhiteout(newName); err != nil {
			return err
		}
	}
	dropWh := false
	if !exchange {
		if od.lowerPositive(oldName) {
			if newWh {
				rflags |= unix.RENAME_EXCHANGE // the whiteouts change places
			} else {
				rflags |= unix.RENAME_WHITEOUT
			}
		} else if isDir && newWh {
			rflags |= unix.RENAME_EXCHANGE
			dropWh = true
		}
	}
	if isDir && !old.opaque.Load() && nd.merged() {
		if err := fs.setOpaque(old); err != nil {
			return err
		}
	}
	if exchange && newIsDir && !newc.opaque.Load() && od.merged() {
		if err := fs.setOpaque(newc); err != nil {
			return err
		}
	}
	if err := up.Renameat2(ou.fd, oldName, nu.fd, newName, rflags); err != nil {
		return errno(err)
	}
	if dropWh {
		up.Unlinkat(ou.fd, oldName, 0)
	}
	delete(od.children, oldName)
	nd.children[newName] = weakOf(old)
	old.at.set(nd, newName)
	if exchange {
		od.children[oldName] = weakOf(newc)
		newc.at.set(od, oldName)
	} else if newc != nil {
		fs.dropName(newc)
	}
	return nil
}

// setOpaque marks a directory's upper object opaque.
func (fs *FS) setOpaque(n *node) error {
	u := n.upper.Load()
	err := fs.upper.p.SetxattrFd(u.fd, fs.prefix+"opaque", []byte("y"), 0)
	runtime.KeepAlive(n)
	if err != nil {
		return errno(err)
	}
	n.opaque.Store(true)
	return nil
}

// clearEmpty replaces the upper directory of n, a merged directory empty
// in the overlay (called name in parent), by an empty opaque one with its
// attributes, so that a rename can replace it (ovl_clear_empty): the new
// one is made in the work directory and exchanged with it, and the old
// one removed with its whiteouts.
func (n *node) clearEmpty(parent *node, name string) error {
	fs := n.fs
	up := fs.upper.p
	u := n.upper.Load()
	defer runtime.KeepAlive(n)
	st, err := up.Fstat(u.fd)
	if err != nil {
		return errno(err)
	}
	tmp := fs.tempName()
	if err := up.Mkdirat(fs.work, tmp, 0); err != nil {
		return errno(err)
	}
	fd, err := up.Openat(fs.work, tmp, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err == nil {
		err = fs.copyXattrs(*u, fd)
		if err == nil {
			err = errno(up.SetxattrFd(fd, fs.prefix+"opaque", []byte("y"), 0))
		}
		if err == nil {
			err = fs.setAttrs(fd, st)
		}
		up.Close(fd)
	}
	if err == nil {
		pu := parent.upper.Load()
		err = errno(up.Renameat2(fs.work, tmp, pu.fd, name, unix.RENAME_EXCHANGE))
		runtime.KeepAlive(parent)
	}
	fs.cleanupWork(tmp, true)
	return errno(err)
}

// lockPair locks the mutexes of directories a and b (one if they are the
// same) in address order, and returns their unlock.
func lockPair(a, b *node) func() {
	if a == b {
		a.mu.Lock()
		return a.mu.Unlock
	}
	if uintptr(unsafe.Pointer(a)) > uintptr(unsafe.Pointer(b)) {
		a, b = b, a
	}
	a.mu.Lock()
	b.mu.Lock()
	return func() { b.mu.Unlock(); a.mu.Unlock() }
}
