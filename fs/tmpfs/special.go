package tmpfs

import (
	"sync/atomic"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Special is a FIFO, socket, character or block device node, as
// shmem_mknod makes them: the inode holds only the type, the attributes
// and, for devices, the device number. What opening it means is decided
// by the VFS (a pipe for a FIFO, the registered driver for a device).
type Special struct {
	inode
	rdev  uint64
	freed atomic.Bool // the inode went back (free)
}

func (s *Special) dtype() uint8 {
	switch s.mode.Load() & unix.S_IFMT {
	case unix.S_IFIFO:
		return unix.DT_FIFO
	case unix.S_IFSOCK:
		return unix.DT_SOCK
	case unix.S_IFCHR:
		return unix.DT_CHR
	}
	return unix.DT_BLK
}

// Stat implements vfs.Node: size 0, and the device number in Rdev.
func (s *Special) Stat() (st vfs.Stat, err error) {
	s.stat(&st)
	st.Rdev = s.rdev
	return st, nil
}

// Setattr implements vfs.Setattrer; a size gives EINVAL, as truncate(2)
// of a non-regular file does.
func (s *Special) Setattr(a vfs.SetAttr, _ vfs.Cred) error { return s.setattrMeta(a, errEINVAL) }

func (s *Special) free() {
	if s.nlink.Load() != 0 || s.pins.Load() != 0 || s.freed.Swap(true) {
		return
	}
	s.evict()
}

// Mknod implements vfs.Mknoder: a regular file (as Create), or a FIFO,
// socket or device node. Other file types give EINVAL.
func (d *Dir) Mknod(name string, mode uint32, rdev uint64, c vfs.Cred) (vfs.Node, error) {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return d.Create(name, mode&0o7777, c)
	case unix.S_IFIFO, unix.S_IFSOCK:
		rdev = 0
	case unix.S_IFCHR, unix.S_IFBLK:
	default:
		return nil, errEINVAL
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reserveNew(name); err != nil {
		return nil, err
	}
	now := clockNow()
	s := &Special{rdev: rdev}
	s.init(d.fs, d, mode&(unix.S_IFMT|0o7777), c, now)
	d.add(name, s, now.wall)
	return s, nil
}
