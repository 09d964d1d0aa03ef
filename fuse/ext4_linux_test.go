package fuse

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// ext4Proc returns a process with the image img mounted read-only at
// /mnt through an in-process loop device, with the ext4 options data.
func ext4Proc(t *testing.T, img, data string) *vfs.Proc {
	t.Helper()
	p := newProc(t)
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := p.ImportFile(f)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(fd)
	lfd, err := p.Open("/dev/loop0", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(lfd)
	cfg := unix.LoopConfig{Fd: uint32(fd)}
	cfg.Info.Flags = unix.LO_FLAGS_READ_ONLY | unix.LO_FLAGS_AUTOCLEAR
	if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("/dev/loop0", "/mnt", "ext4", unix.MS_RDONLY, data); err != nil {
		t.Fatal(err)
	}
	return p
}

// ext4RW returns a process with an empty ext4 image mounted read-write
// at /mnt from a RAM disk, and a kernel loop mount of a copy of the same
// image, read-write, unmounted at the end of the test.
func ext4RW(t *testing.T) (*vfs.Proc, string) {
	t.Helper()
	requireFUSE(t)
	testenv.RequireRoot(t, "a kernel loop mount")
	testenv.RequireTool(t, "mke2fs")
	img := filepath.Join(t.TempDir(), "ext4.img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	kmnt := t.TempDir()
	if out, err := testenv.Mount("-o", "loop", img, kmnt); err != nil {
		t.Fatalf("mount -o loop: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", kmnt).Run() })
	p, err := iovfs.New(iovfs.WithRAMDisks(1, int64(len(b))))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := p.Open("/dev/ram0", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Pwrite(fd, b, 0); n != len(b) {
		t.Fatalf("fill /dev/ram0: %d, %v", n, err)
	}
	p.Close(fd)
	if err := p.Mount("/dev/ram0", "/mnt", "ext4", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Unmount("/mnt", 0); err != nil {
			t.Errorf("unmount /mnt: %v", err)
		}
	})
	return p, kmnt
}

// TestExt4Export walks an ext4 image exported plain and with dax and
// compares every name, type, mode, size, content, link target, hard link
// and mtime with a kernel loop mount of the same image.
func TestExt4Export(t *testing.T) {
	requireFUSE(t)
	testenv.RequireTool(t, "mke2fs")
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	makeTree(t, src)
	img := filepath.Join(t.TempDir(), "ext4.img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-d", src, img, "64M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	kmnt := t.TempDir()
	if out, err := testenv.Mount("-o", "loop,ro", img, kmnt); err != nil {
		t.Fatalf("mount -o loop: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(kmnt, 0); err != nil {
			t.Errorf("umount %s: %v", kmnt, err)
		}
	})
	want := treeSummary(t, kmnt, true)
	for _, data := range []string{"", "dax"} {
		t.Run("opts="+data, func(t *testing.T) {
			p := ext4Proc(t, img, data)
			mnt, _ := export(t, p, "/mnt", Options{ReadOnly: true})
			if got := treeSummary(t, mnt, true); got != want {
				t.Errorf("export:\n got %s\nwant %s", got, want)
			}
			if err := os.WriteFile(filepath.Join(mnt, "new"), nil, 0o644); !errorIs(err, unix.EROFS) {
				t.Errorf("create on a read-only export: %v, want EROFS", err)
			}
		})
	}
}
