package vfs

import (
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Getxattr returns the value of the extended attribute name of the file at
// path, following symlinks, as getxattr(2) does. A missing attribute gives
// ENODATA; a file system without extended attributes gives EOPNOTSUPP.
func (p *Proc) Getxattr(path, name string) ([]byte, error) {
	if name == "" || len(name) > 255 {
		return nil, pathErr("getxattr", path, unix.ERANGE)
	}
	loc, err := p.walk(path, true)
	if err != nil {
		return nil, pathErr("getxattr", path, err)
	}
	v, err := p.getxattrNode(loc.mnt, loc.node, name)
	if err != nil {
		return nil, pathErr("getxattr", path, err)
	}
	return v, nil
}

// Listxattr returns the names of the extended attributes of the file at
// path, following symlinks, as listxattr(2) does. A file system without
// extended attributes reports none.
func (p *Proc) Listxattr(path string) ([]string, error) {
	loc, err := p.walk(path, true)
	if err != nil {
		return nil, pathErr("listxattr", path, err)
	}
	names, err := p.listxattrNode(loc.node)
	if err != nil {
		return nil, pathErr("listxattr", path, err)
	}
	return names, nil
}

// xattrSizeMax is Linux's XATTR_SIZE_MAX, the largest value.
const xattrSizeMax = 65536

// checkXattrName is import_xattr_name's rule: 1 to 255 bytes, else ERANGE.
func checkXattrName(name string) error {
	if name == "" || len(name) > 255 {
		return unix.ERANGE
	}
	return nil
}

// xattrPermission is Linux's xattr_permission followed by commoncap's
// cap_inode_setxattr/removexattr, for the calling process p on node n of
// mount m:
//
//   - security. and system. attributes: no VFS check, but writing or
//     removing security. ones needs CAP_SYS_ADMIN (EPERM);
//   - trusted. attributes: CAP_SYS_ADMIN, else EPERM to write and ENODATA
//     to read;
//   - user. attributes: only on regular files and directories (EPERM to
//     write, ENODATA to read elsewhere); in a sticky directory only its
//     owner or CAP_FOWNER writes them (EPERM); then, as for every other
//     name, inode_permission: read or write permission on the file
//     (EACCES).
func (p *Proc) xattrPermission(m *mount, n Node, name string, write bool) error {
	c := p.cred.Load()
	mask := MayRead
	if write {
		mask = MayWrite
		// may_write_xattr: no xattr of an immutable or append-only file
		// changes.
		mode, _, _, err := nodeAttrs(n)
		if err != nil {
			return err
		}
		if mode&(PermImmutable|PermAppend) != 0 {
			return errEPERM
		}
	}
	switch {
	case strings.HasPrefix(name, "security."):
		if write && !c.capable() {
			return unix.EPERM
		}
		return nil
	case strings.HasPrefix(name, "system."):
		return nil
	case strings.HasPrefix(name, "trusted."):
		if !c.capable() {
			if write {
				return unix.EPERM
			}
			return unix.ENODATA
		}
		return nil
	case strings.HasPrefix(name, "user."):
		st, err := n.Stat()
		if err != nil {
			return err
		}
		if !st.IsRegular() && !st.IsDir() {
			if write {
				return unix.EPERM
			}
			return unix.ENODATA
		}
		if write && st.IsDir() && st.Mode&unix.S_ISVTX != 0 && !c.ownerOrCapable(st.Uid) {
			return unix.EPERM
		}
	}
	return c.permission(location{m, n}, mask)
}

// setxattrArgs is setxattr_copy's checks, made before the file is looked
// up: flags (EINVAL), name (ERANGE), size (E2BIG).
func setxattrArgs(name string, data []byte, flags int) error {
	if flags&^(unix.XATTR_CREATE|unix.XATTR_REPLACE) != 0 {
		return errEINVAL
	}
	if err := checkXattrName(name); err != nil {
		return err
	}
	if len(data) > xattrSizeMax {
		return unix.E2BIG
	}
	return nil
}

// setxattrAt sets or (with remove) removes name on the node n of mount m.
// The ACL names of an ACLer are the VFS's (setACL).
func (p *Proc) setxattrAt(m *mount, n Node, name string, data []byte, flags int, remove bool) error {
	if m != nil && m.readonly {
		return unix.EROFS
	}
	if typ := aclXattrType(name); typ != 0 {
		if al, ok := n.(ACLer); ok {
			return p.setACL(m, n, al, typ, data, remove)
		}
	}
	if err := p.xattrPermission(m, n, name, true); err != nil {
		return err
	}
	x, ok := n.(XattrSetter)
	if !ok {
		return errEOPNOTSUP
	}
	c := p.cred.Load().fsCred()
	if remove {
		return x.Removexattr(name, c)
	}
	return x.Setxattr(name, data, flags, c)
}

// Setxattr sets the extended attribute name of the file at path, following
// symlinks, to data, as setxattr(2): flags may hold XATTR_CREATE (EEXIST
// if the attribute exists) or XATTR_REPLACE (ENODATA if it does not).
// Before the lookup: other flags give EINVAL, a name of 0 or more than 255
// bytes ERANGE, a value over 65536 bytes E2BIG. Then a read-only mount
// gives EROFS, a user. attribute on a file that is neither regular nor a
// directory EPERM, and the file system decides the rest (EOPNOTSUPP for
// an unknown namespace or a file system without xattrs, ENOSPC).
func (p *Proc) Setxattr(path, name string, data []byte, flags int) error {
	return p.setxattrPath("setxattr", path, true, name, data, flags, false)
}

// Lsetxattr is Setxattr on a symlink itself.
func (p *Proc) Lsetxattr(path, name string, data []byte, flags int) error {
	return p.setxattrPath("lsetxattr", path, false, name, data, flags, false)
}

// Fsetxattr is Setxattr on the file open as fd; the argument checks come
// before the descriptor's (EBADF), as in Linux 6.13+.
func (p *Proc) Fsetxattr(fd int, name string, data []byte, flags int) error {
	if err := setxattrArgs(name, data, flags); err != nil {
		return err
	}
	f := p.fdget(fd)
	if f == nil {
		return errEBADF
	}
	return p.setxattrAt(f.mnt, f.node, name, data, flags, false)
}

// Removexattr removes the extended attribute name of the file at path,
// following symlinks, as removexattr(2): ERANGE for a bad name, ENODATA if
// it is missing, and Setxattr's other rules.
func (p *Proc) Removexattr(path, name string) error {
	return p.setxattrPath("removexattr", path, true, name, nil, 0, true)
}

// Lremovexattr is Removexattr on a symlink itself.
func (p *Proc) Lremovexattr(path, name string) error {
	return p.setxattrPath("lremovexattr", path, false, name, nil, 0, true)
}

// Fremovexattr is Removexattr on the file open as fd.
func (p *Proc) Fremovexattr(fd int, name string) error {
	if err := checkXattrName(name); err != nil {
		return err
	}
	f := p.fdget(fd)
	if f == nil {
		return errEBADF
	}
	return p.setxattrAt(f.mnt, f.node, name, nil, 0, true)
}

func (p *Proc) setxattrPath(op, path string, follow bool, name string, data []byte, flags int, remove bool) error {
	var err error
	if remove {
		err = checkXattrName(name)
	} else {
		err = setxattrArgs(name, data, flags)
	}
	if err != nil {
		return pathErr(op, path, err)
	}
	loc, err := p.walk(path, follow)
	if err != nil {
		return pathErr(op, path, err)
	}
	return pathErr(op, path, p.setxattrAt(loc.mnt, loc.node, name, data, flags, remove))
}

// getxattrNode is vfs_getxattr on node n of mount m, and vfs_get_acl for
// the ACL names of an ACLer.
func (p *Proc) getxattrNode(m *mount, n Node, name string) ([]byte, error) {
	if typ := aclXattrType(name); typ != 0 {
		if al, ok := n.(ACLer); ok {
			return getACL(al, typ)
		}
	}
	if err := p.xattrPermission(m, n, name, false); err != nil {
		return nil, err
	}
	x, ok := n.(Xattrer)
	if !ok {
		return nil, errEOPNOTSUP
	}
	return x.Getxattr(name)
}

// Lgetxattr is Getxattr on a symlink itself: a user. attribute of a
// symlink or device gives ENODATA, as Linux's xattr_permission.
func (p *Proc) Lgetxattr(path, name string) ([]byte, error) {
	if err := checkXattrName(name); err != nil {
		return nil, pathErr("lgetxattr", path, err)
	}
	loc, err := p.walk(path, false)
	if err != nil {
		return nil, pathErr("lgetxattr", path, err)
	}
	v, err := p.getxattrNode(loc.mnt, loc.node, name)
	if err != nil {
		return nil, pathErr("lgetxattr", path, err)
	}
	return v, nil
}

// Fgetxattr is Getxattr on the file open as fd.
func (p *Proc) Fgetxattr(fd int, name string) ([]byte, error) {
	if err := checkXattrName(name); err != nil {
		return nil, err
	}
	f := p.fdget(fd)
	if f == nil {
		return nil, errEBADF
	}
	return p.getxattrNode(f.mnt, f.node, name)
}

// listxattrNode is vfs_listxattr on n: a file system without xattrs lists
// none, and a process without CAP_SYS_ADMIN does not see trusted. names
// (as tmpfs's simple_xattr_list and ext4's trusted handler hide them).
func (p *Proc) listxattrNode(n Node) ([]string, error) {
	x, ok := n.(Xattrer)
	if !ok {
		return nil, nil
	}
	names, err := x.Listxattr()
	if err != nil || p.cred.Load().capable() {
		return names, err
	}
	return slices.DeleteFunc(names, func(s string) bool { return strings.HasPrefix(s, "trusted.") }), nil
}

// Llistxattr is Listxattr on a symlink itself.
func (p *Proc) Llistxattr(path string) ([]string, error) {
	loc, err := p.walk(path, false)
	if err != nil {
		return nil, pathErr("llistxattr", path, err)
	}
	names, err := p.listxattrNode(loc.node)
	if err != nil {
		return nil, pathErr("llistxattr", path, err)
	}
	return names, nil
}

// Flistxattr is Listxattr on the file open as fd.
func (p *Proc) Flistxattr(fd int) ([]string, error) {
	f := p.fdget(fd)
	if f == nil {
		return nil, errEBADF
	}
	return p.listxattrNode(f.node)
}
