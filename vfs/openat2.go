package vfs

// openat2(2) (Linux fs/open.c build_open_flags, fs/namei.c): open with a
// resolution scope. RESOLVE_BENEATH and RESOLVE_IN_ROOT are the
// confinement primitive: "..", absolute paths and symlinks never lead out
// of dirfd. The walk enforces them component by component (walk.go), never
// by looking at the path as a string.

import "golang.org/x/sys/unix"

// validOpenFlags is VALID_OPEN_FLAGS on x86-64. x/sys/unix's O_LARGEFILE
// is 0 on amd64, but the kernel's __O_LARGEFILE bit (0100000) is valid.
const validOpenFlags = unix.O_RDONLY | unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_EXCL |
	unix.O_NOCTTY | unix.O_TRUNC | unix.O_APPEND | unix.O_NDELAY | unix.O_NONBLOCK | unix.O_SYNC |
	unix.O_DSYNC | unix.O_ASYNC | unix.O_DIRECT | 0o100000 | unix.O_DIRECTORY | unix.O_NOFOLLOW |
	unix.O_NOATIME | unix.O_CLOEXEC | unix.O_PATH | unix.O_TMPFILE

// validResolve is VALID_RESOLVE_FLAGS.
const validResolve = unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS |
	unix.RESOLVE_BENEATH | unix.RESOLVE_IN_ROOT | resolveCached

// Openat2 opens path relative to dirfd as openat2(2) does, with how's
// flags, mode and resolve flags:
//
//   - RESOLVE_BENEATH: the walk may not leave dirfd: ".." at dirfd, an
//     absolute path or an absolute symlink give EXDEV.
//   - RESOLVE_IN_ROOT: dirfd is the root for the walk: ".." at dirfd stays
//     there, and absolute paths and symlinks start at dirfd.
//   - RESOLVE_NO_XDEV: crossing a mount, either way, gives EXDEV.
//   - RESOLVE_NO_SYMLINKS: any symlink met gives ELOOP (a final one too,
//     unless O_NOFOLLOW|O_PATH opens the link itself).
//   - RESOLVE_NO_MAGICLINKS: accepted; iovfs has no magic links.
//   - RESOLVE_CACHED: every name must be answered by the dentry cache
//     (dcache.go), as Linux's lookup completes from the dcache alone: a
//     name not cached there (never looked up, evicted, invalidated by a
//     change, or on a file system whose directories are not cached) gives
//     EAGAIN, and the caller retries without the flag, which caches it.
//     "." and ".." need no cache. A cached negative answer gives ENOENT
//     (Linux's tmpfs keeps none, so there it is EAGAIN). With O_CREAT,
//     O_TRUNC or O_TMPFILE it gives EAGAIN before any lookup, as in Linux.
//
// Under RESOLVE_BENEATH or RESOLVE_IN_ROOT a ".." that runs after a rename
// or mount change in the namespace since the call began gives EAGAIN,
// since the walk may have been moved outside dirfd; the caller retries,
// as with Linux. Unknown flag or resolve bits, RESOLVE_BENEATH with
// RESOLVE_IN_ROOT, a mode without O_CREAT or O_TMPFILE, mode bits beyond
// 07777, O_CREAT with O_DIRECTORY, and flags O_PATH does not allow, give
// EINVAL. Errors are *fs.PathError values wrapping a syscall.Errno.
func (p *Proc) Openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	if err := checkOpenHow(how); err != nil {
		return -1, pathErr("openat2", path, err)
	}
	return p.openAt("openat2", dirfd, path, int(how.Flags), uint32(how.Mode), how.Resolve)
}

// checkOpenHow is build_open_flags's validation for openat2.
func checkOpenHow(how *unix.OpenHow) error {
	flags := how.Flags &^ unix.O_CLOEXEC
	if flags&^validOpenFlags != 0 {
		return errEINVAL
	}
	if how.Resolve&^validResolve != 0 {
		return errEINVAL
	}
	if how.Resolve&unix.RESOLVE_BENEATH != 0 && how.Resolve&unix.RESOLVE_IN_ROOT != 0 {
		return errEINVAL
	}
	if flags&unix.O_CREAT != 0 || flags&oTmpfile != 0 {
		if how.Mode&^0o7777 != 0 {
			return errEINVAL
		}
	} else if how.Mode != 0 {
		return errEINVAL
	}
	if flags&(unix.O_DIRECTORY|unix.O_CREAT) == unix.O_DIRECTORY|unix.O_CREAT {
		return errEINVAL
	}
	if flags&oTmpfile != 0 {
		if flags&unix.O_DIRECTORY == 0 || flags&unix.O_ACCMODE == unix.O_RDONLY {
			return errEINVAL
		}
	}
	if flags&unix.O_PATH != 0 && flags&^oPathFlags != 0 {
		return errEINVAL
	}
	if how.Resolve&resolveCached != 0 && flags&(unix.O_TRUNC|unix.O_CREAT|oTmpfile) != 0 {
		return unix.EAGAIN
	}
	return nil
}

// resolveCached is RESOLVE_CACHED (Linux 5.12), which x/sys/unix lacks.
const resolveCached = 0x20
