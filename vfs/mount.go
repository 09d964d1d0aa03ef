package vfs

// Mounts (Linux fs/namespace.c). The mount table is an immutable map
// replaced on every change, so the path walk reads it with one atomic load
// and no lock. File system types register by name (RegisterFS) and are
// mounted with Proc.Mount.

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A FileSystem is a mounted instance of a file system.
type FileSystem interface {
	// Root returns the root directory.
	Root() Node
}

// Shutdowner is a FileSystem that holds resources (an open block device,
// say). Shutdown is called once, after the file system is unmounted and
// its last open file is closed.
type Shutdowner interface {
	Shutdown() error
}

// MountRequest is what a file system type is asked to mount.
type MountRequest struct {
	// Proc is the process calling mount; a file system that reads a block
	// device opens Source through it.
	Proc   *Proc
	Source string
	Flags  uintptr // MS_* flags
	Data   string  // file-system-specific options, comma-separated
	// Target is the absolute path of the mount point in the calling
	// process's namespace (ext4 records it in s_last_mounted); empty
	// when it cannot be found.
	Target string
}

// MountFunc creates a file system instance for a mount request. Its errors
// are syscall.Errno values, or wrap one.
type MountFunc func(req MountRequest) (FileSystem, error)

var registry struct {
	sync.RWMutex
	types map[string]MountFunc
}

// RegisterFS makes the file system type name available to Mount. It panics
// if name is registered twice, as a programming error.
func RegisterFS(name string, fn MountFunc) {
	registry.Lock()
	defer registry.Unlock()
	if registry.types == nil {
		registry.types = map[string]MountFunc{}
	}
	if _, dup := registry.types[name]; dup {
		panic("vfs: file system type " + name + " registered twice")
	}
	registry.types[name] = fn
}

// FSTypes returns the registered file system type names, sorted.
func FSTypes() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.types))
	for n := range registry.types {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Namespace is a tree of mounts, shared by the processes that see it.
type Namespace struct {
	root *mount

	// mu serialises mount and unmount; mounts is replaced under it.
	mu     sync.Mutex
	mounts atomic.Pointer[map[mountKey]*mount]
	// mountList is the table as a short list, or nil (see listOf):
	// mountedOn scans it rather than hashing a mountKey. It is replaced
	// after mounts, from the same table; a reader uses one or the other.
	mountList atomic.Pointer[[]mountEntry]
	// mountBits is the filter of the table (mountfilter.go).
	mountBits mountFilter

	nextDev atomic.Uint32

	// rename is the rename seqlock (renamelock.go): renames and mount
	// changes are its writers. Scoped walks (openat2 RESOLVE_BENEATH,
	// RESOLVE_IN_ROOT) check it at every "..", as Linux checks
	// rename_lock and mount_lock.
	rename renameLock
	// renameMu serialises renames between two directories (Linux's
	// s_vfs_rename_mutex), so that no directory moves while one of them
	// decides which of its two directories is the other's ancestor, and
	// in which order to lock them. It is taken before directory locks.
	renameMu sync.Mutex
	// sharedDirLock is the directory lock of every directory that is not
	// a DirLocker (dirlock.go).
	sharedDirLock DirLock

	// devices are the drivers device nodes open (device.go).
	devices deviceTable
	// dcache is the dentry cache; see dcache.go for its rules. Its keys
	// are nodes, not mounts, so namespaces over the same file systems may
	// share one, as Linux's dcache belongs to the superblock: a private
	// mount's namespace shares its origin's (privatemount.go).
	dcache *dcache
	// protect holds the fs.protected_* settings (protect.go).
	protect *protection
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
	id       uint64 // statx's stx_mnt_id (statx.go)
	readonly bool
	// source, fstype and data are Mount's arguments, set once under
	// Namespace.mu after attach and read under it (Mounts).
	source, fstype, data string
	// stFlags are the statfs f_flags the mount(2) flags gave (statfs.go),
	// with stFlagsSet; 0 for a mount made otherwise (MountFS, the root).
	stFlags atomic.Uint64
	// sbReadonly says the file system itself is read-only (a mount made
	// with MS_RDONLY), not only this mount (a read-only bind mount):
	// Linux's sb_permission then gives EROFS before the permission
	// checks, where a read-only mount gives it after them.
	sbReadonly bool

	// atime is the mount's access-time policy (atime.go).
	atime AtimePolicy

	// openFiles counts the open files on this mount (EBUSY on unmount).
	openFiles atomic.Int64
	// detached is set when the mount leaves the namespace.
	detached     atomic.Bool
	shutdownOnce sync.Once
}

func (m *mount) attached() bool { return !m.detached.Load() }

// shutdown releases the file system once it is detached and unused.
func (m *mount) maybeShutdown() {
	if !m.detached.Load() || m.openFiles.Load() != 0 {
		return
	}
	m.shutdownOnce.Do(func() {
		if s, ok := m.fs.(Shutdowner); ok {
			s.Shutdown()
		}
	})
}

// NewNamespace returns a namespace whose root is fs.
func NewNamespace(root FileSystem) *Namespace {
	ns := &Namespace{dcache: new(dcache), protect: new(protection)}
	ns.dcache.init(DefaultDentryCacheSize)
	ns.root = &mount{fs: root, root: root.Root(), dev: ns.newDev(), id: mountIDs.Add(1)}
	m := map[mountKey]*mount{}
	ns.mounts.Store(&m)
	ns.mountList.Store(listOf(m))
	return ns
}

// newDev hands out anonymous device numbers, as Linux does for tmpfs and
// other file systems without a backing device (major 0).
func (ns *Namespace) newDev() uint64 {
	return Mkdev(0, 16+ns.nextDev.Add(1))
}

// mountedOn returns the mount that covers node in parent, or nil.
func (ns *Namespace) mountedOn(parent *mount, node Node) *mount {
	if !ns.mountBits.mayCover(node) {
		return nil
	}
	if l := ns.mountList.Load(); l != nil {
		w := ifaceWords(node)
		for i := range *l {
			if e := &(*l)[i]; e.point.data == w.data && e.point.typ == w.typ && e.parent == parent {
				return e.m
			}
		}
		return nil
	}
	return (*ns.mounts.Load())[mountKey{parent, node}]
}

// mountEntry is one entry of the table, for mountList.
type mountEntry struct {
	parent *mount
	point  iwords
	m      *mount
}

// maxMountScan is how many mounts mountedOn scans before it prefers the
// map.
const maxMountScan = 16

// listOf returns table t as a list for mountedOn, or nil if it is too
// long or holds a mount point whose type is not a pointer (its words
// would not decide ==).
func listOf(t map[mountKey]*mount) *[]mountEntry {
	if len(t) > maxMountScan {
		return nil
	}
	l := make([]mountEntry, 0, len(t))
	for k, m := range t {
		if _, ok := dirWord(k.point); !ok {
			return nil
		}
		l = append(l, mountEntry{k.parent, ifaceWords(k.point), m})
	}
	return &l
}

// update replaces the mount table with a copy changed by fn, under mu.
func (ns *Namespace) update(fn func(map[mountKey]*mount)) {
	ns.rename.writeBegin()
	defer ns.rename.writeEnd()
	old := *ns.mounts.Load()
	next := make(map[mountKey]*mount, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	fn(next)
	ns.mountBits.add(next)
	ns.mounts.Store(&next)
	ns.mountList.Store(listOf(next))
	ns.mountBits.set(next)
}

// attach mounts fs on the directory dir of mount parent, on top of any
// mount already there, as Linux stacks mounts.
func (ns *Namespace) attach(parent *mount, dir Node, fs FileSystem, root Node, readonly bool) (*mount, error) {
	return ns.attachRO(parent, dir, fs, root, readonly, readonly)
}

// attachRO is attach with the file system's own read-only state apart.
// It takes dir's lock (lock_mount), so no rmdir removes dir meanwhile, and
// gives ENOENT for a directory already removed.
func (ns *Namespace) attachRO(parent *mount, dir Node, fs FileSystem, root Node, readonly, sbReadonly bool) (*mount, error) {
	l := ns.lockDir(dir)
	defer l.unlock()
	if err := l.alive(); err != nil {
		return nil, err
	}
	m := &mount{fs: fs, root: root, dev: ns.newDev(), readonly: readonly || sbReadonly, sbReadonly: sbReadonly, id: mountIDs.Add(1)}
	m.setAtime(0)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.update(func(t map[mountKey]*mount) {
		for {
			top := t[mountKey{parent, dir}]
			if top == nil {
				break
			}
			parent, dir = top, top.root
		}
		m.parent, m.point = parent, dir
		t[mountKey{parent, dir}] = m
	})
	return m, nil
}

// MountFS mounts fs on the directory at path, for set-up code that has a
// FileSystem value in hand rather than a registered type.
func (ns *Namespace) MountFS(path string, fs FileSystem, readonly bool) error {
	loc, err := ns.walk(location{}, path, true)
	if err == nil {
		err = mustDir(loc.node)
	}
	if err != nil {
		return pathErr("mount", path, err)
	}
	_, err = ns.attach(loc.mnt, loc.node, fs, fs.Root(), readonly)
	return pathErr("mount", path, err)
}

// Mount mounts a file system of type fstype, made from source and data, on
// the directory target, as mount(2) does. MS_RDONLY makes writes give
// EROFS; MS_BIND mounts the directory source again at target (fstype is
// then ignored). MS_NOATIME, MS_NODIRATIME and MS_STRICTATIME set how
// accesses update atime (relatime otherwise; none on a read-only mount):
// see AtimePolicy. MS_REMOUNT|MS_BIND changes those flags of the mount
// whose root is target (EINVAL if target is not a mount's root), keeping
// them if none is given, as Linux's do_reconfigure_mnt; it cannot change
// the mount's read-only state (EINVAL). The words ro, rw, sync, async,
// dirsync, lazytime, nolazytime, mand and nomand in data are taken as the
// superblock flags they name and never reach the file system, as
// Linux's vfs_parse_sb_flag takes them: "ro" makes the file system
// read-only as MS_RDONLY does, "rw" undoes MS_RDONLY for the file system
// (which then may write, a journal replay say) but not for the mount. A
// target that is not a directory gives ENOTDIR, an unknown fstype
// ENODEV. Other MS_* flags are accepted and ignored. A process without CAP_SYS_ADMIN gets EPERM once target is
// found.
func (p *Proc) Mount(source, target, fstype string, flags uintptr, data string) error {
	loc, err := p.walk(target, true)
	if err == nil && !p.Privileged() {
		err = errEPERM // path_mount: may_mount, after the target's lookup
	}
	if err == nil {
		err = mustDir(loc.node)
	}
	if err != nil {
		return pathErr("mount", target, err)
	}
	readonly := flags&unix.MS_RDONLY != 0
	if flags&(unix.MS_REMOUNT|unix.MS_BIND) == unix.MS_REMOUNT|unix.MS_BIND {
		if loc.node != loc.mnt.root || readonly != loc.mnt.readonly {
			return pathErr("mount", target, errEINVAL)
		}
		loc.mnt.remountAtime(flags)
		return nil
	}
	if flags&unix.MS_BIND != 0 {
		src, err := p.walk(source, true)
		if err != nil {
			return pathErr("mount", source, err)
		}
		m, err := p.ns.attachRO(loc.mnt, loc.node, src.mnt.fs, src.node, readonly || src.mnt.readonly, src.mnt.sbReadonly)
		if err != nil {
			return pathErr("mount", target, err)
		}
		m.stFlags.Store(src.mnt.stFlags.Load()) // clone_mnt keeps the source's flags
		m.atime.bits.Store(src.mnt.atime.bits.Load())
		if m.readonly {
			m.atime.bits.Store(m.atime.bits.Load() | atimeRO)
		}
		return nil
	}
	registry.RLock()
	fn := registry.types[fstype]
	registry.RUnlock()
	if fn == nil {
		return pathErr("mount", target, unix.ENODEV)
	}
	sbFlags, fsData, shown := superFlags(flags, data)
	abs, _ := p.pathOf(loc)
	fs, err := fn(MountRequest{Proc: p, Source: source, Flags: sbFlags, Data: fsData, Target: abs})
	if err != nil {
		return pathErr("mount", source, err)
	}
	m, err := p.ns.attachRO(loc.mnt, loc.node, fs, fs.Root(), readonly, sbFlags&unix.MS_RDONLY != 0)
	if err != nil {
		if sd, ok := fs.(Shutdowner); ok {
			sd.Shutdown()
		}
		return pathErr("mount", target, err)
	}
	m.stFlags.Store(mountStFlags(sbFlags))
	m.setAtime(flags)
	p.ns.mu.Lock()
	m.source, m.fstype, m.data = source, fstype, shown
	p.ns.mu.Unlock()
	return nil
}

// sbFlagWords are the words of mount(2)'s data that Linux's VFS takes as
// superblock flags before the file system sees the data
// (vfs_parse_sb_flag, by the key of a key=value word too): each sets or
// clears its flag, the last word for a flag winning.
var sbFlagWords = map[string]struct {
	flag uintptr
	set  bool
}{
	"ro": {unix.MS_RDONLY, true}, "rw": {unix.MS_RDONLY, false},
	"sync": {unix.MS_SYNCHRONOUS, true}, "async": {unix.MS_SYNCHRONOUS, false},
	"dirsync":  {unix.MS_DIRSYNC, true},
	"lazytime": {unix.MS_LAZYTIME, true}, "nolazytime": {unix.MS_LAZYTIME, false},
	"mand": {unix.MS_MANDLOCK, true}, "nomand": {unix.MS_MANDLOCK, false},
}

// superFlags applies the superblock-flag words of data to the mount(2)
// flags: sb is the file system's flags (MS_RDONLY there makes the file
// system itself read-only, as SB_RDONLY; the mount stays read-only too
// if flags had MS_RDONLY, as MNT_READONLY), fsData the data without
// those words, which the file system never sees, and shown the data as
// the mount table lists it, without "ro" and "rw" (its first word says
// which the mount is).
func superFlags(flags uintptr, data string) (sb uintptr, fsData, shown string) {
	sb = flags
	if data == "" {
		return sb, "", ""
	}
	var fsw, sw []string
	for _, w := range strings.Split(data, ",") {
		key, _, _ := strings.Cut(w, "=") // the key alone decides, a value is ignored
		f, ok := sbFlagWords[key]
		if !ok {
			fsw = append(fsw, w)
			sw = append(sw, w)
			continue
		}
		if f.set {
			sb |= f.flag
		} else {
			sb &^= f.flag
		}
		if f.flag != unix.MS_RDONLY {
			sw = append(sw, w)
		}
	}
	return sb, strings.Join(fsw, ","), strings.Join(sw, ",")
}

// Unmount removes the mount at target, as umount2(2) does. target must be
// the root of a mount (EINVAL otherwise; the namespace root gives EBUSY).
// A mount with open files or with mounts below it gives EBUSY, unless
// flags has MNT_DETACH: then it leaves the namespace at once, with the
// mounts below it, and its file system is shut down when its last open
// file is closed. UMOUNT_NOFOLLOW does not follow a final symlink; MNT_FORCE
// is accepted; other flags give EINVAL; a process without CAP_SYS_ADMIN
// gets EPERM once target is found.
func (p *Proc) Unmount(target string, flags int) error {
	if flags&^(unix.MNT_DETACH|unix.MNT_FORCE|unix.UMOUNT_NOFOLLOW) != 0 {
		return pathErr("umount", target, errEINVAL)
	}
	loc, err := p.walk(target, flags&unix.UMOUNT_NOFOLLOW == 0)
	if err == nil && !p.Privileged() {
		err = errEPERM // can_umount: may_mount, after the lookup
	}
	if err != nil {
		return pathErr("umount", target, err)
	}
	m := loc.mnt
	if loc.node != m.root {
		return pathErr("umount", target, errEINVAL)
	}
	if m.parent == nil {
		return pathErr("umount", target, unix.EBUSY)
	}
	ns := p.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if !m.attached() {
		return pathErr("umount", target, errEINVAL)
	}
	t := *ns.mounts.Load()
	below := ns.subtree(t, m)
	if flags&unix.MNT_DETACH == 0 && (m.openFiles.Load() != 0 || len(below) > 1) {
		return pathErr("umount", target, unix.EBUSY)
	}
	ns.update(func(t map[mountKey]*mount) {
		for _, c := range below {
			delete(t, mountKey{c.parent, c.point})
		}
	})
	for _, c := range below {
		c.detached.Store(true)
		ns.dcache.forgetFS(c.fs)
		c.maybeShutdown()
	}
	return nil
}

// subtree returns m and every mount below it in table t.
func (ns *Namespace) subtree(t map[mountKey]*mount, m *mount) []*mount {
	out := []*mount{m}
	for i := 0; i < len(out); i++ {
		for _, c := range t {
			if c.parent == out[i] {
				out = append(out, c)
			}
		}
	}
	return out
}

// isMountpoint reports whether a mount covers node of mount m.
func (ns *Namespace) isMountpoint(m *mount, node Node) bool {
	return ns.mountedOn(m, node) != nil
}
