package ext4

// Open directories: a handle per open, holding the listing state
// (disk.DirCursor) that getdents resumes from and lseek moves, as ext4
// keeps dir_private_info in file->private_data.

import (
	"syscall"

	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// dirHandle is an open directory. Calls come under the VFS's position
// lock, one at a time.
type dirHandle struct {
	cur disk.DirCursor
	d   *dirNode
	// atimeState is the open directory's atime policy and O_NOATIME (atime.go).
	atimeState
}

// Read implements vfs.Reader: EISDIR, as generic_read_dir.
func (*dirHandle) Read([]byte, int64) (int, error) { return 0, syscall.EISDIR }

// Iterate implements vfs.DirIterator (ext4_readdir): from the
// directory's listing (listcache.go) when it has one, else from its
// blocks; a read-write mount's listing is the directory as it is, and a
// change since the last fill makes the cursor read it again.
func (h *dirHandle) Iterate(pos int64, ctx *vfs.DirContext) (int64, error) {
	np, err := h.list(pos, ctx)
	if h.d.fs.w != nil {
		h.d.fs.accessRef(h.d.ref, h.atimeMode(true)) // iterate_dir's file_accessed
	}
	return np, err
}

func (h *dirHandle) list(pos int64, ctx *vfs.DirContext) (int64, error) {
	d := h.d
	fs := d.fs
	if fs.w == nil {
		in, err := fs.vol.Current(d.ref)
		if err != nil {
			return pos, err
		}
		src := disk.DirSource{Vol: fs.vol, In: in}
		if l := d.cachedList(); l != nil {
			src.List = l.l
		}
		return h.iterate(src, pos, ctx)
	}
	l, err := d.listing()
	switch {
	case err == nil:
		return h.iterate(disk.DirSource{Vol: fs.vol, In: l.in, Gen: l.gen, List: l.l}, pos, ctx)
	case err == syscall.ENOENT:
		return pos, err
	}
	// A directory that cannot be parsed whole: from its blocks, fill by
	// fill, under the Writer's lock (its damage reported where met).
	np := pos
	err = fs.vol.ReadOnce(d.ref, func(in *disk.Inode) error {
		if in.Nlink == 0 {
			return syscall.ENOENT
		}
		var err error
		np, err = h.iterate(disk.DirSource{Vol: fs.vol, In: in, Gen: d.ref.Seq()}, pos, ctx)
		return err
	})
	if err == syscall.ENOENT {
		return np, err
	}
	return np, fs.check("ext4_readdir", err)
}

func (h *dirHandle) iterate(src disk.DirSource, pos int64, ctx *vfs.DirContext) (int64, error) {
	return h.cur.Iterate(src, pos, func(at int64, e disk.DirEntry) bool {
		return ctx.Emit(at, vfs.Dirent{Name: e.Name, Ino: uint64(e.Ino), Type: e.Type})
	})
}

// Llseek implements vfs.Seeker (ext4_dir_llseek).
func (h *dirHandle) Llseek(pos, off int64, whence int) (np int64, err error) {
	d := h.d
	err = d.fs.vol.Read(d.ref, func(in *disk.Inode) error {
		if in.Nlink == 0 {
			return syscall.ENOENT
		}
		var err error
		np, err = d.fs.vol.DirSeek(in, pos, off, whence)
		return err
	})
	return np, err
}

// Release implements vfs.Releaser: a read-write mount's directory drops
// its hold, freeing a directory removed while open.
func (h *dirHandle) Release() error {
	if h.d.fs.w == nil {
		return nil
	}
	return h.d.unpin()
}
