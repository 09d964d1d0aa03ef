package tmpfs

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// node is what every tmpfs node implements.
type node interface {
	vfs.Node
	base() *inode
	// dtype is the node's getdents type, unix.DT_REG, DT_DIR or DT_LNK.
	dtype() uint8
	// free returns the node's memory to the file system once it has no
	// links and no open handles.
	free()
}

// inode holds what all node types share.
type inode struct {
	fs  *FS
	ino uint64
	gen uint32 // i_generation, for file handles (handles.go)
	// hashed says whether the inode is in fs.table (handles.go).
	hashed atomic.Uint32

	// mu serialises changes to nlink and to the attributes (Linux's
	// inode lock around notify_change and link counts).
	mu sync.Mutex

	// The attributes are atomics: Stat and the read path load them without
	// a lock, as Linux's generic_fillattr reads the inode; writers hold mu,
	// except the timestamps that reads, writes and directory changes set.
	mode  atomic.Uint32 // file type and permission bits
	uid   atomic.Uint32
	gid   atomic.Uint32
	nlink atomic.Int64 // files and symlinks; directories count subdirectories
	// Timestamps in Unix nanoseconds, so they fit an atomic: times outside
	// the years 1678-2262 are clamped.
	atime, mtime, ctime atomic.Int64
	// btime is the creation time in Unix nanoseconds (shmem's i_crtime),
	// set by init before the node is published.
	btime int64
	// atimeDue is the coarse clock reading from which a read must look
	// at atime again (see touchAtime).
	atimeDue atomic.Int64

	xa xattrs // extended attributes (xattr.go)

	// acl and dacl are the access and default ACLs (acl.go), nil when
	// there are none; fsflags the inode flags (FS_*_FL); caps says the
	// security.capability xattr is set. perm holds the vfs.Perm* bits
	// they make, which PermAttrs adds to the mode. Changed under mu
	// (caps under xa.mu), read without a lock.
	acl, dacl atomic.Pointer[vfs.ACL]
	fsflags   atomic.Uint32
	caps      atomic.Bool
	perm      atomic.Uint32

	// pins counts the O_PATH files open on a node other than a regular
	// file (openpath.go); free leaves a pinned node alone.
	pins atomic.Int32
}

func (n *inode) base() *inode { return n }

// init sets up a new inode created by c in dir, at now. A directory with
// the set-group-ID bit passes its group on, and the bit itself to
// subdirectories (Linux inode_init_owner).
func (n *inode) init(fs *FS, dir *Dir, mode uint32, c vfs.Cred, now instant) {
	n.fs = fs
	n.ino = fs.nextIno.Add(1)
	n.gen = newGeneration()
	gid := c.Gid
	if dir != nil && dir.mode.Load()&unix.S_ISGID != 0 {
		gid = dir.gid.Load()
		if mode&unix.S_IFMT == unix.S_IFDIR {
			mode |= unix.S_ISGID
		}
	}
	n.mode.Store(mode)
	n.uid.Store(c.Uid)
	n.gid.Store(gid)
	n.nlink.Store(1)
	n.mtime.Store(now.wall)
	n.ctime.Store(now.wall)
	n.btime = now.wall
	n.setAtime(now.wall, now)
	n.initACL(dir, c)
}

// evict gives the inode back when it goes (shmem_evict_inode): its
// xattr space, its place in the inode table and in nr_inodes.
func (n *inode) evict() {
	n.dropXattrs()
	n.fs.table.remove(n)
	n.fs.inodes.Add(-1)
}

// stat fills the fields of st that every node type reports the same way
// (the others are left as they are). It fills the caller's result in
// place: a Stat returned by value is copied at each return.
func (n *inode) stat(st *vfs.Stat) {
	st.Ino = n.ino
	st.Mode = n.mode.Load()
	st.Nlink = uint64(n.nlink.Load())
	st.Uid = n.uid.Load()
	st.Gid = n.gid.Load()
	st.Blksize = pageSize
	st.Atime = time.Unix(0, n.atime.Load())
	st.Mtime = time.Unix(0, n.mtime.Load())
	st.Ctime = time.Unix(0, n.ctime.Load())
	st.Btime = time.Unix(0, n.btime)
	n.statAttrs(st)
}

// touchAtime applies Linux's default relatime rule (relatime_need_update)
// for a read now: atime moves only if it is not newer than mtime or ctime,
// or is a day old. atimeDue caches the answer: it is the coarse clock
// reading until which atime stays, or MinInt64 after any change to the
// times, so the common case is two loads and inlines into the read path.
func (n *inode) touchAtime() {
	if coarseMono.Load() < n.atimeDue.Load() {
		return
	}
	n.updateAtime()
}

// touchAtimeMode updates atime for an access by mode: touchAtime for
// relatime; strictatime moves it to now unless it is now already
// (atime_needs_update) or the inode is FS_NOATIME_FL.
func (n *inode) touchAtimeMode(mode vfs.AtimeMode) {
	switch mode {
	case vfs.AtimeRelative:
		n.touchAtime()
	case vfs.AtimeStrict:
		now := clockNow()
		if n.fsflags.Load()&vfs.FS_NOATIME_FL == 0 && n.atime.Load() != now.wall {
			n.setAtime(now.wall, now)
		}
	}
}

// updateAtime is touchAtime's slow path: the full relatime check. A
// noatime inode (FS_NOATIME_FL) keeps its atime.
func (n *inode) updateAtime() {
	now := clockNow()
	if n.fsflags.Load()&vfs.FS_NOATIME_FL != 0 {
		n.atimeDue.Store(now.mono + day)
		return
	}
	if a := n.atime.Load(); a > n.mtime.Load() && a > n.ctime.Load() && now.wall-a < day {
		n.atimeDue.Store(now.mono + day - (now.wall - a))
		return
	}
	n.setAtime(now.wall, now)
}

const day = int64(24 * time.Hour)

// setAtime sets atime to t, in Unix nanoseconds, at now, and when a read
// must next look at it.
func (n *inode) setAtime(t int64, now instant) {
	n.atime.Store(t)
	switch {
	case t <= n.mtime.Load() || t <= n.ctime.Load() || t < now.wall-day:
		n.atimeDue.Store(math.MinInt64)
	case t > now.wall: // in the future: a day from now at the latest
		n.atimeDue.Store(now.mono + day)
	default:
		n.atimeDue.Store(now.mono + day - (now.wall - t))
	}
}

// changed sets ctime to now, and mtime too if data changed; the next read
// rechecks atime.
func (n *inode) changed(now int64, data bool) {
	if data {
		n.mtime.Store(now)
	}
	n.ctime.Store(now)
	n.atimeDue.Store(math.MinInt64)
}

// nanos converts t to Unix nanoseconds, clamped to what an int64 holds.
func nanos(t time.Time) int64 {
	if s := t.Unix(); s > math.MaxInt64/int64(time.Second)-1 {
		return math.MaxInt64
	} else if s < math.MinInt64/int64(time.Second)+1 {
		return math.MinInt64
	}
	return t.UnixNano()
}

// setattrLocked applies the attributes other than the size and ctime,
// with n.mu held.
func (n *inode) setattrLocked(a vfs.SetAttr, now instant) {
	if a.Valid&vfs.SetMode != 0 {
		n.mode.Store(n.mode.Load()&unix.S_IFMT | a.Mode&0o7777)
	}
	if a.Valid&vfs.SetUid != 0 {
		n.uid.Store(a.Uid)
	}
	if a.Valid&vfs.SetGid != 0 {
		n.gid.Store(a.Gid)
	}
	if a.Valid&vfs.SetAtime != 0 {
		n.setAtime(nanos(a.Atime), now)
	}
	if a.Valid&vfs.SetMtime != 0 {
		n.mtime.Store(nanos(a.Mtime))
	}
}

// setattrMeta is Setattr for nodes without data: a size gives err.
func (n *inode) setattrMeta(a vfs.SetAttr, sizeErr error) error {
	if a.Valid&vfs.SetSize != 0 {
		return sizeErr
	}
	if a.Valid == 0 {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	now := clockNow()
	n.setattrLocked(a, now)
	n.changed(now.wall, false)
	return nil
}
