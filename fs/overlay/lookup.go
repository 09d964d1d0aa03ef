package overlay

// Lookup (Linux fs/overlayfs/namei.c, ovl_lookup without redirect_dir,
// index, metacopy or origin file handles).

import (
	"runtime"
	"weak"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func weakOf(n *node) weak.Pointer[node] { return weak.Make(n) }

// Lookup returns the child called name: ".." is the parent (the root's
// is itself).
func (d *dirNode) Lookup(name string) (vfs.Node, error) {
	n := (*node)(d)
	if name == ".." {
		if p, _ := n.at.get(); p != nil {
			return p.vnode(), nil
		}
		return d, nil
	}
	c, err := n.child(name)
	if err != nil {
		return nil, err
	}
	return c.vnode(), nil
}

// child returns d's child called name.
func (d *node) child(name string) (*node, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.childLocked(name)
}

// childLocked is child with d.mu held: the node it already has for the
// name, else a new one from the layers.
func (d *node) childLocked(name string) (*node, error) {
	if d.removed.Load() {
		return nil, unix.ENOENT
	}
	if w, ok := d.children[name]; ok {
		if c := w.Value(); c != nil && !c.removed.Load() {
			return c, nil
		}
		delete(d.children, name)
	}
	c, err := d.lookupLayers(name)
	if err != nil {
		return nil, err
	}
	d.children[name] = weakOf(c)
	d.sweep()
	return c, nil
}

// sweep drops the entries of collected nodes from d.children once they
// may be half of it; d.mu held.
func (d *node) sweep() {
	if len(d.children) < 64 || len(d.children) < 2*d.swept {
		return
	}
	for name, w := range d.children {
		if w.Value() == nil {
			delete(d.children, name)
		}
	}
	d.swept = len(d.children)
}

// cached returns the live child node called name if d has one; d.mu held.
func (d *node) cached(name string) *node {
	if w, ok := d.children[name]; ok {
		if c := w.Value(); c != nil && !c.removed.Load() {
			return c
		}
	}
	return nil
}

// lookupIn looks name up in the layer directory dir and returns it open
// with O_PATH, with its status; ENOENT when it is not there.
func lookupIn(dir real, name string) (real, vfs.Stat, error) {
	p := dir.l.p
	fd, err := p.Openat(dir.fd, name, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return real{}, vfs.Stat{}, errno(err)
	}
	st, err := p.Fstat(fd)
	if err != nil {
		p.Close(fd)
		return real{}, vfs.Stat{}, errno(err)
	}
	r, err := newReal(dir.l, fd)
	return r, st, err
}

// close drops the object.
func (r real) close() {
	if r.b != nil {
		r.b.Release()
	}
	r.l.p.Close(r.fd)
}

// isWhiteout reports a whiteout: a character device 0:0
// (ovl_is_whiteout).
func isWhiteout(st vfs.Stat) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// isOpaque reports an opaque directory: its "opaque" attribute is "y"
// (ovl_is_opaquedir).
func (fs *FS) isOpaque(r real) bool {
	v, err := r.l.p.GetxattrFd(r.fd, fs.prefix+"opaque")
	return err == nil && string(v) == "y"
}

// lookupLayers finds name in d's layers, ovl_lookup's way: the upper
// directory first; a whiteout there hides the name, a non-directory or an
// opaque directory hides what is below it. Then each lower directory in
// turn: a whiteout ends the search, the first object found is the
// node's, and a directory merges with the directories below it down to
// an opaque one or a non-directory, which ends the merge.
func (d *node) lookupLayers(name string) (*node, error) {
	fs := d.fs
	var (
		upper  *real
		lower  []real
		st     vfs.Stat
		found  bool
		stop   bool
		opaque bool
	)
	fail := func(err error) (*node, error) {
		if upper != nil {
			upper.close()
		}
		for _, r := range lower {
			r.close()
		}
		runtime.KeepAlive(d)
		return nil, err
	}
	if u := d.upper.Load(); u != nil {
		r, ust, err := lookupIn(*u, name)
		switch {
		case err == unix.ENOENT:
		case err != nil:
			return fail(err)
		case isWhiteout(ust):
			r.close()
			return fail(unix.ENOENT)
		case ust.Mode&unix.S_IFMT == unix.S_IFDIR && fs.isTrap(ust):
			r.close() // overlapping layers (ovl_lookup_single)
			return fail(unix.ELOOP)
		default:
			upper, st, found = &r, ust, true
			if ust.Mode&unix.S_IFMT != unix.S_IFDIR {
				stop = true
			} else if fs.isOpaque(r) {
				stop, opaque = true, true
			}
		}
	}
	for i := 0; !stop && i < len(d.lower); i++ {
		r, lst, err := lookupIn(d.lower[i], name)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return fail(err)
		}
		if isWhiteout(lst) {
			r.close()
			break
		}
		isDir := lst.Mode&unix.S_IFMT == unix.S_IFDIR
		if found && (!isDir || st.Mode&unix.S_IFMT != unix.S_IFDIR) {
			r.close() // a non-directory below a directory: the merge ends
			break
		}
		if isDir && fs.isTrap(lst) {
			r.close()
			return fail(unix.ELOOP)
		}
		if !found {
			st, found = lst, true
		}
		lower = append(lower, r)
		if !isDir || fs.isOpaque(r) {
			break
		}
	}
	runtime.KeepAlive(d)
	if !found {
		return nil, unix.ENOENT
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if upper != nil && !isDir {
		if c := fs.upperNode(st.Ino); c != nil && c.typ == st.Mode&unix.S_IFMT {
			upper.close() // another hard link of a node in use
			return c, nil
		}
	}
	c := fs.newNode(d, name, upper, lower, st)
	c.opaque.Store(opaque)
	if upper != nil && !isDir {
		fs.registerUpper(st.Ino, c)
	}
	return c, nil
}

// lowerPositive reports whether a lower layer has name in d, so that
// removing it from the upper layer must leave a whiteout
// (ovl_lower_positive): the first lower directory that has the name
// decides; one that cannot be looked up counts as there.
func (d *node) lowerPositive(name string) bool {
	defer runtime.KeepAlive(d)
	for _, l := range d.lower {
		r, st, err := lookupIn(l, name)
		if err == unix.ENOENT || err == unix.ENAMETOOLONG {
			continue
		}
		if err != nil {
			return true
		}
		r.close()
		return !isWhiteout(st)
	}
	return false
}

// upperWhiteout reports whether name in d's upper directory is a
// whiteout (ovl_dentry_is_whiteout for a negative overlay name).
func (d *node) upperWhiteout(name string) (bool, error) {
	u := d.upper.Load()
	if u == nil {
		return false, nil
	}
	st, err := u.l.p.Fstatat(u.fd, name, unix.AT_SYMLINK_NOFOLLOW)
	runtime.KeepAlive(d)
	if err != nil {
		if errno(err) == unix.ENOENT {
			return false, nil
		}
		return false, errno(err)
	}
	return isWhiteout(st), nil
}
