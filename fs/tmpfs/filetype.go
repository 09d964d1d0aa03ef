package tmpfs

import "golang.org/x/sys/unix"

// FileType implements vfs.FileTyper: the path walk's directory test,
// without Stat's lock.
func (n *inode) FileType() uint32 { return n.mode.Load() & unix.S_IFMT }
