package overlay_test

import (
	"testing"

	"github.com/iovfs/iovfs/fs/overlay"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/vfs"
	"github.com/iovfs/iovfs/vfs/vfstest"
	"golang.org/x/sys/unix"
)

// TestVFS runs the VFS conformance suite on an overlay whose lower, upper
// and work directories are on one tmpfs, made fresh for every case. The
// root is a merged directory, whose link count is 1 as on Linux, so
// DirNlink is not claimed; with its layers on one file system every
// listed d_ino is the st_ino (on several, a directory's is not, as on
// Linux with xino=off).
func TestVFS(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.FileSystem {
		ns := vfs.NewNamespace(tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}))
		p := vfs.NewProc(ns)
		for _, d := range []string{"/lower", "/upper", "/work"} {
			if err := p.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		fs, err := overlay.New(p, overlay.Options{Lower: []string{"/lower"}, Upper: "/upper", Work: "/work"})
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}, vfstest.Caps{
		Files: true, Dirs: true, Rename: true,
		RenameFlags: unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE,
		Symlinks:    true, HardLinks: true, FIFOs: true, Xattrs: true,
		Perms: true, Owners: true, SetgidDirs: true,
	})
}
