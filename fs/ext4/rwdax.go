package ext4

// DAX reports whether the mount copies file data to and from device
// memory.
func (fs *rwFS) DAX() bool { return fs.w.DAX() }
