package hostfs

// The nodes: one Go type for each kind of file, all with the same
// representation (inode), so the node of an inode is always the same
// pointer with the same dynamic type. Only *Symlink is a vfs.Readlinker
// and only *Dir a vfs.Lookuper, as the walk requires.

import (
	"runtime"
	"strconv"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// inode is a host inode held open (O_PATH) by fd. All fields are set at
// creation and read-only afterwards.
type inode struct {
	fs  *FS
	fd  int
	key key
	typ uint32 // S_IFMT bits
	// dl is the VFS's lock of a directory (vfs.DirLocker); hostfs never
	// takes it. One host directory has one inode while any holds it
	// (FS.node), so the lock is the directory's.
	dl vfs.DirLock
}

// Dir is a host directory.
type Dir inode

// File is a host regular file.
type File inode

// Symlink is a host symbolic link.
type Symlink inode

// Special is a host FIFO, socket or device node. Opening one gives
// EACCES, as on a Linux mount with nodev: a guest that may create device
// nodes (mknod as root) must not reach host devices through them, and a
// FIFO open could block the host side.
type Special inode

func (n *inode) asNode() vfs.Node {
	switch n.typ {
	case unix.S_IFDIR:
		return (*Dir)(n)
	case unix.S_IFREG:
		return (*File)(n)
	case unix.S_IFLNK:
		return (*Symlink)(n)
	}
	return (*Special)(n)
}

// procName is n's name in /proc/self/fd.
func (n *inode) procName() string { return strconv.Itoa(n.fd) }

// stat is fstat on the node's descriptor, with the mount's uid= and gid=.
func (n *inode) stat() (vfs.Stat, error) {
	var st unix.Stat_t
	err := unix.Fstat(n.fd, &st)
	runtime.KeepAlive(n)
	if err != nil {
		return vfs.Stat{}, err
	}
	return n.fs.convert(&st), nil
}

func (fs *FS) convert(st *unix.Stat_t) vfs.Stat {
	s := vfs.Stat{
		Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, Nlink: uint64(st.Nlink),
		Uid: st.Uid, Gid: st.Gid, Rdev: st.Rdev, Size: st.Size,
		Blksize: int64(st.Blksize), Blocks: st.Blocks,
		Atime: time.Unix(st.Atim.Unix()), Mtime: time.Unix(st.Mtim.Unix()), Ctime: time.Unix(st.Ctim.Unix()),
	}
	if fs.opts.UidSet {
		s.Uid = fs.opts.Uid
	}
	if fs.opts.GidSet {
		s.Gid = fs.opts.Gid
	}
	return s
}

// reopen opens the inode again with flags (an access mode and status
// flags), through /proc/self/fd: the magic link leads to this inode and
// nothing else.
func (n *inode) reopen(flags int) (int, error) {
	fd, err := unix.Openat(n.fs.procFD, n.procName(), flags|unix.O_CLOEXEC, 0)
	runtime.KeepAlive(n)
	return fd, err
}

// setattr applies a on the host: truncate, chmod, chown, utimensat, in
// the order of Linux's notify_change callers (size first).
func (n *inode) setattr(a vfs.SetAttr) error {
	defer runtime.KeepAlive(n)
	if a.Valid&vfs.SetSize != 0 {
		switch n.typ {
		case unix.S_IFREG:
		case unix.S_IFDIR:
			return unix.EISDIR
		default:
			return unix.EINVAL
		}
		fd, err := n.reopen(unix.O_WRONLY)
		if err != nil {
			return err
		}
		err = unix.Ftruncate(fd, a.Size)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	if a.Valid&vfs.SetMode != 0 {
		if err := n.chmod(a.Mode & 0o7777); err != nil {
			return err
		}
	}
	if a.Valid&(vfs.SetUid|vfs.SetGid) != 0 {
		uid, gid := -1, -1
		if a.Valid&vfs.SetUid != 0 {
			uid = int(a.Uid)
		}
		if a.Valid&vfs.SetGid != 0 {
			gid = int(a.Gid)
		}
		if err := unix.Fchownat(n.fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	if a.Valid&(vfs.SetAtime|vfs.SetMtime) != 0 {
		ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if a.Valid&vfs.SetAtime != 0 {
			ts[0] = unix.NsecToTimespec(a.Atime.UnixNano())
		}
		if a.Valid&vfs.SetMtime != 0 {
			ts[1] = unix.NsecToTimespec(a.Mtime.UnixNano())
		}
		if err := unix.UtimesNanoAt(n.fd, "", ts[:], unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	return nil
}

// chmod sets the permission bits with fchmodat2(AT_EMPTY_PATH) on the
// node's descriptor, or, on kernels without it (< 6.6), through
// /proc/self/fd, which follows the magic link to this inode. A symlink's
// mode cannot change (EOPNOTSUPP), as Linux's lchmod.
func (n *inode) chmod(mode uint32) error {
	defer runtime.KeepAlive(n)
	if n.typ == unix.S_IFLNK {
		return unix.EOPNOTSUPP
	}
	err := unix.Fchmodat(n.fd, "", mode, unix.AT_EMPTY_PATH)
	if err == unix.EOPNOTSUPP || err == unix.ENOSYS || err == unix.EINVAL {
		err = unix.Fchmodat(n.fs.procFD, n.procName(), mode, 0)
	}
	return err
}

// fixMode sets mode again on a node the host just created, when the
// process's umask cleared some of its bits.
func (n *inode) fixMode(mode uint32) error {
	if mode&n.fs.umask == 0 {
		return nil
	}
	return n.chmod(mode & 0o7777)
}

// The extended attributes go through /proc/self/fd, which follows the
// magic link to the inode (there is no getxattr on an O_PATH descriptor
// before Linux 6.13's getxattrat).
func (n *inode) xattrPath() string { return "/proc/self/fd/" + n.procName() }

func (n *inode) getxattr(name string) ([]byte, error) {
	defer runtime.KeepAlive(n)
	p := n.xattrPath()
	for {
		sz, err := unix.Getxattr(p, name, nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, sz)
		sz, err = unix.Getxattr(p, name, buf)
		if err == unix.ERANGE {
			continue // grew meanwhile
		}
		if err != nil {
			return nil, err
		}
		return buf[:sz], nil
	}
}

func (n *inode) listxattr() ([]string, error) {
	defer runtime.KeepAlive(n)
	p := n.xattrPath()
	for {
		sz, err := unix.Listxattr(p, nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, sz)
		sz, err = unix.Listxattr(p, buf)
		if err == unix.ERANGE {
			continue
		}
		if err != nil {
			return nil, err
		}
		return splitNul(buf[:sz]), nil
	}
}

func splitNul(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != 0 {
			i++
		}
		if i > 0 {
			out = append(out, string(b[:i]))
		}
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}

func (n *inode) setxattr(name string, data []byte, flags int) error {
	err := unix.Setxattr(n.xattrPath(), name, data, flags)
	runtime.KeepAlive(n)
	return err
}

func (n *inode) removexattr(name string) error {
	err := unix.Removexattr(n.xattrPath(), name)
	runtime.KeepAlive(n)
	return err
}

// The methods every kind shares.

// Stat reports the host's fstat of the inode; Uid and Gid are the mount's
// uid= and gid= when given.
func (d *Dir) Stat() (vfs.Stat, error)     { return (*inode)(d).stat() }
func (f *File) Stat() (vfs.Stat, error)    { return (*inode)(f).stat() }
func (s *Symlink) Stat() (vfs.Stat, error) { return (*inode)(s).stat() }
func (s *Special) Stat() (vfs.Stat, error) { return (*inode)(s).stat() }

// Setattr changes the host inode: ftruncate, chmod, chown, utimensat.
func (d *Dir) Setattr(a vfs.SetAttr, _ vfs.Cred) error     { return (*inode)(d).setattr(a) }
func (f *File) Setattr(a vfs.SetAttr, _ vfs.Cred) error    { return (*inode)(f).setattr(a) }
func (s *Symlink) Setattr(a vfs.SetAttr, _ vfs.Cred) error { return (*inode)(s).setattr(a) }
func (s *Special) Setattr(a vfs.SetAttr, _ vfs.Cred) error { return (*inode)(s).setattr(a) }

// Getxattr and the other xattr calls pass through to the host inode.
func (d *Dir) Getxattr(name string) ([]byte, error)  { return (*inode)(d).getxattr(name) }
func (f *File) Getxattr(name string) ([]byte, error) { return (*inode)(f).getxattr(name) }
func (d *Dir) Listxattr() ([]string, error)          { return (*inode)(d).listxattr() }
func (f *File) Listxattr() ([]string, error)         { return (*inode)(f).listxattr() }
func (d *Dir) Setxattr(name string, data []byte, flags int, _ vfs.Cred) error {
	return (*inode)(d).setxattr(name, data, flags)
}
func (f *File) Setxattr(name string, data []byte, flags int, _ vfs.Cred) error {
	return (*inode)(f).setxattr(name, data, flags)
}
func (d *Dir) Removexattr(name string, _ vfs.Cred) error  { return (*inode)(d).removexattr(name) }
func (f *File) Removexattr(name string, _ vfs.Cred) error { return (*inode)(f).removexattr(name) }

// A device node or FIFO has the host inode's attributes too (trusted. and
// security. ones; the VFS refuses user. ones on it, as Linux does): an
// overlay's upper layer keeps them on its copies and whiteouts.
func (s *Special) Getxattr(name string) ([]byte, error) { return (*inode)(s).getxattr(name) }
func (s *Special) Listxattr() ([]string, error)         { return (*inode)(s).listxattr() }
func (s *Special) Setxattr(name string, data []byte, flags int, _ vfs.Cred) error {
	return (*inode)(s).setxattr(name, data, flags)
}
func (s *Special) Removexattr(name string, _ vfs.Cred) error { return (*inode)(s).removexattr(name) }

// Readlink reads the link on the host, every time.
func (s *Symlink) Readlink() (string, error) {
	defer runtime.KeepAlive(s)
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(s.fd, "", buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Open gives EACCES: hostfs mounts are nodev, and FIFOs and sockets are
// not opened on the host.
func (s *Special) Open(flags int, _ vfs.Cred) (vfs.Handle, error) { return nil, unix.EACCES }
