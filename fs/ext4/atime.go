package ext4

// Access times on a read-write mount, as Linux's file_accessed and
// touch_atime update them: a read (even one at end of file, not one of 0
// bytes), a listing of a directory, a readlink and a walk through a
// symlink move atime by the mount's policy (vfs.AtimePolicy: relatime
// by default, strictatime, noatime, nodiratime, none on a read-only
// mount), unless the open file has O_NOATIME or the inode the noatime
// flag; the new atime goes through the journal (disk.Writer.TouchAtime).
// A read-only mount never changes one.
//
// The check runs on the inode the access read, without a lock: the
// common cases (noatime, relatime with atime already past mtime and
// ctime and less than a day old) cost a few compares and an atomic load
// (clockSec). Only an access that is to move atime takes the clock and
// the Writer's lock, where disk.AtimeDue decides again.
//
// The clock is current_time's: a coarse clock, the wall clock cut to a
// jiffy (4 ms, CONFIG_HZ=250), and to the inode's granularity
// (disk.Inode.Stamp: a second in an inode without the _extra words), so
// strictatime writes a file's atime at most once a jiffy, as Linux does.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// jiffy is the coarse clock's step.
const jiffy = 4 * time.Millisecond

var (
	// clockSec is the wall clock's Unix seconds, advanced once a second
	// by a goroutine the first read-write mount starts: relatime's day
	// rule without a clock read. It lags by at most a second, so the
	// fast path sends an atime that is nearly a day old to the slow one.
	clockSec  atomic.Int64
	clockOnce sync.Once
)

func startClock() {
	clockOnce.Do(func() {
		clockSec.Store(time.Now().Unix())
		go func() {
			for t := range time.Tick(time.Second) {
				clockSec.Store(t.Unix())
			}
		}()
	})
}

// coarseNow is current_time before the inode's granularity.
func coarseNow() time.Time { return time.Now().Truncate(jiffy) }

// touchAtime is touch_atime for an access by mode to the inode of r,
// read as in: nothing on a read-only mount, for AtimeNever, for an inode
// with the noatime flag, or, under relatime, while atime is after mtime
// and ctime and less than a day old; otherwise the slow path.
func (fs *FS) touchAtime(r *disk.Ref, in *disk.Inode, mode vfs.AtimeMode) {
	if fs.w == nil || mode == vfs.AtimeNever || in.Flags&disk.FlagNoatime != 0 {
		return
	}
	if mode == vfs.AtimeRelative && after(in.Atime, in.Mtime) && after(in.Atime, in.Ctime) && clockSec.Load()-in.Atime.Sec < 24*60*60-2 {
		return
	}
	fs.updateAtime(r, in, mode == vfs.AtimeRelative)
}

func after(a, b disk.Timespec) bool { return a.Sec > b.Sec || a.Sec == b.Sec && a.Nsec > b.Nsec }

// updateAtime is touchAtime's slow path: atime_needs_update with the
// clock, then the Writer's update, with the inode held so its number
// cannot name another inode meanwhile. Errors are dropped, as
// touch_atime drops update_time's.
func (fs *FS) updateAtime(r *disk.Ref, in *disk.Inode, relatime bool) {
	now := coarseNow()
	if !disk.AtimeDue(in.Atime, in.Mtime, in.Ctime, in.Stamp(now), relatime) {
		return
	}
	w, ino := fs.w, r.Ino()
	if !w.HoldIf(ino, func() bool { return !r.Dead() }) {
		return
	}
	w.TouchAtime(ino, now, relatime)
	w.Unhold(ino)
}

// accessRef is touchAtime for an access to r's inode as it is now.
func (fs *FS) accessRef(r *disk.Ref, mode vfs.AtimeMode) {
	if fs.w == nil || mode == vfs.AtimeNever {
		return
	}
	if in, err := fs.vol.Current(r); err == nil {
		fs.touchAtime(r, in, mode)
	}
}

// atimeState is what an open file or directory keeps for file_accessed:
// its mount's policy and its own O_NOATIME. It implements
// vfs.AtimeHandle and vfs.NoatimeHandle.
type atimeState struct {
	policy  *vfs.AtimePolicy // set at open, before any access; nil is relatime
	noatime atomic.Bool
}

// SetAtimePolicy implements vfs.AtimeHandle.
func (a *atimeState) SetAtimePolicy(p *vfs.AtimePolicy) { a.policy = p }

// SetNoatime implements vfs.NoatimeHandle.
func (a *atimeState) SetNoatime(on bool) { a.noatime.Store(on) }

// atimeMode is the access's mode for a directory (dir) or another file.
func (a *atimeState) atimeMode(dir bool) vfs.AtimeMode {
	if a.noatime.Load() {
		return vfs.AtimeNever
	}
	return a.policy.Mode(dir)
}

// accessed is file_accessed for a read of in through h.
func (h *handle) accessed(in *disk.Inode) {
	if h.fs.w != nil {
		h.fs.touchAtime(h.ref, in, h.atimeMode(false))
	}
}

// ReadlinkAtime implements vfs.AtimeReadlinker: touch_atime, then the
// target, as do_readlinkat and pick_link.
func (l *linkNode) ReadlinkAtime(mode vfs.AtimeMode) (string, error) {
	l.fs.accessRef(l.ref, mode)
	return l.Readlink()
}
