package ext4

// Open directories: a handle per open, holding the listing state
// (dirhash.go's dirCursor) that getdents resumes from and lseek moves,
// as ext4 keeps dir_private_info in file->private_data.

import (
	"syscall"

	"github.com/iovfs/iovfs/vfs"
)

// dirHandle is an open directory of either mount (ro or rw set). Calls
// come under the VFS's position lock, one at a time.
type dirHandle struct {
	cur dirCursor
	ro  *dirNode
	rw  *rwDir
}

// Read implements vfs.Reader: EISDIR, as generic_read_dir.
func (*dirHandle) Read([]byte, int64) (int, error) { return 0, syscall.EISDIR }

// Iterate implements vfs.DirIterator (ext4_readdir).
func (h *dirHandle) Iterate(pos int64, ctx *vfs.DirContext) (np int64, err error) {
	if d := h.ro; d != nil {
		return h.iterate(dirSource{v: d.fs.vol, in: d.in, list: d.cachedList()}, pos, ctx)
	}
	d := h.rw
	w := d.fs.w
	if l := d.list.Load(); l != nil {
		// A stored listing is the directory as it is (rwlist.go): no
		// lock, no block.
		d.fs.lists.hits.Add(1)
		l.ent.Touch()
		return h.iterate(dirSource{v: w.v, in: l.in, gen: l.gen, list: l}, pos, ctx)
	}
	np = pos
	err = w.View(func(v *Volume) error {
		in, err := d.live(v)
		if err != nil {
			return err
		}
		np, err = h.iterate(dirSource{v: v, in: in, gen: w.dirGen, list: d.fs.listDir(d, v, in)}, pos, ctx)
		return err
	})
	if err == syscall.ENOENT {
		return np, err
	}
	return np, d.fs.check("ext4_readdir", err)
}

// live reads directory d's inode for a listing, under the Writer's lock:
// ENOENT once it is removed (iterate_dir's IS_DEADDIR; the freed inode's
// raw fields say so before parsing it would call it damage).
func (d *rwDir) live(v *Volume) (*Inode, error) {
	w := d.fs.w
	raw := make([]byte, w.v.inodeSize)
	if err := w.v.readMeta(raw, w.inodeOff(d.ino)); err != nil {
		return nil, err
	}
	if iLinks(raw) == 0 || iMode(raw)&S_IFMT != S_IFDIR {
		return nil, syscall.ENOENT
	}
	return v.Inode(d.ino)
}

func (h *dirHandle) iterate(src dirSource, pos int64, ctx *vfs.DirContext) (int64, error) {
	return h.cur.iterate(src, pos, func(at int64, e listEnt) bool {
		return ctx.Emit(at, vfs.Dirent{Name: e.name, Ino: uint64(e.ino), Type: e.typ})
	})
}

// Llseek implements vfs.Seeker (ext4_dir_llseek).
func (h *dirHandle) Llseek(pos, off int64, whence int) (np int64, err error) {
	if d := h.ro; d != nil {
		return d.fs.vol.dirSeek(d.in, pos, off, whence)
	}
	d := h.rw
	err = d.fs.w.View(func(v *Volume) error {
		in, err := d.live(v)
		if err != nil {
			return err
		}
		np, err = v.dirSeek(in, pos, off, whence)
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
