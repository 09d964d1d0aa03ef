// Package fuse exports a subtree of an iovfs namespace to the host kernel
// through FUSE, so that every host program can use it. It is built on
// go-fuse's raw protocol API (fuse.RawFileSystem): the package itself
// decides node ids, lookup counts and file handles.
//
// The export works on nodes, not paths. Each node the kernel knows holds
// its file as an O_PATH descriptor in the server's Proc, and every
// request is served relative to it: LOOKUP and the calls that make or
// remove a name are the *at calls on the parent's descriptor with one
// name, the calls on a file itself go through its descriptor (AT_EMPTY_PATH
// or the magic-link calls: vfs.Proc.Reopen, TruncateFd, LinkFd, the
// xattr *Fd calls). So no request resolves more than one name, no path
// length limits a file, a rename never leaves another request resolving a
// stale path, and a file works through any of its names while it has one.
//
// Requests act with the credentials of the calling process: each set of
// credentials has a thread of the server's Proc (vfs.Proc.NewThread), so
// iovfs's own permission checks decide as for a local caller while the
// descriptors stay in one table. The kernel checks too: the export is
// mounted with default_permissions, since some opens never reach the
// server (a FIFO's or a device node's are the kernel's own), and the
// kernel may then cache names, as it checks search permission on every
// walk itself.
//
// Locking: Server.mu protects the node table (nodes, byKey, nextID, and
// each node's lookups, refs, dead and cache); Server.hmu the handle
// table; Server.bmu the passthrough state; credentials.mu the thread
// cache; locks.mu the lock-owner table. Each is taken alone, for a table
// access, never across a call into vfs.
package fuse

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Options control an export.
type Options struct {
	// AllowOther lets users other than the one who mounted reach the
	// export (the allow_other mount option).
	AllowOther bool
	// ReadOnly mounts the export read-only (MS_RDONLY).
	ReadOnly bool
	// MountFlags are further mount(2) flags of the host mount; of them
	// MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME and
	// MS_NOEXEC are used (the kernel's default is relatime). The export
	// updates atime by the host mount's atime flags, and follows them
	// when the host mount is remounted (atime.go), if root is a mount's
	// root in p's namespace.
	MountFlags uintptr
	// Debug logs every request and reply.
	Debug bool
	// Logger receives debug output; nil means log.Default.
	Logger *log.Logger
	// EntryTimeout and AttrTimeout are how long the kernel may cache a
	// name and attributes. Zero means one second; negative means no
	// caching at all, for exports that in-process code also changes.
	// (The kernel checks search permission on every walk through cached
	// names itself, default_permissions, so caching names is safe for
	// every caller.)
	EntryTimeout, AttrTimeout time.Duration
	// Name is the file-system source shown in /proc/mounts ("iovfs"
	// when empty).
	Name string
	// Fsname is the type suffix shown in /proc/mounts: fuse.<Fsname>.
	Fsname string
	// DevicesAsFiles shows character and block devices as regular files
	// of size 0 that are read and written through iovfs's drivers (with
	// direct_io). Without it the kernel shows them as device nodes, and
	// opening one opens the host's device with that number, never
	// iovfs's; a devfs export wants this set.
	DevicesAsFiles bool
	// NoPassthrough turns FUSE passthrough off. Without it, a regular
	// file of a host file system (hostfs) is opened with passthrough
	// where the kernel offers it (Linux 6.9+) and the server may
	// register backing files (root): the kernel then reads and writes
	// the host file itself, without READ and WRITE requests; iovfs
	// still decides the open, with the caller's credentials. Files of
	// other file systems have no host file and are always served.
	NoPassthrough bool
	// Dev and Suid mount the export without nodev and nosuid (the
	// defaults, as fusermount's): the host then opens the device nodes
	// made on it as its own devices, and runs its set-ID programs with
	// their owners' ids. They need root, as mount(8)'s dev and suid do.
	Dev, Suid bool
	// AllowIdmap lets the host make idmapped mounts of the export
	// (mount_setattr's MOUNT_ATTR_IDMAP; FUSE_ALLOW_IDMAP, Linux 6.12
	// and later). The kernel then sends the caller's ids only with the
	// requests that make a file (mapped through the mount's idmap into
	// the ids the new file gets); every other request comes without
	// them, on every mount of the export, and is served with the
	// server's credentials once the kernel has made its own permission
	// checks (default_permissions, POSIX ACLs, the sticky and
	// protected-link rules). The set-ID bits a write, fallocate,
	// truncate or chown by a caller without CAP_FSETID clears are
	// cleared by the rule Linux's file_remove_privs follows, with the
	// caller's groups as /proc shows them (their ids outside the
	// mount's idmap).
	AllowIdmap bool
	// KernelFlock has the host kernel keep the flock(2) locks that host
	// processes take through the export, as it does on a local file
	// system: FUSE_FLOCK_LOCKS is not negotiated, so the kernel locks
	// its own inode of the file (Linux's fuse_file_flock calls
	// locks_lock_file_wait) and sends no request. /proc/locks then lists
	// them as FLOCK with the taker's pid, the mount's device and the
	// file's inode number, and they conflict only with the flock locks
	// taken through the same mount. The namespace sees nothing of them:
	// Proc.Flock in it neither waits for nor blocks them, and its locks
	// are invisible to the host. Without KernelFlock, the export takes
	// them with Proc.Flock on the open file's descriptor in the
	// namespace, where they conflict with those of in-process callers,
	// and /proc/locks lists none. POSIX record and OFD locks are the
	// namespace's either way (lock.go).
	KernelFlock bool
}

// Server is a running export.
type Server struct {
	srv *gofuse.Server
	// base is the server's process: root, umask 0 (the kernel applies
	// the caller's umask before it asks). Its descriptor table holds
	// every node's O_PATH descriptor and every open handle; callers act
	// through its threads (creds.go).
	base *vfs.Proc
	mnt  string
	// hostMnt is mnt as the host's mount table shows it.
	hostMnt string
	// atime follows the host mount's atime flags (atime.go).
	atime atimeWatch

	entryTTL, attrTTL time.Duration
	devFiles          bool // Options.DevicesAsFiles

	// numbered says the files of the root's mount, numberedMnt, have node
	// ids made from their handles, found again through rootFd, the root
	// node's descriptor (handles.go). Set once by Mount.
	numbered    bool
	numberedMnt uint64
	rootFd      int

	// mu protects nodes, byKey, nextID, mounts and the mutable fields of
	// every node.
	mu     sync.Mutex
	nodes  map[uint64]*node
	byKey  map[nodeKey]*node
	nextID uint64

	// hmu protects handles and nextFh.
	hmu     sync.RWMutex
	handles map[uint64]*handle
	nextFh  uint64

	creds credentials
	locks lockOwners

	// noPassthrough is set by Options.NoPassthrough, or once the kernel
	// refuses to register a backing file (not root, no passthrough).
	noPassthrough atomic.Bool
	// bmu protects every node's backingID and backingRefs and every
	// handle's backing field (passthrough.go). It is taken alone, and
	// held across the registration ioctl.
	bmu sync.Mutex

	closeOnce sync.Once
	closeErr  error
}

// Mount exports the directory root of p's namespace (an absolute path,
// resolved with p's credentials) at mountpoint on the host and starts
// serving it. It returns once the kernel has the mount. The caller must
// Unmount it.
func Mount(p *vfs.Proc, root, mountpoint string, opts Options) (*Server, error) {
	if !path.IsAbs(root) {
		return nil, fmt.Errorf("fuse: root %q is not absolute", root)
	}
	root = path.Clean(root)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("fuse: /dev/fuse: %w", err)
	}
	fi, err := os.Stat(mountpoint)
	if err != nil {
		return nil, fmt.Errorf("fuse: mountpoint: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("fuse: mountpoint %s: %w", mountpoint, unix.ENOTDIR)
	}
	// The server's own process: an empty descriptor table, so that it
	// holds nothing of p's.
	base := vfs.NewProc(p.Namespace())
	base.Umask(0)
	rfd, err := p.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("fuse: %w", err)
	}
	fd, err := base.Getfd(p, rfd)
	p.Close(rfd)
	if err != nil {
		return nil, fmt.Errorf("fuse: %s: %w", root, err)
	}
	hostMnt, err := filepath.Abs(mountpoint)
	if err == nil {
		hostMnt, err = filepath.EvalSymlinks(hostMnt)
	}
	if err != nil {
		base.Close(fd)
		return nil, fmt.Errorf("fuse: mountpoint: %w", err)
	}
	s := &Server{
		base:     base,
		mnt:      mountpoint,
		hostMnt:  hostMnt,
		atime:    atimeWatch{stopW: -1, gone: make(chan struct{})},
		entryTTL: ttl(opts.EntryTimeout),
		attrTTL:  ttl(opts.AttrTimeout),
		devFiles: opts.DevicesAsFiles,
		nodes:    map[uint64]*node{},
		byKey:    map[nodeKey]*node{},
		nextID:   gofuse.FUSE_ROOT_ID + 1,
		handles:  map[uint64]*handle{},
		nextFh:   1,
	}
	s.atime.check.Store(-1)
	x, err := s.statFd(fd)
	if err != nil {
		base.Close(fd)
		return nil, fmt.Errorf("fuse: %s: %w", root, err)
	}
	// The root's generation is 0, as the kernel gives its root inode.
	rn := &node{id: gofuse.FUSE_ROOT_ID, key: nodeKey{x.Mnt_id, x.Ino}, fd: fd, lookups: 1}
	s.numberRoot(fd, &x)
	s.nodes[rn.id] = rn
	s.byKey[rn.key] = rn
	s.noPassthrough.Store(opts.NoPassthrough)
	s.creds.init(base)
	s.locks.init(base)

	name := opts.Name
	if name == "" {
		name = "iovfs"
	}
	mo := &gofuse.MountOptions{
		AllowOther:   opts.AllowOther,
		FsName:       name,
		Name:         opts.Fsname,
		Debug:        opts.Debug,
		Logger:       opts.Logger,
		EnableLocks:  true,
		DirectMount:  os.Geteuid() == 0,
		MaxWrite:     1 << 20,
		MaxReadAhead: 1 << 20,
		// Replies are built from memory (ReadResultData); splicing
		// them through a pipe would only add a copy.
		DisableSplice: true,
		// The kernel checks every permission with the attributes it
		// has (generic_permission), opens it never sends included (a
		// FIFO's, a device node's), and the server checks again as
		// the caller. See the package comment.
		Options: []string{"default_permissions"},
		// Writes and truncates by a caller without CAP_FSETID tell the
		// server to clear the set-ID bits, which it does as Linux's
		// file_remove_privs, instead of the kernel sending a SETATTR of
		// the mode as the caller, which a non-owner may not make.
		// EXPORT_SUPPORT: the kernel may LOOKUP "." and ".." to turn a
		// file handle back into a node it forgot (handles.go).
		// POSIX_ACL: the kernel checks permissions with the files' ACLs
		// too and forgets the attributes a change of an ACL changes;
		// DONT_MASK: creates come with the mode and the caller's umask
		// apart, which vfs applies unless the directory has a default
		// ACL (creds.go).
		ExtraCapabilities: gofuse.CAP_HANDLE_KILLPRIV_V2 | gofuse.CAP_EXPORT_SUPPORT |
			gofuse.CAP_POSIX_ACL | gofuse.CAP_DONT_MASK,
		IDMappedMount: opts.AllowIdmap,
	}
	if opts.KernelFlock {
		mo.DisabledCapabilities |= gofuse.CAP_FLOCK_LOCKS
	}
	if opts.ReadOnly {
		mo.Options = append(mo.Options, "ro")
	}
	// A direct mount takes these as flags, fusermount as options.
	mo.DirectMountFlags = unix.MS_NOSUID | unix.MS_NODEV
	for _, f := range []struct {
		flag uintptr
		name string
	}{{unix.MS_NOATIME, "noatime"}, {unix.MS_NODIRATIME, "nodiratime"}, {unix.MS_RELATIME, "relatime"}, {unix.MS_STRICTATIME, "strictatime"}, {unix.MS_NOEXEC, "noexec"}} {
		if opts.MountFlags&f.flag != 0 {
			mo.DirectMountFlags |= f.flag
			if !mo.DirectMount {
				mo.Options = append(mo.Options, f.name)
			}
		}
	}
	if opts.Dev {
		mo.Options = append(mo.Options, "dev")
	}
	if opts.Suid {
		mo.Options = append(mo.Options, "suid")
	}
	if opts.Fsname == "" {
		mo.Name = "iovfs"
	}
	raw := &rawFS{RawFileSystem: gofuse.NewDefaultRawFileSystem(), s: s}
	srv, err := gofuse.NewServer(raw, mountpoint, mo)
	if err != nil {
		s.releaseAll()
		return nil, fmt.Errorf("fuse: mount %s: %w", mountpoint, err)
	}
	s.srv = srv
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		s.Unmount()
		return nil, fmt.Errorf("fuse: mount %s: %w", mountpoint, err)
	}
	s.watchAtime(root)
	return s, nil
}

func ttl(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return time.Second
	case d < 0:
		return 0
	}
	return d
}

// Unmount detaches the export from the host and stops serving it. Files
// that host programs still hold open are cut off: the connection is
// aborted, so their calls fail with ENOTCONN. Then every descriptor the
// export holds is closed: the nodes', the open files' (whose RELEASE the
// kernel may never have sent) and the lock owners', which drops their
// locks and so wakes a request waiting for one. A request still running
// inside iovfs keeps what it uses until it returns: Unmount waits for the
// requests at most abandonWait. It is safe to call more than once.
func (s *Server) Unmount() error {
	s.closeOnce.Do(func() {
		var st unix.Stat_t
		haveDev := unix.Stat(s.mnt, &st) == nil
		err := unix.Unmount(s.mnt, 0)
		if err != nil && !errors.Is(err, unix.EINVAL) {
			// Busy: detach it, then abort the connection so that
			// the server loop ends even with open files.
			err = unix.Unmount(s.mnt, unix.MNT_DETACH)
			if haveDev {
				abortConnection(unix.Minor(st.Dev))
			}
		}
		if err != nil && !errors.Is(err, unix.EINVAL) {
			s.closeErr = fmt.Errorf("fuse: unmount %s: %w", s.mnt, err)
		}
		s.stop()
		s.stopAtime()
	})
	return s.closeErr
}

// stop waits for the server loop to end, closing what the export holds
// meanwhile, so that requests waiting for a lock held by another owner
// of the export are woken and end too.
func (s *Server) stop() {
	done := make(chan struct{})
	go func() {
		s.srv.Wait()
		close(done)
	}()
	deadline := time.After(abandonWait)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.releaseAll()
		select {
		case <-done:
			s.releaseAll()
			return
		case <-deadline:
			return
		case <-tick.C:
		}
	}
}

// abandonWait is how long Unmount waits for requests still running
// inside iovfs once the kernel connection is gone.
const abandonWait = 2 * time.Second

// Wait returns when the export has been unmounted, by Unmount or from
// outside (umount(8)).
func (s *Server) Wait() { s.srv.Wait() }

// Unmounted returns a channel that is closed once the host mount has
// left the mount table (umount(8), umount -l), as the server learns from
// /proc/self/mountinfo: at once, where Wait returns only when every
// request being served has returned. It is never closed if the server
// could not watch the mount table, nor by Unmount.
func (s *Server) Unmounted() <-chan struct{} { return s.atime.gone }

// abortConnection aborts FUSE connection id through the fusectl file
// system, mounting it at /sys/fs/fuse/connections for the moment if the
// host has not.
func abortConnection(id uint32) {
	dir := "/sys/fs/fuse/connections"
	f := fmt.Sprintf("%s/%d/abort", dir, id)
	if _, err := os.Stat(f); err != nil {
		if unix.Mount("fusectl", dir, "fusectl", 0, "") == nil {
			defer unix.Unmount(dir, 0)
		}
	}
	os.WriteFile(f, []byte("1"), 0)
}

// releaseAll drops every handle, lock owner and node the export holds,
// once the kernel connection is gone: each descriptor is closed at once,
// or when the request using it returns.
func (s *Server) releaseAll() {
	s.hmu.Lock()
	hs := s.handles
	s.handles = map[uint64]*handle{}
	s.hmu.Unlock()
	for _, h := range hs {
		s.locks.dropFile(h)
		s.dropBacking(h)
		h.drop(s.base)
	}
	s.locks.closeAll()
	s.mu.Lock()
	var fds []int
	for id, n := range s.nodes {
		delete(s.nodes, id)
		delete(s.byKey, n.key)
		n.dead = true
		if n.refs == 0 {
			fds = append(fds, n.fd)
		}
	}
	s.mu.Unlock()
	for _, fd := range fds {
		s.base.Close(fd)
	}
}
