package vfs

// The attribute calls: chmod, chown, utimensat, truncate (Linux fs/open.c,
// fs/utimes.c, fs/attr.c). Their permission rules are setattr_prepare's and
// notify_change's, checked here; the file system only stores the result.

import (
	"time"

	"golang.org/x/sys/unix"
)

// setattr applies a to n for the caller c, or gives EPERM if its file
// system cannot.
func setattr(n Node, a SetAttr, c *creds) error {
	s, ok := n.(Setattrer)
	if !ok {
		return unix.EPERM
	}
	return s.Setattr(a, c.fsCred())
}

// readonly reports whether loc is on a read-only mount.
func (loc location) readonly() bool { return loc.mnt != nil && loc.mnt.readonly }

// fileLoc returns where the file open as fd is, for the f* calls: EBADF if
// fd is not open, or open with O_PATH (Linux's fdget refuses those).
func (p *Proc) fileLoc(fd int) (location, *file, error) {
	f := p.files.get(fd)
	if f == nil || f.flags.Load()&unix.O_PATH != 0 {
		return location{}, nil, errEBADF
	}
	return location{f.mnt, f.node}, f, nil
}

// killPriv adds to a the mode change that Linux's should_remove_suid makes
// for a truncate or chown: a caller without CAP_FSETID that changes a
// regular file loses its set-user-ID bit, and its set-group-ID bit if the
// file is group-executable or the caller is not in its group.
func (c *creds) killPriv(st Stat, a SetAttr) SetAttr {
	if c.fsCapable() || !st.IsRegular() {
		return a
	}
	mode := st.Mode &^ unix.S_ISUID
	if st.Mode&unix.S_ISGID != 0 && (st.Mode&unix.S_IXGRP != 0 || !c.inGroup(st.Gid)) {
		mode &^= unix.S_ISGID
	}
	if mode != st.Mode {
		a.Valid |= SetMode
		a.Mode = mode & 0o7777
	}
	return a
}

// killCapsStat removes the capability xattr of n, whose Stat is st, if
// it may have one (PermKillPriv).
func killCapsStat(n Node, st *Stat, c *creds) {
	if statPerm(n, st)&PermKillPriv != 0 {
		killCaps(n, c)
	}
}

// Chmod sets the permission bits of the file at path, following symlinks,
// as chmod(2) does. Bits outside 07777 are ignored.
func (p *Proc) Chmod(path string, mode uint32) error {
	return p.fchmodat("chmod", unix.AT_FDCWD, path, mode, 0)
}

// Fchmodat is Chmod with path relative to the directory open as dirfd, as
// fchmodat2(2) does: AT_SYMLINK_NOFOLLOW changes a symlink itself, which
// gives EOPNOTSUPP as on Linux's file systems; AT_EMPTY_PATH with an empty
// path changes dirfd's file; other flags give EINVAL. Only the file's
// owner or a process with CAP_FOWNER may change the mode (EPERM); the
// set-group-ID bit is silently dropped unless the caller is in the file's
// group or has CAP_FSETID.
func (p *Proc) Fchmodat(dirfd int, path string, mode uint32, flags int) error {
	return p.fchmodat("fchmodat", dirfd, path, mode, flags)
}

func (p *Proc) fchmodat(op string, dirfd int, path string, mode uint32, flags int) error {
	loc, err := p.lookupAt(dirfd, path, flags, unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH)
	if err == nil {
		if _, ok := loc.node.(Readlinker); ok && flags&unix.AT_SYMLINK_NOFOLLOW != 0 {
			err = errEOPNOTSUP
		} else {
			err = p.chmodLoc(loc, mode)
		}
	}
	return pathErr(op, path, err)
}

// Fchmod is Chmod on an open file.
func (p *Proc) Fchmod(fd int, mode uint32) error {
	loc, _, err := p.fileLoc(fd)
	if err != nil {
		return err
	}
	return p.chmodLoc(loc, mode)
}

// chmodLoc is chmod_common: EROFS, then setattr_prepare's ownership rule.
func (p *Proc) chmodLoc(loc location, mode uint32) error {
	if loc.readonly() {
		return unix.EROFS
	}
	st, err := loc.node.Stat()
	if err != nil {
		return err
	}
	c := p.cred.Load()
	if mayNotSetattr(loc.node, &st) || !c.ownerOrCapable(st.Uid) {
		return errEPERM
	}
	mode &= 0o7777
	if !c.inGroupOrCapable(st.Gid) {
		mode &^= unix.S_ISGID
	}
	if err := setattr(loc.node, SetAttr{Valid: SetMode, Mode: mode}, c); err != nil {
		return err
	}
	return chmodACL(loc.node, mode, c)
}

// mayNotSetattr is may_setattr's rule for changes of mode, owner and
// explicit times: none on an immutable or append-only file.
func mayNotSetattr(n Node, st *Stat) bool {
	return statPerm(n, st)&(PermImmutable|PermAppend) != 0
}

// Chown sets the owner and group of the file at path, following symlinks,
// as chown(2) does; an id of 0xffffffff ((uid_t)-1) leaves it alone.
func (p *Proc) Chown(path string, uid, gid uint32) error {
	return p.fchownat("chown", unix.AT_FDCWD, path, idInt(uid), idInt(gid), 0)
}

// Lchown is Chown without following a final symlink, as lchown(2) does.
func (p *Proc) Lchown(path string, uid, gid uint32) error {
	return p.fchownat("lchown", unix.AT_FDCWD, path, idInt(uid), idInt(gid), unix.AT_SYMLINK_NOFOLLOW)
}

// idInt converts a uid_t or gid_t: (uid_t)-1 is -1.
func idInt(id uint32) int {
	if id == ^uint32(0) {
		return -1
	}
	return int(id)
}

// Fchownat sets the owner and group of the file at path relative to the
// directory open as dirfd, as fchownat(2) does; -1 leaves an id alone.
// flags may hold AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH; others give
// EINVAL. Changing the owner needs CAP_CHOWN; the owner may change the
// group to one of its groups (EPERM otherwise). A non-directory loses its
// set-user-ID bit, and its set-group-ID bit if group-executable, even when
// root changes it, as Linux's notify_change does.
func (p *Proc) Fchownat(dirfd int, path string, uid, gid int, flags int) error {
	return p.fchownat("fchownat", dirfd, path, uid, gid, flags)
}

func (p *Proc) fchownat(op string, dirfd int, path string, uid, gid int, flags int) error {
	loc, err := p.lookupAt(dirfd, path, flags, unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH)
	if err == nil {
		err = p.chownLoc(loc, uid, gid)
	}
	return pathErr(op, path, err)
}

// Fchown is Fchownat on an open file.
func (p *Proc) Fchown(fd int, uid, gid int) error {
	loc, _, err := p.fileLoc(fd)
	if err != nil {
		return err
	}
	return p.chownLoc(loc, uid, gid)
}

// chownLoc is chown_common and notify_change: EROFS, then the set-ID bits
// to drop, then setattr_prepare's chown, chgrp and chmod rules.
func (p *Proc) chownLoc(loc location, uid, gid int) error {
	var a SetAttr
	if uid != -1 {
		id, _, err := idArg(uid)
		if err != nil {
			return err
		}
		a.Valid |= SetUid
		a.Uid = id
	}
	if gid != -1 {
		id, _, err := idArg(gid)
		if err != nil {
			return err
		}
		a.Valid |= SetGid
		a.Gid = id
	}
	if loc.readonly() {
		return unix.EROFS
	}
	st, err := loc.node.Stat()
	if err != nil {
		return err
	}
	c := p.cred.Load()
	if mayNotSetattr(loc.node, &st) {
		return errEPERM
	}
	mode := st.Mode
	if !st.IsDir() {
		// ATTR_KILL_SUID, and setattr_should_drop_sgid.
		mode &^= unix.S_ISUID
		if mode&unix.S_ISGID != 0 && (mode&unix.S_IXGRP != 0 || !c.inGroupOrCapable(st.Gid)) {
			mode &^= unix.S_ISGID
		}
	}
	if a.Valid&SetUid != 0 && !(st.Uid == c.fsuid && a.Uid == st.Uid || c.fsCapable()) {
		return errEPERM // chown_ok
	}
	if a.Valid&SetGid != 0 && !(st.Uid == c.fsuid && (a.Gid == st.Gid || c.inGroup(a.Gid)) || c.fsCapable()) {
		return errEPERM // chgrp_ok
	}
	if mode != st.Mode {
		if !c.ownerOrCapable(st.Uid) {
			return errEPERM
		}
		g := st.Gid
		if a.Valid&SetGid != 0 {
			g = a.Gid
		}
		if !c.inGroupOrCapable(g) {
			mode &^= unix.S_ISGID
		}
		a.Valid |= SetMode
		a.Mode = mode & 0o7777
	}
	if a.Valid == 0 {
		// ATTR_CTIME alone: the change time still moves.
		a.Valid, a.Uid = SetUid, st.Uid
	}
	if !st.IsDir() {
		killCapsStat(loc.node, &st, c) // chown_common: ATTR_KILL_PRIV
	}
	return setattr(loc.node, a, c)
}

// Utimes sets the access and modification times of the file at path,
// following symlinks, as utimensat(2) does. A zero time.Time leaves that
// time unchanged (UTIME_OMIT).
func (p *Proc) Utimes(path string, atime, mtime time.Time) error {
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
	if !atime.IsZero() {
		ts[0] = unix.NsecToTimespec(atime.UnixNano())
	}
	if !mtime.IsZero() {
		ts[1] = unix.NsecToTimespec(mtime.UnixNano())
	}
	return p.utimensat("utimes", unix.AT_FDCWD, path, ts, 0)
}

// Utimensat sets the access and modification times of the file at path
// relative to the directory open as dirfd, as utimensat(2) does. ts is nil
// (both now) or two times, access then modification, each a time with
// nanoseconds in [0, 1e9), or UTIME_NOW, or UTIME_OMIT (left alone);
// other nanoseconds give EINVAL, and two UTIME_OMITs return at once
// without looking at path. flags may hold AT_SYMLINK_NOFOLLOW and
// AT_EMPTY_PATH. Setting both times to now needs ownership or write
// permission (EACCES); any other setting needs ownership or CAP_FOWNER
// (EPERM).
func (p *Proc) Utimensat(dirfd int, path string, ts []unix.Timespec, flags int) error {
	return p.utimensat("utimensat", dirfd, path, ts, flags)
}

func (p *Proc) utimensat(op string, dirfd int, path string, ts []unix.Timespec, flags int) error {
	if ts != nil {
		if len(ts) != 2 {
			return pathErr(op, path, errEINVAL)
		}
		if ts[0].Nsec == unix.UTIME_OMIT && ts[1].Nsec == unix.UTIME_OMIT {
			return nil
		}
	}
	loc, err := p.lookupAt(dirfd, path, flags, unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH)
	if err == nil {
		err = p.utimesLoc(loc, ts)
	}
	return pathErr(op, path, err)
}

// Futimens is Utimensat on an open file, as futimens(3) does.
func (p *Proc) Futimens(fd int, ts []unix.Timespec) error {
	if ts != nil {
		if len(ts) != 2 {
			return errEINVAL
		}
		if ts[0].Nsec == unix.UTIME_OMIT && ts[1].Nsec == unix.UTIME_OMIT {
			return nil
		}
	}
	loc, _, err := p.fileLoc(fd)
	if err != nil {
		return err
	}
	return p.utimesLoc(loc, ts)
}

// nsecValid is Linux's nsec_valid.
func nsecValid(n int64) bool {
	return n == unix.UTIME_OMIT || n == unix.UTIME_NOW || n >= 0 && n < 1e9
}

// utimesLoc is vfs_utimes and notify_change's time rules.
func (p *Proc) utimesLoc(loc location, ts []unix.Timespec) error {
	if ts != nil {
		if !nsecValid(ts[0].Nsec) || !nsecValid(ts[1].Nsec) {
			return errEINVAL
		}
		if ts[0].Nsec == unix.UTIME_NOW && ts[1].Nsec == unix.UTIME_NOW {
			ts = nil
		}
	}
	if loc.readonly() {
		return unix.EROFS
	}
	st, err := loc.node.Stat()
	if err != nil {
		return err
	}
	c := p.cred.Load()
	if perm := statPerm(loc.node, &st); perm&PermImmutable != 0 || ts != nil && perm&PermAppend != 0 {
		return errEPERM // may_setattr
	}
	if !c.ownerOrCapable(st.Uid) {
		if ts != nil {
			return errEPERM // ATTR_TIMES_SET: setattr_prepare
		}
		if err := c.permissionStat(loc, &st, MayWrite); err != nil {
			return err // ATTR_TOUCH: notify_change
		}
	}
	now := time.Now()
	a := SetAttr{Valid: SetAtime | SetMtime, Atime: now, Mtime: now}
	if ts != nil {
		a.Valid = 0
		set := func(t unix.Timespec, bit uint32, dst *time.Time) {
			switch t.Nsec {
			case unix.UTIME_OMIT:
				return
			case unix.UTIME_NOW:
			default:
				*dst = time.Unix(t.Sec, t.Nsec)
			}
			a.Valid |= bit
		}
		set(ts[0], SetAtime, &a.Atime)
		set(ts[1], SetMtime, &a.Mtime)
	}
	return setattr(loc.node, a, c)
}

// Truncate sets the size of the regular file at path, as truncate(2)
// does: a negative size gives EINVAL, a directory EISDIR, another
// non-regular file EINVAL, then EROFS, then the caller needs write
// permission (EACCES). A caller without CAP_FSETID clears the file's
// set-ID bits, as Linux's do_truncate does.
func (p *Proc) Truncate(path string, size int64) error {
	if size < 0 {
		return pathErr("truncate", path, errEINVAL)
	}
	loc, err := p.walk(path, true)
	if err == nil {
		err = p.truncateLoc(loc, size)
	}
	return pathErr("truncate", path, err)
}

// truncateLoc is vfs_truncate.
func (p *Proc) truncateLoc(loc location, size int64) error {
	st, err := loc.node.Stat()
	if err != nil {
		return err
	}
	if st.IsDir() {
		return errEISDIR
	}
	if !st.IsRegular() {
		return errEINVAL
	}
	// inode_permission (EROFS of a read-only file system, EACCES), then
	// mnt_want_write (EROFS of a read-only bind mount), as Linux 6.18
	// orders them (measured).
	c := p.cred.Load()
	if err := c.permissionStat(loc, &st, MayWrite); err != nil {
		return err
	}
	if loc.readonly() {
		return unix.EROFS
	}
	if statPerm(loc.node, &st)&PermAppend != 0 {
		return errEPERM // vfs_truncate: IS_APPEND
	}
	killCapsStat(loc.node, &st, c)
	return setattr(loc.node, c.killPriv(st, SetAttr{Valid: SetSize, Size: size}), c)
}

// Ftruncate sets the size of the regular file open as fd, as ftruncate(2)
// does: a descriptor not open for writing, or not a regular file, gives
// EINVAL. No permission is checked: the descriptor is open for writing.
func (p *Proc) Ftruncate(fd int, size int64) error {
	if size < 0 {
		return errEINVAL
	}
	loc, f, err := p.fileLoc(fd)
	if err != nil {
		return err
	}
	st, err := f.node.Stat()
	if err != nil {
		return err
	}
	if !st.IsRegular() || f.mode&fmWrite == 0 {
		return errEINVAL
	}
	if statPerm(loc.node, &st)&PermAppend != 0 {
		return errEPERM // do_ftruncate: IS_APPEND
	}
	if loc.readonly() {
		return unix.EROFS
	}
	c := p.cred.Load()
	killCapsStat(loc.node, &st, c)
	return setattr(loc.node, c.killPriv(st, SetAttr{Valid: SetSize | SetMtime, Size: size, Mtime: time.Now()}), c)
}
