package ram_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/dev/ram"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestControlAdd makes disks through /dev/ram-control as a process does:
// the node appears in /dev with the size and sector size asked for
// (rounded up to whole pages), the lowest free minor is taken when none
// is given, a node made with mknod elsewhere opens the same disk, and bad
// requests get the errnos the ioctl documents.
func TestControlAdd(t *testing.T) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := p.Open("/dev/ram-control", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, err := p.Ioctl(ctl, ram.CtlAdd, &ram.Config{Minor: -1, Sectors: 9, SectorSize: 4096})
	if err != nil || n != 1 {
		t.Fatalf("add: %d, %v; want minor 1 (ram0 exists)", n, err)
	}
	st, err := p.Stat("/dev/ram1")
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK || st.Rdev != vfs.Mkdev(ram.Major, 1) {
		t.Fatalf("/dev/ram1: %+v, %v", st, err)
	}
	fd, err := p.Open("/dev/ram1", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if size, _ := p.Seek(fd, 0, unix.SEEK_END); size != 9*4096 {
		t.Errorf("size %d, want %d", size, 9*4096)
	}
	if _, err := p.Pwrite(fd, []byte("through ram1"), 4096); err != nil {
		t.Fatal(err)
	}
	if err := p.Mknod("/tmp/r1", unix.S_IFBLK|0o600, vfs.Mkdev(ram.Major, 1)); err != nil {
		t.Fatal(err)
	}
	fd2, err := p.Open("/tmp/r1", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open the mknod'd node: %v", err)
	}
	b := make([]byte, 12)
	if _, err := p.Pread(fd2, b, 4096); err != nil || string(b) != "through ram1" {
		t.Errorf("read through the mknod'd node: %q, %v", b, err)
	}
	if n, err := p.Ioctl(ctl, ram.CtlAdd, &ram.Config{Minor: 7, Sectors: 1}); err != nil || n != 7 {
		t.Errorf("add minor 7: %d, %v", n, err)
	}
	if st, _ := p.Stat("/dev/ram7"); st.Size != 0 && st.Size != ram.Align {
		t.Errorf("ram7 size %d", st.Size)
	}
	for _, c := range []struct {
		cfg  any
		want error
	}{
		{&ram.Config{Minor: 1, Sectors: 8}, syscall.EEXIST},
		{&ram.Config{Minor: -1, Sectors: 0}, syscall.EINVAL},
		{&ram.Config{Minor: -1, Sectors: 8, SectorSize: 1000}, syscall.EINVAL},
		{&ram.Config{Minor: -2, Sectors: 8}, syscall.EINVAL},
		{&ram.Config{Minor: -1, Sectors: 1 << 62, SectorSize: 4096}, syscall.EFBIG},
		{&ram.Config{Minor: -1, Sectors: 1 << 50}, syscall.ENOMEM},
		{nil, syscall.EINVAL},
		{8, syscall.EINVAL},
	} {
		if _, err := p.Ioctl(ctl, ram.CtlAdd, c.cfg); !errors.Is(err, c.want) {
			t.Errorf("add %+v: %v, want %v", c.cfg, err, c.want)
		}
	}
	if _, err := p.Ioctl(ctl, unix.LOOP_CTL_ADD, 3); !errors.Is(err, syscall.ENOSYS) {
		t.Errorf("another request: %v, want ENOSYS", err)
	}
	if err := p.Setresuid(1000, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ioctl(ctl, ram.CtlAdd, &ram.Config{Minor: -1, Sectors: 8}); !errors.Is(err, syscall.EPERM) {
		t.Errorf("unprivileged add: %v, want EPERM", err)
	}
}
