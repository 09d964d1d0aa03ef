package disk

// Inode flags as Linux's ext4 keeps and changes them (fs/ext4/ioctl.c:
// ext4_fileattr_get, ext4_fileattr_set, ext4_ioctl_setflags; ext4.h's
// masks): i_flags on disk, the user-visible and user-modifiable subsets,
// the flags a new inode takes from its directory. Who may change the
// immutable and append-only flags, and their enforcement, are the VFS's.

import (
	"encoding/binary"
	"syscall"
)

// The flags of ext4.h that the masks below name.
const (
	flSecrm       = 0x00000001
	flUnrm        = 0x00000002
	flCompr       = 0x00000004
	flSync        = 0x00000008
	flImmutable   = 0x00000010
	flAppend      = 0x00000020
	flNodump      = 0x00000040
	flNoatime     = 0x00000080
	flDirty       = 0x00000100
	flComprblk    = 0x00000200
	flNocompr     = 0x00000400
	flEncrypt     = 0x00000800
	flJournalData = 0x00004000
	flNotail      = 0x00008000
	flDirsync     = 0x00010000
	flTopdir      = 0x00020000
	flVerity      = 0x00100000
	flEOFBlocks   = 0x00400000 // formerly EXT4_EOFBLOCKS_FL, still modifiable
	flDAX         = 0x02000000
	flProjinherit = 0x20000000
	flCasefold    = 0x40000000
)

const (
	// FlagsUserModifiable is EXT4_FL_USER_MODIFIABLE: the flags
	// FS_IOC_SETFLAGS keeps (the others visible are dropped silently).
	FlagsUserModifiable = flSecrm | flUnrm | flCompr | flSync | flImmutable | flAppend | flNodump | flNoatime |
		flJournalData | flNotail | flDirsync | flTopdir | FlagExtents | flEOFBlocks | flDAX | flProjinherit | flCasefold
	// FlagsUserVisible is EXT4_FL_USER_VISIBLE: the flags
	// FS_IOC_GETFLAGS shows (FS_IOC_SETFLAGS refuses others).
	FlagsUserVisible = FlagsUserModifiable | flDirty | flComprblk | flNocompr | flEncrypt | FlagIndex | flVerity | FlagInlineData

	// flInherited is EXT4_FL_INHERITED: what a new inode takes from its
	// directory (then masked by its type).
	flInherited = flSecrm | flUnrm | flCompr | flSync | flNodump | flNoatime | flNocompr | flJournalData |
		flNotail | flDirsync | flProjinherit | flCasefold | flDAX
	// flDAXMutExcl is EXT4_DAX_MUT_EXCL.
	flDAXMutExcl = flVerity | flEncrypt | flJournalData | FlagInlineData
)

// MaskFlags is ext4_mask_flags: the flags an inode of mode may have
// (directories all, regular files all but the directory ones, others
// only nodump and noatime).
func MaskFlags(mode, flags uint32) uint32 {
	switch mode & S_IFMT {
	case S_IFDIR:
		return flags
	case S_IFREG:
		return flags &^ (flDirsync | flTopdir | flCasefold | flProjinherit)
	}
	return flags & (flNodump | flNoatime)
}

// VisibleFlags is what ext4_fileattr_get shows of an inode's flags: the
// user-visible ones, without projinherit on a regular file.
func VisibleFlags(mode, flags uint32) uint32 {
	flags &= FlagsUserVisible
	if mode&S_IFMT == S_IFREG {
		flags &^= flProjinherit
	}
	return flags
}

// inheritFlags gives raw, a new inode of mode, the flags it takes from
// its directory's inode draw (__ext4_new_inode).
func inheritFlags(raw, draw []byte, mode uint32) {
	fl := MaskFlags(mode, iFlags(draw)&flInherited)
	binary.LittleEndian.PutUint32(raw[0x20:], iFlags(raw)|fl)
}

// SetFlagsAs sets ino's flags to flags, acting for c (see lockAs), as
// ext4_fileattr_set and ext4_ioctl_setflags do after the VFS's checks:
// EOPNOTSUPP for a flag outside FlagsUserVisible, the visible flags
// outside FlagsUserModifiable are dropped, then EOPNOTSUPP for a flag
// the inode's type cannot have; on an immutable inode that stays
// immutable, EPERM for any other change; a change of journal_data
// without sysResource (CAP_SYS_RESOURCE) EPERM; dax with a flag it
// excludes EOPNOTSUPP, and casefold (never on a volume this Writer
// takes) EOPNOTSUPP. Changing journal_data or extents, which the kernel
// follows by converting the inode (per-inode data journalling, extent
// migration), is not done: EOPNOTSUPP. projid must be 0 (no project
// feature: EOPNOTSUPP otherwise). ctime moves.
func (w *Writer) SetFlagsAs(c *Caller, ino uint32, flags, projid uint32, sysResource bool) error {
	if flags&^FlagsUserVisible != 0 {
		return syscall.EOPNOTSUPP
	}
	flags &= FlagsUserModifiable
	if err := w.lockAs(c); err != nil {
		return err
	}
	defer w.unlock()
	raw, err := w.getInode(ino)
	if err != nil {
		return err
	}
	mode := uint32(le16(raw, 0))
	if MaskFlags(mode, flags) != flags {
		return syscall.EOPNOTSUPP
	}
	old := iFlags(raw)
	// ext4_ioctl_check_immutable compares all of i_flags.
	if old&flImmutable != 0 && flags&flImmutable != 0 && old&^flImmutable != flags&^flImmutable {
		return syscall.EPERM
	}
	changed := flags ^ old
	if changed&flJournalData != 0 && !sysResource {
		return syscall.EPERM
	}
	if !daxCompatible(mode, old, flags) {
		return syscall.EOPNOTSUPP
	}
	if changed&(flCasefold|flJournalData|FlagExtents) != 0 {
		return syscall.EOPNOTSUPP
	}
	if projid != 0 {
		return syscall.EOPNOTSUPP // ext4_ioctl_setproject without the feature
	}
	nf := old&^FlagsUserModifiable | flags&FlagsUserModifiable
	binary.LittleEndian.PutUint32(raw[0x20:], nf)
	touch(raw, w.Now(), tCtime)
	return w.putInode(ino, raw)
}

// daxCompatible is dax_compatible: the dax flag and the flags it
// excludes cannot meet (inline data aside on a directory).
func daxCompatible(mode, old, flags uint32) bool {
	if mode&S_IFMT == S_IFDIR {
		old &^= FlagInlineData
		flags &^= FlagInlineData
	}
	if flags&flDAX != 0 && old&flDAXMutExcl != 0 {
		return false
	}
	return !(flags&flDAXMutExcl != 0 && old&flDAX != 0)
}
