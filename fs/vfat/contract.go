package vfat

// The vfs interfaces each type of this package implements, checked by
// the compiler: the VFS finds them by type assertion, so a method whose
// signature drifted would otherwise drop the capability without a word.

import "github.com/iovfs/iovfs/vfs"

var (
	_ vfs.Reader = (*dirHandle)(nil)

	_ vfs.FileSystem = (*FS)(nil)
	_ vfs.Shutdowner = (*FS)(nil)
	_ vfs.Statfser   = (*FS)(nil)
)
