package ext4

// File handles (vfs.Exporter, vfs.HandleCoder), as Linux's ext4 makes
// and decodes them: the generic export_encode_fh's FILEID_INO32_GEN (the
// inode number and i_generation, two words) and generic_fh_to_dentry
// with ext4_nfs_get_inode: any inode in use is found by its number, as
// ext4_iget with EXT4_IGET_HANDLE does, whether a handle of it was made
// or not; a generation of 0 matches any.

import (
	"encoding/binary"
	"syscall"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// FILEID_INO32_GEN_PARENT is the type of a handle that also names the
// parent directory; ext4 decodes a file from it as from FILEID_INO32_GEN.
const fileIDIno32GenParent = 2

// EncodeFH implements vfs.Exporter.
func (fs *FS) EncodeFH(n vfs.Node) (vfs.FileID, error) {
	b := baseOf(n)
	if b == nil || b.fs != fs {
		return vfs.FileID{}, syscall.EINVAL
	}
	return vfs.FileID{Ino: uint64(b.ino()), Gen: b.gen}, nil
}

// EncodeHandle implements vfs.HandleCoder.
func (fs *FS) EncodeHandle(id vfs.FileID) unix.FileHandle { return vfs.Ino32GenHandle(id) }

// EncodeHandleParent implements vfs.ParentEncoder (export_encode_fh with
// a parent): FILEID_INO32_GEN_PARENT, four words, the file's inode number
// and generation, then its directory's.
func (fs *FS) EncodeHandleParent(id, parent vfs.FileID) unix.FileHandle {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint32(b, uint32(id.Ino))
	binary.LittleEndian.PutUint32(b[4:], id.Gen)
	binary.LittleEndian.PutUint32(b[8:], uint32(parent.Ino))
	binary.LittleEndian.PutUint32(b[12:], parent.Gen)
	return unix.NewFileHandle(fileIDIno32GenParent, b)
}

// DecodeHandle implements vfs.HandleCoder (generic_fh_to_dentry): a
// FILEID_INO32_GEN or FILEID_INO32_GEN_PARENT handle of at least two
// words.
func (fs *FS) DecodeHandle(h unix.FileHandle) (vfs.FileID, bool, bool) {
	b := h.Bytes()
	switch h.Type() & 0xffff {
	case vfs.FILEID_INO32_GEN, fileIDIno32GenParent:
	default:
		return vfs.FileID{}, false, false
	}
	if len(b) < 8 {
		return vfs.FileID{}, false, false
	}
	id := vfs.FileID{Ino: uint64(binary.LittleEndian.Uint32(b)), Gen: binary.LittleEndian.Uint32(b[4:])}
	return id, id.Gen == 0, true
}

// NodeByIno implements vfs.Exporter (ext4_iget with EXT4_IGET_HANDLE):
// ESTALE for a number below s_first_ino other than the root's, past the
// last inode, or of an inode not in use (free, or with no links and not
// open). On a read-write mount the node is held until the Releaser is
// released, so it cannot be freed in between.
func (fs *FS) NodeByIno(ino uint64) (vfs.Node, vfs.Releaser, error) {
	root := fs.vol.Root()
	if ino > uint64(fs.vol.Info().Inodes) || ino < uint64(fs.vol.FirstIno()) && ino != uint64(root) {
		return nil, nil, syscall.ESTALE
	}
	i := uint32(ino)
	w := fs.w
	if w == nil {
		in, err := fs.vol.Inode(i)
		if err != nil || in.Mode == 0 || in.Nlink == 0 {
			return nil, nil, syscall.ESTALE
		}
		n, err := fs.nodeIno(i)
		if err != nil {
			return nil, nil, syscall.ESTALE
		}
		return n, noHold{}, nil
	}
	if !w.HoldInUse(i) {
		return nil, nil, syscall.ESTALE
	}
	n, err := fs.nodeIno(i)
	if err != nil {
		w.Unhold(i)
		return nil, nil, syscall.ESTALE
	}
	return n, &pathHold{n: baseOf(n)}, nil
}
