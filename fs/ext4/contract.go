package ext4

// The vfs interfaces each type of this package implements, checked by
// the compiler: the VFS finds them by type assertion, so a method whose
// signature drifted would otherwise drop the capability without a word.

import "github.com/iovfs/iovfs/vfs"

var (
	_ vfs.DirIterator = (*dirHandle)(nil)
	_ vfs.Reader      = (*dirHandle)(nil)
	_ vfs.Releaser    = (*dirHandle)(nil)
	_ vfs.Seeker      = (*dirHandle)(nil)

	_ vfs.DirReader = (*dirNode)(nil)
	_ vfs.FileTyper = (*dirNode)(nil)
	_ vfs.Lookuper  = (*dirNode)(nil)
	_ vfs.Node      = (*dirNode)(nil)
	_ vfs.Opener    = (*dirNode)(nil)
	_ vfs.Xattrer   = (*dirNode)(nil)

	_ vfs.FileTyper = (*fileNode)(nil)
	_ vfs.Node      = (*fileNode)(nil)
	_ vfs.Opener    = (*fileNode)(nil)
	_ vfs.Xattrer   = (*fileNode)(nil)

	_ vfs.FileSystem = (*FS)(nil)
	_ vfs.Shutdowner = (*FS)(nil)
	_ vfs.Statfser   = (*FS)(nil)

	_ vfs.DirectReader = (*handle)(nil)
	_ vfs.IterReader   = (*handle)(nil)
	_ vfs.Reader       = (*handle)(nil)
	_ vfs.Seeker       = (*handle)(nil)

	_ vfs.IterReader = (*iomapHandle)(nil)

	_ vfs.IterReader = (*iter1SegHandle)(nil)

	_ vfs.IterReader = (*iterWrapHandle)(nil)

	_ vfs.FileTyper  = (*linkNode)(nil)
	_ vfs.Node       = (*linkNode)(nil)
	_ vfs.Readlinker = (*linkNode)(nil)
	_ vfs.Xattrer    = (*linkNode)(nil)

	_ vfs.FileTyper = (*nodeBase)(nil)
	_ vfs.Node      = (*nodeBase)(nil)
	_ vfs.Xattrer   = (*nodeBase)(nil)

	_ vfs.Node        = (*rwBase)(nil)
	_ vfs.PathOpener  = (*rwBase)(nil)
	_ vfs.Setattrer   = (*rwBase)(nil)
	_ vfs.XattrSetter = (*rwBase)(nil)
	_ vfs.Xattrer     = (*rwBase)(nil)

	_ vfs.Creator     = (*rwDir)(nil)
	_ vfs.DirLocker   = (*rwDir)(nil)
	_ vfs.DirReader   = (*rwDir)(nil)
	_ vfs.FileTyper   = (*rwDir)(nil)
	_ vfs.Linker      = (*rwDir)(nil)
	_ vfs.Lookuper    = (*rwDir)(nil)
	_ vfs.Mkdirer     = (*rwDir)(nil)
	_ vfs.Mknoder     = (*rwDir)(nil)
	_ vfs.Node        = (*rwDir)(nil)
	_ vfs.Opener      = (*rwDir)(nil)
	_ vfs.PathOpener  = (*rwDir)(nil)
	_ vfs.Renamer     = (*rwDir)(nil)
	_ vfs.Rmdirer     = (*rwDir)(nil)
	_ vfs.Setattrer   = (*rwDir)(nil)
	_ vfs.Symlinker   = (*rwDir)(nil)
	_ vfs.Unlinker    = (*rwDir)(nil)
	_ vfs.XattrSetter = (*rwDir)(nil)
	_ vfs.Xattrer     = (*rwDir)(nil)

	_ vfs.FileTyper   = (*rwFile)(nil)
	_ vfs.Node        = (*rwFile)(nil)
	_ vfs.Opener      = (*rwFile)(nil)
	_ vfs.PathOpener  = (*rwFile)(nil)
	_ vfs.Setattrer   = (*rwFile)(nil)
	_ vfs.XattrSetter = (*rwFile)(nil)
	_ vfs.Xattrer     = (*rwFile)(nil)

	_ vfs.FileSystem = (*rwFS)(nil)
	_ vfs.Shutdowner = (*rwFS)(nil)
	_ vfs.Statfser   = (*rwFS)(nil)

	_ vfs.Appender   = (*rwHandle)(nil)
	_ vfs.DataSyncer = (*rwHandle)(nil)
	_ vfs.Fallocater = (*rwHandle)(nil)
	_ vfs.IterWriter = (*rwHandle)(nil)
	_ vfs.Reader     = (*rwHandle)(nil)
	_ vfs.Releaser   = (*rwHandle)(nil)
	_ vfs.Seeker     = (*rwHandle)(nil)
	_ vfs.Syncer     = (*rwHandle)(nil)
	_ vfs.Writer     = (*rwHandle)(nil)

	_ vfs.FileTyper   = (*rwLink)(nil)
	_ vfs.Node        = (*rwLink)(nil)
	_ vfs.PathOpener  = (*rwLink)(nil)
	_ vfs.Readlinker  = (*rwLink)(nil)
	_ vfs.Setattrer   = (*rwLink)(nil)
	_ vfs.XattrSetter = (*rwLink)(nil)
	_ vfs.Xattrer     = (*rwLink)(nil)

	_ vfs.Node        = (*rwSpecial)(nil)
	_ vfs.PathOpener  = (*rwSpecial)(nil)
	_ vfs.Setattrer   = (*rwSpecial)(nil)
	_ vfs.XattrSetter = (*rwSpecial)(nil)
	_ vfs.Xattrer     = (*rwSpecial)(nil)

	_ vfs.FileTyper = (*specialNode)(nil)
	_ vfs.Node      = (*specialNode)(nil)
	_ vfs.Xattrer   = (*specialNode)(nil)
)
