package hostfs

import (
	"runtime"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Revalidate implements vfs.Revalidator (Linux's d_revalidate): another
// program may change the host tree at any time, so a name the dentry
// cache remembers is checked against the host on every use. child (nil
// for a remembered ENOENT) still holds when the host has the same inode
// under name, or still has none. The check is one fstatat on the held
// directory descriptor, never following a symlink, as Lookup's is.
func (d *Dir) Revalidate(name string, child vfs.Node) bool {
	defer runtime.KeepAlive(d)
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT)
	if child == nil {
		return err == unix.ENOENT
	}
	if err != nil {
		return false
	}
	k, typ, ok := nodeKey(child)
	return ok && k == (key{st.Dev, st.Ino}) && typ == st.Mode&unix.S_IFMT
}

// nodeKey returns the host inode and file type of one of this file
// system's nodes.
func nodeKey(n vfs.Node) (key, uint32, bool) {
	var in *inode
	switch n := n.(type) {
	case *Dir:
		in = (*inode)(n)
	case *File:
		in = (*inode)(n)
	case *Symlink:
		in = (*inode)(n)
	case *Special:
		in = (*inode)(n)
	default:
		return key{}, 0, false
	}
	return in.key, in.typ, true
}

var _ vfs.Revalidator = (*Dir)(nil)
