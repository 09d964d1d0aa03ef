package ext4

// The ext2 and ext3 type names. Linux's ext4 driver registers them too
// and, mounting a volume under one of them, first refuses what that type
// does not have (disk.CheckType: ext2_feature_set_ok, ext3_feature_set_ok).
// Options too: under ext2 the journal options (noload, norecovery,
// commit=, data=), under ext2 and ext3 the dax options. The check reads
// the superblock before the mount opens the volume, so nothing is written
// (no journal replay) on a refused volume.

import (
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// MountType returns the vfs.MountFunc for file system type name typ:
// Mount for "ext4", and for "ext2" and "ext3" Mount after the kernel's
// refusals of that type (see the file comment), with warnings posted as
// Mount's.
func MountType(typ string) vfs.MountFunc {
	if typ != "ext2" && typ != "ext3" {
		return Mount
	}
	return func(req vfs.MountRequest) (vfs.FileSystem, error) {
		if err := checkType(req, typ); err != nil {
			return nil, err
		}
		return Mount(req)
	}
}

// checkType reads req.Source's superblock and refuses a volume type typ
// cannot mount. A source that is not a block device, or unreadable, is
// left to Mount, which reports it.
func checkType(req vfs.MountRequest, typ string) error {
	if req.Proc == nil {
		return nil
	}
	fd, err := req.Proc.Open(req.Source, unix.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	b, err := req.Proc.Backing(fd)
	req.Proc.Close(fd)
	if err != nil {
		return nil
	}
	defer b.Release()
	dev, ok := block.Of(b.Handle())
	if !ok {
		return nil
	}
	if err := typeOptRefusal(typ, req.Data); err != nil {
		return err
	}
	return disk.CheckType(backingDevice{b: b, size: block.ReadEnd(dev)}, typ, req.Flags&unix.MS_RDONLY != 0)
}

// typeOptRefusal is the kernel's refusal of options that type typ does
// not take (MOPT_NO_EXT2, MOPT_EXT4_ONLY in ext4_check_opt_consistency):
// journal options under ext2 (noload, norecovery, commit=, data=), and the
// dax options under ext2 and ext3 (checked on this machine's kernel).
func typeOptRefusal(typ, data string) error {
	for _, o := range strings.Split(data, ",") {
		journal := o == "noload" || o == "norecovery" || strings.HasPrefix(o, "commit=") || strings.HasPrefix(o, "data=")
		dax := o == "dax" || o == "nodax" || strings.HasPrefix(o, "dax=")
		if dax || journal && typ == "ext2" {
			return fmt.Errorf("ext4: mount option %q incompatible with %s: %w", o, typ, syscall.EINVAL)
		}
	}
	return nil
}
