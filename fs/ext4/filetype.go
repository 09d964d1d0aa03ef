package ext4

import "github.com/iovfs/iovfs/fs/ext4/disk"

// FileType implements vfs.FileTyper: the path walk's directory test,
// without building a Stat.
func (n *nodeBase) FileType() uint32 { return n.in.Mode & disk.S_IFMT }
