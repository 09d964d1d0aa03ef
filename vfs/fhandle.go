package vfs

// File handles: name_to_handle_at(2) and open_by_handle_at(2) (Linux
// fs/fhandle.c and fs/exportfs). A handle names a file for as long as it
// exists, whatever its names become: its file system's Exporter encodes
// it and finds the file again. The FUSE export builds its NFS-style node
// ids on them, so that the kernel can turn a handle back into a node it
// has forgotten.

import (
	"encoding/binary"
	"syscall"

	"golang.org/x/sys/unix"
)

// FileID is what a handle of iovfs's file systems holds: an inode number
// and the generation of the inode that had it when the handle was made
// (Linux's i_generation), so that a handle of a file whose number went to
// another file is stale.
type FileID struct {
	Ino uint64
	Gen uint32
}

// FILEID_INO32_GEN is the handle type iovfs's handles have: Linux's tmpfs
// gives it too, for its three 32-bit words (shmem_encode_fh).
const FILEID_INO32_GEN = 1

// The flags of a handle's type that the VFS sets and checks, never the
// file system (FILEID_USER_FLAGS_MASK and FILEID_VALID_USER_FLAGS).
const (
	FILEID_IS_CONNECTABLE = 0x10000
	FILEID_IS_DIR         = 0x20000
	fileIDUserFlags       = 0xffff0000
)

// maxHandleSize is MAX_HANDLE_SZ.
const maxHandleSize = 128

// The name_to_handle_at flags beyond AT_EMPTY_PATH and AT_SYMLINK_FOLLOW.
const (
	AT_HANDLE_FID           = 0x200
	AT_HANDLE_MNT_ID_UNIQUE = 0x001
	AT_HANDLE_CONNECTABLE   = 0x002
)

// Handle returns id as a file handle of type FILEID_INO32_GEN laid out as
// Linux's tmpfs lays out its own: the generation, then the inode number's
// low and high 32 bits, little-endian as on this machine.
func (id FileID) Handle() unix.FileHandle {
	b := make([]byte, 12)
	binary.LittleEndian.PutUint32(b, id.Gen)
	binary.LittleEndian.PutUint32(b[4:], uint32(id.Ino))
	binary.LittleEndian.PutUint32(b[8:], uint32(id.Ino>>32))
	return unix.NewFileHandle(FILEID_INO32_GEN, b)
}

// ParseFileHandle returns the FileID a handle that NameToHandleAt made
// of a file of iovfs's file systems holds: three words in the layout of
// FileID.Handle, or two (the inode number, then the generation) in the
// layout of Ino32GenHandle; false for a handle shorter than two words.
// The type is not looked at, as shmem_fh_to_dentry does not.
func ParseFileHandle(h unix.FileHandle) (FileID, bool) {
	b := h.Bytes()
	switch {
	case len(b) >= 12:
		ino := uint64(binary.LittleEndian.Uint32(b[8:]))<<32 | uint64(binary.LittleEndian.Uint32(b[4:]))
		return FileID{Ino: ino, Gen: binary.LittleEndian.Uint32(b)}, true
	case len(b) >= 8:
		return FileID{Ino: uint64(binary.LittleEndian.Uint32(b)), Gen: binary.LittleEndian.Uint32(b[4:])}, true
	}
	return FileID{}, false
}

// Ino32GenHandle returns id as a file handle of type FILEID_INO32_GEN
// laid out as Linux's generic export_encode_fh lays out struct fid's
// i32 (ext2, ext4...): the inode number's low 32 bits, then the
// generation, little-endian as on this machine; two words.
func Ino32GenHandle(id FileID) unix.FileHandle {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint32(b, uint32(id.Ino))
	binary.LittleEndian.PutUint32(b[4:], id.Gen)
	return unix.NewFileHandle(FILEID_INO32_GEN, b)
}

// handleOf is id's handle on the file system of ex.
func handleOf(ex Exporter, id FileID) unix.FileHandle {
	if c, ok := ex.(HandleCoder); ok {
		return c.EncodeHandle(id)
	}
	return id.Handle()
}

// decodeHandle is the FileID h names on the file system of ex, whether
// any generation matches it, and false if it names nothing there.
func decodeHandle(ex Exporter, h unix.FileHandle) (id FileID, anyGen, ok bool) {
	if c, ok := ex.(HandleCoder); ok {
		return c.DecodeHandle(h)
	}
	id, ok = ParseFileHandle(h)
	if len(h.Bytes()) < 12 {
		ok = false // shmem_fh_to_dentry: fh_len < 3
	}
	return id, false, ok
}

// handleParent returns the directory that holds the file path names (not
// a directory): the directory of path's last component, or, when a final
// symlink is followed, of its target's, as the walk reached it (Linux's
// dget_parent of the path's dentry).
func (p *Proc) handleParent(dirfd int, path string, follow bool) (location, error) {
	if err := checkPath(path); err != nil {
		return location{}, err
	}
	start, err := p.dirStart(dirfd, path)
	if err != nil {
		return location{}, err
	}
	w := p.newWalker()
	w.cred = p.cred.Load()
	dir, name, _, err := w.parent(start, path)
	for err == nil {
		var next location
		if next, _, err = w.stepKind(dir, name, false, true); err != nil {
			break
		}
		rl, isLink := next.node.(Readlinker)
		if !follow || !isLink {
			return dir, nil
		}
		if w.links++; w.links > maxSymlinks {
			return location{}, syscall.ELOOP
		}
		if w.cred != nil {
			if err := w.cred.mayFollowLink(w.ns, dir, next); err != nil {
				return location{}, err
			}
		}
		var target string
		if target, err = readlinkAccess(rl, next); err == nil {
			dir, name, _, err = w.parent(dir, target)
		}
	}
	return location{}, err
}

// NameToHandleAt returns a handle for the file at path relative to dirfd,
// and the id of its mount (statx's stx_mnt_id, or the unique one with
// AT_HANDLE_MNT_ID_UNIQUE), as name_to_handle_at(2) does. flags may hold
// AT_SYMLINK_FOLLOW (a final symlink is not followed without it),
// AT_EMPTY_PATH, AT_HANDLE_FID, AT_HANDLE_MNT_ID_UNIQUE and
// AT_HANDLE_CONNECTABLE (not with AT_HANDLE_FID or AT_EMPTY_PATH);
// others give EINVAL. A file system that cannot make handles gives
// EOPNOTSUPP, and so does AT_HANDLE_CONNECTABLE on one whose handles
// cannot name a parent (a ParentEncoder), as on Linux's tmpfs. A
// connectable handle's type has FILEID_IS_CONNECTABLE, and
// FILEID_IS_DIR for a directory; a non-directory's also names the
// directory that holds it.
func (p *Proc) NameToHandleAt(dirfd int, path string, flags int) (unix.FileHandle, int, error) {
	if flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH|AT_HANDLE_FID|AT_HANDLE_MNT_ID_UNIQUE|AT_HANDLE_CONNECTABLE) != 0 ||
		flags&AT_HANDLE_CONNECTABLE != 0 && flags&(AT_HANDLE_FID|unix.AT_EMPTY_PATH) != 0 {
		return unix.FileHandle{}, 0, pathErr("name_to_handle_at", path, errEINVAL)
	}
	lf := unix.AT_SYMLINK_NOFOLLOW
	if flags&unix.AT_SYMLINK_FOLLOW != 0 {
		lf = 0
	}
	lf |= flags & unix.AT_EMPTY_PATH
	loc, err := p.lookupAt(dirfd, path, lf, unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH)
	if err != nil {
		return unix.FileHandle{}, 0, pathErr("name_to_handle_at", path, err)
	}
	ex, ok := loc.mnt.fs.(Exporter)
	pe, canParent := ex.(ParentEncoder)
	if !ok || flags&AT_HANDLE_CONNECTABLE != 0 && !canParent {
		// exportfs_can_encode_fh: a connectable handle needs fh_to_parent
		// (Linux's tmpfs has none).
		return unix.FileHandle{}, 0, pathErr("name_to_handle_at", path, errEOPNOTSUP)
	}
	id, err := ex.EncodeFH(loc.node)
	if err != nil {
		return unix.FileHandle{}, 0, pathErr("name_to_handle_at", path, err)
	}
	h := handleOf(ex, id)
	if flags&AT_HANDLE_CONNECTABLE != 0 {
		// A directory's handle names it alone; another file's names its
		// parent too (exportfs_encode_fh with dget_parent). The type says
		// which (FILEID_IS_CONNECTABLE, FILEID_IS_DIR).
		typ := int32(FILEID_IS_CONNECTABLE)
		if isDir(loc.node) {
			typ |= FILEID_IS_DIR
		} else {
			dir, err := p.handleParent(dirfd, path, flags&unix.AT_SYMLINK_FOLLOW != 0)
			if err != nil {
				return unix.FileHandle{}, 0, pathErr("name_to_handle_at", path, err)
			}
			pid, err := ex.EncodeFH(dir.node)
			if dir.mnt.fs != loc.mnt.fs || err != nil {
				return unix.FileHandle{}, 0, pathErr("name_to_handle_at", path, errEOPNOTSUP)
			}
			h = pe.EncodeHandleParent(id, pid)
		}
		h = unix.NewFileHandle(h.Type()|typ, h.Bytes())
	}
	mid := int(loc.mnt.id)
	if flags&AT_HANDLE_MNT_ID_UNIQUE != 0 {
		mid += 1 << 31 // as statx's STATX_MNT_ID_UNIQUE
	}
	return h, mid, nil
}

// OpenByHandleAt opens the file h names on the file system of the mount
// where mountfd (or the current directory, for AT_FDCWD) is, with open
// flags, as open_by_handle_at(2) does, in Linux's order: a mountfd that is
// not open, or is an O_PATH file, gives EBADF; a caller without
// CAP_DAC_READ_SEARCH EPERM; an empty or oversized handle, or a type with
// flags other than FILEID_IS_CONNECTABLE and FILEID_IS_DIR, EINVAL; a
// handle that names no file of that file system (removed, of another
// file system, too short, FILEID_IS_DIR on a file) ESTALE. The file is
// then opened as open(2) opens the last component of a path, without the
// walk: a symlink gives ELOOP unless O_PATH, O_CREAT with O_EXCL EEXIST,
// O_CREAT on a directory EISDIR, and the access mode is checked against
// the file's permissions; O_TMPFILE makes an unnamed file, of mode 0, in
// the directory the handle names.
func (p *Proc) OpenByHandleAt(mountfd int, h unix.FileHandle, flags int) (int, error) {
	var anchor location
	if mountfd == unix.AT_FDCWD {
		anchor = *p.cwd.Load()
	} else {
		f := p.fdget(mountfd) // get_path_anchor: not an O_PATH file
		if f == nil {
			return -1, errEBADF
		}
		anchor = f.loc
	}
	if !p.cred.Load().capable() {
		return -1, errEPERM // may_decode_fh
	}
	typ := h.Type()
	if n := len(h.Bytes()); n == 0 || n > maxHandleSize || typ < 0 || uint32(typ)&fileIDUserFlags&^(FILEID_IS_CONNECTABLE|FILEID_IS_DIR) != 0 {
		return -1, errEINVAL
	}
	if flags&unix.O_PATH != 0 {
		flags &= oPathFlags
	}
	if flags&(unix.O_DIRECTORY|unix.O_CREAT) == unix.O_DIRECTORY|unix.O_CREAT ||
		flags&oTmpfile != 0 && (flags&unix.O_DIRECTORY == 0 || flags&unix.O_ACCMODE == unix.O_RDONLY) {
		return -1, errEINVAL // build_open_flags
	}
	if anchor.mnt == nil { // a pipe's or socket's: no export operations
		return -1, unix.ESTALE
	}
	ex, ok := anchor.mnt.fs.(Exporter)
	if !ok {
		return -1, unix.ESTALE
	}
	id, anyGen, okID := decodeHandle(ex, h)
	if !okID {
		return -1, unix.ESTALE
	}
	n, hold, err := ex.NodeByIno(id.Ino)
	if err != nil {
		return -1, err
	}
	defer hold.Release()
	if have, err := ex.EncodeFH(n); err != nil || !anyGen && have.Gen != id.Gen {
		return -1, unix.ESTALE // the number went to another file
	}
	if typ&FILEID_IS_DIR != 0 && !isDir(n) {
		return -1, unix.ESTALE // exportfs_decode_fh_raw: EXPORT_FH_DIR_ONLY
	}
	return p.openDecoded(location{anchor.mnt, n}, flags)
}

// openDecoded opens loc, a node a handle named, as do_file_open_root
// opens a path's root.
func (p *Proc) openDecoded(loc location, flags int) (int, error) {
	n := loc.node
	_, isLink := n.(Readlinker)
	var err error
	switch {
	case isLink && flags&unix.O_PATH == 0:
		return -1, unix.ELOOP // do_file_open_root
	case flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL:
		return -1, unix.EEXIST // do_open
	case flags&unix.O_CREAT != 0 && isDir(n):
		return -1, errEISDIR
	}
	var f *file
	if flags&oTmpfile != 0 {
		f, err = p.tmpfileIn(p.cred.Load(), loc, flags, 0) // do_tmpfile, in the handle's directory
	} else {
		f, err = p.openLoc(loc, flags&^(unix.O_CREAT|unix.O_EXCL), false)
	}
	if err != nil {
		return -1, err
	}
	f.cred = p.cred.Load()
	fd, err := p.files.installFlags(f, 0, flags&unix.O_CLOEXEC != 0)
	if err != nil {
		f.release()
		return -1, err
	}
	return fd, nil
}

// OpenByIno opens the file numbered ino of the file system shown whole
// by the mount whose root mountfd is, whatever its generation, as
// OpenByHandleAt opens a handle's file, and returns its FileID. It is the
// FUSE export's LOOKUP of "." for a node id the kernel decoded from a
// handle (the kernel compares the generation itself). Only a file that a
// handle was made of (NameToHandleAt) and that still exists is found
// (else ESTALE). mountfd must be the root of a mount that shows its file
// system from its root, so that nothing outside the mount is reached
// (EXDEV otherwise); the caller needs CAP_DAC_READ_SEARCH (EPERM).
func (p *Proc) OpenByIno(mountfd int, ino uint64, flags int) (int, FileID, error) {
	f := p.files.get(mountfd)
	if f == nil {
		return -1, FileID{}, errEBADF
	}
	if !p.cred.Load().capable() {
		return -1, FileID{}, errEPERM
	}
	m := f.loc.mnt
	if m == nil || f.loc.node != m.root || m.root != m.fs.Root() {
		return -1, FileID{}, unix.EXDEV
	}
	ex, ok := m.fs.(Exporter)
	if !ok {
		return -1, FileID{}, errEOPNOTSUP
	}
	n, hold, err := ex.NodeByIno(ino)
	if err != nil {
		return -1, FileID{}, err
	}
	defer hold.Release()
	id, err := ex.EncodeFH(n)
	if err != nil {
		return -1, FileID{}, err
	}
	fd, err := p.openDecoded(location{m, n}, flags)
	return fd, id, err
}
