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

	_ vfs.Creator     = (*dirNode)(nil)
	_ vfs.DirLocker   = (*dirNode)(nil)
	_ vfs.DirReader   = (*dirNode)(nil)
	_ vfs.ACLer       = (*dirNode)(nil)
	_ vfs.FileAttrer  = (*dirNode)(nil)
	_ vfs.FileTyper   = (*dirNode)(nil)
	_ vfs.Linker      = (*dirNode)(nil)
	_ vfs.Lookuper    = (*dirNode)(nil)
	_ vfs.Mkdirer     = (*dirNode)(nil)
	_ vfs.Mknoder     = (*dirNode)(nil)
	_ vfs.Node        = (*dirNode)(nil)
	_ vfs.Opener      = (*dirNode)(nil)
	_ vfs.PathOpener  = (*dirNode)(nil)
	_ vfs.Renamer     = (*dirNode)(nil)
	_ vfs.Rmdirer     = (*dirNode)(nil)
	_ vfs.Setattrer   = (*dirNode)(nil)
	_ vfs.Symlinker   = (*dirNode)(nil)
	_ vfs.Tmpfiler    = (*dirNode)(nil)
	_ vfs.Unlinker    = (*dirNode)(nil)
	_ vfs.XattrSetter = (*dirNode)(nil)
	_ vfs.Xattrer     = (*dirNode)(nil)

	_ vfs.ACLer       = (*fileNode)(nil)
	_ vfs.FileAttrer  = (*fileNode)(nil)
	_ vfs.FileTyper   = (*fileNode)(nil)
	_ vfs.Node        = (*fileNode)(nil)
	_ vfs.Opener      = (*fileNode)(nil)
	_ vfs.PathOpener  = (*fileNode)(nil)
	_ vfs.Setattrer   = (*fileNode)(nil)
	_ vfs.XattrSetter = (*fileNode)(nil)
	_ vfs.Xattrer     = (*fileNode)(nil)

	_ vfs.Exporter      = (*FS)(nil)
	_ vfs.FileSystem    = (*FS)(nil)
	_ vfs.HandleCoder   = (*FS)(nil)
	_ vfs.ParentEncoder = (*FS)(nil)
	_ vfs.Shutdowner    = (*FS)(nil)
	_ vfs.Statfser      = (*FS)(nil)

	_ vfs.Appender     = (*handle)(nil)
	_ vfs.DataSyncer   = (*handle)(nil)
	_ vfs.DirectReader = (*handle)(nil)
	_ vfs.Fallocater   = (*handle)(nil)
	_ vfs.IterReader   = (*handle)(nil)
	_ vfs.IterWriter   = (*handle)(nil)
	_ vfs.Reader       = (*handle)(nil)
	_ vfs.Releaser     = (*handle)(nil)
	_ vfs.Seeker       = (*handle)(nil)
	_ vfs.Syncer       = (*handle)(nil)
	_ vfs.Writer       = (*handle)(nil)

	_ vfs.IterReader = (*iomapHandle)(nil)

	_ vfs.IterReader = (*iter1SegHandle)(nil)

	_ vfs.IterReader = (*iterWrapHandle)(nil)

	_ vfs.ACLer       = (*linkNode)(nil)
	_ vfs.FileAttrer  = (*linkNode)(nil)
	_ vfs.FileTyper   = (*linkNode)(nil)
	_ vfs.Node        = (*linkNode)(nil)
	_ vfs.PathOpener  = (*linkNode)(nil)
	_ vfs.Readlinker  = (*linkNode)(nil)
	_ vfs.Setattrer   = (*linkNode)(nil)
	_ vfs.XattrSetter = (*linkNode)(nil)
	_ vfs.Xattrer     = (*linkNode)(nil)

	_ vfs.ACLer       = (*node)(nil)
	_ vfs.FileAttrer  = (*node)(nil)
	_ vfs.FileTyper   = (*node)(nil)
	_ vfs.Node        = (*node)(nil)
	_ vfs.PathOpener  = (*node)(nil)
	_ vfs.Setattrer   = (*node)(nil)
	_ vfs.XattrSetter = (*node)(nil)
	_ vfs.Xattrer     = (*node)(nil)

	_ vfs.ACLer       = (*specialNode)(nil)
	_ vfs.FileAttrer  = (*specialNode)(nil)
	_ vfs.FileTyper   = (*specialNode)(nil)
	_ vfs.Node        = (*specialNode)(nil)
	_ vfs.PathOpener  = (*specialNode)(nil)
	_ vfs.Setattrer   = (*specialNode)(nil)
	_ vfs.XattrSetter = (*specialNode)(nil)
	_ vfs.Xattrer     = (*specialNode)(nil)
)
