package disk

// The ext2 and ext3 type names: Linux's ext4 driver registers them too
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

import (
	"fmt"
	"syscall"
)

// Feature masks of EXT2_FEATURE_*_SUPP and EXT3_FEATURE_*_SUPP.
const (
	ext2IncompatSupp = incompatFiletype | incompatMetaBG
	ext3IncompatSupp = incompatFiletype | incompatRecover | incompatMetaBG
	ext23RocompatSup = rocompatSparseSuper | rocompatLargeFile | 0x4 // BTREE_DIR
)

// CheckType reads the superblock of dev and refuses, with EINVAL naming
// the reason, a volume that type typ ("ext2" or "ext3"; any other type
// refuses nothing) cannot mount, read-only or not. A device without a
// readable ext2/3/4 superblock is left to Open, which reports it: nil.
func CheckType(dev Device, typ string, readOnly bool) error {
	if typ != "ext2" && typ != "ext3" || dev.Size() < sbOffset+sbSize {
		return nil
	}
	sb := make([]byte, sbSize)
	if err := readFull(dev, sb, sbOffset); err != nil || le16(sb, 0x38) != sbMagic {
		return nil
	}
	return typeRefusal(typ, le32(sb, 0x5C), le32(sb, 0x60), le32(sb, 0x64), readOnly)
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
