package vfs

// The dirfd plumbing that the *at calls share (Linux path_init): where a
// relative path starts, AT_EMPTY_PATH, and the walker a process's calls
// use. Every path call is its *at form with AT_FDCWD.

import "golang.org/x/sys/unix"

// newWalker returns a walk for this process: its credentials, the
// namespace root as "/".
func (p *Proc) newWalker() walker {
	return walker{ns: p.ns, cred: p.cred.Load(), root: p.ns.rootLoc()}
}

// dirStart returns where path, given with dirfd, starts: nowhere in
// particular for an absolute path (the walk jumps to its root, and dirfd is
// not looked at, as in Linux), the current directory for AT_FDCWD, or the
// directory open as dirfd: EBADF if dirfd is not open, ENOTDIR if it is
// not a directory and path is not empty.
func (p *Proc) dirStart(dirfd int, path string) (location, error) {
	if path != "" && path[0] == '/' {
		return location{}, nil
	}
	if dirfd == unix.AT_FDCWD {
		return *p.cwd.Load(), nil
	}
	f := p.files.get(dirfd)
	if f == nil {
		return location{}, errEBADF
	}
	if f.loc.mnt == nil {
		if path == "" {
			return location{}, errENOENT
		}
		return location{}, errENOTDIR
	}
	if path != "" && !isDir(f.loc.node) {
		return location{}, errENOTDIR
	}
	return f.loc, nil
}

// walkAt resolves path relative to dirfd.
func (p *Proc) walkAt(dirfd int, path string, follow bool) (location, error) {
	return p.walkAtAs(p.cred.Load(), dirfd, path, follow)
}

// walkAtAs is walkAt with the search permissions of credentials c.
func (p *Proc) walkAtAs(c *creds, dirfd int, path string, follow bool) (location, error) {
	if err := checkPath(path); err != nil {
		return location{}, err
	}
	start, err := p.dirStart(dirfd, path)
	if err != nil {
		return location{}, err
	}
	w := p.newWalker()
	w.cred = c
	return w.resolve(start, path, follow)
}

// walkParentAt resolves all of path but its last component, relative to
// dirfd.
func (p *Proc) walkParentAt(dirfd int, path string) (location, string, bool, error) {
	if err := checkPath(path); err != nil {
		return location{}, "", false, err
	}
	start, err := p.dirStart(dirfd, path)
	if err != nil {
		return location{}, "", false, err
	}
	w := p.newWalker()
	return w.parent(start, path)
}

// lookupAt resolves path relative to dirfd with the AT_ flags of the stat
// and chown family: AT_SYMLINK_NOFOLLOW, and AT_EMPTY_PATH, which makes an
// empty path name dirfd itself (any file, not only a directory). allowed
// is the set of flags the call accepts; others give EINVAL.
func (p *Proc) lookupAt(dirfd int, path string, flags, allowed int) (location, error) {
	return p.lookupAtAs(p.cred.Load(), dirfd, path, flags, allowed)
}

// lookupAtAs is lookupAt with the search permissions of credentials c.
func (p *Proc) lookupAtAs(c *creds, dirfd int, path string, flags, allowed int) (location, error) {
	if flags&^allowed != 0 {
		return location{}, errEINVAL
	}
	if path == "" && flags&unix.AT_EMPTY_PATH != 0 {
		if dirfd == unix.AT_FDCWD {
			return *p.cwd.Load(), nil
		}
		f := p.files.get(dirfd)
		if f == nil {
			return location{}, errEBADF
		}
		if f.loc.mnt == nil {
			return location{f.mnt, f.node}, nil
		}
		return f.loc, nil
	}
	return p.walkAtAs(c, dirfd, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
}
