package ext4

// Open directories: a handle per open, holding the listing state
// (dirhash.go's dirCursor) that getdents resumes from and lseek moves,
// as ext4 keeps dir_private_info in file->private_data.

import (
	"syscall"

	"github.com/iovfs/iovfs/vfs"
)

// dirHandle is an open directory of either mount. Calls come under the
// VFS's position lock, one at a time.
type dirHandle struct {
	cur dirCursor
	// list runs fn with the directory's source; seek answers lseek.
	list func(fn func(src dirSource) error) error
}

// Read implements vfs.Reader: EISDIR, as generic_read_dir.
func (*dirHandle) Read([]byte, int64) (int, error) { return 0, syscall.EISDIR }

// Iterate implements vfs.DirIterator (ext4_readdir).
func (h *dirHandle) Iterate(pos int64, emit func(int64, vfs.Dirent) bool) (int64, error) {
	np := pos
	err := h.list(func(src dirSource) error {
		var err error
		np, err = h.cur.iterate(src, pos, func(at int64, e listEnt) bool {
			return emit(at, vfs.Dirent{Name: e.name, Ino: uint64(e.ino), Type: e.typ})
		})
		return err
	})
	return np, err
}

// Llseek implements vfs.Seeker (ext4_dir_llseek).
func (h *dirHandle) Llseek(pos, off int64, whence int) (int64, error) {
	var np int64
	err := h.list(func(src dirSource) error {
		var err error
		np, err = src.v.dirSeek(src.in, pos, off, whence)
		return err
	})
	return np, err
}

// Open implements vfs.Opener for a read-only mount's directory: its
// listing comes from its cached listing when it has one.
func (d *dirNode) Open(flags int) (vfs.Handle, error) {
	return &dirHandle{list: func(fn func(dirSource) error) error {
		return fn(dirSource{v: d.fs.vol, in: d.in, list: d.cachedList()})
	}}, nil
}

// Open implements vfs.Opener for a read-write mount's directory: every
// call reads the inode afresh under the Writer's lock, and a change to
// a directory since the last fill makes the listing read it again.
func (d *rwDir) Open(flags int) (vfs.Handle, error) {
	w := d.fs.w
	return &dirHandle{list: func(fn func(dirSource) error) error {
		return d.fs.check("ext4_readdir", w.View(func(v *Volume) error {
			in, err := v.Inode(d.ino)
			if err != nil {
				return err
			}
			return fn(dirSource{v: v, in: in, gen: w.dirGen})
		}))
	}}, nil
}
