package vfs

// Permission checks (Linux fs/namei.c generic_permission and
// acl_permission_check, fs/attr.c, fs/inode.c). They are done here, once
// for every file system; drivers never check modes.

import (
	"golang.org/x/sys/unix"
)

// Permission masks, Linux's MAY_*.
const (
	MayExec  = 1
	MayWrite = 2
	MayRead  = 4
)

var errEACCES error = unix.EACCES
var errEPERM error = unix.EPERM

// nodeAttrs returns what permission checks need of n: its mode with the
// Perm* state bits, owner and group. A PermAttrer answers without a full
// Stat.
func nodeAttrs(n Node) (mode, uid, gid uint32, err error) {
	if pa, ok := n.(PermAttrer); ok {
		mode, uid, gid = pa.PermAttrs()
		return mode, uid, gid, nil
	}
	st, err := n.Stat()
	return st.Mode | statPerm(n, &st), st.Uid, st.Gid, err
}

// statPerm returns the Perm* state bits of n, whose Stat is st: a
// PermAttrer's own, else those st's attributes give, and PermACL for an
// ACLer (which may have an ACL). A capability xattr is reported only
// through PermAttrs (PermKillPriv): looking for one at every write would
// cost a Stat and an xattr lookup.
func statPerm(n Node, st *Stat) uint32 {
	if pa, ok := n.(PermAttrer); ok {
		m, _, _ := pa.PermAttrs()
		return m & permBits
	}
	var b uint32
	if st.Attributes&unix.STATX_ATTR_IMMUTABLE != 0 {
		b |= PermImmutable
	}
	if st.Attributes&unix.STATX_ATTR_APPEND != 0 {
		b |= PermAppend
	}
	if _, ok := n.(ACLer); ok {
		b |= PermACL
	}
	return b
}

// generic is generic_permission for credentials c on node n, a file with
// mode (and its Perm* bits), uid and gid: acl_permission_check, then the
// capabilities. The owner class if fsuid owns the file; else, if the
// file has an access ACL and group bits (its mask), the ACL decides
// (posix_acl_permission); else the group class if the file's group is the
// fsgid or a supplementary group, else other. Only one class is
// consulted, so the group bits can deny what the other bits allow. With
// the file capabilities (fsuid 0), reading and writing are always allowed
// (CAP_DAC_OVERRIDE), and so is searching a directory; executing a
// non-directory needs some x bit.
func (c *creds) generic(n Node, mode, uid, gid uint32, mask int) error {
	m := mode
	if uid == c.fsuid {
		m >>= 6
	} else {
		if mode&PermACL != 0 && mode&0o070 != 0 {
			switch c.checkACL(n, gid, mask) {
			case aclGranted:
				return nil
			case aclDenied:
				m = 0
				goto capable
			}
		}
		if uint32(mask)&(m^m>>3)&7 != 0 && c.inGroup(gid) {
			m >>= 3
		}
	}
	if uint32(mask)&7&^m == 0 {
		return nil
	}
capable:
	if c.fsCapable() {
		if mode&unix.S_IFMT == unix.S_IFDIR || mask&MayExec == 0 || mode&0o111 != 0 {
			return nil
		}
	}
	return errEACCES
}

// permission is Linux's inode_permission for the node at loc: writing to
// a regular file, directory or symlink of a read-only file system gives
// EROFS (sb_permission; a read-only bind mount is checked by the callers,
// after this), then generic_permission decides (EACCES). mask is a
// combination of MayRead, MayWrite and MayExec. The lead wires this into
// the calls of other files (xattrs, fallocate) through Proc.permission.
func (c *creds) permission(loc location, mask int) error {
	mode, uid, gid, err := nodeAttrs(loc.node)
	if err != nil {
		return err
	}
	return c.permissionAttrs(loc.mnt, loc.node, mode, uid, gid, mask)
}

// permissionAttrs is inode_permission for node n of mount m, whose mode
// (with its Perm* bits), uid and gid the caller has: EROFS (sb_permission),
// then EPERM for writing an immutable file, then generic_permission.
func (c *creds) permissionAttrs(m *mount, n Node, mode, uid, gid uint32, mask int) error {
	if mask&MayWrite != 0 {
		if m != nil && m.sbReadonly {
			switch mode & unix.S_IFMT {
			case unix.S_IFREG, unix.S_IFDIR, unix.S_IFLNK:
				return unix.EROFS
			}
		}
		if mode&PermImmutable != 0 {
			return errEPERM // nobody gets write access to an immutable file
		}
	}
	return c.generic(n, mode, uid, gid, mask)
}

// permissionStat is permissionAttrs for the node at loc, whose Stat is st.
func (c *creds) permissionStat(loc location, st *Stat, mask int) error {
	return c.permissionAttrs(loc.mnt, loc.node, st.Mode|statPerm(loc.node, st), st.Uid, st.Gid, mask)
}

// ownerOrCapable is Linux's inode_owner_or_capable: the fsuid owns the file
// or the process has CAP_FOWNER.
func (c *creds) ownerOrCapable(uid uint32) bool {
	return uid == c.fsuid || c.fsCapable()
}

// inodeOwnerOrCapable reports whether the calling process owns n (fsuid)
// or has CAP_FOWNER, as Linux's inode_owner_or_capable: the test for
// chmod, explicit utimes, O_NOATIME and setting "trusted."-less xattrs on
// sticky directories.
func (p *Proc) inodeOwnerOrCapable(st Stat) bool {
	return p.cred.Load().ownerOrCapable(st.Uid)
}

// inGroupOrCapable is Linux's in_group_or_capable: gid is one of the
// caller's groups, or it has CAP_FSETID.
func (c *creds) inGroupOrCapable(gid uint32) bool {
	return c.inGroup(gid) || c.fsCapable()
}

// mayLookup is the search check the walk makes on every directory it
// looks a name up in (may_lookup). Root skips it at the cost of one
// compare.
func (c *creds) mayLookup(loc location) error {
	if c == nil || c.fsCapable() {
		return nil // CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH: search is always allowed
	}
	mode, uid, gid, err := nodeAttrs(loc.node)
	if err != nil {
		return err
	}
	return c.generic(loc.node, mode, uid, gid, MayExec)
}

// mayCreate is may_create: write and search permission on the directory
// that gets the new name (EEXIST and the dead-directory ENOENT are the
// file system's).
//
// l is dir's lock, held: a directory removed meanwhile gives ENOENT
// before the permission check, as may_create's IS_DEADDIR does.
func (c *creds) mayCreate(dir location, l *DirLock) error {
	if err := l.alive(); err != nil {
		return err
	}
	return c.permission(dir, MayWrite|MayExec)
}

// checkSticky is check_sticky: in a sticky directory only the owner of the
// file, the owner of the directory, or a process with CAP_FOWNER may
// remove or rename an entry.
func (c *creds) checkSticky(dirMode, dirUid, fileUid uint32) bool {
	if dirMode&unix.S_ISVTX == 0 {
		return false
	}
	return fileUid != c.fsuid && dirUid != c.fsuid && !c.fsCapable()
}

// mayDelete is may_delete for removing victim, the node of an entry of
// dir: write and search on dir (EACCES), the sticky rule (EPERM), then
// the type the call expects (ENOTDIR for rmdir of a non-directory, EISDIR
// for unlink of a directory).
func (c *creds) mayDelete(dir location, victim Node, wantDir bool) error {
	dmode, duid, dgid, err := nodeAttrs(dir.node)
	if err != nil {
		return err
	}
	if err := c.permissionAttrs(dir.mnt, dir.node, dmode, duid, dgid, MayWrite|MayExec); err != nil {
		return err
	}
	vmode, vuid, _, err := nodeAttrs(victim)
	if err != nil {
		return err
	}
	if c.checkSticky(dmode, duid, vuid) {
		return errEPERM
	}
	if dmode&PermAppend != 0 || vmode&(PermAppend|PermImmutable) != 0 {
		return errEPERM // IS_APPEND(dir), IS_APPEND or IS_IMMUTABLE(victim)
	}
	vdir := vmode&unix.S_IFMT == unix.S_IFDIR
	if wantDir && !vdir {
		return errENOTDIR
	}
	if !wantDir && vdir {
		return errEISDIR
	}
	return nil
}

// stripSgid is mode_strip_sgid for a new non-directory in dir: a file that
// would be setgid and group-executable in a setgid directory whose group
// the caller is not in loses S_ISGID (unless CAP_FSETID).
func (c *creds) stripSgid(dir Node, mode uint32) uint32 {
	if mode&(unix.S_ISGID|unix.S_IXGRP) != unix.S_ISGID|unix.S_IXGRP || mode&unix.S_IFMT == unix.S_IFDIR {
		return mode
	}
	dmode, _, dgid, err := nodeAttrs(dir)
	if err != nil || dmode&unix.S_ISGID == 0 || c.inGroupOrCapable(dgid) {
		return mode
	}
	return mode &^ unix.S_ISGID
}
