package vfs

// fcntl(2) and dup3(2) (Linux fs/fcntl.c, fs/file.c). The descriptor flag
// FD_CLOEXEC lives in the fd table; the file status flags live in the open
// file (file.flags) and change under F_SETFL.

import (
	"golang.org/x/sys/unix"
)

// oLargefile is Linux's __O_LARGEFILE as F_GETFL reports it on 64-bit
// kernels, which force it on every open (force_o_largefile). x/sys/unix
// defines O_LARGEFILE as 0 on amd64, so it cannot be used here.
const oLargefile = 0o100000

// setflMask are the status flags F_SETFL changes (Linux SETFL_MASK).
// O_ASYNC is not among them: Linux sets it only through a file's ->fasync,
// which in iovfs is a FlagSetter accepting it.
const setflMask = unix.O_APPEND | unix.O_NONBLOCK | unix.O_DIRECT | unix.O_NOATIME

// Fcntl performs the fcntl(2) command cmd on fd with the integer argument
// arg and returns the command's result:
//
//   - F_DUPFD and F_DUPFD_CLOEXEC return the lowest free descriptor at or
//     above arg (EINVAL if arg is negative or not below the descriptor
//     limit, EMFILE if none is free), the second with FD_CLOEXEC set;
//   - F_GETFD returns FD_CLOEXEC or 0; F_SETFD stores arg&FD_CLOEXEC;
//   - F_GETFL returns the file status flags: the access mode, the open
//     flags that stay (O_APPEND, O_NONBLOCK, O_DSYNC, O_SYNC, O_DIRECT,
//     O_NOATIME, O_DIRECTORY, O_NOFOLLOW...) and O_LARGEFILE (0o100000),
//     as Linux reports it on 64-bit machines;
//   - F_SETFL changes O_APPEND, O_NONBLOCK, O_DIRECT and O_NOATIME and
//     ignores the other bits. O_DIRECT is refused with EINVAL where Linux
//     refuses it (files other than regular files and block devices) unless
//     the handle is a FlagSetter, which then decides and is told of every
//     change before it is stored. O_ASYNC changes only on a FlagSetter
//     (Linux: only through ->fasync); elsewhere it stays as open set it;
//   - F_GETPIPE_SZ and F_SETPIPE_SZ on a file that is not a pipe give
//     EBADF; the lock commands need a struct and go through FcntlFlock
//     (here they give EFAULT); any other command goes to the handle's
//     Fcntler, and without one gives EINVAL.
//
// A descriptor that is not open gives EBADF, checked first; so does any
// command but F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD and F_GETFL on
// an O_PATH descriptor. Errors are bare syscall.Errno values.
func (p *Proc) Fcntl(fd, cmd, arg int) (int, error) {
	f := p.files.get(fd)
	if f == nil {
		return -1, errEBADF
	}
	if f.flags.Load()&unix.O_PATH != 0 {
		switch cmd { // check_fcntl_cmd
		case unix.F_DUPFD, unix.F_DUPFD_CLOEXEC, unix.F_GETFD, unix.F_SETFD, unix.F_GETFL:
		default:
			return -1, errEBADF
		}
	}
	switch cmd {
	case unix.F_DUPFD, unix.F_DUPFD_CLOEXEC:
		if arg < 0 || arg >= maxFDs {
			return -1, errEINVAL
		}
		if !f.tryRef() {
			return -1, errEBADF
		}
		nfd, err := p.files.installFlags(f, arg, cmd == unix.F_DUPFD_CLOEXEC)
		if err != nil {
			f.release()
			return -1, err
		}
		return nfd, nil
	case unix.F_GETFD:
		return p.files.fdFlags(fd)
	case unix.F_SETFD:
		return 0, p.files.setFdFlags(fd, arg)
	case unix.F_GETFL:
		return int(f.flags.Load()), nil
	case unix.F_SETFL:
		return 0, f.setfl(p, arg)
	case unix.F_GETLK, unix.F_SETLK, unix.F_SETLKW, unix.F_OFD_GETLK, unix.F_OFD_SETLK, unix.F_OFD_SETLKW:
		return -1, unix.EFAULT
	}
	if c, ok := f.h.(Fcntler); ok {
		// The driver's command may wait or resize state a concurrent
		// close would release: hold the file for the call, as fdget does.
		if !f.tryRef() {
			return -1, errEBADF
		}
		defer f.release()
		return c.Fcntl(p, cmd, arg)
	}
	if cmd == unix.F_GETPIPE_SZ || cmd == unix.F_SETPIPE_SZ {
		return -1, errEBADF // pipe_fcntl: not a pipe
	}
	return -1, errEINVAL
}

// setfl is F_SETFL (Linux setfl): the checks, then one atomic store of the
// new status flags. Concurrent F_SETFLs on one file each store a whole
// word; the last one wins, as with Linux's f_lock.
func (f *file) setfl(p *Proc, arg int) error {
	old := int(f.flags.Load())
	if (arg^old)&unix.O_APPEND != 0 {
		// setfl: O_APPEND stays on an append-only file.
		if mode, _, _, err := nodeAttrs(f.node); err == nil && mode&PermAppend != 0 {
			return unix.EPERM
		}
	}
	if arg&unix.O_NOATIME != 0 && old&unix.O_NOATIME == 0 {
		// O_NOATIME only for the file's owner or CAP_FOWNER.
		st, err := f.stat()
		if err != nil {
			return err
		}
		if !p.inodeOwnerOrCapable(st) {
			return unix.EPERM
		}
	}
	nf := arg&setflMask | old&^setflMask
	if fs, ok := f.h.(FlagSetter); ok {
		// The driver's SetFlags plays ->fasync, which alone changes
		// O_ASYNC; without it the bit stays as open left it.
		nf = nf&^unix.O_ASYNC | arg&unix.O_ASYNC
		if err := fs.SetFlags(nf); err != nil {
			return err
		}
	} else if nf&unix.O_DIRECT != 0 && !f.canDirect() {
		return errEINVAL
	}
	f.flags.Store(int32(nf))
	if (nf^old)&unix.O_NOATIME != 0 {
		tellNoatime(f.h, nf) // noatime.go
	}
	return nil
}

// canDirect reports whether a file whose handle is not a FlagSetter may
// have O_DIRECT: Linux gives FMODE_CAN_ODIRECT to regular files of the
// file systems iovfs has (tmpfs since 6.6, ext4) and to block devices, and
// to nothing else.
func (f *file) canDirect() bool {
	st, err := f.node.Stat()
	if err != nil {
		return false
	}
	t := st.Mode & unix.S_IFMT
	return t == unix.S_IFREG || t == unix.S_IFBLK
}

// openFlags is the one place where a new open file meets its status
// flags, after the driver's Open: a FlagSetter is told and may refuse, and
// otherwise O_DIRECT is checked as Linux's do_dentry_open does.
func openFlags(h Handle, st Stat, flags int) error {
	tellNoatime(h, flags) // noatime.go
	if fs, ok := h.(FlagSetter); ok {
		return fs.SetFlags(flags &^ (unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC | unix.O_NOCTTY | unix.O_CLOEXEC))
	}
	if flags&unix.O_DIRECT != 0 {
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFBLK {
			return errEINVAL
		}
	}
	return nil
}

// fdget returns the file open as fd for the calls that Linux makes through
// fdget, which refuses O_PATH descriptors: nil, for EBADF, if fd is not
// open or is an O_PATH descriptor.
func (p *Proc) fdget(fd int) *file {
	f := p.files.get(fd)
	if f == nil || f.flags.Load()&unix.O_PATH != 0 {
		return nil
	}
	return f
}

// Dup3 is Dup2 with flags, as dup3(2): O_CLOEXEC sets FD_CLOEXEC on
// newfd; any other flag gives EINVAL, and so does oldfd == newfd.
func (p *Proc) Dup3(oldfd, newfd, flags int) (int, error) {
	if flags&^unix.O_CLOEXEC != 0 {
		return -1, errEINVAL
	}
	if oldfd == newfd {
		return -1, errEINVAL
	}
	f := p.files.get(oldfd)
	if f == nil || !f.tryRef() {
		return -1, errEBADF
	}
	old, err := p.files.replaceFlags(newfd, f, flags&unix.O_CLOEXEC != 0)
	if err != nil {
		f.release()
		return -1, err
	}
	if old != nil {
		p.closeFile(old) // dup3 ignores errors from the implicit close
	}
	return newfd, nil
}
