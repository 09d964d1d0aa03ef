package iovfs

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/iovfs/iovfs/fs/ext4"
	"github.com/iovfs/iovfs/fs/hostfs"
	"github.com/iovfs/iovfs/fs/overlay"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/fs/vfat"
	"github.com/iovfs/iovfs/internal/sysmem"
	"github.com/iovfs/iovfs/vfs"
)

// The file system types Proc.Mount knows, by name.
func init() {
	vfs.RegisterFS("tmpfs", mountTmpfs)
	vfs.RegisterFS("hostfs", hostfs.Mount)
	vfs.RegisterFS(vfat.Type, vfat.Mount)
	vfs.RegisterFS(overlay.Type, overlay.Mount)
	// ext4 serves ext2 and ext3 volumes too, as Linux's does, with the
	// refusals of those type names.
	for _, name := range ext4.Types {
		vfs.RegisterFS(name, ext4.MountType(name))
	}
}

// mountTmpfs is the tmpfs type: tmpfs.Parse's options, with a bad one
// named in the error, and a size that the process's memory bounds. A
// tmpfs keeps its files in the process's memory, so where Linux lets
// size= exceed the RAM (and takes half the RAM when none is given, and no
// limit for size=0), iovfs refuses a size over the memory the process may
// have with ENOMEM, takes half of it by default, and all of it for size=0
// or nr_blocks=0: a tmpfs filled up gives ENOSPC, not a process killed
// for memory.
func mountTmpfs(req vfs.MountRequest) (vfs.FileSystem, error) {
	opts, err := tmpfsOptions(req.Data)
	if err != nil {
		return nil, err
	}
	return tmpfs.New(opts), nil
}

// tmpfsOptions parses tmpfs mount data and applies the memory bounds of
// mountTmpfs.
func tmpfsOptions(data string) (tmpfs.Options, error) {
	opts, err := tmpfs.Parse(data)
	if err != nil {
		// Name the option at fault: tmpfs.Parse says only EINVAL.
		for _, item := range strings.Split(data, ",") {
			if _, ierr := tmpfs.Parse(item); ierr != nil {
				return opts, fmt.Errorf("tmpfs: bad option %q: %w", item, ierr)
			}
		}
		return opts, err
	}
	total := sysmem.Total()
	if total <= 0 {
		return opts, nil
	}
	sized := false
	for _, item := range strings.Split(data, ",") {
		k, _, _ := strings.Cut(item, "=")
		sized = sized || k == "size" || k == "nr_blocks"
	}
	switch {
	case opts.SizeLimit > total:
		return opts, fmt.Errorf("tmpfs: size %s is more than the %s of memory this process may have: %w",
			sysmem.Size(opts.SizeLimit), sysmem.Size(total), syscall.ENOMEM)
	case opts.SizeLimit == 0 && sized:
		opts.SizeLimit = total &^ 4095
	case opts.SizeLimit == 0:
		opts.SizeLimit = total / 2 &^ 4095
	}
	return opts, nil
}
