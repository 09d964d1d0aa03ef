package vfs

import (
	"time"

	"golang.org/x/sys/unix"
)

// setattr applies a to n, or gives EPERM if its file system cannot.
func setattr(n Node, a SetAttr) error {
	s, ok := n.(Setattrer)
	if !ok {
		return unix.EPERM
	}
	return s.Setattr(a)
}

// setattrPath resolves path and applies a, checking the mount.
func (p *Proc) setattrPath(op, path string, follow bool, a SetAttr) error {
	loc, err := p.walk(path, follow)
	if err == nil {
		err = p.setattrLoc(loc, a)
	}
	return pathErr(op, path, err)
}

func (p *Proc) setattrLoc(loc location, a SetAttr) error {
	if loc.mnt.readonly {
		return unix.EROFS
	}
	return setattr(loc.node, a)
}

// Chmod sets the permission bits of the file at path, following symlinks,
// as chmod(2) does. Bits outside 07777 are ignored.
func (p *Proc) Chmod(path string, mode uint32) error {
	return p.setattrPath("chmod", path, true, SetAttr{Valid: SetMode, Mode: mode & 0o7777})
}

// Fchmod is Chmod on an open file.
func (p *Proc) Fchmod(fd int, mode uint32) error {
	f := p.files.get(fd)
	if f == nil {
		return errEBADF
	}
	return p.setattrLoc(location{f.mnt, f.node}, SetAttr{Valid: SetMode, Mode: mode & 0o7777})
}

// Chown sets the owner and group of the file at path, following symlinks.
func (p *Proc) Chown(path string, uid, gid uint32) error {
	return p.setattrPath("chown", path, true, SetAttr{Valid: SetUid | SetGid, Uid: uid, Gid: gid})
}

// Utimes sets the access and modification times of the file at path,
// following symlinks, as utimensat(2) does. A zero time.Time leaves that
// time unchanged (UTIME_OMIT).
func (p *Proc) Utimes(path string, atime, mtime time.Time) error {
	a := SetAttr{Atime: atime, Mtime: mtime}
	if !atime.IsZero() {
		a.Valid |= SetAtime
	}
	if !mtime.IsZero() {
		a.Valid |= SetMtime
	}
	return p.setattrPath("utimes", path, true, a)
}

// Truncate sets the size of the regular file at path, as truncate(2)
// does. A negative size gives EINVAL, a directory EISDIR.
func (p *Proc) Truncate(path string, size int64) error {
	if size < 0 {
		return pathErr("truncate", path, errEINVAL)
	}
	loc, err := p.walk(path, true)
	if err == nil {
		if isDir(loc.node) {
			err = errEISDIR
		} else {
			err = p.setattrLoc(loc, SetAttr{Valid: SetSize, Size: size})
		}
	}
	return pathErr("truncate", path, err)
}

// Ftruncate sets the size of the regular file open as fd, as ftruncate(2)
// does: a descriptor not open for writing, or not a regular file, gives
// EINVAL.
func (p *Proc) Ftruncate(fd int, size int64) error {
	if size < 0 {
		return errEINVAL
	}
	f := p.files.get(fd)
	if f == nil {
		return errEBADF
	}
	st, err := f.node.Stat()
	if err != nil {
		return err
	}
	if !st.IsRegular() || f.mode&fmWrite == 0 {
		return errEINVAL
	}
	return p.setattrLoc(location{f.mnt, f.node}, SetAttr{Valid: SetSize, Size: size})
}
