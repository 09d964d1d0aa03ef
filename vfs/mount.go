package vfs

// Mounts. The mount table is an immutable map replaced on every change, so
// the path walk reads it with one atomic load and no lock.

import (
	"sync"
	"sync/atomic"
)

// A FileSystem is a mounted instance of a file system.
type FileSystem interface {
	// Root returns the root directory.
	Root() Node
}

// Namespace is a tree of mounts, shared by the processes that see it.
type Namespace struct {
	root *mount

	// mu serialises mount and unmount; mounts is replaced under it.
	mu     sync.Mutex
	mounts atomic.Pointer[map[mountKey]*mount]

	nextDev atomic.Uint32
}

type mountKey struct {
	parent *mount
	point  Node
}

type mount struct {
	fs       FileSystem
	root     Node
	parent   *mount // nil for the namespace root
	point    Node   // the directory in parent this mount covers
	dev      uint64
	readonly bool

	// openFiles counts the open files on this mount (EBUSY on unmount).
	openFiles atomic.Int64
}

// NewNamespace returns a namespace whose root is fs.
func NewNamespace(root FileSystem) *Namespace {
	ns := &Namespace{}
	ns.root = &mount{fs: root, root: root.Root(), dev: ns.newDev()}
	m := map[mountKey]*mount{}
	ns.mounts.Store(&m)
	return ns
}

// newDev hands out anonymous device numbers, as Linux does for tmpfs and
// other file systems without a backing device (major 0).
func (ns *Namespace) newDev() uint64 {
	return Mkdev(0, 16+ns.nextDev.Add(1))
}

// mountedOn returns the mount that covers node in parent, or nil.
func (ns *Namespace) mountedOn(parent *mount, node Node) *mount {
	return (*ns.mounts.Load())[mountKey{parent, node}]
}

// attach mounts fs on the directory dir of mount parent.
func (ns *Namespace) attach(parent *mount, dir Node, fs FileSystem, readonly bool) *mount {
	m := &mount{fs: fs, root: fs.Root(), parent: parent, point: dir, dev: ns.newDev(), readonly: readonly}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	old := *ns.mounts.Load()
	next := make(map[mountKey]*mount, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	// Mounting over a mount point stacks: the new mount covers the old
	// mount's root.
	for {
		top := next[mountKey{parent, dir}]
		if top == nil {
			break
		}
		parent, dir = top, top.root
	}
	m.parent, m.point = parent, dir
	next[mountKey{parent, dir}] = m
	ns.mounts.Store(&next)
	return m
}

// MountFS mounts fs on the directory at path, for set-up code that has a
// FileSystem value in hand rather than a registered type.
func (ns *Namespace) MountFS(path string, fs FileSystem, readonly bool) error {
	loc, err := ns.walk(location{ns.root, ns.root.root}, path, true)
	if err != nil {
		return pathErr("mount", path, err)
	}
	st, err := loc.node.Stat()
	if err != nil {
		return pathErr("mount", path, err)
	}
	if !st.IsDir() {
		return pathErr("mount", path, errENOTDIR)
	}
	ns.attach(loc.mnt, loc.node, fs, readonly)
	return nil
}
