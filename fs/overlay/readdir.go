package overlay

// Directory listings (Linux fs/overlayfs/readdir.c): the entries of the
// upper directory, then those of each lower directory below it, each name
// once, whiteouts left out (ovl_dir_read_merged). An open directory lists
// from a snapshot taken at its first read and at each rewind, as the
// kernel's merged directory cache.

import (
	"runtime"
	"sync"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// entries returns the directory's merged listing.
func (n *node) entries() ([]vfs.Dirent, error) {
	layers := make([]real, 0, 1+len(n.lower))
	if u := n.upper.Load(); u != nil {
		layers = append(layers, *u)
	}
	layers = append(layers, n.lower...)
	defer runtime.KeepAlive(n)
	seen := map[string]struct{}{}
	var out []vfs.Dirent
	for _, r := range layers {
		p := r.l.p
		fd, err := p.Openat(r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return nil, errno(err)
		}
		for {
			ents, err := p.Getdents(fd)
			if err != nil {
				p.Close(fd)
				return nil, errno(err)
			}
			if len(ents) == 0 {
				break
			}
			for _, e := range ents {
				if e.Name == "." || e.Name == ".." {
					continue
				}
				if _, dup := seen[e.Name]; dup {
					continue
				}
				seen[e.Name] = struct{}{}
				if e.Type == unix.DT_CHR || e.Type == unix.DT_UNKNOWN {
					st, err := p.Fstatat(fd, e.Name, unix.AT_SYMLINK_NOFOLLOW)
					if err == nil && isWhiteout(st) {
						continue
					}
				}
				out = append(out, vfs.Dirent{Name: e.Name, Ino: e.Ino, Type: e.Type})
			}
		}
		p.Close(fd)
	}
	return out, nil
}

// ReadDir lists the directory for the VFS's own use (getcwd's search for
// a directory's name in its parent, which matches d_ino against st_ino):
// getdents lists through the handle Open returns. An entry whose node is
// in use reports the inode number that node's Stat reports, on layers
// of several file systems too, so that the directory a process stands in
// is always found. Entry i's cookie is 3+i.
func (d *dirNode) ReadDir(off int64, fn func(vfs.Dirent) bool) error {
	n := (*node)(d)
	ents, err := n.entries()
	if err != nil {
		return err
	}
	n.liveInos(ents, false)
	start := int64(0)
	if off >= 3 {
		start = off - 2
	}
	for i := start; i < int64(len(ents)); i++ {
		e := ents[i]
		e.Off = 3 + i
		if !fn(e) {
			return nil
		}
	}
	return nil
}

// liveInos gives the entries whose nodes are in use the inode numbers
// their Stat reports: only those with a copy-up origin when origins is
// set (ovl_cache_update_ino's d_ino, with layers on one file system),
// every one otherwise.
func (n *node) liveInos(ents []vfs.Dirent, origins bool) {
	n.mu.Lock()
	var kids []*node
	var idx []int
	for i := range ents {
		if c := n.cached(ents[i].Name); c != nil && (c.origin || !origins) {
			kids = append(kids, c)
			idx = append(idx, i)
		}
	}
	n.mu.Unlock()
	for j, c := range kids {
		if st, err := c.stat(); err == nil {
			ents[idx[j]].Ino = st.Ino
		}
	}
}

// Open opens the directory for listing.
func (d *dirNode) Open(flags int, c vfs.Cred) (vfs.Handle, error) {
	return &dirHandle{n: (*node)(d)}, nil
}

// dirHandle lists a directory from its snapshot: position 0 is ".", 1
// is "..", and 2+i the snapshot's entry i.
type dirHandle struct {
	n *node
	// mu protects ents; the VFS calls Iterate under the file's position
	// lock, but Llseek may come from another descriptor of the file.
	mu   sync.Mutex
	ents []vfs.Dirent
	read bool
}

// Iterate lists from pos, taking a new snapshot at position 0.
func (h *dirHandle) Iterate(pos int64, ctx *vfs.DirContext) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pos == 0 || !h.read {
		ents, err := h.n.entries()
		if err != nil {
			return pos, err
		}
		h.inos(ents)
		h.ents, h.read = ents, true
	}
	for ; pos < int64(2+len(h.ents)); pos++ {
		var d vfs.Dirent
		switch pos {
		case 0:
			st, _ := h.n.stat()
			d = vfs.Dirent{Name: ".", Ino: st.Ino, Type: unix.DT_DIR}
		case 1:
			up := h.n
			if p, _ := h.n.at.get(); p != nil {
				up = p
			}
			st, _ := up.stat()
			d = vfs.Dirent{Name: "..", Ino: st.Ino, Type: unix.DT_DIR}
		default:
			d = h.ents[pos-2]
		}
		if !ctx.Emit(pos, d) {
			return pos, nil
		}
	}
	return pos, nil
}

// inos gives the entries whose nodes report their copy-up origin's inode
// number that number, as ovl_cache_update_ino makes d_ino match st_ino
// when the layers are on one file system.
func (h *dirHandle) inos(ents []vfs.Dirent) {
	if h.n.fs.samefs {
		h.n.liveInos(ents, true)
	}
}

// Llseek moves within the listing: SEEK_SET and SEEK_CUR to a position
// that is not negative.
func (h *dirHandle) Llseek(pos, off int64, whence int) (int64, error) {
	switch whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		off += pos
	default:
		return 0, unix.EINVAL
	}
	if off < 0 {
		return 0, unix.EINVAL
	}
	return off, nil
}

// Read gives EISDIR, as Linux's generic_read_dir.
func (h *dirHandle) Read([]byte, int64) (int, error) { return 0, unix.EISDIR }
