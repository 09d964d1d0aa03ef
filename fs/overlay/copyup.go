package overlay

// Copy-up (Linux fs/overlayfs/copy_up.c without index or metacopy): a
// lower object's copy is made under a temporary name in the work
// directory (ovl_copy_up_workdir), complete with its data, extended
// attributes, owner, mode and times, and only then renamed into the upper
// directory, so that no crash and no failed step leaves a partial copy
// visible: before the rename the work directory holds it, and the next
// mount empties the work directory.

import (
	"fmt"
	"runtime"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// tempName returns a new name for a temporary object in the work
// directory, as ovl_tempname makes them.
func (fs *FS) tempName() string { return fmt.Sprintf("#%x", fs.tempID.Add(1)) }

// copyUp makes sure n has an upper object (ovl_copy_up): n's ancestors
// are copied up first, then n, with its data.
func (n *node) copyUp() error {
	if n.upper.Load() != nil {
		return nil
	}
	fs := n.fs
	if fs.upper == nil {
		return unix.EROFS
	}
	n.cu.Lock()
	defer n.cu.Unlock()
	if n.upper.Load() != nil {
		return nil
	}
	parent, _ := n.at.get()
	if parent == nil {
		return unix.EROFS // a root without an upper directory
	}
	if err := parent.copyUp(); err != nil {
		return err
	}
	return n.copyUpOne()
}

// copyUpOne copies n up, its parent having an upper directory; n.cu is
// held.
func (n *node) copyUpOne() error {
	fs := n.fs
	up := fs.upper.p
	l := n.lower[0]
	st, err := l.l.p.Fstat(l.fd)
	if err != nil {
		return errno(err)
	}
	tmp := fs.tempName()
	fd, err := fs.copyToWork(l, st, tmp)
	if err != nil {
		fs.cleanupWork(tmp, n.typ == unix.S_IFDIR)
		return err
	}
	r, err := newReal(fs.upper, fd)
	if err != nil {
		fs.cleanupWork(tmp, n.typ == unix.S_IFDIR)
		return err
	}
	ust, err := r.stat()
	if err != nil {
		r.close()
		fs.cleanupWork(tmp, n.typ == unix.S_IFDIR)
		return err
	}
	// Into place, under the directory's mutex, so that no lookup sees the
	// name between the rename and the node's new upper object, and an
	// unlink or rename of the name meanwhile is seen.
	parent, name := n.at.get()
	parent.mu.Lock()
	at, atName := n.at.get()
	if n.removed.Load() || at != parent || atName != name {
		parent.mu.Unlock()
		// The name went while the copy was made: the copy stays, nameless,
		// as the node's upper object (what an open file of it still
		// changes), as Linux's tmpfile copy-up of an unlinked file.
		if err := up.Unlinkat(fs.work, tmp, unlinkFlags(n.typ)); err != nil {
			r.close()
			return errno(err)
		}
	} else {
		pu := parent.upper.Load()
		pst, perr := up.Fstat(pu.fd)
		err := up.Renameat2(fs.work, tmp, pu.fd, name, unix.RENAME_NOREPLACE)
		if err == nil && perr == nil {
			// A copy-up changes nothing the overlay shows of the parent:
			// its times stay (ovl_copy_up_workdir restores them).
			up.Utimensat(pu.fd, "", []unix.Timespec{unix.NsecToTimespec(pst.Atime.UnixNano()),
				unix.NsecToTimespec(pst.Mtime.UnixNano())}, unix.AT_EMPTY_PATH)
		}
		runtime.KeepAlive(parent)
		if err != nil {
			parent.mu.Unlock()
			r.close()
			fs.cleanupWork(tmp, n.typ == unix.S_IFDIR)
			return errno(err)
		}
		parent.mu.Unlock()
	}
	n.descs.add(r)
	n.origin = true
	n.upper.Store(&r)
	if n.typ != unix.S_IFDIR {
		fs.registerUpper(ust.Ino, n)
	}
	fs.keepOrigin(n)
	return nil
}

func unlinkFlags(typ uint32) int {
	if typ == unix.S_IFDIR {
		return unix.AT_REMOVEDIR
	}
	return 0
}

// copyToWork makes the copy of the lower object l, whose status is st, as
// tmp in the work directory, and returns it open with O_PATH: the object
// with no permission bits, then its data, its extended attributes less
// the overlay's own, its owner, mode and times, in ovl_copy_up_metadata's
// order (the owner before the mode, whose set-ID bits chown would clear).
func (fs *FS) copyToWork(l real, st vfs.Stat, tmp string) (int, error) {
	up := fs.upper.p
	typ := st.Mode & unix.S_IFMT
	switch typ {
	case unix.S_IFDIR:
		if err := up.Mkdirat(fs.work, tmp, 0); err != nil {
			return -1, errno(err)
		}
	case unix.S_IFREG:
		wfd, err := up.Openat(fs.work, tmp, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return -1, errno(err)
		}
		if st.Size > 0 {
			err = fs.copyData(l, wfd, st.Size)
		}
		if cerr := up.Close(wfd); err == nil {
			err = errno(cerr)
		}
		if err != nil {
			return -1, err
		}
	case unix.S_IFLNK:
		target, err := l.l.p.Readlinkat(l.fd, "")
		if err != nil {
			return -1, errno(err)
		}
		if err := up.Symlinkat(target, fs.work, tmp); err != nil {
			return -1, errno(err)
		}
	default:
		if err := up.Mknodat(fs.work, tmp, typ, int(st.Rdev)); err != nil {
			return -1, errno(err)
		}
	}
	fd, err := up.Openat(fs.work, tmp, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, errno(err)
	}
	if err := fs.copyXattrs(l, fd); err != nil {
		up.Close(fd)
		return -1, err
	}
	if err := fs.setAttrs(fd, st); err != nil {
		up.Close(fd)
		return -1, err
	}
	return fd, nil
}

// copyXattrs copies the extended attributes of the lower object l to the
// upper object open as fd, less the overlay's own (ovl_copy_xattr).
func (fs *FS) copyXattrs(l real, fd int) error {
	names, err := l.l.p.ListxattrFd(l.fd)
	if err != nil {
		if en := errno(err); en == unix.EOPNOTSUPP {
			return nil
		}
		return errno(err)
	}
	up := fs.upper.p
	for _, name := range names {
		if fs.private(name) {
			continue
		}
		v, err := l.l.p.GetxattrFd(l.fd, name)
		if err != nil {
			if errno(err) == unix.ENODATA {
				continue // removed meanwhile
			}
			return errno(err)
		}
		if err := up.SetxattrFd(fd, name, v, 0); err != nil {
			return errno(err)
		}
	}
	return nil
}

// setAttrs gives the upper object open as fd the owner, mode and times of
// st (ovl_set_attr).
func (fs *FS) setAttrs(fd int, st vfs.Stat) error {
	up := fs.upper.p
	if err := up.Fchownat(fd, "", int(st.Uid), int(st.Gid), unix.AT_EMPTY_PATH); err != nil {
		return errno(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		if err := up.Fchmodat(fd, "", st.Mode&0o7777, unix.AT_EMPTY_PATH); err != nil {
			return errno(err)
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(st.Atime.UnixNano()), unix.NsecToTimespec(st.Mtime.UnixNano())}
	return errno(up.Utimensat(fd, "", ts, unix.AT_EMPTY_PATH))
}

// copyData copies size bytes of the lower file l into the upper file open
// for writing as wfd, region by region of data, leaving holes as holes
// (ovl_copy_up_file's SEEK_DATA/SEEK_HOLE loop). The bytes go file to
// file as sendfile's do: one copy.
func (fs *FS) copyData(l real, wfd int, size int64) error {
	up := fs.upper.p
	lfd, err := l.l.p.Reopen(l.fd, unix.O_RDONLY|unix.O_NOATIME)
	if err != nil {
		lfd, err = l.l.p.Reopen(l.fd, unix.O_RDONLY)
	}
	if err != nil {
		return errno(err)
	}
	rfd, err := up.Getfd(l.l.p, lfd)
	l.l.p.Close(lfd)
	if err != nil {
		return errno(err)
	}
	defer up.Close(rfd)
	for off := int64(0); off < size; {
		data, err := up.Seek(rfd, off, unix.SEEK_DATA)
		if err != nil {
			if errno(err) == unix.ENXIO {
				break // a hole to the end
			}
			data = off // no SEEK_DATA: all data
		}
		end, err := up.Seek(rfd, data, unix.SEEK_HOLE)
		if err != nil || end > size {
			end = size
		}
		if _, err := up.Seek(wfd, data, unix.SEEK_SET); err != nil {
			return errno(err)
		}
		for pos := data; pos < end; {
			n, err := up.Sendfile(wfd, rfd, &pos, int(min(end-pos, 1<<30)))
			if err != nil {
				return errno(err)
			}
			if n == 0 {
				return unix.EIO // the lower file shrank
			}
		}
		off = end
	}
	return errno(up.Ftruncate(wfd, size))
}

// cleanupWork removes a temporary object from the work directory, and
// what is in it for a directory (ovl_cleanup).
func (fs *FS) cleanupWork(name string, isDir bool) {
	removeAll(fs.upper.p, fs.work, name, isDir)
}

// registerUpper records n as the node of the upper non-directory with
// inode number ino, for its hard links.
func (fs *FS) registerUpper(ino uint64, n *node) {
	fs.byUpperMu.Lock()
	fs.byUpper[ino] = weakOf(n)
	fs.byUpperMu.Unlock()
}

// upperNode returns the live node of the upper non-directory with inode
// number ino, or nil.
func (fs *FS) upperNode(ino uint64) *node {
	fs.byUpperMu.Lock()
	defer fs.byUpperMu.Unlock()
	if w, ok := fs.byUpper[ino]; ok {
		if n := w.Value(); n != nil && !n.removed.Load() {
			return n
		}
		delete(fs.byUpper, ino)
	}
	return nil
}

// keepOrigin keeps a node that reports its origin's inode number for the
// rest of the mount, so that a later lookup does not make one that
// reports its upper object's.
func (fs *FS) keepOrigin(n *node) {
	fs.originsMu.Lock()
	fs.origins[n] = struct{}{}
	fs.originsMu.Unlock()
}

// forget drops a node whose last name went.
func (fs *FS) forget(n *node) {
	n.removed.Store(true)
	fs.originsMu.Lock()
	delete(fs.origins, n)
	fs.originsMu.Unlock()
}
