package vfs

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// AtimeMode is how an access updates a file's access time.
type AtimeMode uint32

const (
	// AtimeRelative is Linux's relatime (relatime_need_update): atime
	// moves only if it is not newer than mtime or ctime, or is a day
	// old. It is the default.
	AtimeRelative AtimeMode = iota
	// AtimeStrict moves atime at every access (strictatime).
	AtimeStrict
	// AtimeNever leaves atime alone (noatime, nodiratime for a
	// directory, a read-only mount, an O_NOATIME open).
	AtimeNever
)

// AtimePolicy is a mount's access-time rule, as its mount flags give it:
// MS_NOATIME, MS_NODIRATIME, MS_STRICTATIME, relatime otherwise; a
// read-only mount updates no atime (touch_atime's mnt_get_write_access).
// It changes on a remount (Mount with MS_REMOUNT|MS_BIND); file systems
// that update atime themselves read it at each access. A nil
// *AtimePolicy is relatime.
type AtimePolicy struct {
	bits atomic.Uint32
}

const (
	atimeNo     = 1 << iota // MNT_NOATIME
	atimeNoDir              // MNT_NODIRATIME
	atimeStrict             // no MNT_RELATIME
	atimeRO                 // a read-only mount
)

// Mode returns the mode for an access to a directory (dir) or another
// file.
func (p *AtimePolicy) Mode(dir bool) AtimeMode {
	if p == nil {
		return AtimeRelative
	}
	b := p.bits.Load()
	switch {
	case b&(atimeNo|atimeRO) != 0, dir && b&atimeNoDir != 0:
		return AtimeNever
	case b&atimeStrict != 0:
		return AtimeStrict
	}
	return AtimeRelative
}

// atimeBits turns mount(2) flags into a policy's bits, as path_mount
// turns them into mnt_flags: relatime unless MS_NOATIME or
// MS_STRICTATIME (which clears MS_NOATIME too).
func atimeBits(flags uintptr) uint32 {
	var b uint32
	if flags&unix.MS_NOATIME != 0 {
		b |= atimeNo
	}
	if flags&unix.MS_NODIRATIME != 0 {
		b |= atimeNoDir
	}
	if flags&unix.MS_STRICTATIME != 0 {
		b = b&^atimeNo | atimeStrict
	}
	return b
}

// AtimeHandle is a handle that updates its file's access time itself.
// At open the VFS gives it the policy of the mount the file was opened
// on, which it reads at each access (a remount may change it meanwhile).
// The handle's own O_NOATIME (NoatimeHandle) comes first.
type AtimeHandle interface {
	SetAtimePolicy(p *AtimePolicy)
}

// AtimeDirReader is a DirReader that updates the directory's access time
// itself: getdents calls ReadDirAtime with the mode the mount's policy and
// the open directory's O_NOATIME give, instead of ReadDir.
type AtimeDirReader interface {
	ReadDirAtime(off int64, mode AtimeMode, fn func(Dirent) bool) error
}

// AtimeReadlinker is a Readlinker that updates the symlink's access time
// itself: readlink(2) and a walk through the symlink call ReadlinkAtime
// with the mode of the mount it was found on (touch_atime in
// do_readlinkat and pick_link), instead of Readlink.
type AtimeReadlinker interface {
	ReadlinkAtime(mode AtimeMode) (string, error)
}

// readlinkAccess reads the symlink rl found at loc, by loc's mount's
// policy if rl keeps atime.
func readlinkAccess(rl Readlinker, loc location) (string, error) {
	if ar, ok := rl.(AtimeReadlinker); ok && loc.mnt != nil {
		return ar.ReadlinkAtime(loc.mnt.atime.Mode(false))
	}
	return rl.Readlink()
}

// tellAtime gives h the policy of the mount m.
func tellAtime(h Handle, m *mount) {
	if a, ok := h.(AtimeHandle); ok {
		a.SetAtimePolicy(&m.atime)
	}
}

// setAtime sets the policy of a new mount from its mount(2) flags.
func (m *mount) setAtime(flags uintptr) {
	b := atimeBits(flags)
	if m.readonly {
		b |= atimeRO
	}
	m.atime.bits.Store(b)
}

// remountAtime is do_reconfigure_mnt for the atime flags: those given
// replace the mount's; with none given it keeps them ("the default atime
// for remount is preservation").
func (m *mount) remountAtime(flags uintptr) {
	if flags&(unix.MS_NOATIME|unix.MS_NODIRATIME|unix.MS_RELATIME|unix.MS_STRICTATIME) == 0 {
		return
	}
	b := atimeBits(flags)
	if m.readonly {
		b |= atimeRO
	}
	m.atime.bits.Store(b)
}
