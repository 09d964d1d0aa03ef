package vfat_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/fs/vfat"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"github.com/iovfs/iovfs/vfs/vfstest"
	"golang.org/x/sys/unix"
)

// TestVFS runs the VFS conformance suite on vfat: each case gets a fresh
// copy of one empty 16 MiB FAT16 volume made by mkfs.fat, on a RAM disk.
// vfat has no symlinks, hard links, special files, extended attributes or
// per-file owners; its renameat2 flags are RENAME_NOREPLACE and
// RENAME_EXCHANGE.
func TestVFS(t *testing.T) {
	testenv.RequireTool(t, "mkfs.fat")
	var once sync.Once
	var image []byte
	vfstest.Run(t, func(t *testing.T) vfs.FileSystem {
		once.Do(func() {
			img := filepath.Join(t.TempDir(), "fat.img")
			mkfsImage(t, img, 16<<20, "-F", "16")
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
		fs, err := vfat.NewMountFunc(t.Logf)(vfs.MountRequest{Proc: p, Source: "/dev/ram0", Target: "/"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := fs.(vfs.Shutdowner).Shutdown(); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
		return fs
	}, vfstest.Caps{Files: true, Dirs: true, Rename: true, RenameFlags: unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE, DirNlink: true})
}
