package devfs

// The vfs interfaces each type of this package implements, checked by
// the compiler: the VFS finds them by type assertion, so a method whose
// signature drifted would otherwise drop the capability without a word.

import "github.com/iovfs/iovfs/vfs"

var (
	_ vfs.DirReader   = (*dir)(nil)
	_ vfs.FileTyper   = (*dir)(nil)
	_ vfs.Lookuper    = (*dir)(nil)
	_ vfs.Node        = (*dir)(nil)
	_ vfs.Revalidator = (*dir)(nil)

	_ vfs.FileSystem = (*FS)(nil)
	_ vfs.Statfser   = (*FS)(nil)

	_ vfs.FileTyper = (*node)(nil)
	_ vfs.Node      = (*node)(nil)
	_ vfs.Opener    = (*node)(nil)
)
