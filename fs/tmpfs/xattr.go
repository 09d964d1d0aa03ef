package tmpfs

// Extended attributes, as Linux's shmem_xattr_handlers: the security.,
// trusted. and user. namespaces (user. since Linux 6.6), kept in memory.
// With an nr_inodes limit, every attribute takes 40 + size + len(name)
// bytes of the inode space (simple_xattr_space; measured on this kernel)
// (nr_inodes * BOGO_INODE_SIZE), as shmem_xattr_handler_set charges it:
// a set that does not fit gives ENOSPC, and statfs's f_ffree shrinks.
//
// Which files may hold which namespace (user. only on regular files and
// directories) and who may write trusted. are the VFS's checks, as
// xattr_permission is Linux's.

import (
	"github.com/iovfs/iovfs/vfs"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// xattrs are one inode's extended attributes.
type xattrs struct {
	// mu protects m. Values are never changed in place: a set stores a
	// new slice.
	mu sync.Mutex
	m  map[string][]byte
}

// xattrSpace is what an attribute takes of the inode space, Linux's
// simple_xattr_space as this kernel charges it: a value of 978 bytes named
// "user.a" is the largest that fits in one free inode's 1024 bytes.
func xattrSpace(name string, size int) int64 { return int64(40 + size + len(name)) }

// xattrCaps is the file capabilities' xattr, which writes remove
// (PermKillPriv).
const xattrCaps = "security.capability"

// xattrPrefixes are the namespaces tmpfs has handlers for.
var xattrPrefixes = [...]string{"security.", "trusted.", "user."}

// checkXattrName resolves name's handler as xattr_resolve_name: an
// unknown namespace gives EOPNOTSUPP, a bare prefix EINVAL.
func checkXattrName(name string) error {
	for _, p := range xattrPrefixes {
		if strings.HasPrefix(name, p) {
			if len(name) == len(p) {
				return errEINVAL
			}
			return nil
		}
	}
	return unix.EOPNOTSUPP
}

// Getxattr implements vfs.Xattrer.
func (n *inode) Getxattr(name string) ([]byte, error) {
	if err := checkXattrName(name); err != nil {
		return nil, err
	}
	n.xa.mu.Lock()
	defer n.xa.mu.Unlock()
	v, ok := n.xa.m[name]
	if !ok {
		return nil, unix.ENODATA
	}
	return slices.Clone(v), nil
}

// Listxattr implements vfs.Xattrer: the names in descending byte order,
// which is how Linux 6.18's tmpfs lists them (measured: its simple_xattr
// tree compares the other way round from the walk).
func (n *inode) Listxattr() ([]string, error) {
	n.xa.mu.Lock()
	defer n.xa.mu.Unlock()
	names := make([]string, 0, len(n.xa.m))
	for k := range n.xa.m {
		names = append(names, k)
	}
	slices.Sort(names)
	slices.Reverse(names)
	return append(n.aclNames(make([]string, 0, len(names)+2)), names...), nil
}

// Setxattr implements vfs.XattrSetter with simple_xattr_set's rules:
// XATTR_CREATE on a present name gives EEXIST, XATTR_REPLACE on a missing
// one ENODATA. The inode space is charged before those checks and given
// back if they fail, as shmem_xattr_handler_set does.
func (n *inode) Setxattr(name string, data []byte, flags int, _ vfs.Cred) error {
	if err := checkXattrName(name); err != nil {
		return err
	}
	fs := n.fs
	space := xattrSpace(name, len(data))
	if fs.maxInodes != 0 && !fs.reserveXattr(space) {
		return errENOSPC
	}
	n.xa.mu.Lock()
	old, ok := n.xa.m[name]
	var err error
	switch {
	case ok && flags&unix.XATTR_CREATE != 0:
		err = unix.EEXIST
	case !ok && flags&unix.XATTR_REPLACE != 0:
		err = unix.ENODATA
	}
	if err == nil {
		if n.xa.m == nil {
			n.xa.m = make(map[string][]byte)
		}
		n.xa.m[name] = slices.Clone(data)
		if name == xattrCaps {
			n.caps.Store(true)
		}
	}
	n.xa.mu.Unlock()
	if fs.maxInodes != 0 {
		switch {
		case err != nil:
			fs.xattrSpace.Add(-space)
		case ok:
			fs.xattrSpace.Add(-xattrSpace(name, len(old)))
		}
	}
	if err == nil {
		if name == xattrCaps {
			n.lockedUpdatePerm()
		}
		n.changed(clockNow().wall, false)
	}
	return err
}

// Removexattr implements vfs.XattrSetter: a missing name gives ENODATA.
func (n *inode) Removexattr(name string, _ vfs.Cred) error {
	if err := checkXattrName(name); err != nil {
		return err
	}
	n.xa.mu.Lock()
	old, ok := n.xa.m[name]
	delete(n.xa.m, name)
	if ok && name == xattrCaps {
		n.caps.Store(false)
	}
	n.xa.mu.Unlock()
	if name == xattrCaps {
		n.lockedUpdatePerm()
	}
	if !ok {
		return unix.ENODATA
	}
	if n.fs.maxInodes != 0 {
		n.fs.xattrSpace.Add(-xattrSpace(name, len(old)))
	}
	n.changed(clockNow().wall, false)
	return nil
}

// dropXattrs gives an inode's attribute space back when the inode goes
// (shmem_evict_inode).
func (n *inode) dropXattrs() {
	n.xa.mu.Lock()
	m := n.xa.m
	n.xa.m = nil
	n.xa.mu.Unlock()
	if n.fs.maxInodes == 0 {
		return
	}
	for k, v := range m {
		n.fs.xattrSpace.Add(-xattrSpace(k, len(v)))
	}
}

// reserveXattr takes space bytes of the inode space, or reports false if
// they do not fit.
func (fs *FS) reserveXattr(space int64) bool {
	for {
		used := fs.xattrSpace.Load()
		free := (fs.maxInodes-fs.inodes.Load())*bogoInodeSize - used
		if free < space {
			return false
		}
		if fs.xattrSpace.CompareAndSwap(used, used+space) {
			return true
		}
	}
}
