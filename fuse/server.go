// Package fuse exports a subtree of an iovfs namespace to the host kernel
// through FUSE, so that every host program can use it. It is built on
// go-fuse's raw protocol API (fuse.RawFileSystem): the package itself
// decides node ids, lookup counts and file handles, and serves every
// request from a vfs.Proc acting with the credentials of the calling
// process, so that iovfs's own permission checks decide (the export is
// mounted without default_permissions).
//
// Locking: Server.mu protects the node table (nodes, byKey, and each
// node's parent, name and lookups fields); Server.hmu protects the handle
// table; credentials.mu the Proc cache; locks.mu the lock-owner table.
// They are never held together, except hmu inside mu nowhere: each is
// taken alone, for a map access, never across a call into vfs.
package fuse

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path"
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
	// Debug logs every request and reply.
	Debug bool
	// Logger receives debug output; nil means log.Default.
	Logger *log.Logger
	// EntryTimeout and AttrTimeout are how long the kernel may cache a
	// name and attributes. Negative means no caching at all, for exports
	// that in-process code also changes. Zero means one second for
	// attributes, and for names one second when only root can reach the
	// export, none otherwise: without default_permissions the kernel
	// checks no search permission on a directory during a path walk, so
	// a cached name would let a process reach a file under a directory
	// it may not search; with no name cache every walk sends LOOKUP, and
	// iovfs checks it as the caller.
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
}

// Server is a running export.
type Server struct {
	srv  *gofuse.Server
	root string // the exported directory's path in the namespace
	base *vfs.Proc
	mnt  string

	entryTTL, attrTTL time.Duration
	devFiles          bool // Options.DevicesAsFiles

	// mu protects nodes, byKey, nextID and the mutable fields of every
	// node.
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
	st, err := p.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("fuse: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("fuse: %s: %w", root, unix.ENOTDIR)
	}
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
	base := vfs.NewProc(p.Namespace())
	base.Umask(0) // the kernel applies the caller's umask before it asks
	s := &Server{
		root:     root,
		base:     base,
		mnt:      mountpoint,
		entryTTL: entryTTL(opts),
		attrTTL:  ttl(opts.AttrTimeout),
		devFiles: opts.DevicesAsFiles,
		nodes:    map[uint64]*node{},
		byKey:    map[nodeKey]*node{},
		nextID:   gofuse.FUSE_ROOT_ID + 1,
		handles:  map[uint64]*handle{},
		nextFh:   1,
	}
	s.noPassthrough.Store(opts.NoPassthrough)
	s.creds.init(base)
	s.locks.init(base)
	rn := &node{id: gofuse.FUSE_ROOT_ID, key: nodeKey{st.Dev, st.Ino}, lookups: 1}
	s.nodes[rn.id] = rn
	s.byKey[rn.key] = rn

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
		// The export answers ACCESS and checks permissions itself.
		EnableSymlinkCaching: false,
	}
	if opts.ReadOnly {
		mo.Options = append(mo.Options, "ro")
	}
	if opts.Fsname == "" {
		mo.Name = "iovfs"
	}
	raw := &rawFS{RawFileSystem: gofuse.NewDefaultRawFileSystem(), s: s}
	srv, err := gofuse.NewServer(raw, mountpoint, mo)
	if err != nil {
		return nil, fmt.Errorf("fuse: mount %s: %w", mountpoint, err)
	}
	s.srv = srv
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		s.Unmount()
		return nil, fmt.Errorf("fuse: mount %s: %w", mountpoint, err)
	}
	return s, nil
}

func entryTTL(o Options) time.Duration {
	if o.EntryTimeout == 0 && (o.AllowOther || os.Geteuid() != 0) {
		return 0
	}
	return ttl(o.EntryTimeout)
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
// aborted, so their calls fail with ENOTCONN, and a request blocked
// inside iovfs (a read of a device that waits) is abandoned: Unmount
// waits for it at most abandonWait, and the export's descriptors are
// closed once the last request has returned. It is safe to call more
// than once.
func (s *Server) Unmount() error {
	s.closeOnce.Do(func() {
		var st unix.Stat_t
		haveDev := unix.Stat(s.mnt, &st) == nil
		err := unix.Unmount(s.mnt, 0)
		if err != nil {
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
		done := make(chan struct{})
		go func() {
			s.srv.Wait()
			s.releaseAll()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(abandonWait):
		}
	})
	return s.closeErr
}

// abandonWait is how long Unmount waits for requests still running
// inside iovfs once the kernel connection is gone.
const abandonWait = 2 * time.Second

// Wait returns when the export has been unmounted, by Unmount or from
// outside (umount(8)).
func (s *Server) Wait() { s.srv.Wait() }

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

// releaseAll closes every descriptor the export still holds, after the
// server loop has ended.
func (s *Server) releaseAll() {
	s.hmu.Lock()
	hs := s.handles
	s.handles = map[uint64]*handle{}
	s.hmu.Unlock()
	for _, h := range hs {
		h.p.Close(h.fd)
	}
	s.locks.closeAll()
}
