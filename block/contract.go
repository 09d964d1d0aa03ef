package block

// The vfs interfaces each type of this package implements, checked by
// the compiler: the VFS finds them by type assertion, so a method whose
// signature drifted would otherwise drop the capability without a word.

import "github.com/iovfs/iovfs/vfs"

var (
	_ vfs.Ioctler    = (*File)(nil)
	_ vfs.IterReader = (*File)(nil)
	_ vfs.IterWriter = (*File)(nil)
	_ vfs.Reader     = (*File)(nil)
	_ vfs.Releaser   = (*File)(nil)
	_ vfs.Seeker     = (*File)(nil)
	_ vfs.Syncer     = (*File)(nil)
	_ vfs.Writer     = (*File)(nil)

	_ vfs.IterReader = (*PartDevice)(nil)
	_ vfs.IterWriter = (*PartDevice)(nil)
)
