package ram

// The vfs interfaces each type of this package implements, checked by
// the compiler: the VFS finds them by type assertion, so a method whose
// signature drifted would otherwise drop the capability without a word.

import "github.com/iovfs/iovfs/vfs"

var (
	_ vfs.IterReader = (*Disk)(nil)
	_ vfs.IterWriter = (*Disk)(nil)
	_ vfs.Opener     = (*Disk)(nil)
	_ vfs.Opener     = (*Control)(nil)
	_ vfs.Ioctler    = ctlHandle{}
)
