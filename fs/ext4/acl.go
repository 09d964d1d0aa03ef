package ext4

// POSIX ACLs (Linux's fs/ext4/acl.c): the disk layer keeps them in
// ext4's on-disk format and converts at its boundary; the VFS decides
// every rule (vfs/acl.go). A node caches what it read, as the kernel's
// inode caches i_acl and i_default_acl, so that a permission check after
// the first costs an atomic load. Only SetACL changes an ACL (the VFS
// sends no system.posix_acl_* name to Setxattr), and a freed inode's
// number gets a new node, so the cache is never stale.

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// aclCache is a node's two cached ACLs. A nil slot is not read yet; a
// slot holding a nil *vfs.ACL is "no ACL". mu orders a read from disk
// with SetACL's store, so a read that began before a change cannot
// cache the old value after it.
type aclCache struct {
	mu   sync.Mutex
	slot [2]atomic.Pointer[aclSlot]
}

type aclSlot struct{ a *vfs.ACL }

// aclSlotOf is the cache slot and the xattr name of an ACL type.
func aclSlotOf(typ int) (int, string) {
	if typ == vfs.ACLTypeDefault {
		return 1, vfs.XattrACLDefault
	}
	return 0, vfs.XattrACLAccess
}

// GetACL implements vfs.ACLer. ACLs are always on, as on Linux's ext4
// (no noacl mount option).
func (n *node) GetACL(typ int) (*vfs.ACL, error) {
	i, name := aclSlotOf(typ)
	if s := n.acls.slot[i].Load(); s != nil {
		return s.a, nil
	}
	n.acls.mu.Lock()
	defer n.acls.mu.Unlock()
	if s := n.acls.slot[i].Load(); s != nil {
		return s.a, nil
	}
	var b []byte
	err := n.read("ext4_get_acl", func(in *disk.Inode) error {
		var err error
		b, err = n.fs.vol.GetXattr(in, name)
		return err
	})
	if err == syscall.ENODATA {
		b, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	a, err := vfs.ParseACLXattr(b)
	if err != nil {
		return nil, err
	}
	n.acls.slot[i].Store(&aclSlot{a})
	return a, nil
}

// SetACL implements vfs.ACLer (ext4_set_acl): the ACL and, for an access
// ACL, the mode change in one Writer change, acting for c.
func (n *node) SetACL(typ int, a *vfs.ACL, mode uint32, c vfs.Cred) error {
	if err := n.pin(); err != nil {
		return err
	}
	defer n.unpin()
	i, _ := aclSlotOf(typ)
	var b []byte
	if a != nil {
		b = a.Xattr()
	}
	cl := callerOf(c)
	n.acls.mu.Lock()
	defer n.acls.mu.Unlock()
	err := n.fs.w.SetACLAs(&cl, n.ino(), typ == vfs.ACLTypeDefault, b, mode, typ == vfs.ACLTypeAccess)
	if err != nil {
		n.acls.slot[i].Store(nil) // read again from the disk
		return n.fs.check("ext4_set_acl", err)
	}
	n.acls.slot[i].Store(&aclSlot{a})
	return nil
}
