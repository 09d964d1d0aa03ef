package ext4

// statfs(2) for a mounted ext4 (disk's Volume.Statfs and Writer.Statfs).

import (
	"sync"

	"golang.org/x/sys/unix"
)

// statfsCache holds the figures: the mount is read-only, so they are
// computed once.
type statfsCache struct {
	once sync.Once
	st   unix.Statfs_t
	err  error
}

// Statfs implements vfs.Statfser: the volume's figures as Linux's
// ext4_statfs reports them; on a read-only mount (disk.Volume.Statfs)
// computed once, on a read-write one from the Writer's live counts
// (disk.Writer.Statfs).
func (fs *FS) Statfs() (unix.Statfs_t, error) {
	if fs.w != nil {
		return fs.w.Statfs(), nil
	}
	sc := &fs.statfs
	sc.once.Do(func() { sc.st, sc.err = fs.vol.Statfs() })
	return sc.st, sc.err
}
