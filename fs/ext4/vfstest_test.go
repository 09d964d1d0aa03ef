package ext4_test

import (
	"os"
	"sync"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/fs/ext4"
	"github.com/iovfs/iovfs/vfs"
	"github.com/iovfs/iovfs/vfs/vfstest"
	"golang.org/x/sys/unix"
)

// TestVFS runs the VFS conformance suite on read-write ext4 mounts: each
// case gets a fresh copy of one empty 16 MiB ext4 volume (mke2fs's
// defaults) on a RAM disk.
func TestVFS(t *testing.T) {
	var once sync.Once
	var image []byte
	vfstest.Run(t, func(t *testing.T) vfs.FileSystem {
		once.Do(func() {
			img := mkImage(t, 16<<10, func(testing.TB, string) {}, "-t", "ext4")
			b, err := os.ReadFile(img)
			if err != nil {
				t.Fatal(err)
			}
			image = b
		})
		if image == nil {
			t.Fatal("no image")
		}
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
		fs, err := ext4.NewMountFunc(t.Logf)(vfs.MountRequest{Proc: p, Source: "/dev/ram0", Target: "/"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := fs.(vfs.Shutdowner).Shutdown(); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
		return fs
	}, vfstest.Caps{
		Files: true, Dirs: true, Rename: true,
		RenameFlags: unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE | unix.RENAME_WHITEOUT,
		Symlinks:    true, HardLinks: true, FIFOs: true, Xattrs: true,
		Perms: true, Owners: true, DirNlink: true,
	})
}
