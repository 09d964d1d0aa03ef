package vfs

import "golang.org/x/sys/unix"

// Access checks whether the calling process may use the file at path as
// mode says (unix.R_OK, W_OK, X_OK, or F_OK for existence), with its real
// user and group ids, as access(2) does. The answer is nil or an error:
// EACCES, or EROFS for W_OK on a read-only mount.
func (p *Proc) Access(path string, mode uint32) error {
	return p.faccessat("access", unix.AT_FDCWD, path, mode, 0)
}

// Faccessat2 is Access with path relative to the directory open as dirfd,
// as faccessat2(2) does. flags may hold AT_EACCESS (check with the
// effective ids, as open would), AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH;
// other flags, or mode bits beyond R_OK|W_OK|X_OK, give EINVAL.
//
// Without AT_EACCESS the check, the search permissions of the walk
// included, uses the real uid and gid as fsuid and fsgid, and the
// capabilities of the real uid (Linux's access_override_creds). Root
// passes R_OK and W_OK always, and X_OK on a file with some x bit.
func (p *Proc) Faccessat2(dirfd int, path string, mode uint32, flags int) error {
	return p.faccessat("faccessat2", dirfd, path, mode, flags)
}

func (p *Proc) faccessat(op string, dirfd int, path string, mode uint32, flags int) error {
	if mode&^uint32(unix.R_OK|unix.W_OK|unix.X_OK) != 0 {
		return pathErr(op, path, errEINVAL)
	}
	if flags&^(unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return pathErr(op, path, errEINVAL)
	}
	c := p.cred.Load()
	if flags&unix.AT_EACCESS == 0 && (c.fsuid != c.ruid || c.fsgid != c.rgid) {
		o := *c
		o.fsuid, o.fsgid = c.ruid, c.rgid
		o.euid = c.ruid // the capabilities follow the real uid
		c = &o
	}
	loc, err := p.lookupAtAs(c, dirfd, path, flags&^unix.AT_EACCESS, unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH)
	if err == nil {
		err = c.access(loc, mode)
	}
	return pathErr(op, path, err)
}

// access is the end of do_faccessat: inode_permission, then EROFS for
// W_OK on a read-only mount (not for special files).
func (c *creds) access(loc location, mode uint32) error {
	m, uid, gid, err := nodeAttrs(loc.node)
	if err != nil {
		return err
	}
	if err := c.permissionAttrs(loc.mnt, loc.node, m, uid, gid, int(mode)); err != nil {
		return err
	}
	typ := m & unix.S_IFMT
	special := typ != unix.S_IFREG && typ != unix.S_IFDIR && typ != unix.S_IFLNK
	if mode&unix.W_OK != 0 && !special && loc.readonly() {
		return unix.EROFS
	}
	return nil
}
