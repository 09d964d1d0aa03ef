package overlay

// The vfs interfaces each type of this package implements, checked by
// the compiler: the VFS finds them by type assertion, so a method whose
// signature drifted would otherwise drop the capability without a word.

import "github.com/iovfs/iovfs/vfs"

var (
	_ vfs.FileSystem = (*FS)(nil)
	_ vfs.Shutdowner = (*FS)(nil)
	_ vfs.Statfser   = (*FS)(nil)

	_ vfs.Creator     = (*dirNode)(nil)
	_ vfs.DirLocker   = (*dirNode)(nil)
	_ vfs.DirReader   = (*dirNode)(nil)
	_ vfs.FileTyper   = (*dirNode)(nil)
	_ vfs.Linker      = (*dirNode)(nil)
	_ vfs.Lookuper    = (*dirNode)(nil)
	_ vfs.Mkdirer     = (*dirNode)(nil)
	_ vfs.Mknoder     = (*dirNode)(nil)
	_ vfs.Node        = (*dirNode)(nil)
	_ vfs.Opener      = (*dirNode)(nil)
	_ vfs.PermAttrer  = (*dirNode)(nil)
	_ vfs.Renamer     = (*dirNode)(nil)
	_ vfs.Rmdirer     = (*dirNode)(nil)
	_ vfs.Setattrer   = (*dirNode)(nil)
	_ vfs.Symlinker   = (*dirNode)(nil)
	_ vfs.Unlinker    = (*dirNode)(nil)
	_ vfs.XattrSetter = (*dirNode)(nil)
	_ vfs.Xattrer     = (*dirNode)(nil)

	_ vfs.FileTyper   = (*fileNode)(nil)
	_ vfs.Node        = (*fileNode)(nil)
	_ vfs.Opener      = (*fileNode)(nil)
	_ vfs.PermAttrer  = (*fileNode)(nil)
	_ vfs.Setattrer   = (*fileNode)(nil)
	_ vfs.XattrSetter = (*fileNode)(nil)
	_ vfs.Xattrer     = (*fileNode)(nil)

	_ vfs.FileTyper   = (*linkNode)(nil)
	_ vfs.Node        = (*linkNode)(nil)
	_ vfs.PermAttrer  = (*linkNode)(nil)
	_ vfs.Readlinker  = (*linkNode)(nil)
	_ vfs.Setattrer   = (*linkNode)(nil)
	_ vfs.XattrSetter = (*linkNode)(nil)
	_ vfs.Xattrer     = (*linkNode)(nil)

	_ vfs.FileTyper   = (*specialNode)(nil)
	_ vfs.Node        = (*specialNode)(nil)
	_ vfs.PermAttrer  = (*specialNode)(nil)
	_ vfs.Setattrer   = (*specialNode)(nil)
	_ vfs.XattrSetter = (*specialNode)(nil)
	_ vfs.Xattrer     = (*specialNode)(nil)

	_ vfs.DirIterator = (*dirHandle)(nil)
	_ vfs.Reader      = (*dirHandle)(nil)
	_ vfs.Seeker      = (*dirHandle)(nil)

	_ vfs.Appender      = (*fileHandle)(nil)
	_ vfs.DataSyncer    = (*fileHandle)(nil)
	_ vfs.DirectReader  = (*fileHandle)(nil)
	_ vfs.Fallocater    = (*fileHandle)(nil)
	_ vfs.FlagSetter    = (*fileHandle)(nil)
	_ vfs.IterReader    = (*fileHandle)(nil)
	_ vfs.IterWriter    = (*fileHandle)(nil)
	_ vfs.NoatimeHandle = (*fileHandle)(nil)
	_ vfs.Reader        = (*fileHandle)(nil)
	_ vfs.Releaser      = (*fileHandle)(nil)
	_ vfs.Seeker        = (*fileHandle)(nil)
	_ vfs.Syncer        = (*fileHandle)(nil)
	_ vfs.Writer        = (*fileHandle)(nil)
)
