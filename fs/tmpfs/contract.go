package tmpfs

// The vfs interfaces each type of this package implements, checked by
// the compiler: the VFS finds them by type assertion, so a method whose
// signature drifted would otherwise drop the capability without a word.

import "github.com/iovfs/iovfs/vfs"

var (
	_ vfs.Creator     = (*Dir)(nil)
	_ vfs.DirLocker   = (*Dir)(nil)
	_ vfs.DirReader   = (*Dir)(nil)
	_ vfs.FileTyper   = (*Dir)(nil)
	_ vfs.Linker      = (*Dir)(nil)
	_ vfs.Lookuper    = (*Dir)(nil)
	_ vfs.Mkdirer     = (*Dir)(nil)
	_ vfs.Mknoder     = (*Dir)(nil)
	_ vfs.Node        = (*Dir)(nil)
	_ vfs.PathOpener  = (*Dir)(nil)
	_ vfs.PermAttrer  = (*Dir)(nil)
	_ vfs.Renamer     = (*Dir)(nil)
	_ vfs.Rmdirer     = (*Dir)(nil)
	_ vfs.Setattrer   = (*Dir)(nil)
	_ vfs.Symlinker   = (*Dir)(nil)
	_ vfs.Unlinker    = (*Dir)(nil)
	_ vfs.XattrSetter = (*Dir)(nil)
	_ vfs.Xattrer     = (*Dir)(nil)

	_ vfs.FileTyper   = (*File)(nil)
	_ vfs.Node        = (*File)(nil)
	_ vfs.Opener      = (*File)(nil)
	_ vfs.PathOpener  = (*File)(nil)
	_ vfs.PermAttrer  = (*File)(nil)
	_ vfs.Setattrer   = (*File)(nil)
	_ vfs.XattrSetter = (*File)(nil)
	_ vfs.Xattrer     = (*File)(nil)

	_ vfs.FileSystem = (*FS)(nil)
	_ vfs.Statfser   = (*FS)(nil)

	_ vfs.Appender   = (*OpenFile)(nil)
	_ vfs.Fallocater = (*OpenFile)(nil)
	_ vfs.IterReader = (*OpenFile)(nil)
	_ vfs.IterWriter = (*OpenFile)(nil)
	_ vfs.Reader     = (*OpenFile)(nil)
	_ vfs.Releaser   = (*OpenFile)(nil)
	_ vfs.Seeker     = (*OpenFile)(nil)
	_ vfs.Syncer     = (*OpenFile)(nil)
	_ vfs.Writer     = (*OpenFile)(nil)

	_ vfs.FileTyper   = (*Special)(nil)
	_ vfs.Node        = (*Special)(nil)
	_ vfs.PathOpener  = (*Special)(nil)
	_ vfs.PermAttrer  = (*Special)(nil)
	_ vfs.Setattrer   = (*Special)(nil)
	_ vfs.XattrSetter = (*Special)(nil)
	_ vfs.Xattrer     = (*Special)(nil)

	_ vfs.FileTyper   = (*Symlink)(nil)
	_ vfs.Node        = (*Symlink)(nil)
	_ vfs.PathOpener  = (*Symlink)(nil)
	_ vfs.PermAttrer  = (*Symlink)(nil)
	_ vfs.Readlinker  = (*Symlink)(nil)
	_ vfs.Setattrer   = (*Symlink)(nil)
	_ vfs.XattrSetter = (*Symlink)(nil)
	_ vfs.Xattrer     = (*Symlink)(nil)
)
