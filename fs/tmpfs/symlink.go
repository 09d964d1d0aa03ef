package tmpfs

import (
	"sync/atomic"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// shortSymlinkLen is the target length from which Linux's tmpfs stores a
// symlink in a page of its own instead of the inode (SHORT_SYMLINK_LEN,
// counting the terminating NUL).
const shortSymlinkLen = 128

// Symlink is a symbolic link. Its target never changes.
type Symlink struct {
	inode
	target string
	paged  bool // holds a page of the size limit
	freed  atomic.Bool
}

func (s *Symlink) dtype() uint8 { return unix.DT_LNK }

// Stat implements vfs.Node: the size is the target's length.
func (s *Symlink) Stat() (st vfs.Stat, err error) {
	s.stat(&st)
	st.Size = int64(len(s.target))
	if s.paged {
		st.Blocks = pageSize / 512
	}
	return st, nil
}

// Readlink implements vfs.Readlinker; it updates atime as Linux's
// readlink(2) does (touch_atime, relatime).
func (s *Symlink) Readlink() (string, error) {
	return s.ReadlinkAtime(vfs.AtimeRelative)
}

// ReadlinkAtime implements vfs.AtimeReadlinker: Readlink, updating atime
// by mode.
func (s *Symlink) ReadlinkAtime(mode vfs.AtimeMode) (string, error) {
	s.touchAtimeMode(mode)
	return s.target, nil
}

// Setattr implements vfs.Setattrer; a size gives EINVAL.
func (s *Symlink) Setattr(a vfs.SetAttr, _ vfs.Cred) error { return s.setattrMeta(a, errEINVAL) }

func (s *Symlink) free() {
	if s.nlink.Load() != 0 || s.pins.Load() != 0 || s.freed.Swap(true) {
		return
	}
	if s.paged {
		s.fs.releasePages(1)
	}
	s.evict()
}
