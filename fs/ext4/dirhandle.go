package ext4

// Open directories: a handle per open, holding the listing state
// (dirhash.go's dirCursor) that getdents resumes from and lseek moves,
// as ext4 keeps dir_private_info in file->private_data.

import (
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"syscall"

	"github.com/iovfs/iovfs/vfs"
)

// dirHandle is an open directory of either mount (ro or rw set). Calls
// come under the VFS's position lock, one at a time.
type dirHandle struct {
	cur disk.DirCursor
	ro  *dirNode
	rw  *rwDir
}

// Read implements vfs.Reader: EISDIR, as generic_read_dir.
func (*dirHandle) Read([]byte, int64) (int, error) { return 0, syscall.EISDIR }

// Iterate implements vfs.DirIterator (ext4_readdir).
func (h *dirHandle) Iterate(pos int64, ctx *vfs.DirContext) (np int64, err error) {
	if d := h.ro; d != nil {
		return h.iterate(disk.DirSource{Vol: d.fs.vol, In: d.in, List: d.cachedList().source()}, pos, ctx)
	}
	d := h.rw
	w := d.fs.w
	if l := d.list.Load(); l != nil {
		// A stored listing is the directory as it is (rwlist.go): no
		// lock, no block.
		d.fs.lists.hits.Add(1)
		l.ent.Touch()
		return h.iterate(disk.DirSource{Vol: w.Volume(), In: l.in, Gen: l.gen, List: l.l}, pos, ctx)
	}
	np = pos
	err = w.ViewDir(d.ino, func(v *disk.Volume, in *disk.Inode, gen uint64) error {
		var err error
		np, err = h.iterate(disk.DirSource{Vol: v, In: in, Gen: gen, List: d.fs.listDir(d, v, in, gen).source()}, pos, ctx)
		return err
	})
	if err == syscall.ENOENT {
		return np, err
	}
	return np, d.fs.check("ext4_readdir", err)
}

func (h *dirHandle) iterate(src disk.DirSource, pos int64, ctx *vfs.DirContext) (int64, error) {
	return h.cur.Iterate(src, pos, func(at int64, e disk.DirEntry) bool {
		return ctx.Emit(at, vfs.Dirent{Name: e.Name, Ino: uint64(e.Ino), Type: e.Type})
	})
}

// Llseek implements vfs.Seeker (ext4_dir_llseek).
func (h *dirHandle) Llseek(pos, off int64, whence int) (np int64, err error) {
	if d := h.ro; d != nil {
		return d.fs.vol.DirSeek(d.in, pos, off, whence)
	}
	err = h.rw.fs.w.ViewDir(h.rw.ino, func(v *disk.Volume, in *disk.Inode, _ uint64) error {
		var err error
		np, err = v.DirSeek(in, pos, off, whence)
		return err
	})
	return np, err
}

// Open implements vfs.Opener for a read-only mount's directory: its
// listing comes from its cached listing when it has one.
func (d *dirNode) Open(flags int, _ vfs.Cred) (vfs.Handle, error) {
	return &dirHandle{ro: d}, nil
}

// Open implements vfs.Opener for a read-write mount's directory: every
// call reads the inode afresh under the Writer's lock, and a change to a
// directory since the last fill makes the listing read it again.
//
// The handle holds the inode, so a directory removed while it is open
// stays an orphan until Release.
func (d *rwDir) Open(flags int, _ vfs.Cred) (vfs.Handle, error) {
	if err := d.pin(); err != nil {
		return nil, err
	}
	return &dirHandle{rw: d}, nil
}

// Release implements vfs.Releaser: a read-write mount's directory drops
// its hold, freeing a directory removed while open.
func (h *dirHandle) Release() error {
	if h.rw == nil {
		return nil
	}
	return h.rw.fs.unhold(h.rw.ino)
}
