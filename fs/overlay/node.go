package overlay

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// A real object is one layer's object that a node stands for: an O_PATH
// descriptor of the layer's process, a reference to its open file, and
// its node, whose Stat the overlay's, its hottest call, calls directly.
type real struct {
	l    *layer
	fd   int
	b    *vfs.Backing
	node vfs.Node
}

// newReal makes the real object open as fd in l's process; on error it
// closes fd.
func newReal(l *layer, fd int) (real, error) {
	b, err := l.p.Backing(fd)
	if err != nil {
		l.p.Close(fd)
		return real{}, errno(err)
	}
	return real{l, fd, b, b.Node()}, nil
}

// stat is the object's status, as Fstat of its descriptor gives it.
func (r real) stat() (vfs.Stat, error) {
	st, err := r.node.Stat()
	if st.Dev == 0 {
		st.Dev = r.l.dev
	}
	return st, errno(err)
}

// node is one overlay object (Linux's overlay inode and dentry together):
// the upper object, once there is one, and the lower ones below it. Its
// kind is one of the types below, by its file type, which never changes.
type node struct {
	fs  *FS
	typ uint32 // S_IFMT

	// mode, uid and gid are the attributes the VFS's permission checks
	// read (PermAttrs), kept up to date by the overlay's own changes, as
	// ovl_copyattr keeps the overlay inode's.
	mode, uid, gid atomic.Uint32

	// lower are the lower objects: a directory's merged ones, uppermost
	// first, or the one a non-directory comes from (its copy-up origin
	// once it has an upper object). Set when the node is made.
	lower []real
	// upper is the upper object, nil until the node is copied up or
	// made in the upper layer; it never changes once set.
	upper atomic.Pointer[real]
	// cu serialises copying the node up (ovl_copy_up_start).
	cu sync.Mutex

	// at is where the node's name is: the directory and name it was last
	// looked up or made as, for a copy-up and for "..". Only a directory
	// or a node without an upper object moves (by rename), and that
	// under its directories' mu.
	at *place
	// removed is set when the node's last overlay name goes.
	removed atomic.Bool
	// origin: st_ino is the lower object's (the node was copied up in
	// this mount).
	origin bool
	// ino is a directory's own inode number when the layers are on
	// several file systems (ovl_map_ino's non-persistent one).
	ino uint64
	// link is a symlink's target, read once.
	link atomic.Pointer[string]

	// Directories only.
	dl vfs.DirLock
	// opaque: the upper directory is opaque, or the lower stack ends in
	// an opaque one.
	opaque atomic.Bool
	// mu protects children and serialises the namespace changes of the
	// directory against lookups, which take no VFS lock.
	mu       sync.Mutex
	children map[string]weak.Pointer[node]
	swept    int // len(children) after the last sweep

	// descs are the node's descriptors, closed when the node is collected.
	descs *refs
}

// place is a node's directory and name; the cleanup of a collected node
// reads it to drop its entry.
type place struct {
	mu     sync.Mutex
	parent *node
	name   string
}

func (pl *place) get() (*node, string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.parent, pl.name
}

func (pl *place) set(parent *node, name string) {
	pl.mu.Lock()
	pl.parent, pl.name = parent, name
	pl.mu.Unlock()
}

// refs are descriptors to close when their node goes.
type refs struct {
	mu  sync.Mutex
	fds []real
}

func (r *refs) add(x real) {
	r.mu.Lock()
	r.fds = append(r.fds, x)
	r.mu.Unlock()
}

func (r *refs) close() {
	r.mu.Lock()
	fds := r.fds
	r.fds = nil
	r.mu.Unlock()
	for _, x := range fds {
		x.close()
	}
}

// The node kinds, by file type.
type (
	dirNode     node
	fileNode    node
	linkNode    node
	specialNode node
)

// vnode returns n as the vfs.Node of its kind.
func (n *node) vnode() vfs.Node {
	switch n.typ {
	case unix.S_IFDIR:
		return (*dirNode)(n)
	case unix.S_IFREG:
		return (*fileNode)(n)
	case unix.S_IFLNK:
		return (*linkNode)(n)
	}
	return (*specialNode)(n)
}

// asNode returns the node behind a vfs.Node of this package, or nil.
func asNode(v vfs.Node) *node {
	switch x := v.(type) {
	case *dirNode:
		return (*node)(x)
	case *fileNode:
		return (*node)(x)
	case *linkNode:
		return (*node)(x)
	case *specialNode:
		return (*node)(x)
	}
	return nil
}

// newNode makes a node from its layers' objects, which it takes over: st
// is the topmost one's status.
func (fs *FS) newNode(parent *node, name string, upper *real, lower []real, st vfs.Stat) *node {
	n := &node{fs: fs, typ: st.Mode & unix.S_IFMT, lower: lower, at: &place{parent: parent, name: name}, descs: &refs{}}
	n.setAttrs(st)
	if upper != nil {
		n.upper.Store(upper)
		n.descs.add(*upper)
	}
	for _, l := range lower {
		n.descs.add(l)
	}
	if n.typ == unix.S_IFDIR {
		n.children = map[string]weak.Pointer[node]{}
		if !fs.samefs {
			n.ino = fs.nextIno.Add(1)
		}
	}
	fs.track(n)
	return n
}

// track arranges for n's descriptors to be closed when n is collected, or
// at Shutdown. The cleanup holds nothing that leads back to a node (the
// FS, a directory): what it held would be kept alive by it, and with it
// every node the FS keeps.
func (fs *FS) track(n *node) {
	if !fs.tr.add(n.descs) {
		n.descs.close()
		return
	}
	runtime.AddCleanup(n, dropDescs, dropArg{n.descs, fs.tr})
}

type dropArg struct {
	descs *refs
	tr    *tracker
}

// dropDescs is the cleanup of a collected node. Its entry in its
// directory's children is left for the next lookup of the name, or the
// next sweep, to remove (a weak pointer with no value).
func dropDescs(a dropArg) {
	if a.tr.remove(a.descs) {
		a.descs.close()
	}
}

// tracker keeps the descriptor sets of the live nodes, for Shutdown.
type tracker struct {
	mu    sync.Mutex
	descs map[*refs]struct{}
	down  bool
}

// add registers r, or reports false after Shutdown.
func (t *tracker) add(r *refs) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.down {
		return false
	}
	t.descs[r] = struct{}{}
	return true
}

// remove unregisters r and reports whether it was registered.
func (t *tracker) remove(r *refs) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.descs[r]
	delete(t.descs, r)
	return ok
}

// closeAll closes every registered set, for good.
func (t *tracker) closeAll() {
	t.mu.Lock()
	t.down = true
	descs := t.descs
	t.descs = nil
	t.mu.Unlock()
	for r := range descs {
		r.close()
	}
}

// newRoot makes the root directory from the layers' roots, which the FS
// keeps open itself.
func (fs *FS) newRoot(upper real, lower []real) (*node, error) {
	top := upper
	if top.l == nil {
		top = lower[0]
	}
	st, err := top.stat()
	if err != nil {
		return nil, err
	}
	n := &node{fs: fs, typ: unix.S_IFDIR, lower: lower, at: &place{}, descs: &refs{},
		children: map[string]weak.Pointer[node]{}}
	if upper.l != nil {
		n.upper.Store(&upper)
	}
	if !fs.samefs {
		n.ino = fs.nextIno.Add(1)
	}
	n.setAttrs(st)
	return n, nil
}

func (n *node) setAttrs(st vfs.Stat) {
	n.mode.Store(st.Mode)
	n.uid.Store(st.Uid)
	n.gid.Store(st.Gid)
}

// top returns the object that serves the node: the upper one, else the
// uppermost lower one.
func (n *node) top() real {
	if u := n.upper.Load(); u != nil {
		return *u
	}
	return n.lower[0]
}

// merged reports OVL_TYPE_MERGE for a directory: it has an upper and a
// lower directory, or several lower ones.
func (n *node) merged() bool {
	if n.upper.Load() != nil {
		return len(n.lower) > 0
	}
	return len(n.lower) > 1
}

// pureUpper reports a directory with nothing below it.
func (n *node) pureUpper() bool {
	return n.upper.Load() != nil && len(n.lower) == 0
}

// stat is ovl_getattr: the serving object's status with st_dev and
// st_ino mapped as the kernel's xino=off maps them (mapStat).
func (n *node) stat() (vfs.Stat, error) {
	st, err := n.top().node.Stat()
	if err != nil {
		return st, errno(err)
	}
	n.mapStat(&st)
	return st, nil
}

// mapStat maps st, the serving object's status, to the overlay's. The
// kinds' Stat methods call it themselves, not through stat, as a stat
// is the overlay's hottest call and a copy of a Stat costs what the rest
// of it does.
func (n *node) mapStat(st *vfs.Stat) {
	isDir := n.typ == unix.S_IFDIR
	dev := n.top().l.dev
	if n.origin && (!isDir || n.fs.samefs) {
		// The copy-up origin's number, when a lower hard link cannot share
		// it (ovl_getattr: a directory, or a lower nlink of 1).
		if l := n.lower[0]; isDir || n.lowerNlink() == 1 {
			if lst, err := l.stat(); err == nil {
				st.Ino, dev = lst.Ino, l.l.dev
			}
		}
	}
	switch {
	case n.fs.samefs:
		st.Dev = 0 // the overlay's, filled in by the VFS
	case isDir:
		st.Dev, st.Ino = 0, n.ino
	default:
		st.Dev = dev // the layer's, which its own Stat may leave 0
	}
	if isDir && n.merged() {
		st.Nlink = 1
	}
}

// lowerNlink is the origin's link count.
func (n *node) lowerNlink() uint64 {
	st, err := n.lower[0].stat()
	runtime.KeepAlive(n)
	if err != nil {
		return 0
	}
	return st.Nlink
}

// permAttrs are the cached attributes.
func (n *node) permAttrs() (mode, uid, gid uint32) {
	return n.mode.Load(), n.uid.Load(), n.gid.Load()
}

// refresh rereads the cached attributes from the serving object.
func (n *node) refresh() {
	if st, err := n.top().stat(); err == nil {
		n.setAttrs(st)
	}
	runtime.KeepAlive(n)
}

// private reports whether name is one of the overlay's own attributes
// (trusted.overlay. or, under userxattr, user.overlay.).
func (fs *FS) private(name string) bool { return strings.HasPrefix(name, fs.prefix) }

// realXattr maps an attribute name the overlay shows to the one its layer
// stores: the overlay's own prefix is escaped, as Linux 6.7's
// ovl_xattr_escape does ("trusted.overlay.x" is "trusted.overlay.overlay.x"
// in the layer).
func (fs *FS) realXattr(name string) string {
	if fs.private(name) {
		return fs.prefix + "overlay." + name[len(fs.prefix):]
	}
	return name
}

// shownXattr maps a layer's attribute name to the overlay's: the escaped
// ones lose their escape, the overlay's own are hidden ("").
func (fs *FS) shownXattr(name string) string {
	if !fs.private(name) {
		return name
	}
	rest := name[len(fs.prefix):]
	if strings.HasPrefix(rest, "overlay.") {
		return fs.prefix + rest[len("overlay."):]
	}
	return ""
}

// getxattr is ovl_xattr_get on the serving object.
func (n *node) getxattr(name string) ([]byte, error) {
	t := n.top()
	v, err := t.l.p.GetxattrFd(t.fd, n.fs.realXattr(name))
	runtime.KeepAlive(n)
	return v, errno(err)
}

// listxattr is ovl_listxattr: the serving object's names, less the
// overlay's own.
func (n *node) listxattr() ([]string, error) {
	t := n.top()
	names, err := t.l.p.ListxattrFd(t.fd)
	runtime.KeepAlive(n)
	if err != nil {
		return nil, errno(err)
	}
	out := names[:0]
	for _, s := range names {
		if s = n.fs.shownXattr(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// The methods every kind shares.

func (d *dirNode) Stat() (vfs.Stat, error) {
	n := (*node)(d)
	st, err := n.top().node.Stat()
	if err != nil {
		return st, errno(err)
	}
	n.mapStat(&st)
	return st, nil
}

func (f *fileNode) Stat() (vfs.Stat, error) {
	n := (*node)(f)
	st, err := n.top().node.Stat()
	if err != nil {
		return st, errno(err)
	}
	n.mapStat(&st)
	return st, nil
}

func (l *linkNode) Stat() (vfs.Stat, error)    { return (*node)(l).stat() }
func (s *specialNode) Stat() (vfs.Stat, error) { return (*node)(s).stat() }

func (d *dirNode) FileType() uint32     { return unix.S_IFDIR }
func (f *fileNode) FileType() uint32    { return unix.S_IFREG }
func (l *linkNode) FileType() uint32    { return unix.S_IFLNK }
func (s *specialNode) FileType() uint32 { return s.typ }

func (d *dirNode) PermAttrs() (mode, uid, gid uint32)     { return (*node)(d).permAttrs() }
func (f *fileNode) PermAttrs() (mode, uid, gid uint32)    { return (*node)(f).permAttrs() }
func (l *linkNode) PermAttrs() (mode, uid, gid uint32)    { return (*node)(l).permAttrs() }
func (s *specialNode) PermAttrs() (mode, uid, gid uint32) { return (*node)(s).permAttrs() }

func (d *dirNode) Getxattr(name string) ([]byte, error)     { return (*node)(d).getxattr(name) }
func (f *fileNode) Getxattr(name string) ([]byte, error)    { return (*node)(f).getxattr(name) }
func (l *linkNode) Getxattr(name string) ([]byte, error)    { return (*node)(l).getxattr(name) }
func (s *specialNode) Getxattr(name string) ([]byte, error) { return (*node)(s).getxattr(name) }

func (d *dirNode) Listxattr() ([]string, error)     { return (*node)(d).listxattr() }
func (f *fileNode) Listxattr() ([]string, error)    { return (*node)(f).listxattr() }
func (l *linkNode) Listxattr() ([]string, error)    { return (*node)(l).listxattr() }
func (s *specialNode) Listxattr() ([]string, error) { return (*node)(s).listxattr() }

func (d *dirNode) Setattr(a vfs.SetAttr, c vfs.Cred) error     { return (*node)(d).setattr(a, c) }
func (f *fileNode) Setattr(a vfs.SetAttr, c vfs.Cred) error    { return (*node)(f).setattr(a, c) }
func (l *linkNode) Setattr(a vfs.SetAttr, c vfs.Cred) error    { return (*node)(l).setattr(a, c) }
func (s *specialNode) Setattr(a vfs.SetAttr, c vfs.Cred) error { return (*node)(s).setattr(a, c) }

func (d *dirNode) Setxattr(name string, data []byte, flags int, c vfs.Cred) error {
	return (*node)(d).setxattr(name, data, flags, c)
}
func (f *fileNode) Setxattr(name string, data []byte, flags int, c vfs.Cred) error {
	return (*node)(f).setxattr(name, data, flags, c)
}
func (l *linkNode) Setxattr(name string, data []byte, flags int, c vfs.Cred) error {
	return (*node)(l).setxattr(name, data, flags, c)
}
func (s *specialNode) Setxattr(name string, data []byte, flags int, c vfs.Cred) error {
	return (*node)(s).setxattr(name, data, flags, c)
}

func (d *dirNode) Removexattr(name string, c vfs.Cred) error {
	return (*node)(d).removexattr(name, c)
}
func (f *fileNode) Removexattr(name string, c vfs.Cred) error {
	return (*node)(f).removexattr(name, c)
}
func (l *linkNode) Removexattr(name string, c vfs.Cred) error {
	return (*node)(l).removexattr(name, c)
}
func (s *specialNode) Removexattr(name string, c vfs.Cred) error {
	return (*node)(s).removexattr(name, c)
}

// Readlink returns the symlink's target, read from its layer once.
func (l *linkNode) Readlink() (string, error) {
	if t := l.link.Load(); t != nil {
		return *t, nil
	}
	n := (*node)(l)
	t := n.top()
	s, err := t.l.p.Readlinkat(t.fd, "")
	runtime.KeepAlive(n)
	if err != nil {
		return "", errno(err)
	}
	l.link.Store(&s)
	return s, nil
}

// DirLock is the directory's VFS lock.
func (d *dirNode) DirLock() *vfs.DirLock { return &d.dl }
