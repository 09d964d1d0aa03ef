package vfs_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
)

// mountDataResult is what TestMountDataSuperFlags compares of a tmpfs
// mount: mount(2)'s errno, then a create's errno and the statfs flags
// the superblock words give.
type mountDataResult struct {
	mount, create syscall.Errno
	stFlags       int64
}

const mountDataStFlags = unix.ST_RDONLY | unix.ST_SYNCHRONOUS | unix.ST_MANDLOCK

// mountErrno is err's errno, however deeply wrapped; 0 for nil.
func mountErrno(err error) syscall.Errno {
	var e syscall.Errno
	if err == nil {
		return 0
	}
	if errors.As(err, &e) {
		return e
	}
	return syscall.Errno(0xffff)
}

// TestMountDataSuperFlags: the superblock-flag words of mount(2)'s data
// (ro, rw, sync, async, dirsync, lazytime, nolazytime, mand, nomand),
// alone, mixed with tmpfs's options and in either order, with and
// without MS_RDONLY, on the host kernel's tmpfs and on iovfs's: the
// mount's errno, a create's (EROFS on a read-only mount) and statfs's
// ST_RDONLY, ST_SYNCHRONOUS and ST_MANDLOCK must agree.
func TestMountDataSuperFlags(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipPrivileged(t, "mounting the host's tmpfs needs root")
	}
	datas := []string{
		"", "ro", "rw", "ro,rw", "rw,ro", "size=1m,ro", "ro,size=1m", "ro=1", "ro,bogus",
		"sync", "async", "sync,async", "dirsync", "lazytime", "nolazytime", "mand", "nomand",
	}
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Mkdir("/mnt/t", 0o755); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, flags := range []uintptr{0, unix.MS_RDONLY} {
		for _, data := range datas {
			var k, x mountDataResult
			dir := t.TempDir()
			k.mount = mountErrno(unix.Mount("tmpfs", dir, "tmpfs", flags, data))
			if k.mount == 0 {
				fd, err := unix.Open(filepath.Join(dir, "f"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
				k.create = mountErrno(err)
				if err == nil {
					unix.Close(fd)
				}
				var st unix.Statfs_t
				if err := unix.Statfs(dir, &st); err != nil {
					t.Fatal(err)
				}
				k.stFlags = st.Flags & mountDataStFlags
				if err := unix.Unmount(dir, 0); err != nil {
					t.Fatal(err)
				}
			}
			x.mount = mountErrno(p.Mount("tmpfs", "/mnt/t", "tmpfs", flags, data))
			if x.mount == 0 {
				fd, err := p.Open("/mnt/t/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
				x.create = mountErrno(err)
				if err == nil {
					p.Close(fd)
				}
				st, err := p.Statfs("/mnt/t")
				if err != nil {
					t.Fatal(err)
				}
				x.stFlags = st.Flags & mountDataStFlags
				if err := p.Unmount("/mnt/t", 0); err != nil {
					t.Fatal(err)
				}
			}
			n++
			if k != x {
				t.Errorf("flags %#x, data %q: kernel %s, iovfs %s", flags, data, fmtMountData(k), fmtMountData(x))
			}
		}
	}
	t.Logf("%d mounts compared", n)
}

func fmtMountData(r mountDataResult) string {
	return fmt.Sprintf("mount %v, create %v, statfs flags %#x", r.mount, r.create, r.stFlags)
}
