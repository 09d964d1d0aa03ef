package hostfs

// Directory operations. Every host call here takes the directory's held
// descriptor and a single component that the VFS has checked (never "",
// "." or "..", never containing '/'), except Lookup(".."), which has its
// own rule (parent).

import (
	"math"
	"runtime"
	"strings"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// open resolves the single component name beneath the directory open as
// dirfd, without following a symlink there, and returns an O_PATH
// descriptor and its fstat.
func (fs *FS) open(dirfd int, name string, st *unix.Stat_t) (int, error) {
	// The VFS never passes these; a direct caller of Lookup must not get
	// the fallback walk to take more than one step.
	if name == "" || name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 {
		return -1, unix.EINVAL
	}
	var fd int
	var err error
	if fs.resolver == Openat2 {
		how := unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS,
		}
		if !fs.opts.Xdev {
			how.Resolve |= unix.RESOLVE_NO_XDEV
		}
		for {
			fd, err = unix.Openat2(dirfd, name, &how)
			if err != unix.EAGAIN && err != unix.EINTR {
				break
			}
		}
	} else {
		fd, err = unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return -1, err
	}
	if err := unix.Fstat(fd, st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if fs.resolver != Openat2 && !fs.opts.Xdev {
		// RESOLVE_NO_XDEV by hand. st_dev is not enough: a bind mount of
		// the same file system has the same st_dev, so compare mount ids.
		a, err1 := mountID(dirfd)
		b, err2 := mountID(fd)
		if err1 != nil || err2 != nil || a != b {
			unix.Close(fd)
			return -1, unix.EXDEV
		}
	}
	return fd, nil
}

// mountID returns the id of the mount that fd is on: statx's
// STATX_MNT_ID (Linux 5.8), or name_to_handle_at's mount id before it.
func mountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx)
	if err == nil && stx.Mask&unix.STATX_MNT_ID != 0 {
		return stx.Mnt_id, nil
	}
	// Any failure here fails closed: the caller reports EXDEV.
	_, id, err := unix.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		return 0, err
	}
	return uint64(id), nil
}

// child looks name up in d and returns its node.
//
// It first asks fstatat (one component, no symlink followed, no
// automount) which inode name is now: when that inode already has a live
// node, the node is the answer and no descriptor is opened. That is not a
// cache: the host is asked every time, and the node returned holds that
// very inode open, so its number cannot have been reused. Otherwise the
// confined open runs, and decides errors such as EXDEV.
func (d *Dir) child(name string) (vfs.Node, error) {
	defer runtime.KeepAlive(d)
	if name == "" || name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 {
		return nil, unix.EINVAL
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT); err != nil {
		return nil, err
	}
	if n := d.fs.liveNode(key{st.Dev, st.Ino}, st.Mode&unix.S_IFMT); n != nil {
		return n, nil
	}
	fd, err := d.fs.open(d.fd, name, &st)
	if err != nil {
		return nil, err
	}
	return d.fs.node(fd, &st), nil
}

// Lookup returns the node called name. ".." is the parent directory when
// it is inside the mount (the root for the root); a directory moved out of
// the tree on the host has no parent inside it and gives ENOENT.
func (d *Dir) Lookup(name string) (vfs.Node, error) {
	if name == ".." {
		return d.parent()
	}
	return d.child(name)
}

// parent opens ".." of d and accepts it only if going up from it meets
// the root. The root's parent is the root. A directory out of the tree
// reaches the host's root, whose ".." is itself, without meeting it.
func (d *Dir) parent() (vfs.Node, error) {
	defer runtime.KeepAlive(d)
	fs := d.fs
	if d.key == fs.rootKey {
		return (*Dir)(fs.root), nil
	}
	up, err := unix.Openat(d.fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(up, &st); err != nil {
		unix.Close(up)
		return nil, err
	}
	k := key{st.Dev, st.Ino}
	cur, ck := up, k
	for steps := 0; ck != fs.rootKey; steps++ {
		if steps > maxDepth { // renames racing the walk up: give up
			if cur != up {
				unix.Close(cur)
			}
			unix.Close(up)
			return nil, unix.ENOENT
		}
		next, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		var nst unix.Stat_t
		if err == nil {
			err = unix.Fstat(next, &nst)
			if err != nil {
				unix.Close(next)
			}
		}
		if cur != up {
			unix.Close(cur)
		}
		if err != nil {
			unix.Close(up)
			return nil, err
		}
		nk := key{nst.Dev, nst.Ino}
		if nk == ck { // the host's root: the walk left the tree
			unix.Close(next)
			unix.Close(up)
			return nil, unix.ENOENT
		}
		cur, ck = next, nk
	}
	if cur != up {
		unix.Close(cur)
	}
	if k == fs.rootKey {
		unix.Close(up)
		return (*Dir)(fs.root), nil
	}
	return fs.node(up, &st), nil
}

// maxDepth bounds the walk up of parent: a path of PATH_MAX bytes has at
// most this many components.
const maxDepth = 4096 / 2

// created returns the node of the entry name that d's host call just
// made, and sets its mode again when the host's umask cleared bits of it.
func (d *Dir) created(name string, mode uint32) (vfs.Node, error) {
	var st unix.Stat_t
	fd, err := d.fs.open(d.fd, name, &st)
	if err != nil {
		return nil, err
	}
	n := d.fs.node(fd, &st)
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		if err := inodeOf(n).fixMode(mode); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func inodeOf(n vfs.Node) *inode {
	switch n := n.(type) {
	case *Dir:
		return (*inode)(n)
	case *File:
		return (*inode)(n)
	case *Symlink:
		return (*inode)(n)
	case *Special:
		return (*inode)(n)
	}
	return nil
}

// DirLock implements vfs.DirLocker.
func (d *Dir) DirLock() *vfs.DirLock { return &d.dl }

// Create makes a regular file with O_CREAT|O_EXCL|O_NOFOLLOW on the host.
// The new file's owner is the host process's, whatever c says (hostfs
// passes operations through as the host process); uid= and gid= present
// other ids.
func (d *Dir) Create(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	defer runtime.KeepAlive(d)
	fd, err := unix.Openat(d.fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, mode)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	n := d.fs.node(fd, &st)
	if err := inodeOf(n).fixMode(mode); err != nil {
		return nil, err
	}
	return n, nil
}

// Mkdir makes a directory with mkdirat.
func (d *Dir) Mkdir(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	defer runtime.KeepAlive(d)
	if err := unix.Mkdirat(d.fd, name, mode); err != nil {
		return nil, err
	}
	return d.created(name, mode&0o7777)
}

// Symlink makes a symlink with symlinkat; the host never follows it.
func (d *Dir) Symlink(name, target string, c vfs.Cred) (vfs.Node, error) {
	defer runtime.KeepAlive(d)
	if err := unix.Symlinkat(target, d.fd, name); err != nil {
		return nil, err
	}
	return d.created(name, 0)
}

// Mknod makes a special file with mknodat. Device nodes are made (as root
// may) but never opened through the mount (see Special).
func (d *Dir) Mknod(name string, mode uint32, rdev uint64, c vfs.Cred) (vfs.Node, error) {
	defer runtime.KeepAlive(d)
	if err := unix.Mknodat(d.fd, name, mode, int(rdev)); err != nil {
		return nil, err
	}
	return d.created(name, mode&0o7777)
}

// Link makes name a hard link to target with linkat(AT_EMPTY_PATH) on
// target's descriptor, or, without CAP_DAC_READ_SEARCH, through
// /proc/self/fd with AT_SYMLINK_FOLLOW, which reaches the same inode.
func (d *Dir) Link(name string, target vfs.Node, _ vfs.Cred) error {
	defer runtime.KeepAlive(d)
	t := inodeOf(target)
	if t == nil || t.fs != d.fs {
		return unix.EXDEV
	}
	defer runtime.KeepAlive(t)
	err := unix.Linkat(t.fd, "", d.fd, name, unix.AT_EMPTY_PATH)
	if err == unix.ENOENT || err == unix.EPERM {
		var st unix.Stat_t
		if unix.Fstat(t.fd, &st) == nil && st.Nlink > 0 {
			err = unix.Linkat(d.fs.procFD, t.procName(), d.fd, name, unix.AT_SYMLINK_FOLLOW)
		}
	}
	return err
}

// Unlink removes a non-directory with unlinkat.
func (d *Dir) Unlink(name string, _ vfs.Cred) error {
	err := unix.Unlinkat(d.fd, name, 0)
	runtime.KeepAlive(d)
	return err
}

// Rmdir removes an empty directory with unlinkat(AT_REMOVEDIR).
func (d *Dir) Rmdir(name string, _ vfs.Cred) error {
	err := unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
	runtime.KeepAlive(d)
	return err
}

// Rename moves oldName to newName in newDir with the host's renameat2,
// flags included: the host decides them (RENAME_WHITEOUT needs
// CAP_MKNOD there, and a host file system without a flag gives EINVAL).
func (d *Dir) Rename(oldName string, newDir vfs.Node, newName string, flags uint, _ vfs.Cred) error {
	nd, ok := newDir.(*Dir)
	if !ok || nd.fs != d.fs {
		return unix.EXDEV
	}
	err := unix.Renameat2(d.fd, oldName, nd.fd, newName, flags)
	runtime.KeepAlive(d)
	runtime.KeepAlive(nd)
	return err
}

// ReadDir lists the directory with the host's getdents64 on a descriptor
// opened for the call. Cookies are the host's d_off values, so a listing
// resumes exactly where the host would; "." and ".." are skipped.
//
// The VFS adds 2 to a cookie (its "." and ".."), so the host's largest,
// ext4's end-of-directory cookie MaxInt64, is reported as maxCookie and read
// back as MaxInt64: the listing then shows the same position as the host.
func (d *Dir) ReadDir(off int64, fn func(vfs.Dirent) bool) error {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	runtime.KeepAlive(d)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	switch {
	case off < 3:
		off = 0
	case off == maxCookie:
		off = math.MaxInt64
	}
	if _, err := unix.Seek(fd, off, unix.SEEK_SET); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		for b := buf[:n]; len(b) > 0; {
			reclen := int(uint16(b[16]) | uint16(b[17])<<8)
			ino := le64(b[0:8])
			doff := int64(le64(b[8:16]))
			typ := b[18]
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			doff = min(doff, maxCookie)
			if s := string(name); s != "." && s != ".." {
				if !fn(vfs.Dirent{Name: s, Ino: ino, Type: typ, Off: doff}) {
					return nil
				}
			}
		}
	}
}

// maxCookie is the largest cookie ReadDir reports; see ReadDir.
const maxCookie = math.MaxInt64 - 2

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}
