package iovfs

import (
	"github.com/iovfs/iovfs/fs/tmpfs"
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
}
