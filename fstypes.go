package iovfs

import (
	"github.com/iovfs/iovfs/fs/ext4"
	"github.com/iovfs/iovfs/fs/hostfs"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/fs/vfat"
	"github.com/iovfs/iovfs/vfs"
)

// The file system types Proc.Mount knows, by name.
func init() {
	vfs.RegisterFS("tmpfs", func(req vfs.MountRequest) (vfs.FileSystem, error) {
		opts, err := tmpfs.Parse(req.Data)
		if err != nil {
			return nil, err
		}
		return tmpfs.New(opts), nil
	})
	vfs.RegisterFS("hostfs", hostfs.Mount)
	vfs.RegisterFS(vfat.Type, vfat.Mount)
	// ext4 serves ext2 and ext3 volumes too, as Linux's does, with the
	// refusals of those type names.
	for _, name := range ext4.Types {
		vfs.RegisterFS(name, ext4.MountType(name))
	}
}
