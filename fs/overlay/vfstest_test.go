package overlay_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/fs/overlay"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/internal/testenv"
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

// TestVFSExt4 runs the suite on an overlay whose layers are directories
// of a read-write ext4 volume (a fresh copy of one empty 16 MiB image on a
// RAM disk for every case): whiteouts, opaque directories and copy-ups
// as ext4 stores them.
func TestVFSExt4(t *testing.T) {
	testenv.RequireTool(t, "mke2fs")
	img := filepath.Join(t.TempDir(), "e.img")
	if b, err := exec.Command("mke2fs", "-q", "-t", "ext4", img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, b)
	}
	image, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	vfstest.Run(t, func(t *testing.T) vfs.FileSystem {
		p, err := iovfs.New(iovfs.WithRAMDisks(1, int64(len(image))))
		if err != nil {
			t.Fatal(err)
		}
		fd, err := p.Open("/dev/ram0", unix.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := p.Pwrite(fd, image, 0); n != len(image) {
			t.Fatalf("fill /dev/ram0: %d, %v", n, err)
		}
		p.Close(fd)
		if err := p.Mkdir("/mnt/e", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := p.Mount("/dev/ram0", "/mnt/e", "ext4", 0, ""); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"/mnt/e/lower", "/mnt/e/upper", "/mnt/e/work"} {
			if err := p.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		fs, err := overlay.New(p, overlay.Options{Lower: []string{"/mnt/e/lower"}, Upper: "/mnt/e/upper", Work: "/mnt/e/work"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			fs.Shutdown()
			if err := p.Unmount("/mnt/e", 0); err != nil {
				t.Errorf("unmount the ext4 volume: %v", err)
			}
		})
		return fs
	}, vfstest.Caps{
		Files: true, Dirs: true, Rename: true,
		RenameFlags: unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE,
		Symlinks:    true, HardLinks: true, FIFOs: true, Xattrs: true,
		Perms: true, Owners: true, SetgidDirs: true,
	})
}
