package iovfs_test

import (
	"fmt"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestStatxKernel compares statx on a host tmpfs and an iovfs tmpfs, for
// a regular file, a directory, a symlink, character and block device
// nodes, a FIFO and the mount's root, with request masks from none to
// all: every field of Statx_t, with these exceptions, which are
// documented on Proc.Statx. Timestamps and mount IDs are compared by
// whether they are set (their values differ between two systems), the
// unique mount ID also by being at least 1<<31; the device number of the
// file system is not compared.
func TestStatxKernel(t *testing.T) {
	testenv.RequireRoot(t, "mounting a host tmpfs and making device nodes")
	hroot := t.TempDir()
	if err := unix.Mount("tmpfs", hroot, "tmpfs", 0, "size=1m,mode=755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(hroot, unix.MNT_DETACH) })
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	vroot := "/mnt/stx"
	if err := p.Mkdir(vroot, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("tmpfs", vroot, "tmpfs", 0, "size=1m,mode=755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Unmount(vroot, unix.MNT_DETACH) })
	type mk struct {
		host func(string) error
		ours func(string) error
	}
	data := make([]byte, 5000)
	makes := map[string]mk{
		"/file": {func(h string) error { return writeHost(h, data) }, func(v string) error { return writeVFS(p, v, data) }},
		"/dir":  {func(h string) error { return unix.Mkdir(h, 0o750) }, func(v string) error { return p.Mkdir(v, 0o750) }},
		"/link": {func(h string) error { return unix.Symlink("file", h) }, func(v string) error { return p.Symlink("file", v) }},
		"/chr": {func(h string) error { return unix.Mknod(h, unix.S_IFCHR|0o640, int(unix.Mkdev(240, 9))) },
			func(v string) error { return p.Mknod(v, unix.S_IFCHR|0o640, unix.Mkdev(240, 9)) }},
		"/blk": {func(h string) error { return unix.Mknod(h, unix.S_IFBLK|0o600, int(unix.Mkdev(240, 7))) },
			func(v string) error { return p.Mknod(v, unix.S_IFBLK|0o600, unix.Mkdev(240, 7)) }},
		"/fifo": {func(h string) error { return unix.Mkfifo(h, 0o644) }, func(v string) error { return p.Mknod(v, unix.S_IFIFO|0o644, 0) }},
	}
	unix.Umask(0o022)
	for name, m := range makes {
		if herr, verr := m.host(hroot+name), m.ours(vroot+name); herr != nil || verr != nil {
			t.Fatalf("%s: host %v, iovfs %v", name, herr, verr)
		}
	}
	masks := []int{0, unix.STATX_BASIC_STATS, unix.STATX_ALL, unix.STATX_TYPE, unix.STATX_ATIME, unix.STATX_MTIME,
		unix.STATX_CTIME, unix.STATX_BTIME, unix.STATX_MNT_ID, unix.STATX_DIOALIGN, unix.STATX_MNT_ID_UNIQUE,
		unix.STATX_SUBVOL, unix.STATX_WRITE_ATOMIC, 0x20000, 0x40000, 0x7fffffff}
	set := func(ts unix.StatxTimestamp) bool { return ts.Sec != 0 || ts.Nsec != 0 }
	compared := 0
	for _, name := range []string{"", "/file", "/dir", "/link", "/chr", "/blk", "/fifo"} {
		for _, mask := range masks {
			for _, flags := range []int{0, unix.AT_SYMLINK_NOFOLLOW} {
				var h unix.Statx_t
				herr := unix.Statx(unix.AT_FDCWD, hroot+name, flags, mask, &h)
				v, verr := p.Statx(unix.AT_FDCWD, vroot+name, flags, mask)
				what := fmt.Sprintf("statx(%q, flags %#x, mask %#x)", name, flags, mask)
				compared++
				if errnoOf(herr) != errnoOf(verr) {
					t.Errorf("%s: host %v, iovfs %v", what, herr, verr)
					continue
				}
				if herr != nil {
					continue
				}
				for _, c := range []struct {
					field string
					h, v  any
				}{
					{"mask", h.Mask, v.Mask},
					{"attributes", h.Attributes, v.Attributes},
					{"attributes_mask", h.Attributes_mask, v.Attributes_mask},
					{"blksize", h.Blksize, v.Blksize},
					{"nlink", h.Nlink, v.Nlink},
					{"uid/gid", [2]uint32{h.Uid, h.Gid}, [2]uint32{v.Uid, v.Gid}},
					{"mode", h.Mode, v.Mode},
					{"size", h.Size, v.Size},
					{"blocks", h.Blocks, v.Blocks},
					{"rdev", [2]uint32{h.Rdev_major, h.Rdev_minor}, [2]uint32{v.Rdev_major, v.Rdev_minor}},
					{"atime set", set(h.Atime), set(v.Atime)},
					{"mtime set", set(h.Mtime), set(v.Mtime)},
					{"ctime set", set(h.Ctime), set(v.Ctime)},
					{"btime set", set(h.Btime), set(v.Btime)},
					{"mnt_id set", h.Mnt_id != 0, v.Mnt_id != 0},
					{"unique mnt_id", h.Mnt_id >= 1<<31, v.Mnt_id >= 1<<31},
					{"dio", [3]uint32{h.Dio_mem_align, h.Dio_offset_align, h.Dio_read_offset_align},
						[3]uint32{v.Dio_mem_align, v.Dio_offset_align, v.Dio_read_offset_align}},
					{"subvol", h.Subvol, v.Subvol},
					{"atomic write", [4]uint32{h.Atomic_write_unit_min, h.Atomic_write_unit_max, h.Atomic_write_segments_max, h.Atomic_write_unit_max_opt},
						[4]uint32{v.Atomic_write_unit_min, v.Atomic_write_unit_max, v.Atomic_write_segments_max, v.Atomic_write_unit_max_opt}},
				} {
					compared++
					if c.h != c.v {
						t.Errorf("%s: %s host %#v, iovfs %#v", what, c.field, c.h, c.v)
					}
				}
			}
		}
	}
	t.Logf("%d results compared", compared)
}
