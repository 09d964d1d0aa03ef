package vfs

// Calls through a descriptor's magic link. Each is the system call of the
// same name on /proc/self/fd/FD, which Linux resolves by jumping to the
// open file's own place (nd_jump_link): the file itself, whatever names it
// has or has lost, a symlink opened O_PATH|O_NOFOLLOW included, and then
// checks as for any path, with the caller's credentials. Unlike the f*
// calls they accept O_PATH descriptors, and unlike the *at calls with
// AT_EMPTY_PATH they are not limited to the stat and chown family (Linux's
// linkat and the *xattrat calls refuse an O_PATH descriptor, or one opened
// with other credentials, there). A file server that holds each file it
// serves as an O_PATH descriptor (the FUSE export) reaches every file
// through them without resolving a name.
//
// A descriptor not open gives EBADF; one with no place in the namespace
// (a pipe, an imported host file) ENXIO, as /proc/self/fd of a file that
// no path leads to cannot be opened.

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// fdPlace returns where the file open as fd is, O_PATH files included.
func (p *Proc) fdPlace(fd int) (location, error) {
	f := p.files.get(fd)
	if f == nil {
		return location{}, errEBADF
	}
	if f.loc.mnt != nil {
		return f.loc, nil
	}
	if f.mnt == nil {
		return location{}, unix.ENXIO
	}
	return location{f.mnt, f.node}, nil
}

// Reopen opens the file open as fd again, as open(2) of /proc/self/fd/FD
// does, and returns the lowest free descriptor for the new open file
// description. flags are open(2)'s: the access mode is checked against
// the file's permissions for the caller (EACCES), as any open is,
// whatever fd was opened with; O_TRUNC truncates; O_CREAT|O_EXCL gives
// EEXIST and O_CREAT alone opens the file; O_NOFOLLOW gives ELOOP (the
// magic link is a symlink); a symlink opens only with O_PATH (ELOOP);
// O_DIRECTORY gives ENOTDIR for anything but a directory; O_TMPFILE gives
// EINVAL.
func (p *Proc) Reopen(fd int, flags int) (int, error) {
	nfd, err := p.reopen(fd, flags)
	if err != nil {
		return -1, pathErr("open", procFd(fd), err)
	}
	return nfd, nil
}

func (p *Proc) reopen(fd, flags int) (int, error) {
	if flags&oTmpfile != 0 {
		return -1, errEINVAL
	}
	loc, err := p.fdPlace(fd)
	if err != nil {
		return -1, err
	}
	if flags&unix.O_PATH != 0 {
		flags &= oPathFlags &^ unix.O_NOFOLLOW
	} else {
		if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
			return -1, unix.EEXIST
		}
		if flags&unix.O_NOFOLLOW != 0 {
			return -1, unix.ELOOP
		}
		if _, ok := loc.node.(Readlinker); ok {
			return -1, unix.ELOOP // may_open: S_IFLNK
		}
	}
	f, err := p.openLoc(loc, flags&^(unix.O_CREAT|unix.O_EXCL), false)
	if err != nil {
		return -1, err
	}
	f.cred = p.cred.Load()
	nfd, err := p.files.installFlags(f, 0, flags&unix.O_CLOEXEC != 0)
	if err != nil {
		f.release()
		return -1, err
	}
	return nfd, nil
}

// TruncateFd sets the size of the file open as fd, as truncate(2) of
// /proc/self/fd/FD does: the rules of Truncate, so the caller needs write
// permission, whatever fd was opened with, and the times change only with
// the size.
func (p *Proc) TruncateFd(fd int, size int64) error {
	if size < 0 {
		return pathErr("truncate", procFd(fd), errEINVAL)
	}
	loc, err := p.fdPlace(fd)
	if err == nil {
		err = p.truncateLoc(loc, size)
	}
	return pathErr("truncate", procFd(fd), err)
}

// LinkFd gives the file open as fd the name newpath, relative to the
// directory open as newdirfd, as linkat(AT_FDCWD, "/proc/self/fd/FD",
// newdirfd, newpath, AT_SYMLINK_FOLLOW) does: the rules of Linkat for the
// caller, whatever credentials fd was opened with. A file with no name
// left gives ENOENT (the file system's Link, as vfs_link's), except an
// unnamed file made with O_TMPFILE without O_EXCL, which this names.
func (p *Proc) LinkFd(fd int, newdirfd int, newpath string) error {
	old, err := p.fdPlace(fd)
	if err != nil {
		return pathErr("linkat", procFd(fd), err)
	}
	dir, name, trailing, err := p.walkParentAt(newdirfd, newpath)
	if err == nil {
		err = p.linkIn(p.cred.Load(), old, dir, name, trailing)
	}
	return pathErr("linkat", newpath, err)
}

// GetxattrFd is Getxattr on /proc/self/fd/FD: the file open as fd.
func (p *Proc) GetxattrFd(fd int, name string) ([]byte, error) {
	if err := checkXattrName(name); err != nil {
		return nil, pathErr("getxattr", procFd(fd), err)
	}
	loc, err := p.fdPlace(fd)
	if err != nil {
		return nil, pathErr("getxattr", procFd(fd), err)
	}
	v, err := p.getxattrNode(loc.mnt, loc.node, name)
	if err != nil {
		return nil, pathErr("getxattr", procFd(fd), err)
	}
	return v, nil
}

// ListxattrFd is Listxattr on /proc/self/fd/FD: the file open as fd.
func (p *Proc) ListxattrFd(fd int) ([]string, error) {
	loc, err := p.fdPlace(fd)
	if err != nil {
		return nil, pathErr("listxattr", procFd(fd), err)
	}
	names, err := p.listxattrNode(loc.node)
	if err != nil {
		return nil, pathErr("listxattr", procFd(fd), err)
	}
	return names, nil
}

// SetxattrFd is Setxattr on /proc/self/fd/FD: the file open as fd.
func (p *Proc) SetxattrFd(fd int, name string, data []byte, flags int) error {
	return p.setxattrFd("setxattr", fd, name, data, flags, false)
}

// RemovexattrFd is Removexattr on /proc/self/fd/FD: the file open as fd.
func (p *Proc) RemovexattrFd(fd int, name string) error {
	return p.setxattrFd("removexattr", fd, name, nil, 0, true)
}

func (p *Proc) setxattrFd(op string, fd int, name string, data []byte, flags int, remove bool) error {
	var err error
	if remove {
		err = checkXattrName(name)
	} else {
		err = setxattrArgs(name, data, flags)
	}
	if err != nil {
		return pathErr(op, procFd(fd), err)
	}
	loc, err := p.fdPlace(fd)
	if err != nil {
		return pathErr(op, procFd(fd), err)
	}
	return pathErr(op, procFd(fd), p.setxattrAt(loc.mnt, loc.node, name, data, flags, remove))
}

// procFd is the path the calls above stand for, for their errors.
func procFd(fd int) string {
	return "/proc/self/fd/" + strconv.Itoa(fd)
}
