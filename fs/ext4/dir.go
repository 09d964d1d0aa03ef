package ext4

// Directories: lookups and listings (through fs.vol, without a lock) and,
// on a read-write mount, the changes the Writer makes, acting for the
// caller.

import (
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// dirNode is a directory.
type dirNode struct {
	node
	// up remembers what ".." found on a read-only mount, where it never
	// changes (getdents asks for it in every listing).
	up atomic.Pointer[dirNode]
	// list is the directory's parsed listing (listcache.go).
	list atomic.Pointer[listing]
	// dl is the VFS's lock of the directory (vfs.DirLocker): the node
	// table keeps one dirNode per directory inode while it lives, so the
	// lock is the directory's.
	dl vfs.DirLock
}

// DirLock implements vfs.DirLocker.
func (d *dirNode) DirLock() *vfs.DirLock { return &d.dl }

// Lookup implements vfs.Lookuper: through the directory's htree, or its
// blocks (ext4_find_entry). ".." is the on-disk entry, which at the root
// names the root itself, as the VFS asks. A directory removed while held
// open has no entries (ENOENT).
func (d *dirNode) Lookup(name string) (vfs.Node, error) {
	fs := d.fs
	ro := fs.w == nil
	if name == ".." && ro {
		if up := d.up.Load(); up != nil {
			return up, nil
		}
	}
	var r *disk.Ref
	err := d.read("ext4_lookup", func(in *disk.Inode) error {
		if in.Nlink == 0 {
			return syscall.ENOENT
		}
		ino, err := fs.vol.Lookup(in, name)
		if err != nil {
			return err
		}
		r, err = fs.vol.Ref(ino) // the inode the name named, not a later one of its number
		return err
	})
	if err != nil {
		return nil, err
	}
	n, err := fs.nodeRef(r)
	if err != nil {
		return nil, fs.check("ext4_lookup", err)
	}
	if up, ok := n.(*dirNode); ok && name == ".." && ro {
		d.up.Store(up)
	}
	return n, nil
}

// ReadDir implements vfs.DirReader, for the VFS's own walks (getdents
// goes through the open directory's handle, dirhandle.go): the entries
// but "." and ".." in the kernel's order, each entry's cookie the
// position after it (disk/dirhash.go). An off below 3 starts at the
// beginning: 1 and 2 are the VFS's "." and "..". fn runs outside any
// lock of the file system.
func (d *dirNode) ReadDir(off int64, fn func(vfs.Dirent) bool) error {
	if off < 3 {
		off = 0
	}
	l, err := d.listing()
	switch {
	case err == syscall.ENOENT:
		return err
	case err == nil && l != nil:
		l.read(off, fn)
		return nil
	}
	// From the blocks: a read-only mount's directory without a listing,
	// or a damaged one, its damage reported where met (once: under the
	// Writer's lock on a read-write mount).
	return d.fs.check("ext4_readdir", d.fs.vol.ReadOnce(d.ref, func(in *disk.Inode) error {
		return d.fs.vol.ReadDirFrom(in, off, func(name []byte, ino uint32, ftype uint8, next int64) bool {
			return fn(vfs.Dirent{Name: string(name), Ino: uint64(ino), Type: disk.DType(ftype), Off: next})
		})
	}))
}

// Open implements vfs.Opener: a handle with the listing state getdents
// resumes from (dirhandle.go). On a read-write mount it holds the
// inode, so a directory removed while it is open stays an orphan until
// Release.
func (d *dirNode) Open(flags int, _ vfs.Cred) (vfs.Handle, error) {
	if d.fs.w != nil {
		if err := d.pin(); err != nil {
			return nil, err
		}
	}
	return &dirHandle{d: d}, nil
}

// made returns the node of inode ino, which the Writer just made.
func (d *dirNode) made(op string, ino uint32, err error) (vfs.Node, error) {
	if err != nil {
		return nil, d.fs.check(op, err)
	}
	n, err := d.fs.nodeIno(ino)
	return n, d.fs.check(op, err)
}

// Create implements vfs.Creator.
func (d *dirNode) Create(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	w := d.fs.w
	if w == nil {
		return nil, syscall.EROFS
	}
	cl := callerOf(c)
	ino, err := w.CreateAs(&cl, d.ino(), name, mode, c.Uid, c.Gid)
	return d.made("ext4_create", ino, err)
}

// Mkdir implements vfs.Mkdirer.
func (d *dirNode) Mkdir(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	w := d.fs.w
	if w == nil {
		return nil, syscall.EROFS
	}
	cl := callerOf(c)
	ino, err := w.MkdirAs(&cl, d.ino(), name, mode, c.Uid, c.Gid)
	return d.made("ext4_mkdir", ino, err)
}

// Symlink implements vfs.Symlinker.
func (d *dirNode) Symlink(name, target string, c vfs.Cred) (vfs.Node, error) {
	w := d.fs.w
	if w == nil {
		return nil, syscall.EROFS
	}
	cl := callerOf(c)
	ino, err := w.SymlinkAs(&cl, d.ino(), name, target, c.Uid, c.Gid)
	return d.made("ext4_symlink", ino, err)
}

// Mknod implements vfs.Mknoder: FIFOs, sockets and devices (a regular
// file is Create's).
func (d *dirNode) Mknod(name string, mode uint32, rdev uint64, c vfs.Cred) (vfs.Node, error) {
	if mode&disk.S_IFMT == disk.S_IFREG || mode&disk.S_IFMT == 0 {
		return d.Create(name, mode, c)
	}
	w := d.fs.w
	if w == nil {
		return nil, syscall.EROFS
	}
	cl := callerOf(c)
	ino, err := w.MknodAs(&cl, d.ino(), name, mode, rdev, c.Uid, c.Gid)
	return d.made("ext4_mknod", ino, err)
}

// Tmpfile implements vfs.Tmpfiler: an unnamed regular file (ext4_tmpfile),
// on the orphan list until linkat names it (unless linkable is false) or
// its last close frees it.
func (d *dirNode) Tmpfile(mode uint32, linkable bool, c vfs.Cred) (vfs.Node, error) {
	w := d.fs.w
	if w == nil {
		return nil, syscall.EROFS
	}
	cl := callerOf(c)
	ino, err := w.TmpfileAs(&cl, d.ino(), disk.S_IFREG|mode&07777, c.Uid, c.Gid, linkable)
	return d.made("ext4_tmpfile", ino, err)
}

// Link implements vfs.Linker: a new directory block is charged to c.
func (d *dirNode) Link(name string, target vfs.Node, c vfs.Cred) error {
	w := d.fs.w
	if w == nil {
		return syscall.EROFS
	}
	t := baseOf(target)
	if t == nil || t.fs != d.fs {
		return syscall.EXDEV
	}
	if err := t.pin(); err != nil {
		return err // vfs_link: the target's last link went meanwhile
	}
	defer t.unpin()
	cl := callerOf(c)
	return d.fs.check("ext4_link", w.LinkAs(&cl, d.ino(), name, t.ino()))
}

// Unlink implements vfs.Unlinker.
func (d *dirNode) Unlink(name string, _ vfs.Cred) error {
	if d.fs.w == nil {
		return syscall.EROFS
	}
	return d.fs.check("ext4_unlink", d.fs.w.Unlink(d.ino(), name))
}

// Rmdir implements vfs.Rmdirer.
func (d *dirNode) Rmdir(name string, _ vfs.Cred) error {
	if d.fs.w == nil {
		return syscall.EROFS
	}
	return d.fs.check("ext4_rmdir", d.fs.w.Rmdir(d.ino(), name))
}

// has reports whether name is in d, reading it as it is now.
func (d *dirNode) has(name string) bool {
	found := false
	d.fs.vol.Read(d.ref, func(in *disk.Inode) error {
		_, err := d.fs.vol.Lookup(in, name)
		found = err == nil
		return nil
	})
	return found
}

// Rename implements vfs.Renamer, flags 0, RENAME_NOREPLACE,
// RENAME_EXCHANGE and RENAME_WHITEOUT (with or without NOREPLACE) among
// them, acting for c (a directory block it adds is charged to c).
func (d *dirNode) Rename(oldName string, newDir vfs.Node, newName string, flags uint, c vfs.Cred) error {
	w := d.fs.w
	if w == nil {
		return syscall.EROFS
	}
	nd, ok := newDir.(*dirNode)
	if !ok || nd.fs != d.fs {
		return syscall.EXDEV
	}
	switch flags {
	case 0, unix.RENAME_NOREPLACE, unix.RENAME_EXCHANGE, unix.RENAME_WHITEOUT, unix.RENAME_WHITEOUT | unix.RENAME_NOREPLACE:
	default:
		return syscall.EINVAL
	}
	if flags&unix.RENAME_NOREPLACE != 0 && nd.has(newName) {
		if !d.has(oldName) {
			return syscall.ENOENT
		}
		return syscall.EEXIST
	}
	cl := callerOf(c)
	var err error
	switch {
	case flags&unix.RENAME_EXCHANGE != 0:
		err = w.ExchangeAs(&cl, d.ino(), oldName, nd.ino(), newName)
	case flags&unix.RENAME_WHITEOUT != 0:
		err = w.RenameWhiteoutAs(&cl, d.ino(), oldName, nd.ino(), newName, c.Uid, c.Gid)
	default:
		err = w.RenameAs(&cl, d.ino(), oldName, nd.ino(), newName)
	}
	return d.fs.check("ext4_rename", err)
}
