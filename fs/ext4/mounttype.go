package ext4

// The ext2 and ext3 type names. Linux's ext4 driver registers them too
// (CONFIG_EXT4_USE_FOR_EXT2) and, mounting a volume under one of them,
// first refuses what that type does not have (ext2_feature_set_ok and
// ext3_feature_set_ok in fs/ext4/super.c), with EINVAL:
//   - ext2: incompatible features other than filetype and meta_bg (so a
//     volume whose journal needs recovery, or with extents, is refused);
//   - ext3: the same plus needs_recovery allowed, and has_journal
//     required;
//   - read-write, both: read-only-compatible features other than
//     sparse_super, large_file and btree_dir (huge_file, dir_nlink,
//     extra_isize, metadata_csum... are refused read-write only).
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
	"github.com/iovfs/iovfs/vfs"
)

// Feature masks of EXT2_FEATURE_*_SUPP and EXT3_FEATURE_*_SUPP.
const (
	ext2IncompatSupp = incompatFiletype | incompatMetaBG
	ext3IncompatSupp = incompatFiletype | incompatRecover | incompatMetaBG
	ext23RocompatSup = rocompatSparseSuper | rocompatLargeFile | 0x4 // BTREE_DIR
)

// MountType returns the vfs.MountFunc for file system type name typ:
// Mount for "ext4", and for "ext2" and "ext3" Mount after the kernel's
// refusals of that type (see the file comment), with warnings to the
// standard logger as Mount's.
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
	sb := make([]byte, sbSize)
	if err := readFull(backingDevice{b: b, size: block.ReadEnd(dev)}, sb, sbOffset); err != nil || le16(sb, 0x38) != 0xEF53 {
		return nil
	}
	return typeRefusal(typ, le32(sb, 0x5C), le32(sb, 0x60), le32(sb, 0x64), req.Flags&unix.MS_RDONLY != 0)
}

// typeRefusal is ext2_feature_set_ok and ext3_feature_set_ok for a volume
// with the given feature words: nil, or EINVAL naming the reason.
func typeRefusal(typ string, compat, incompat, rocompat uint32, ro bool) error {
	supp := uint32(ext2IncompatSupp)
	if typ == "ext3" {
		supp = ext3IncompatSupp
	}
	if bad := incompat &^ supp; bad != 0 {
		return fmt.Errorf("ext4: couldn't mount as %s due to feature incompatibilities (incompat %#x): %w", typ, bad, syscall.EINVAL)
	}
	if typ == "ext3" && compat&compatHasJournal == 0 {
		return fmt.Errorf("ext4: couldn't mount as ext3: no journal: %w", syscall.EINVAL)
	}
	if bad := rocompat &^ ext23RocompatSup; bad != 0 && !ro {
		return fmt.Errorf("ext4: couldn't mount as %s read-write due to feature incompatibilities (ro_compat %#x): %w", typ, bad, syscall.EINVAL)
	}
	return nil
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
