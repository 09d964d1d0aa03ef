package ext4_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountDataReadOnly: "ro" in mount(2)'s data makes the file system
// read-only as MS_RDONLY does (Linux's VFS takes it as SB_RDONLY before
// ext4 sees the data), and "rw" there undoes MS_RDONLY for the file
// system but not for the mount. On a kernel loop mount and an iovfs mount
// of the same image: a create's errno, statfs's ST_RDONLY, and whether
// the mount and unmount wrote the image at all (a read-write ext4 mount
// writes its superblock bookkeeping) must agree.
func TestMountDataReadOnly(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	img := mkImage(t, 8<<10, func(tb testing.TB, dir string) {
		os.WriteFile(filepath.Join(dir, "f"), []byte("f"), 0o644)
	}, "-t", "ext4")
	orig, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		create syscall.Errno
		ro     bool
		wrote  bool
	}
	for _, c := range []struct {
		flags uintptr
		data  string
	}{
		{0, ""}, {0, "ro"}, {unix.MS_RDONLY, ""}, {unix.MS_RDONLY, "rw"}, {0, "ro,rw"}, {0, "rw,ro"},
		{0, "errors=continue,ro"}, {unix.MS_RDONLY, "ro"},
	} {
		var k, x result
		kimg := filepath.Join(t.TempDir(), "k.img")
		if err := os.WriteFile(kimg, orig, 0o600); err != nil {
			t.Fatal(err)
		}
		kdir, kum, err := hostLoopMount(t, kimg, false, c.flags, c.data)
		if err != nil {
			t.Fatalf("kernel mount %#x %q: %v", c.flags, c.data, err)
		}
		fd, err := unix.Open(filepath.Join(kdir, "n"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		k.create = errnoOf(err)
		if err == nil {
			unix.Close(fd)
		}
		var st unix.Statfs_t
		if err := unix.Statfs(kdir, &st); err != nil {
			t.Fatal(err)
		}
		k.ro = st.Flags&unix.ST_RDONLY != 0
		kum()
		after, err := os.ReadFile(kimg)
		if err != nil {
			t.Fatal(err)
		}
		k.wrote = !bytes.Equal(after, orig)

		p, dev, done := newProc(t, img, viaRAM)
		err = p.Mount(dev, "/mnt", "ext4", c.flags, c.data)
		done()
		if err != nil {
			t.Fatalf("iovfs mount %#x %q: %v", c.flags, c.data, err)
		}
		fd, err = p.Open("/mnt/n", unix.O_CREAT|unix.O_WRONLY, 0o644)
		x.create = errnoOf(err)
		if err == nil {
			p.Close(fd)
		}
		xst, err := p.Statfs("/mnt")
		if err != nil {
			t.Fatal(err)
		}
		x.ro = xst.Flags&unix.ST_RDONLY != 0
		if err := p.Unmount("/mnt", 0); err != nil {
			t.Fatal(err)
		}
		x.wrote = !bytes.Equal(ramBytes(t, p, len(orig)), orig)
		if k != x {
			t.Errorf("flags %#x, data %q: kernel %+v, iovfs %+v", c.flags, c.data, k, x)
		}
	}
}
