package vfs

// Node returns the node the file is open on. A stacking file system
// (overlayfs) holds its layers' objects as files and reads their
// attributes on every stat of its own nodes, as Linux's ovl_getattr calls
// vfs_getattr on the real path: Stat on the node is all that Fstat does
// for such a file, less the device number, which the caller knows from
// its layer.
func (b *Backing) Node() Node { return b.f.node }
