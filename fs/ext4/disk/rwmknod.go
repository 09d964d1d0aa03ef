package disk

// Special files on the Writer: mknod(2)'s FIFOs, sockets, character and
// block devices (ext4_mknod), and the whiteout that renameat2's
// RENAME_WHITEOUT leaves (ext4_whiteout_for_rename). A special inode has
// no blocks and no extents flag (ext4_new_inode sets EXTENTS only on
// regular files, directories and symlinks); a device keeps its number in
// i_block as ext4_do_update_inode writes it.

import (
	"encoding/binary"
	"syscall"

	"golang.org/x/sys/unix"
)

// putDev stores device number rdev (a dev_t) in i_block: the old 16-bit
// encoding in i_block[0] when major and minor are below 256
// (old_valid_dev), else 0 there and the new 32-bit encoding in i_block[1].
func putDev(raw []byte, rdev uint64) {
	major, minor := unix.Major(rdev)&0xfff, unix.Minor(rdev)&0xfffff
	clear(raw[0x28:0x64])
	if major < 256 && minor < 256 {
		binary.LittleEndian.PutUint32(raw[0x28:], major<<8|minor)
		return
	}
	binary.LittleEndian.PutUint32(raw[0x2C:], minor&0xff|major<<8|(minor&^0xff)<<12)
}

// Mknod makes the special file name in dir: mode holds the type
// (S_IFCHR, S_IFBLK, S_IFIFO or S_IFSOCK) and the permission bits, rdev
// the device number of a device. Errors: those of Create; EINVAL for
// another type.
func (w *Writer) Mknod(dir uint32, name string, mode uint32, rdev uint64, uid, gid uint32) (uint32, error) {
	return w.MknodAs(nil, dir, name, mode, rdev, uid, gid)
}

// MknodAs is Mknod acting for c (see lockAs).
func (w *Writer) MknodAs(c *Caller, dir uint32, name string, mode uint32, rdev uint64, uid, gid uint32) (uint32, error) {
	switch mode & S_IFMT {
	case S_IFCHR, S_IFBLK:
	case S_IFIFO, S_IFSOCK:
		rdev = 0
	default:
		return 0, syscall.EINVAL
	}
	if err := w.lockAs(c); err != nil {
		return 0, err
	}
	defer w.unlock()
	defer w.writeSuper()
	draw, err := w.prepareNew(dir, name)
	if err != nil {
		return 0, err
	}
	mode, gid = inheritGroup(draw, mode, gid) // rwsgid.go
	ino, err := w.newSpecial(dir, mode, rdev, uid, gid)
	if err != nil {
		return 0, err
	}
	if err := w.addEntry(dir, draw, name, ino, ftOf(mode), w.Now()); err != nil {
		w.dropSpecial(ino)
		return 0, err
	}
	return ino, nil
}

// newSpecial allocates and writes a special inode with one link, near dir.
func (w *Writer) newSpecial(dir uint32, mode uint32, rdev uint64, uid, gid uint32) (uint32, error) {
	ino, err := w.allocInode(dir, false)
	if err != nil {
		return 0, err
	}
	raw := w.newInode(ino, mode, uid, gid, w.Now())
	if draw, err := w.getInode(dir); err == nil {
		inheritFlags(raw, draw, mode) // rwflags.go
	}
	setILinks(raw, 1)
	if mode&S_IFMT == S_IFCHR || mode&S_IFMT == S_IFBLK {
		putDev(raw, rdev)
	}
	if err := w.initACL(ino, raw); err != nil { // rwacl.go
		w.releaseInode(ino, raw, false)
		return 0, err
	}
	if err := w.putInode(ino, raw); err != nil {
		return 0, err
	}
	return ino, nil
}

// dropSpecial frees a special inode that got no name.
func (w *Writer) dropSpecial(ino uint32) {
	if raw, err := w.getInode(ino); err == nil {
		w.releaseInode(ino, raw, false)
	}
}

// RenameWhiteout is Rename with renameat2's RENAME_WHITEOUT: oldName is
// left naming a whiteout, a character device 0:0 with mode 0 owned by
// uid and gid, made in the same operation (ext4_rename). The errors are
// Rename's, then ENOSPC when no inode is free for the whiteout.
func (w *Writer) RenameWhiteout(oldDir uint32, oldName string, newDir uint32, newName string, uid, gid uint32) error {
	return w.RenameWhiteoutAs(nil, oldDir, oldName, newDir, newName, uid, gid)
}

// RenameWhiteoutAs is RenameWhiteout acting for c (see lockAs).
func (w *Writer) RenameWhiteoutAs(c *Caller, oldDir uint32, oldName string, newDir uint32, newName string, uid, gid uint32) error {
	if err := w.lockAs(c); err != nil {
		return err
	}
	defer w.unlock()
	defer w.writeSuper()
	// The lookups' errors come first; then the whiteout inode is taken,
	// before anything changes (ext4_whiteout_for_rename).
	_, src, _, dst, found, err := w.renameEnds(oldDir, oldName, newDir, newName)
	if err != nil {
		return err
	}
	if found && src.ino == dst.ino {
		return nil // two links to one inode: vfs_rename does nothing
	}
	if le32(w.sb, 0x10) == 0 {
		return syscall.ENOSPC
	}
	if err := w.rename(oldDir, oldName, newDir, newName); err != nil {
		return err
	}
	wh, err := w.newSpecial(oldDir, S_IFCHR, 0, uid, gid)
	if err != nil {
		return err
	}
	draw, err := w.getInode(oldDir)
	if err != nil {
		return err
	}
	if err := w.addEntry(oldDir, draw, oldName, wh, FTChrdev, w.Now()); err != nil {
		w.dropSpecial(wh)
		return err
	}
	return nil
}
