package ext4_test

// The metadata system calls on a read-write mount through the VFS:
// mknod, setxattr/removexattr, renameat2 with RENAME_WHITEOUT and statx's
// btime; the image then passes e2fsck -fn and a kernel mount shows the
// same device numbers, xattrs, whiteout and creation times.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

func TestVFSReadWriteMeta(t *testing.T) {
	needMke2fs(t)
	testenv.RequireRoot(t, "the kernel mount of the result")
	img := filepath.Join(t.TempDir(), "rw.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	p, dev, _ := newProc(t, img, viaRAM)
	if err := p.Mount(dev, "/mnt", "ext4", 0, ""); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	is := func(err error, want syscall.Errno, what string) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	devs := map[string]struct {
		mode uint32
		dev  uint64
	}{
		"fifo": {unix.S_IFIFO | 0o640, 0},
		"sock": {unix.S_IFSOCK | 0o600, 0},
		"chr":  {unix.S_IFCHR | 0o600, unix.Mkdev(250, 7)},     // old encoding
		"blk":  {unix.S_IFBLK | 0o640, unix.Mkdev(260, 70000)}, // new encoding
		"chr2": {unix.S_IFCHR | 0o644, unix.Mkdev(243, 255)},
	}
	for name, d := range devs {
		must(p.Mknod("/mnt/"+name, d.mode, d.dev))
	}
	is(p.Mknod("/mnt/fifo", unix.S_IFIFO|0o600, 0), unix.EEXIST, "mknod over a name")
	// Mknodat relative to a directory descriptor, and the FIFO opens as a pipe.
	dfd, err := p.Open("/mnt", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(err)
	must(p.Mknodat(dfd, "fifo2", unix.S_IFIFO|0o600, 0))
	must(p.Close(dfd))
	ffd, err := p.Open("/mnt/fifo2", unix.O_RDWR|unix.O_NONBLOCK, 0)
	must(err)
	if n, err := p.Write(ffd, []byte("through")); n != 7 || err != nil {
		t.Errorf("write to the FIFO: %d, %v", n, err)
	}
	pb := make([]byte, 16)
	if n, err := p.Read(ffd, pb); n != 7 || string(pb[:n]) != "through" {
		t.Errorf("read from the FIFO: %d, %v, %q", n, err, pb[:max(n, 0)])
	}
	must(p.Close(ffd))
	must(p.Unlink("/mnt/fifo2"))
	fd, err := p.Open("/mnt/f", unix.O_CREAT|unix.O_RDWR, 0o644)
	must(err)
	must(p.Close(fd))
	big := bytes.Repeat([]byte("B"), 3000)
	must(p.Setxattr("/mnt/f", "user.small", []byte("v1"), 0))
	must(p.Setxattr("/mnt/f", "user.big", big, 0)) // does not fit in the inode: the block
	must(p.Setxattr("/mnt/f", "trusted.t", nil, unix.XATTR_CREATE))
	is(p.Setxattr("/mnt/f", "user.small", []byte("x"), unix.XATTR_CREATE), unix.EEXIST, "XATTR_CREATE on a present name")
	is(p.Setxattr("/mnt/f", "user.none", []byte("x"), unix.XATTR_REPLACE), unix.ENODATA, "XATTR_REPLACE on a missing name")
	is(p.Removexattr("/mnt/f", "user.none"), unix.ENODATA, "removexattr of a missing name")
	is(p.Setxattr("/mnt/f", "user.huge", bytes.Repeat([]byte("h"), 4041), 0), unix.ENOSPC, "a value past a block")
	is(p.Setxattr("/mnt/f", "system.other", []byte("x"), 0), unix.EOPNOTSUPP, "an unknown system. name")
	is(p.Setxattr("/mnt/fifo", "user.x", []byte("x"), 0), unix.EPERM, "user. on a FIFO")
	must(p.Setxattr("/mnt/fifo", "trusted.x", []byte("fifo"), 0))
	must(p.Setxattr("/mnt/f", "user.small", []byte("v2"), unix.XATTR_REPLACE))
	if v, err := p.Getxattr("/mnt/f", "user.big"); err != nil || !bytes.Equal(v, big) {
		t.Errorf("getxattr user.big: %d bytes, %v", len(v), err)
	}
	must(p.Mkdir("/mnt/d", 0o755))
	must(p.Setxattr("/mnt/d", "user.dir", []byte("on a directory"), 0))

	// renameat2(RENAME_WHITEOUT): f moves to g, f becomes a whiteout.
	sx, err := p.Statx(unix.AT_FDCWD, "/mnt/f", 0, unix.STATX_BTIME)
	must(err)
	if sx.Mask&unix.STATX_BTIME == 0 || sx.Btime.Sec == 0 {
		t.Errorf("statx btime of a new file: mask %#x btime %d.%09d", sx.Mask, sx.Btime.Sec, sx.Btime.Nsec)
	}
	must(p.Renameat2(unix.AT_FDCWD, "/mnt/f", unix.AT_FDCWD, "/mnt/g", unix.RENAME_WHITEOUT))
	st, err := p.Lstat("/mnt/f")
	must(err)
	if st.Mode != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("whiteout: mode %o rdev %d, want a character device 0:0 with mode 0", st.Mode, st.Rdev)
	}
	is(p.Renameat2(unix.AT_FDCWD, "/mnt/g", unix.AT_FDCWD, "/mnt/fifo", unix.RENAME_WHITEOUT|unix.RENAME_NOREPLACE), unix.EEXIST, "whiteout with NOREPLACE over a name")
	for name, d := range devs {
		st, err := p.Lstat("/mnt/" + name)
		must(err)
		if st.Mode != d.mode || st.Rdev != d.dev {
			t.Errorf("%s: mode %o rdev %#x, want %o %#x", name, st.Mode, st.Rdev, d.mode, d.dev)
		}
	}
	must(p.Unmount("/mnt", 0))

	out := filepath.Join(t.TempDir(), "out.img")
	rfd, err := p.Open(dev, unix.O_RDONLY, 0)
	must(err)
	fi, _ := os.Stat(img)
	data := make([]byte, fi.Size())
	if n, err := p.Pread(rfd, data, 0); n != len(data) {
		t.Fatalf("read back: %d, %v", n, err)
	}
	p.Close(rfd)
	must(os.WriteFile(out, data, 0o600))
	if o, err := exec.Command("e2fsck", "-fn", out).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck -fn: %v\n%s", err, o)
	}
	mnt := t.TempDir()
	if o, err := testenv.Mount("-o", "loop,ro,noload,nodev", out, mnt); err != nil {
		t.Fatalf("mount: %v\n%s", err, o)
	}
	defer exec.Command("umount", mnt).Run()
	for name, d := range devs {
		var ks unix.Stat_t
		must(unix.Lstat(filepath.Join(mnt, name), &ks))
		if ks.Mode != d.mode || ks.Rdev != d.dev {
			t.Errorf("kernel: %s: mode %o rdev %#x, want %o %#x", name, ks.Mode, ks.Rdev, d.mode, d.dev)
		}
	}
	var ws unix.Stat_t
	must(unix.Lstat(filepath.Join(mnt, "f"), &ws))
	if ws.Mode != unix.S_IFCHR || ws.Rdev != 0 {
		t.Errorf("kernel: whiteout f: mode %o rdev %d", ws.Mode, ws.Rdev)
	}
	var kx unix.Statx_t
	must(unix.Statx(unix.AT_FDCWD, filepath.Join(mnt, "g"), unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &kx))
	if kx.Btime != sx.Btime {
		t.Errorf("kernel btime of g %d.%09d, iovfs said %d.%09d", kx.Btime.Sec, kx.Btime.Nsec, sx.Btime.Sec, sx.Btime.Nsec)
	}
	for _, x := range []struct{ path, name, want string }{
		{"g", "user.small", "v2"}, {"g", "user.big", string(big)}, {"g", "trusted.t", ""},
		{"fifo", "trusted.x", "fifo"}, {"d", "user.dir", "on a directory"},
	} {
		buf := make([]byte, 8192)
		n, err := unix.Lgetxattr(filepath.Join(mnt, x.path), x.name, buf)
		if err != nil || string(buf[:n]) != x.want {
			t.Errorf("kernel: %s %s: %q, %v", x.path, x.name, buf[:max(n, 0)], err)
		}
	}
	var gs unix.Stat_t
	must(unix.Lstat(filepath.Join(mnt, "g"), &gs))
	if gs.Blocks != 8 {
		t.Errorf("kernel: g has %d sectors, want 8 (its xattr block)", gs.Blocks)
	}
}
