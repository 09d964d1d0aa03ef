package tmpfs

// POSIX ACLs and inode flags, as Linux's tmpfs keeps them: in memory, an
// ACL as the parsed value the VFS hands over (shmem's simple_set_acl
// stores the kernel's struct posix_acl in i_acl), the flags in fsflags
// (shmem_fileattr_set). The VFS decides every rule (vfs/acl.go,
// vfs/fileattr.go); tmpfs stores, reports and inherits.

import (
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// The inode flags tmpfs shows and lets chattr change (Linux's
// SHMEM_FL_USER_VISIBLE and SHMEM_FL_USER_MODIFIABLE, casefolding aside:
// no iovfs tmpfs has an encoding), and those a new inode takes from its
// directory (SHMEM_FL_INHERITED).
const (
	flUserVisible    = vfs.FS_FL_USER_VISIBLE
	flUserModifiable = vfs.FS_IMMUTABLE_FL | vfs.FS_APPEND_FL | vfs.FS_NODUMP_FL | vfs.FS_NOATIME_FL
	flInherited      = vfs.FS_NODUMP_FL | vfs.FS_NOATIME_FL
)

// statxMask is the statx attributes tmpfs can report (shmem_getattr).
const statxMask = unix.STATX_ATTR_APPEND | unix.STATX_ATTR_IMMUTABLE | unix.STATX_ATTR_NODUMP

// initACL gives a new inode in dir what it inherits: the ACLs the VFS
// computed from dir's default ACL, and dir's inheritable flags. It runs
// before the inode is published.
func (n *inode) initACL(dir *Dir, c vfs.Cred) {
	if c.ACL != nil {
		n.acl.Store(c.ACL.Access)
		if n.mode.Load()&unix.S_IFMT == unix.S_IFDIR {
			n.dacl.Store(c.ACL.Default)
		}
	}
	if dir != nil {
		n.fsflags.Store(dir.fsflags.Load() & flInherited)
	}
	n.updatePerm()
}

// updatePerm recomputes the Perm* bits PermAttrs adds to the mode, after
// a change of the ACL, the flags or the capability xattr, with n.mu held
// (or before the inode is published), so that the last store sees every
// change before it.
func (n *inode) updatePerm() {
	var b uint32
	if n.acl.Load() != nil {
		b |= vfs.PermACL
	}
	b |= vfs.PermFlags(n.fsflags.Load())
	if n.caps.Load() {
		b |= vfs.PermKillPriv
	}
	n.perm.Store(b)
}

// lockedUpdatePerm is updatePerm under n.mu.
func (n *inode) lockedUpdatePerm() {
	n.mu.Lock()
	n.updatePerm()
	n.mu.Unlock()
}

// GetACL implements vfs.ACLer.
func (n *inode) GetACL(typ int) (*vfs.ACL, error) {
	if typ == vfs.ACLTypeDefault {
		return n.dacl.Load(), nil
	}
	return n.acl.Load(), nil
}

// SetACL implements vfs.ACLer, as simple_set_acl: the access ACL and the
// mode change together under the inode's lock; ctime moves.
func (n *inode) SetACL(typ int, a *vfs.ACL, mode uint32, _ vfs.Cred) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if typ == vfs.ACLTypeDefault {
		n.dacl.Store(a)
	} else {
		n.mode.Store(n.mode.Load()&unix.S_IFMT | mode&0o7777)
		n.acl.Store(a)
		n.updatePerm()
	}
	n.changed(clockNow().wall, false)
	return nil
}

// aclNames are the ACL xattrs n has, for Listxattr: first, as Linux's
// simple_xattr_list lists them.
func (n *inode) aclNames(names []string) []string {
	if n.acl.Load() != nil {
		names = append(names, vfs.XattrACLAccess)
	}
	if n.dacl.Load() != nil {
		names = append(names, vfs.XattrACLDefault)
	}
	return names
}

// GetFileAttr implements vfs.FileAttrer (shmem_fileattr_get).
func (n *inode) GetFileAttr() (vfs.FileAttr, error) {
	var a vfs.FileAttr
	a.FillFlags(n.fsflags.Load() & flUserVisible)
	return a, nil
}

// SetFileAttr implements vfs.FileAttrer (shmem_fileattr_set): only the
// modifiable flags, and no fsx fields beyond them (EOPNOTSUPP).
func (n *inode) SetFileAttr(a vfs.FileAttr, _ vfs.Cred) error {
	if a.HasFsx() || a.Flags&^flUserModifiable != 0 {
		return unix.EOPNOTSUPP
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fsflags.Store(n.fsflags.Load()&^flUserModifiable | a.Flags)
	n.updatePerm()
	n.changed(clockNow().wall, false)
	return nil
}

// statAttrs fills st's statx attributes from the flags.
func (n *inode) statAttrs(st *vfs.Stat) {
	st.Attributes = vfs.StatxAttrs(n.fsflags.Load()) & statxMask
	st.AttributesMask = statxMask
}
