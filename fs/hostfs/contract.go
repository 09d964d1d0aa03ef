package hostfs

// The vfs interfaces each type of this package implements, checked by
// the compiler: the VFS finds them by type assertion, so a method whose
// signature drifted would otherwise drop the capability without a word.

import "github.com/iovfs/iovfs/vfs"

var (
	_ vfs.Creator     = (*Dir)(nil)
	_ vfs.DirLocker   = (*Dir)(nil)
	_ vfs.DirReader   = (*Dir)(nil)
	_ vfs.Linker      = (*Dir)(nil)
	_ vfs.Lookuper    = (*Dir)(nil)
	_ vfs.Mkdirer     = (*Dir)(nil)
	_ vfs.Mknoder     = (*Dir)(nil)
	_ vfs.Node        = (*Dir)(nil)
	_ vfs.Renamer     = (*Dir)(nil)
	_ vfs.Rmdirer     = (*Dir)(nil)
	_ vfs.Setattrer   = (*Dir)(nil)
	_ vfs.Symlinker   = (*Dir)(nil)
	_ vfs.Unlinker    = (*Dir)(nil)
	_ vfs.XattrSetter = (*Dir)(nil)
	_ vfs.Xattrer     = (*Dir)(nil)

	_ vfs.Node        = (*File)(nil)
	_ vfs.Opener      = (*File)(nil)
	_ vfs.Setattrer   = (*File)(nil)
	_ vfs.XattrSetter = (*File)(nil)
	_ vfs.Xattrer     = (*File)(nil)

	_ vfs.FileSystem = (*FS)(nil)
	_ vfs.Statfser   = (*FS)(nil)

	_ vfs.Appender   = (*Handle)(nil)
	_ vfs.DataSyncer = (*Handle)(nil)
	_ vfs.Fallocater = (*Handle)(nil)
	_ vfs.FlagSetter = (*Handle)(nil)
	_ vfs.HostFiler  = (*Handle)(nil)
	_ vfs.IterReader = (*Handle)(nil)
	_ vfs.IterWriter = (*Handle)(nil)
	_ vfs.NoWaiter   = (*Handle)(nil)
	_ vfs.RWFReader  = (*Handle)(nil)
	_ vfs.RWFWriter  = (*Handle)(nil)
	_ vfs.Reader     = (*Handle)(nil)
	_ vfs.Releaser   = (*Handle)(nil)
	_ vfs.Seeker     = (*Handle)(nil)
	_ vfs.Syncer     = (*Handle)(nil)
	_ vfs.Writer     = (*Handle)(nil)

	_ vfs.Node        = (*Special)(nil)
	_ vfs.Opener      = (*Special)(nil)
	_ vfs.Setattrer   = (*Special)(nil)
	_ vfs.XattrSetter = (*Special)(nil)
	_ vfs.Xattrer     = (*Special)(nil)

	_ vfs.Node       = (*Symlink)(nil)
	_ vfs.Readlinker = (*Symlink)(nil)
	_ vfs.Setattrer  = (*Symlink)(nil)
)
