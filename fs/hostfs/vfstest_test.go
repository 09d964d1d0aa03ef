package hostfs_test

import (
	"testing"

	"github.com/iovfs/iovfs/fs/hostfs"
	"github.com/iovfs/iovfs/vfs"
	"github.com/iovfs/iovfs/vfs/vfstest"
	"golang.org/x/sys/unix"
)

// TestVFS runs the VFS conformance suite on hostfs over a fresh host
// directory. hostfs acts as the host process, so new files are the host
// process's, not their creator's: it does not claim Owners.
func TestVFS(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.FileSystem {
		fs, err := hostfs.New(t.TempDir(), hostfs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}, vfstest.Caps{
		Files: true, Dirs: true, Rename: true,
		RenameFlags: unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE | unix.RENAME_WHITEOUT,
		Symlinks:    true, HardLinks: true, FIFOs: true, Xattrs: true,
		Perms: true, DirNlink: true,
	})
}
