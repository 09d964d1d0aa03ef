package vfs

import (
	"golang.org/x/sys/unix"
)

// Open opens the file at path and returns the lowest free descriptor, as
// open(2) does. flags are unix.O_* values:
//
//   - O_CREAT creates a regular file with perm less the umask if the name is
//     free (following a final dangling symlink, as Linux does, unless
//     O_EXCL is set); O_EXCL with O_CREAT gives EEXIST if the name exists;
//   - O_TRUNC truncates a regular file to 0 bytes;
//   - O_DIRECTORY gives ENOTDIR unless path is a directory, O_NOFOLLOW
//     gives ELOOP if the last component is a symlink;
//   - a directory opened for writing gives EISDIR; a write mode on a
//     read-only mount gives EROFS.
//
// Errors are *fs.PathError values wrapping a syscall.Errno.
func (p *Proc) Open(path string, flags int, perm uint32) (int, error) {
	f, err := p.openFile(path, flags, perm)
	if err != nil {
		return -1, pathErr("open", path, err)
	}
	fd, err := p.files.install(f, 0)
	if err != nil {
		f.release()
		return -1, pathErr("open", path, err)
	}
	return fd, nil
}

// openFile resolves path, creating it if asked, and opens it.
func (p *Proc) openFile(path string, flags int, perm uint32) (*file, error) {
	loc, err := p.lookupForOpen(path, flags, perm)
	if err != nil {
		return nil, err
	}
	return p.openLoc(loc, flags)
}

// lookupForOpen is the walk of open(2): Linux's path_openat, with its
// O_CREAT, O_EXCL and O_NOFOLLOW rules.
func (p *Proc) lookupForOpen(path string, flags int, perm uint32) (location, error) {
	follow := flags&unix.O_NOFOLLOW == 0
	if flags&unix.O_CREAT == 0 {
		loc, err := p.walk(path, follow)
		if err != nil {
			return location{}, err
		}
		if _, ok := loc.node.(Readlinker); ok && !follow {
			return location{}, unix.ELOOP
		}
		return loc, nil
	}
	w := walker{ns: p.ns}
	cur := p.ns.start(*p.cwd.Load(), path)
	if err := checkPath(path); err != nil {
		return location{}, err
	}
	for {
		dir, name, trailing, err := w.parent(cur, path)
		if err != nil {
			return location{}, err
		}
		if trailing {
			return location{}, errEISDIR // open_last_lookups: O_CREAT and a trailing slash
		}
		if name == "" || name == "." || name == ".." {
			// do_open: O_CREAT on a directory.
			if _, err := w.step(dir, name, true); err != nil {
				return location{}, err
			}
			return location{}, errEISDIR
		}
		existing, err := w.step(dir, name, false)
		if err == nil {
			if flags&unix.O_EXCL != 0 {
				return location{}, unix.EEXIST
			}
			rl, isLink := existing.node.(Readlinker)
			if !isLink {
				if isDir(existing.node) {
					return location{}, errEISDIR // do_open: O_CREAT on a directory
				}
				return existing, nil
			}
			if !follow {
				return location{}, unix.ELOOP
			}
			w.links++
			if w.links > maxSymlinks {
				return location{}, unix.ELOOP
			}
			target, err := rl.Readlink()
			if err != nil {
				return location{}, err
			}
			if err := checkPath(target); err != nil {
				return location{}, err
			}
			// Create or open the symlink's target, relative to dir.
			cur, path = dir, target
			continue
		}
		if err != errENOENT && err != unix.ENOENT {
			return location{}, err
		}
		if dir.mnt.readonly {
			return location{}, unix.EROFS
		}
		c, ok := dir.node.(Creator)
		if !ok {
			return location{}, unix.EPERM
		}
		ch := p.ns.dcache.invalidate(dir.node, name)
		n, err := c.Create(name, perm&0o7777&^p.umask.Load(), p.cred)
		ch.done()
		if err != nil {
			return location{}, err
		}
		return location{dir.mnt, n}, nil
	}
}

// openLoc opens the node at loc.
func (p *Proc) openLoc(loc location, flags int) (*file, error) {
	st, err := loc.node.Stat()
	if err != nil {
		return nil, err
	}
	acc := flags & unix.O_ACCMODE
	writes := acc == unix.O_WRONLY || acc == unix.O_RDWR
	if st.IsDir() && (writes || flags&unix.O_TRUNC != 0) { // may_open: MAY_WRITE on a directory
		return nil, errEISDIR
	}
	if flags&unix.O_DIRECTORY != 0 && !st.IsDir() {
		return nil, errENOTDIR
	}
	if loc.mnt.readonly && (writes || flags&unix.O_TRUNC != 0 && st.IsRegular()) {
		return nil, unix.EROFS
	}
	var h Handle = loc.node
	if o, ok := loc.node.(Opener); ok {
		if h, err = o.Open(flags); err != nil {
			return nil, err
		}
	} else if st.IsDir() {
		h = dirHandle{}
	}
	if flags&unix.O_TRUNC != 0 && st.IsRegular() {
		// Linux truncates in the VFS (handle_truncate), for any access mode
		// that may write: as root, that is every mode.
		if err := setattr(loc.node, SetAttr{Valid: SetSize, Size: 0}); err != nil {
			if r, ok := h.(Releaser); ok {
				r.Release()
			}
			return nil, err
		}
	}
	f := newFile(loc.node, h, flags)
	f.mnt = loc.mnt
	f.loc = loc
	loc.mnt.openFiles.Add(1)
	return f, nil
}

// dirHandle is the handle of a directory that has no Opener: reads give
// EISDIR, as Linux's generic_read_dir does.
type dirHandle struct{}

func (dirHandle) Read([]byte, int64) (int, error) { return 0, errEISDIR }

// Close closes fd. The open file is released when its last descriptor is
// closed.
func (p *Proc) Close(fd int) error {
	f := p.files.remove(fd)
	if f == nil {
		return errEBADF
	}
	return f.release()
}
