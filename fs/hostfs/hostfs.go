// Package hostfs is a file system that passes through to a directory of
// the host, confined to it: nothing outside that directory can be reached
// through the mount, whatever the guest does with symlinks, ".." and
// concurrent renames on the host.
//
// Confinement rests on three rules.
//
//   - Every node holds a host descriptor (O_PATH) of its inode, and every
//     lookup is one component, opened from the directory's descriptor with
//     openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_SYMLINKS
//     [|RESOLVE_NO_XDEV]) and O_PATH|O_NOFOLLOW. A symlink is therefore
//     opened, never followed: it becomes a node that the iovfs walk
//     resolves itself. Where openat2 is missing (Linux < 5.6) the same
//     single-component openat with O_PATH|O_NOFOLLOW runs, and mount ids
//     are compared for RESOLVE_NO_XDEV (st_dev would miss a bind mount of
//     the same file system).
//   - ".." is opened from the directory's descriptor and accepted only if
//     walking up from it reaches the root's inode: a directory moved out of
//     the tree on the host has no parent (ENOENT), as Linux's
//     path_connected gives for a bind mount.
//   - Calls that name a child (create, mkdir, link, rename, unlink...) are
//     *at calls on held directory descriptors with a single component; the
//     ones that act on a node use its own descriptor (AT_EMPTY_PATH, or a
//     reopen through the process's /proc/self/fd directory, opened once).
//
// Node identity: the same host inode (st_dev, st_ino) is the same Node
// value while any part of iovfs refers to it. The table from inode to node
// holds weak pointers; when the garbage collector finds a node unused, a
// cleanup closes its descriptor and removes its entry. Because a live
// node keeps its host inode open, the host cannot reuse the inode number
// for another file while the node exists, so a table hit is the same
// inode; a hit whose file type differs (a host file system that reuses
// numbers anyway) is replaced, never returned.
//
// Nothing about a file is cached: Stat, Readlink and ReadDir ask the host
// every time, so changes made by other programs are seen at the next call.
//
// Lifetime: a node's descriptor is closed only by its cleanup, after the
// node is unreachable; methods that use it end with runtime.KeepAlive so
// the node stays reachable until their host call returns. An open file
// (handle) has its own descriptor, closed by Release.
package hostfs

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"weak"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Options are the mount options of a hostfs.
type Options struct {
	// Uid and Gid, when UidSet and GidSet, are presented as the owner of
	// every file (uid= and gid=), for a rootless sandbox.
	Uid, Gid       uint32
	UidSet, GidSet bool
	// Xdev lets lookups cross host mount points below the root (xdev);
	// without it they give EXDEV.
	Xdev bool
	// ReadOnly opens host files for reading only (MS_RDONLY); the VFS
	// refuses the writes itself.
	ReadOnly bool
}

// Parse reads the mount data: comma-separated uid=N, gid=N and xdev.
// Anything else gives EINVAL.
func Parse(data string) (Options, error) {
	var o Options
	for _, opt := range strings.Split(data, ",") {
		key, val, hasVal := strings.Cut(opt, "=")
		switch {
		case opt == "":
		case key == "uid" && hasVal, key == "gid" && hasVal:
			n, err := strconv.ParseUint(val, 10, 32)
			if err != nil || n == 1<<32-1 {
				return Options{}, syscall.EINVAL
			}
			if key == "uid" {
				o.Uid, o.UidSet = uint32(n), true
			} else {
				o.Gid, o.GidSet = uint32(n), true
			}
		case opt == "xdev":
			o.Xdev = true
		default:
			return Options{}, syscall.EINVAL
		}
	}
	return o, nil
}

// Mount is the vfs.MountFunc of the type "hostfs": req.Source is the host
// directory, req.Data the options Parse reads.
func Mount(req vfs.MountRequest) (vfs.FileSystem, error) {
	o, err := Parse(req.Data)
	if err != nil {
		return nil, err
	}
	o.ReadOnly = req.Flags&unix.MS_RDONLY != 0
	return New(req.Source, o)
}

// Resolver names the confinement mechanism in use.
type Resolver int

const (
	// Openat2 is openat2(2) with RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS.
	Openat2 Resolver = iota + 1
	// OpenatNoFollow is the fallback for kernels without openat2:
	// single-component openat with O_PATH|O_NOFOLLOW.
	OpenatNoFollow
)

func (r Resolver) String() string {
	switch r {
	case Openat2:
		return "openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_SYMLINKS)"
	case OpenatNoFollow:
		return "openat(O_PATH|O_NOFOLLOW), one component at a time"
	}
	return "Resolver(" + strconv.Itoa(int(r)) + ")"
}

// haveOpenat2 is decided once per process: 1 yes, 2 no.
var haveOpenat2 atomic.Int32

// forceFallback makes New use OpenatNoFollow, for tests of the fallback.
var forceFallback atomic.Bool

func detectResolver(dirfd int) Resolver {
	if forceFallback.Load() {
		return OpenatNoFollow
	}
	switch haveOpenat2.Load() {
	case 1:
		return Openat2
	case 2:
		return OpenatNoFollow
	}
	fd, err := unix.Openat2(dirfd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH})
	if err == nil {
		unix.Close(fd)
		haveOpenat2.Store(1)
		return Openat2
	}
	// ENOSYS on Linux < 5.6; EPERM or ENOSYS from a seccomp filter that
	// does not know the call. Any failure of this plain call means the
	// fallback, which is as safe.
	haveOpenat2.Store(2)
	return OpenatNoFollow
}

// FS is a mounted hostfs.
type FS struct {
	opts     Options
	resolver Resolver
	root     *inode // held for the life of the FS
	rootKey  key
	// procFD is /proc/self/fd (procSelfFD), to reopen node descriptors
	// with real access modes.
	procFD int
	// umask is the process's umask when the FS was made: the host applies
	// it to every file it creates, so a mode it would clear is set again
	// with chmod.
	umask uint32

	// mu protects nodes and live.
	mu    sync.Mutex
	nodes map[key]weak.Pointer[inode]
	// live counts the nodes with an open descriptor; past gcAt a
	// collection is started so unused nodes give their descriptors back.
	live, gcAt int
}

// key identifies a host inode.
type key struct{ dev, ino uint64 }

// New mounts the host directory dir. A missing dir gives ENOENT, one that
// is not a directory ENOTDIR.
func New(dir string, o Options) (*FS, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	proc, err := procSelfFD()
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	fs := &FS{
		opts:     o,
		resolver: detectResolver(fd),
		procFD:   proc,
		umask:    processUmask(),
		nodes:    map[key]weak.Pointer[inode]{},
		gcAt:     1024,
	}
	fs.rootKey = key{st.Dev, st.Ino}
	fs.root = &inode{fs: fs, fd: fd, key: fs.rootKey, typ: unix.S_IFDIR}
	fs.nodes[fs.rootKey] = weak.Make(fs.root)
	runtime.AddCleanup(fs.root, func(fd int) { unix.Close(fd) }, fd)
	return fs, nil
}

// procSelfFD opens /proc/self/fd once for the process (O_PATH) and checks
// that it is procfs. It is never closed: a node of an unmounted hostfs
// may still be reopened through it, and a closed, reused number there
// would make that reopen resolve against another directory.
var procSelfFD = sync.OnceValues(func() (int, error) {
	fd, err := unix.Open("/proc/self/fd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("hostfs: /proc/self/fd: %w", err)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		unix.Close(fd)
		return -1, fmt.Errorf("hostfs: /proc/self/fd is not on procfs: %w", syscall.ENODEV)
	}
	return fd, nil
})

// processUmask reads the umask from /proc/self/status, which unlike
// umask(2) does not change it for a moment under other goroutines.
func processUmask() uint32 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0o777 // unknown: always fix modes up
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return uint32(n)
			}
		}
	}
	return 0o777
}

// Root returns the root directory.
func (fs *FS) Root() vfs.Node { return (*Dir)(fs.root) }

// Resolver reports the confinement mechanism this mount uses.
func (fs *FS) Resolver() Resolver { return fs.resolver }

// Statfs reports the host file system's statfs(2) for the root, with the
// confinement mechanism in f_spare[0] (a Resolver; Linux leaves f_spare
// zero), so that a caller of statfs can tell which one runs.
func (fs *FS) Statfs() (unix.Statfs_t, error) {
	var st unix.Statfs_t
	err := unix.Fstatfs(fs.root.fd, &st)
	runtime.KeepAlive(fs.root)
	if err != nil {
		return unix.Statfs_t{}, err
	}
	st.Spare[0] = int64(fs.resolver)
	return st, nil
}

// liveNode returns the node of the host inode k if one is in use, or nil.
func (fs *FS) liveNode(k key, typ uint32) vfs.Node {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if w, ok := fs.nodes[k]; ok {
		if n := w.Value(); n != nil && n.typ == typ {
			return n.asNode()
		}
	}
	return nil
}

// node returns the node for the host inode open as fd (O_PATH), whose
// fstat is st; it takes fd over, closing it when the inode already has a
// node.
func (fs *FS) node(fd int, st *unix.Stat_t) vfs.Node {
	k := key{st.Dev, st.Ino}
	typ := st.Mode & unix.S_IFMT
	fs.mu.Lock()
	if w, ok := fs.nodes[k]; ok {
		if n := w.Value(); n != nil && n.typ == typ {
			fs.mu.Unlock()
			unix.Close(fd)
			return n.asNode()
		}
	}
	n := &inode{fs: fs, fd: fd, key: k, typ: typ}
	w := weak.Make(n)
	fs.nodes[k] = w
	fs.live++
	collect := fs.live >= fs.gcAt
	if collect {
		fs.gcAt = 2 * fs.live
	}
	fs.mu.Unlock()
	runtime.AddCleanup(n, fs.drop, dropArg{k, w, fd})
	if collect {
		// Descriptors are a scarcer resource than heap: a tree walk that
		// makes many small nodes would otherwise reach RLIMIT_NOFILE before
		// the heap grows enough to start a collection.
		go runtime.GC()
	}
	return n.asNode()
}

type dropArg struct {
	k  key
	w  weak.Pointer[inode]
	fd int
}

// drop is the cleanup of a collected node.
func (fs *FS) drop(a dropArg) {
	fs.mu.Lock()
	if fs.nodes[a.k] == a.w {
		delete(fs.nodes, a.k)
	}
	fs.live--
	if fs.live < fs.gcAt/4 && fs.gcAt > 1024 {
		fs.gcAt /= 2
	}
	fs.mu.Unlock()
	unix.Close(a.fd)
}
