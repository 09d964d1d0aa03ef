package tmpfs_test

import (
	"testing"

	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/vfs"
	"github.com/iovfs/iovfs/vfs/vfstest"
	"golang.org/x/sys/unix"
)

// TestVFS runs the VFS conformance suite on tmpfs.
func TestVFS(t *testing.T) {
	vfstest.Run(t, func(*testing.T) vfs.FileSystem { return tmpfs.New(tmpfs.Options{}) }, vfstest.Caps{
		Files: true, Dirs: true, Rename: true,
		RenameFlags: unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE | unix.RENAME_WHITEOUT,
		Symlinks:    true, HardLinks: true, FIFOs: true, Xattrs: true,
		Perms: true, Owners: true, SetgidDirs: true, DirNlink: true,
	})
}
