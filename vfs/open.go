package vfs

import (
	"time"

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
	return p.openAt("open", unix.AT_FDCWD, path, flags, perm, 0)
}

// Openat is Open with path relative to the directory open as dirfd (or the
// current directory for AT_FDCWD), as openat(2) does. The caller needs
// search permission on every directory of the path, read or write
// permission on the file by the access mode (O_TRUNC needs write), and, to
// create, write and search permission on the parent (EACCES); a file it
// creates is not checked. O_NOATIME needs the file's owner (EPERM). O_PATH
// opens the file only as a location (for *at calls, Fstat and Fchdir):
// reads, writes and the other descriptor calls give EBADF. O_CREAT with
// O_DIRECTORY gives EINVAL. O_TMPFILE makes an unnamed file in the
// directory path names (tmpfile.go): EOPNOTSUPP where its file system
// cannot.
func (p *Proc) Openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	return p.openAt("openat", dirfd, path, flags, mode, 0)
}

// openAt is open(2), openat(2) and openat2(2) after their flag checks.
func (p *Proc) openAt(op string, dirfd int, path string, flags int, perm uint32, resolve uint64) (int, error) {
	f, err := p.openFile(dirfd, path, flags, perm, resolve)
	if err != nil {
		return -1, pathErr(op, path, err)
	}
	fd, err := p.files.installFlags(f, 0, flags&unix.O_CLOEXEC != 0)
	if err != nil {
		f.release()
		return -1, pathErr(op, path, err)
	}
	return fd, nil
}

// openFile resolves path, creating it if asked, and opens it.
func (p *Proc) openFile(dirfd int, path string, flags int, perm uint32, resolve uint64) (*file, error) {
	if flags&unix.O_PATH != 0 {
		flags &= oPathFlags
	}
	if flags&(unix.O_DIRECTORY|unix.O_CREAT) == unix.O_DIRECTORY|unix.O_CREAT {
		return nil, errEINVAL // build_open_flags, since Linux 6.4
	}
	if flags&oTmpfile != 0 {
		if flags&unix.O_DIRECTORY == 0 || flags&unix.O_ACCMODE == unix.O_RDONLY {
			return nil, errEINVAL
		}
		return p.openTmpfile(dirfd, path, flags, perm, resolve) // tmpfile.go
	}
	if err := checkPath(path); err != nil {
		return nil, err
	}
	w := p.newWalker()
	w.rflags = resolve
	var start location
	var err error
	if w.scoped() && !(path[0] == '/' && resolve&unix.RESOLVE_BENEATH != 0) {
		// The root of a scoped walk is dirfd, even for an absolute path
		// under RESOLVE_IN_ROOT.
		start, err = p.dirStart(dirfd, ".")
		w.root = start
		w.seq = p.ns.rename.readBegin()
	} else {
		start, err = p.dirStart(dirfd, path)
	}
	if err != nil {
		return nil, err
	}
	loc, created, pin, err := p.lookupForOpen(&w, start, path, flags, perm)
	if err != nil {
		return nil, err
	}
	f, err := p.openLoc(loc, flags, created)
	if f != nil {
		f.cred = w.cred
	}
	if pin != nil {
		pin.Release() // the open holds the file now, if it opened
	}
	return f, err
}

// oPathFlags are the flags O_PATH keeps (O_PATH_FLAGS); oTmpfile is
// __O_TMPFILE.
const (
	oPathFlags = unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_PATH | unix.O_CLOEXEC
	oTmpfile   = unix.O_TMPFILE &^ unix.O_DIRECTORY
)

// lookupForOpen is the walk of open(2): Linux's path_openat, with its
// O_CREAT, O_EXCL and O_NOFOLLOW rules. created reports whether it made
// the file. pin, when not nil, holds an existing file that O_CREAT found
// (openCreate) until the caller has opened it and releases pin.
func (p *Proc) lookupForOpen(w *walker, cur location, path string, flags int, perm uint32) (loc location, created bool, pin Releaser, err error) {
	follow := flags&unix.O_NOFOLLOW == 0
	if flags&unix.O_CREAT == 0 {
		loc, err := w.resolve(cur, path, follow)
		if err != nil {
			return location{}, false, nil, err
		}
		if _, ok := loc.node.(Readlinker); ok && !follow && flags&unix.O_PATH == 0 {
			return location{}, false, nil, unix.ELOOP
		}
		return loc, false, nil, nil
	}
	for {
		dir, name, trailing, err := w.parent(cur, path)
		if err != nil {
			return location{}, false, nil, err
		}
		if trailing {
			return location{}, false, nil, errEISDIR // open_last_lookups: O_CREAT and a trailing slash
		}
		if name == "" || name == "." || name == ".." {
			// do_open: O_CREAT on a directory.
			if _, err := w.step(dir, name, true); err != nil {
				return location{}, false, nil, err
			}
			return location{}, false, nil, errEISDIR
		}
		loc, created, pin, target, err := p.openCreate(w, dir, name, flags, perm)
		if err != nil || target == "" {
			return loc, created, pin, err
		}
		// Create or open the symlink's target, relative to dir.
		cur, path = dir, target
	}
}

// openCreate is lookup_open and open_last_lookups for O_CREAT: the last
// component name is looked up in dir, and created if it is missing,
// under dir's lock, so that no other change of the name comes between.
// The file found or made is pinned (PathOpener) before the lock is
// dropped, as Linux's dentry holds the inode, so that an unlink right
// after cannot free it before it is opened: the open then opens the
// unlinked file, where it would otherwise fail with ENOENT. A symlink there is not
// followed: its target is returned for the caller to resolve and create,
// after the lock is dropped.
func (p *Proc) openCreate(w *walker, dir location, name string, flags int, perm uint32) (loc location, created bool, pin Releaser, target string, err error) {
	l := p.ns.lockDir(dir.node)
	defer l.unlock()
	if err := l.alive(); err != nil {
		return location{}, false, nil, "", err // lookup_open: IS_DEADDIR
	}
	follow := flags&unix.O_NOFOLLOW == 0
	existing, err := w.step(dir, name, false)
	if err == nil {
		if flags&unix.O_EXCL != 0 {
			return location{}, false, nil, "", unix.EEXIST
		}
		rl, isLink := existing.node.(Readlinker)
		if !isLink {
			if isDir(existing.node) {
				return location{}, false, nil, "", errEISDIR // do_open: O_CREAT on a directory
			}
			if w.cred != nil {
				if err := w.cred.mayCreateInSticky(p.ns, dir, existing.node); err != nil {
					return location{}, false, nil, "", err
				}
			}
			if po, ok := existing.node.(PathOpener); ok {
				if pin, err = po.OpenPath(); err != nil {
					return location{}, false, nil, "", err
				}
			}
			return existing, false, pin, "", nil
		}
		if !follow || w.rflags&unix.RESOLVE_NO_SYMLINKS != 0 {
			return location{}, false, nil, "", unix.ELOOP
		}
		w.links++
		if w.links > maxSymlinks {
			return location{}, false, nil, "", unix.ELOOP
		}
		if w.cred != nil {
			if err := w.cred.mayFollowLink(p.ns, dir, existing); err != nil {
				return location{}, false, nil, "", err
			}
		}
		target, err := readlinkAccess(rl, existing)
		if err == nil {
			err = checkPath(target)
		}
		return location{}, false, nil, target, err
	}
	if err != errENOENT && err != unix.ENOENT {
		return location{}, false, nil, "", err
	}
	if dir.mnt.readonly {
		return location{}, false, nil, "", unix.EROFS
	}
	c := w.cred
	if err := c.mayCreate(dir, l); err != nil {
		return location{}, false, nil, "", err // may_o_create
	}
	cr, ok := dir.node.(Creator)
	if !ok {
		return location{}, false, nil, "", unix.EPERM
	}
	mode, fc, err := p.createMode(c, dir.node, unix.S_IFREG, c.stripSgid(dir.node, unix.S_IFREG|perm&0o7777)&0o7777)
	if err != nil {
		return location{}, false, nil, "", err
	}
	ch := p.ns.dcache.invalidate(dir.node, name)
	n, err := cr.Create(name, mode, fc)
	ch.done()
	if err != nil {
		return location{}, false, nil, "", err
	}
	if po, ok := n.(PathOpener); ok {
		if pin, err = po.OpenPath(); err != nil {
			return location{}, false, nil, "", err
		}
	}
	return location{dir.mnt, n}, true, pin, "", nil
}

// openLoc opens the node at loc: do_open, may_open and vfs_open in their
// order. created says the open made the file: then neither permission nor
// O_TRUNC applies.
func (p *Proc) openLoc(loc location, flags int, created bool) (*file, error) {
	st, err := loc.node.Stat()
	if err != nil {
		return nil, err
	}
	if flags&unix.O_DIRECTORY != 0 && !st.IsDir() {
		return nil, errENOTDIR
	}
	if flags&unix.O_PATH != 0 {
		f := newFile(loc.node, pathHandle{}, flags)
		if err := f.holdNode(); err != nil {
			return nil, err
		}
		f.mode &^= fmRead | fmWrite
		f.mnt = loc.mnt
		f.loc = loc
		loc.mnt.openFiles.Add(1)
		return f, nil
	}
	exec := flags&OpenExec != 0
	flags &^= OpenExec
	if exec {
		flags &^= unix.O_ACCMODE | unix.O_TRUNC // open_exec: O_RDONLY
	}
	acc := flags & unix.O_ACCMODE
	writes := acc == unix.O_WRONLY || acc == unix.O_RDWR
	typ := st.Mode & unix.S_IFMT
	special := typ != unix.S_IFREG && typ != unix.S_IFDIR && typ != unix.S_IFLNK
	trunc := flags&unix.O_TRUNC != 0 && typ == unix.S_IFREG && !created
	if trunc && loc.mnt.readonly {
		return nil, unix.EROFS // do_open's mnt_want_write for O_TRUNC
	}
	mask := 0
	if exec {
		mask = MayExec // open_exec's acc_mode: exec needs x, not r
	} else if !created {
		mask = accMask[acc]
		if flags&unix.O_TRUNC != 0 {
			mask |= MayWrite
		}
	}
	if st.IsDir() && mask&MayWrite != 0 { // may_open: MAY_WRITE on a directory
		return nil, errEISDIR
	}
	if exec && typ != unix.S_IFREG {
		return nil, errEACCES // may_open: MAY_EXEC on a directory or special file; do_open_execat
	}
	c := p.cred.Load()
	perm := st.Mode | statPerm(loc.node, &st)
	if mask != 0 {
		if err := c.permissionAttrs(loc.mnt, loc.node, perm, st.Uid, st.Gid, mask); err != nil {
			return nil, err
		}
	}
	if perm&PermAppend != 0 && (writes && flags&unix.O_APPEND == 0 || flags&unix.O_TRUNC != 0) {
		return nil, errEPERM // may_open: an append-only file opens for appending
	}
	if flags&unix.O_NOATIME != 0 && !c.ownerOrCapable(st.Uid) {
		return nil, errEPERM
	}
	if loc.mnt.readonly && writes && !special {
		return nil, unix.EROFS
	}
	var h Handle = loc.node
	o, isOpener := loc.node.(Opener)
	if !isOpener && special {
		// A FIFO, socket or device node of a file system (mknod).
		f, err := p.openSpecial(loc, st, flags)
		if err == nil {
			err = f.holdNode()
		}
		return f, err
	}
	if isOpener {
		if h, err = o.Open(flags, c.fsCred()); err != nil {
			return nil, err
		}
	} else if st.IsDir() {
		h = dirHandle{}
	}
	tellAtime(h, loc.mnt) // atime.go
	if err := openFlags(h, st, flags); err != nil {
		if r, ok := h.(Releaser); ok {
			r.Release()
		}
		return nil, err
	}
	if trunc {
		// Linux truncates in the VFS (handle_truncate), after the checks
		// above; a caller without CAP_FSETID loses the set-ID bits.
		killCapsStat(loc.node, &st, c)
		if err := setattr(loc.node, c.killPriv(st, SetAttr{Valid: SetSize | SetMtime, Size: 0, Mtime: time.Now()}), c); err != nil {
			if r, ok := h.(Releaser); ok {
				r.Release()
			}
			return nil, err
		}
	}
	f := newFile(loc.node, h, flags)
	if !isOpener {
		if err := f.holdNode(); err != nil {
			return nil, err
		}
	}
	if writes && typ == unix.S_IFREG {
		f.mode |= fmKillPriv
	}
	f.mnt = loc.mnt
	f.loc = loc
	loc.mnt.openFiles.Add(1)
	return f, nil
}

// OpenExec is Linux's __FMODE_EXEC as an open flag: the open of a file
// to execute it (open_exec), which needs execute permission instead of
// read permission and a regular file (EACCES otherwise), and opens it
// for reading. open(2) cannot pass it (Linux drops the bit); Open,
// Openat and Reopen take it, for a server that executes files for
// others (the FUSE export's OPEN with FMODE_EXEC).
const OpenExec = 0x20

// accMask is ACC_MODE: the permission each access mode needs (mode 3, which
// Linux accepts, needs both).
var accMask = [4]int{MayRead, MayWrite, MayRead | MayWrite, MayRead | MayWrite}

// pathHandle is the handle of an O_PATH file: it has no methods, so every
// call that needs a driver method fails.
type pathHandle struct{}

// dirHandle is the handle of a directory that has no Opener: reads give
// EISDIR, as Linux's generic_read_dir does.
type dirHandle struct{}

func (dirHandle) Read([]byte, int64) (int, error) { return 0, errEISDIR }

// Close closes fd. The open file is released when its last descriptor is
// closed. The process's POSIX record locks on the file go with any of its
// descriptors, as in Linux (locks_remove_posix in filp_close).
func (p *Proc) Close(fd int) error {
	f := p.files.remove(fd)
	if f == nil {
		return errEBADF
	}
	return p.closeFile(f)
}
