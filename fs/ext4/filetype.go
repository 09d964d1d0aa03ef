package ext4

// FileType implements vfs.FileTyper: the path walk's directory test,
// without building a Stat.
func (n *nodeBase) FileType() uint32 { return n.in.Mode & S_IFMT }
