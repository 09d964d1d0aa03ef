package vfs

// holdNode takes the node's hold for an open file that has no handle of
// the driver's own: an O_PATH file, a directory without an Opener, a
// FIFO or device node of a file system. Linux's struct file holds the
// dentry and so the inode; a driver that frees unlinked nodes
// (PathOpener) keeps them until the last such file closes. The hold is
// released after the handle, in file.release.
//
// On error holdNode releases f (its only reference), so the caller
// returns the error alone.
func (f *file) holdNode() error {
	po, ok := f.node.(PathOpener)
	if !ok {
		return nil
	}
	r, err := po.OpenPath()
	if err != nil {
		f.release()
		return err
	}
	f.hold = r
	return nil
}
