package overlay_test

// faultFS wraps a file system and fails its changes from a chosen one on:
// the upper layer of the crash trials. Every call that changes the file
// system (a namespace change, an attribute change, a write) is a step;
// armed at step k, the k-th step fails with EIO, and, in cut mode, so
// does every step after it, as if the power went at step k.

import (
	"sync"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

type faultFS struct {
	inner vfs.FileSystem

	mu    sync.Mutex
	steps int  // steps counted since armed
	at    int  // the step that fails; 0: none
	cut   bool // every step from at on fails
	fired bool
	nodes map[vfs.Node]vfs.Node // inner node -> its wrapper
}

func newFaultFS(inner vfs.FileSystem) *faultFS {
	return &faultFS{inner: inner, nodes: map[vfs.Node]vfs.Node{}}
}

// arm makes step k fail (and every later one, with cut); 0 disarms.
func (f *faultFS) arm(k int, cut bool) {
	f.mu.Lock()
	f.steps, f.at, f.cut, f.fired = 0, k, cut, false
	f.mu.Unlock()
}

// step counts a change and says whether it fails.
func (f *faultFS) step() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at == 0 {
		return nil
	}
	f.steps++
	if f.steps == f.at || f.cut && f.steps > f.at {
		f.fired = true
		return unix.EIO
	}
	return nil
}

func (f *faultFS) didFire() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

func (f *faultFS) Root() vfs.Node { return f.wrap(f.inner.Root()) }

// wrap returns the one wrapper of an inner node.
func (f *faultFS) wrap(n vfs.Node) vfs.Node {
	if n == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.nodes[n]; ok {
		return w
	}
	st, _ := n.Stat()
	b := fbase{f, n}
	var w vfs.Node
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		w = &fdir{b}
	case unix.S_IFREG:
		w = &ffile{b}
	case unix.S_IFLNK:
		w = &flink{b}
	default:
		w = &fspecial{b}
	}
	f.nodes[n] = w
	return w
}

// unwrap returns the inner node of a wrapper.
func unwrap(n vfs.Node) vfs.Node {
	switch w := n.(type) {
	case *fdir:
		return w.n
	case *ffile:
		return w.n
	case *flink:
		return w.n
	case *fspecial:
		return w.n
	}
	return n
}

type fbase struct {
	f *faultFS
	n vfs.Node
}

func (b fbase) Stat() (vfs.Stat, error) { return b.n.Stat() }
func (b fbase) FileType() uint32 {
	if t, ok := b.n.(vfs.FileTyper); ok {
		return t.FileType()
	}
	st, _ := b.n.Stat()
	return st.Mode & unix.S_IFMT
}
func (b fbase) Setattr(a vfs.SetAttr, c vfs.Cred) error {
	if err := b.f.step(); err != nil {
		return err
	}
	return b.n.(vfs.Setattrer).Setattr(a, c)
}
func (b fbase) Getxattr(name string) ([]byte, error) { return b.n.(vfs.Xattrer).Getxattr(name) }
func (b fbase) Listxattr() ([]string, error)         { return b.n.(vfs.Xattrer).Listxattr() }
func (b fbase) Setxattr(name string, data []byte, flags int, c vfs.Cred) error {
	if err := b.f.step(); err != nil {
		return err
	}
	return b.n.(vfs.XattrSetter).Setxattr(name, data, flags, c)
}
func (b fbase) Removexattr(name string, c vfs.Cred) error {
	if err := b.f.step(); err != nil {
		return err
	}
	return b.n.(vfs.XattrSetter).Removexattr(name, c)
}
func (b fbase) OpenPath() (vfs.Releaser, error) {
	if p, ok := b.n.(vfs.PathOpener); ok {
		return p.OpenPath()
	}
	return nopRelease{}, nil
}

type nopRelease struct{}

func (nopRelease) Release() error { return nil }

type fdir struct{ fbase }
type ffile struct{ fbase }
type flink struct{ fbase }
type fspecial struct{ fbase }

func (d *fdir) DirLock() *vfs.DirLock { return d.n.(vfs.DirLocker).DirLock() }
func (d *fdir) Lookup(name string) (vfs.Node, error) {
	n, err := d.n.(vfs.Lookuper).Lookup(name)
	if err != nil {
		return nil, err
	}
	return d.f.wrap(n), nil
}
func (d *fdir) ReadDir(off int64, fn func(vfs.Dirent) bool) error {
	return d.n.(vfs.DirReader).ReadDir(off, fn)
}
func (d *fdir) made(n vfs.Node, err error) (vfs.Node, error) {
	if err != nil {
		return nil, err
	}
	return d.f.wrap(n), nil
}
func (d *fdir) Create(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	if err := d.f.step(); err != nil {
		return nil, err
	}
	return d.made(d.n.(vfs.Creator).Create(name, mode, c))
}
func (d *fdir) Mkdir(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	if err := d.f.step(); err != nil {
		return nil, err
	}
	return d.made(d.n.(vfs.Mkdirer).Mkdir(name, mode, c))
}
func (d *fdir) Mknod(name string, mode uint32, rdev uint64, c vfs.Cred) (vfs.Node, error) {
	if err := d.f.step(); err != nil {
		return nil, err
	}
	return d.made(d.n.(vfs.Mknoder).Mknod(name, mode, rdev, c))
}
func (d *fdir) Symlink(name, target string, c vfs.Cred) (vfs.Node, error) {
	if err := d.f.step(); err != nil {
		return nil, err
	}
	return d.made(d.n.(vfs.Symlinker).Symlink(name, target, c))
}
func (d *fdir) Link(name string, target vfs.Node, c vfs.Cred) error {
	if err := d.f.step(); err != nil {
		return err
	}
	return d.n.(vfs.Linker).Link(name, unwrap(target), c)
}
func (d *fdir) Unlink(name string, c vfs.Cred) error {
	if err := d.f.step(); err != nil {
		return err
	}
	return d.n.(vfs.Unlinker).Unlink(name, c)
}
func (d *fdir) Rmdir(name string, c vfs.Cred) error {
	if err := d.f.step(); err != nil {
		return err
	}
	return d.n.(vfs.Rmdirer).Rmdir(name, c)
}
func (d *fdir) Rename(oldName string, newDir vfs.Node, newName string, flags uint, c vfs.Cred) error {
	if err := d.f.step(); err != nil {
		return err
	}
	return d.n.(vfs.Renamer).Rename(oldName, unwrap(newDir), newName, flags, c)
}

func (l *flink) Readlink() (string, error) { return l.n.(vfs.Readlinker).Readlink() }

func (f *ffile) Open(flags int, c vfs.Cred) (vfs.Handle, error) {
	h, err := f.n.(vfs.Opener).Open(flags, c)
	if err != nil {
		return nil, err
	}
	return &fhandle{f.f, h}, nil
}

// fhandle counts writes as steps.
type fhandle struct {
	f *faultFS
	h vfs.Handle
}

func (h *fhandle) Read(p []byte, off int64) (int, error) { return h.h.(vfs.Reader).Read(p, off) }
func (h *fhandle) ReadIter(dst iov.Iter, off int64) (int, error) {
	return h.h.(vfs.IterReader).ReadIter(dst, off)
}
func (h *fhandle) Write(p []byte, off int64) (int, error) {
	if err := h.f.step(); err != nil {
		return 0, err
	}
	return h.h.(vfs.Writer).Write(p, off)
}
func (h *fhandle) WriteIter(src iov.Iter, off int64) (int, error) {
	if err := h.f.step(); err != nil {
		return 0, err
	}
	return h.h.(vfs.IterWriter).WriteIter(src, off)
}
func (h *fhandle) Append(src iov.Iter) (int64, int, error) {
	if err := h.f.step(); err != nil {
		return 0, 0, err
	}
	return h.h.(vfs.Appender).Append(src)
}
func (h *fhandle) Llseek(pos, off int64, whence int) (int64, error) {
	return h.h.(vfs.Seeker).Llseek(pos, off, whence)
}
func (h *fhandle) Release() error {
	if r, ok := h.h.(vfs.Releaser); ok {
		return r.Release()
	}
	return nil
}
func (h *fhandle) Sync() error { return nil }

var (
	_ vfs.FileSystem = (*faultFS)(nil)

	_ vfs.Creator     = (*fdir)(nil)
	_ vfs.DirLocker   = (*fdir)(nil)
	_ vfs.DirReader   = (*fdir)(nil)
	_ vfs.FileTyper   = (*fdir)(nil)
	_ vfs.Linker      = (*fdir)(nil)
	_ vfs.Lookuper    = (*fdir)(nil)
	_ vfs.Mkdirer     = (*fdir)(nil)
	_ vfs.Mknoder     = (*fdir)(nil)
	_ vfs.Node        = (*fdir)(nil)
	_ vfs.PathOpener  = (*fdir)(nil)
	_ vfs.Renamer     = (*fdir)(nil)
	_ vfs.Rmdirer     = (*fdir)(nil)
	_ vfs.Setattrer   = (*fdir)(nil)
	_ vfs.Symlinker   = (*fdir)(nil)
	_ vfs.Unlinker    = (*fdir)(nil)
	_ vfs.XattrSetter = (*fdir)(nil)
	_ vfs.Xattrer     = (*fdir)(nil)

	_ vfs.Node        = (*ffile)(nil)
	_ vfs.Opener      = (*ffile)(nil)
	_ vfs.PathOpener  = (*ffile)(nil)
	_ vfs.Setattrer   = (*ffile)(nil)
	_ vfs.XattrSetter = (*ffile)(nil)
	_ vfs.Xattrer     = (*ffile)(nil)

	_ vfs.Node       = (*flink)(nil)
	_ vfs.Readlinker = (*flink)(nil)

	_ vfs.Node = (*fspecial)(nil)

	_ vfs.Appender   = (*fhandle)(nil)
	_ vfs.IterReader = (*fhandle)(nil)
	_ vfs.IterWriter = (*fhandle)(nil)
	_ vfs.Reader     = (*fhandle)(nil)
	_ vfs.Releaser   = (*fhandle)(nil)
	_ vfs.Seeker     = (*fhandle)(nil)
	_ vfs.Syncer     = (*fhandle)(nil)
)
