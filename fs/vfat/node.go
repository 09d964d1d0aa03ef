package vfat

// The nodes: every file and directory, with the directory operations
// vfat has (create, mkdir, unlink, rmdir, rename with RENAME_NOREPLACE
// and RENAME_EXCHANGE, setattr) and none of those it lacks (symlinks, hard links and special
// files give EPERM, as a file system without the operation does).

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/fs/vfat/fat"
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
)

type node struct {
	fs  *FS
	n   *fat.Node
	ino uint64
	// dl is the VFS's lock of a directory (vfs.DirLocker); FS.node keeps
	// one node per fat.Node, so the lock is the directory's.
	dl vfs.DirLock
}

// DirLock implements vfs.DirLocker.
func (x *node) DirLock() *vfs.DirLock { return &x.dl }

var (
	_ vfs.Node        = (*node)(nil)
	_ vfs.Lookuper    = (*node)(nil)
	_ vfs.Creator     = (*node)(nil)
	_ vfs.Mkdirer     = (*node)(nil)
	_ vfs.Unlinker    = (*node)(nil)
	_ vfs.Rmdirer     = (*node)(nil)
	_ vfs.Renamer     = (*node)(nil)
	_ vfs.Setattrer   = (*node)(nil)
	_ vfs.DirReader   = (*node)(nil)
	_ vfs.Opener      = (*node)(nil)
	_ vfs.FileTyper   = (*node)(nil)
	_ vfs.Revalidator = (*node)(nil)
	_ vfs.PermAttrer  = (*node)(nil)
	_ vfs.DirLocker   = (*node)(nil)
)

// mode is the node's type and permission bits (fat_make_mode).
func (x *node) mode(attr byte, dir bool) uint32 {
	o := &x.fs.opts
	if dir {
		return unix.S_IFDIR | 0o777&^o.dmask
	}
	m := 0o777 &^ o.fmask
	if attr&fat.AttrRO != 0 {
		m &^= 0o222
	}
	return unix.S_IFREG | m
}

// Stat implements vfs.Node.
func (x *node) Stat() (vfs.Stat, error) {
	s, err := x.fs.vol.Stat(x.n)
	if err != nil {
		return vfs.Stat{}, err
	}
	cl := int64(x.fs.vol.ClusterSize())
	st := vfs.Stat{
		Ino:     x.ino,
		Mode:    x.mode(s.Attr, s.IsDir),
		Nlink:   uint64(s.Nlink),
		Uid:     x.fs.opts.uid,
		Gid:     x.fs.opts.gid,
		Size:    s.Size,
		Blksize: cl,
		Blocks:  s.Clusters * cl / 512,
		Atime:   s.Atime,
		Mtime:   s.Mtime,
		Ctime:   s.Mtime,
		Btime:   s.Ctime,
	}
	return st, nil
}

// PermAttrs implements vfs.PermAttrer.
func (x *node) PermAttrs() (mode, uid, gid uint32) {
	dir := x.n.IsDir()
	var attr byte
	if !dir {
		if s, err := x.fs.vol.Stat(x.n); err == nil {
			attr = s.Attr
		}
	}
	return x.mode(attr, dir), x.fs.opts.uid, x.fs.opts.gid
}

// FileType implements vfs.FileTyper.
func (x *node) FileType() uint32 {
	if x.n.IsDir() {
		return unix.S_IFDIR
	}
	return unix.S_IFREG
}

// Lookup implements vfs.Lookuper: names match without case and without
// trailing dots, by long name or alias.
func (x *node) Lookup(name string) (vfs.Node, error) {
	if name == ".." {
		return x.fs.node(x.fs.vol.Parent(x.n)), nil
	}
	n, err := x.fs.vol.Lookup(x.n, name)
	if err != nil {
		return nil, err
	}
	return x.fs.node(n), nil
}

// Revalidate implements vfs.Revalidator: a name cached by the VFS holds
// while the case-insensitive lookup still gives the same node, since
// other spellings of a name (another case, a trailing dot, the alias)
// change with it (Linux's vfat_revalidate_ci).
func (x *node) Revalidate(name string, child vfs.Node) bool {
	n, err := x.fs.vol.Lookup(x.n, name)
	if child == nil {
		return err == syscall.ENOENT
	}
	if err != nil {
		return false
	}
	c, ok := child.(*node)
	return ok && c.n == n
}

func now() time.Time { return time.Now() }

// Create implements vfs.Creator.
func (x *node) Create(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	n, err := x.fs.vol.Create(x.n, name, false, now())
	if err != nil {
		return nil, err
	}
	// A mode without write bits makes the file read-only, as
	// fat_create's fat_mode_can_hold_ro rule does at creation.
	if mode&0o222 == 0 && 0o222&^x.fs.opts.fmask != 0 {
		x.fs.vol.SetAttr(n, fat.AttrArch|fat.AttrRO)
	}
	return x.fs.node(n), nil
}

// Mkdir implements vfs.Mkdirer.
func (x *node) Mkdir(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	n, err := x.fs.vol.Create(x.n, name, true, now())
	if err != nil {
		return nil, err
	}
	return x.fs.node(n), nil
}

// Unlink implements vfs.Unlinker.
func (x *node) Unlink(name string, _ vfs.Cred) error {
	return x.fs.vol.Remove(x.n, name, false, now())
}

// Rmdir implements vfs.Rmdirer.
func (x *node) Rmdir(name string, _ vfs.Cred) error {
	return x.fs.vol.Remove(x.n, name, true, now())
}

// Rename implements vfs.Renamer with vfat's flags: RENAME_NOREPLACE, and
// RENAME_EXCHANGE, which swaps the two files as vfat_rename_exchange
// does; RENAME_WHITEOUT gives EINVAL.
func (x *node) Rename(oldName string, newDir vfs.Node, newName string, flags uint, _ vfs.Cred) error {
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 || flags == unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE {
		return syscall.EINVAL
	}
	nd, ok := newDir.(*node)
	if !ok || nd.fs != x.fs {
		return syscall.EXDEV
	}
	if flags&unix.RENAME_EXCHANGE != 0 {
		return x.fs.vol.Exchange(x.n, oldName, nd.n, newName, now())
	}
	return x.fs.vol.Rename(x.n, oldName, nd.n, newName, flags&unix.RENAME_NOREPLACE != 0, now())
}

// Setattr implements vfs.Setattrer with fat_setattr's rules.
func (x *node) Setattr(a vfs.SetAttr, _ vfs.Cred) error {
	o := &x.fs.opts
	if (a.Valid&vfs.SetUid != 0 && a.Uid != o.uid) || (a.Valid&vfs.SetGid != 0 && a.Gid != o.gid) ||
		(a.Valid&vfs.SetMode != 0 && a.Mode&^0o777 != 0) {
		if o.quiet {
			return nil
		}
		return syscall.EPERM
	}
	if a.Valid&vfs.SetSize != 0 {
		if x.n.IsDir() {
			return syscall.EISDIR
		}
		if err := x.fs.vol.Truncate(x.n, a.Size, now()); err != nil {
			return err
		}
	}
	if a.Valid&vfs.SetMode != 0 && !x.n.IsDir() {
		if err := x.chmod(a.Mode); err != nil {
			return err
		}
	}
	if a.Valid&(vfs.SetAtime|vfs.SetMtime) != 0 {
		var at, mt *time.Time
		if a.Valid&vfs.SetAtime != 0 {
			at = &a.Atime
		}
		if a.Valid&vfs.SetMtime != 0 {
			mt = &a.Mtime
		}
		return x.fs.vol.SetTimes(x.n, at, mt)
	}
	return nil
}

// chmod maps a mode change onto the read-only attribute when it can
// (fat_sanitize_mode_change); another change is ignored.
func (x *node) chmod(mode uint32) error {
	mask := x.fs.opts.fmask
	perm := mode & 0o777 &^ mask
	s, err := x.fs.vol.Stat(x.n)
	if err != nil {
		return err
	}
	cur := x.mode(s.Attr, false)
	if perm&0o555 != cur&0o555 {
		return nil
	}
	w := perm & 0o222
	switch {
	case w == 0:
		if 0o222&^mask == 0 {
			return nil // the mode cannot hold a read-only file
		}
		return x.fs.vol.SetAttr(x.n, s.Attr|fat.AttrRO)
	case w == 0o222&^mask:
		return x.fs.vol.SetAttr(x.n, s.Attr&^fat.AttrRO)
	}
	return nil
}

// ReadDir implements vfs.DirReader: cookies are positions in the
// directory, offset by 3 past the VFS's own.
func (x *node) ReadDir(off int64, fn func(vfs.Dirent) bool) error {
	pos := 0
	if off >= 3 {
		pos = int(off - 3)
	}
	return x.fs.vol.ReadDir(x.n, pos, func(e fat.DirEntry) bool {
		t := uint8(unix.DT_REG)
		if e.IsDir {
			t = unix.DT_DIR
		}
		return fn(vfs.Dirent{Name: e.Name, Ino: x.fs.node(e.Node).ino, Type: t, Off: int64(e.Next) + 3})
	})
}

// Open implements vfs.Opener.
func (x *node) Open(flags int, _ vfs.Cred) (vfs.Handle, error) {
	if x.n.IsDir() {
		return dirHandle{x}, nil
	}
	x.fs.vol.Opened(x.n)
	return &handle{x: x}, nil
}

// dirHandle is an open directory: reads give EISDIR (generic_read_dir).
type dirHandle struct{ x *node }

func (dirHandle) Read([]byte, int64) (int, error) { return 0, syscall.EISDIR }

// handle is an open regular file.
type handle struct {
	x *node
}

var (
	_ vfs.Reader     = (*handle)(nil)
	_ vfs.Writer     = (*handle)(nil)
	_ vfs.IterReader = (*handle)(nil)
	_ vfs.IterWriter = (*handle)(nil)
	_ vfs.Appender   = (*handle)(nil)
	_ vfs.Releaser   = (*handle)(nil)
	_ vfs.Syncer     = (*handle)(nil)
)

func (h *handle) Read(p []byte, off int64) (int, error) {
	return h.x.fs.vol.ReadAt(h.x.n, p, off)
}

func (h *handle) Write(p []byte, off int64) (int, error) {
	return h.x.fs.vol.WriteAt(h.x.n, p, off, now())
}

// ReadIter implements vfs.IterReader through the scalar read, segment by
// segment.
func (h *handle) ReadIter(dst iov.Iter, off int64) (int, error) {
	done := 0
	for dst.Len() > 0 {
		seg := dst.Segment()
		n, err := h.Read(seg, off+int64(done))
		done += n
		if err != nil || n < len(seg) {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
		dst.Advance(n)
	}
	return done, nil
}

// WriteIter implements vfs.IterWriter.
func (h *handle) WriteIter(src iov.Iter, off int64) (int, error) {
	done := 0
	for src.Len() > 0 {
		seg := src.Segment()
		n, err := h.Write(seg, off+int64(done))
		done += n
		if err != nil || n < len(seg) {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
		src.Advance(n)
	}
	return done, nil
}

// Append implements vfs.Appender: the write lands at the end under the
// volume's lock.
func (h *handle) Append(src iov.Iter) (int64, int, error) {
	b := make([]byte, src.Len())
	src.CopyIn(b)
	return h.x.fs.vol.Append(h.x.n, b, now())
}

func (h *handle) Release() error { return h.x.fs.vol.Release(h.x.n) }

func (h *handle) Sync() error { return h.x.fs.vol.Sync() }
