package ext4_test

// Inode flags against the kernel's ext4: the flag differential
// (internal/flagdiff) on an image loop-mounted read-write by the kernel
// and the same image mounted read-write by iovfs; then the image iovfs
// wrote is checked by e2fsck and lsattr -R on a kernel mount, against
// the kernel's own image, and its flags read back by an iovfs read-only
// mount.

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs/internal/flagdiff"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// ext4ChattrFlags are the flags the cases set: every flag ext4 lets
// FS_IOC_SETFLAGS change as a plain bit, some it refuses for a type
// (dirsync, topdir and projinherit on files), visible ones it drops
// (index, inline data), casefold (no such feature) and invisible ones
// (EOPNOTSUPP). journal_data and extents, whose changes convert the
// inode, are left out (not done; disk.Writer.SetFlagsAs).
var ext4ChattrFlags = []uint32{vfs.FS_IMMUTABLE_FL, vfs.FS_APPEND_FL, vfs.FS_NODUMP_FL, vfs.FS_NOATIME_FL,
	vfs.FS_SYNC_FL, vfs.FS_DIRSYNC_FL, vfs.FS_NOTAIL_FL, vfs.FS_COMPR_FL, vfs.FS_TOPDIR_FL, vfs.FS_PROJINHERIT_FL,
	vfs.FS_SECRM_FL, vfs.FS_UNRM_FL, 0x00400000, vfs.FS_DAX_FL, vfs.FS_INDEX_FL, vfs.FS_CASEFOLD_FL, 0x00002000}

func TestFileAttrKernel(t *testing.T) {
	testenv.RequireRoot(t, "kernel loop mounts and the immutable flag")
	testenv.RequireTool(t, "lsattr")
	cases := 150
	if testenv.Long() {
		cases = 1500
	}
	p, kmnt, size := twinMounts(t, aclImage(t)) // acl_linux_test.go
	searchable(t, kmnt)
	if err := os.Mkdir(filepath.Join(kmnt, "fa"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mkdir("/mnt/fa", 0o755); err != nil {
		t.Fatal(err)
	}
	n := flagdiff.Run(t, flagdiff.Config{HostDir: filepath.Join(kmnt, "fa"), Dir: "/mnt/fa", Root: p, HelperTest: "TestACLHelper",
		Flags: ext4ChattrFlags, Keep: vfs.FS_EXTENT_FL | vfs.FS_INLINE_DATA_FL | vfs.FS_INDEX_FL, Cases: cases, Seed: 7})
	t.Logf("read-write: %d results compared", n)
	// A few flags stay set for what follows.
	for _, s := range []struct {
		name string
		fl   uint32
	}{{"i", vfs.FS_IMMUTABLE_FL}, {"a", vfs.FS_APPEND_FL}, {"dA", vfs.FS_NODUMP_FL | vfs.FS_NOATIME_FL}, {"S", vfs.FS_SYNC_FL}} {
		os.WriteFile(filepath.Join(kmnt, "fa", s.name), []byte("x"), 0o644)
		fd, err := p.Open("/mnt/fa/"+s.name, unix.O_CREAT|unix.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		p.Write(fd, []byte("x"))
		p.Close(fd)
		for _, set := range []func() error{
			func() error {
				f, err := os.Open(filepath.Join(kmnt, "fa", s.name))
				if err != nil {
					return err
				}
				defer f.Close()
				return unix.IoctlSetPointerInt(int(f.Fd()), vfs.FS_IOC_SETFLAGS, int(s.fl|vfs.FS_EXTENT_FL))
			},
			func() error {
				fd, err := p.Open("/mnt/fa/"+s.name, unix.O_RDONLY, 0)
				if err != nil {
					return err
				}
				defer p.Close(fd)
				v := s.fl | vfs.FS_EXTENT_FL
				_, err = p.Ioctl(fd, vfs.FS_IOC_SETFLAGS, &v)
				return err
			},
		} {
			if err := set(); err != nil {
				t.Fatalf("chattr %s: %v", s.name, err)
			}
		}
	}
	if t.Failed() {
		return
	}

	// The image iovfs wrote: clean, and lsattr on a kernel mount of it
	// shows the kernel's own image's flags.
	oimg := writtenImage(t, p, size)
	omnt := kernelMount(t, oimg)
	lsattr := func(dir string) string {
		cmd := exec.Command("lsattr", "-R", "-a", ".")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("lsattr -R in %s: %v\n%s", dir, err, out)
		}
		return string(out)
	}
	k, o := lsattr(filepath.Join(kmnt, "fa")), lsattr(filepath.Join(omnt, "fa"))
	if k != o {
		t.Errorf("lsattr -R: kernel's image\n%s\niovfs's image under the kernel\n%s", k, o)
	}

	// Read back by iovfs read-only: the same flags and attributes.
	ro := mountImage(t, oimg, viaRAM, "")
	ents, err := os.ReadDir(filepath.Join(omnt, "fa"))
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, e := range ents {
		if e.Type()&(os.ModeSymlink|os.ModeNamedPipe) != 0 {
			continue
		}
		hp, op := filepath.Join(omnt, "fa", e.Name()), "/mnt/fa/"+e.Name()
		var hx, ox unix.Statx_t
		hf, herr := hostFlagsOf(hp)
		of, oerr := ourFlagsOf(ro, op)
		unix.Statx(unix.AT_FDCWD, hp, 0, unix.STATX_BASIC_STATS, &hx)
		ox, _ = ro.Statx(unix.AT_FDCWD, op, 0, unix.STATX_BASIC_STATS)
		compared++
		if hf != of || herr != oerr || hx.Attributes != ox.Attributes || hx.Attributes_mask != ox.Attributes_mask {
			t.Errorf("%s read-only: kernel flags %#x (%v) attrs %#x/%#x, iovfs %#x (%v) attrs %#x/%#x",
				e.Name(), hf, herr, hx.Attributes, hx.Attributes_mask, of, oerr, ox.Attributes, ox.Attributes_mask)
		}
	}
	t.Logf("image written by iovfs: e2fsck clean, lsattr -R equal, %d nodes compared read-only", compared)
}

func hostFlagsOf(p string) (uint32, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	v, err := unix.IoctlGetUint32(fd, vfs.FS_IOC_GETFLAGS)
	return v, err
}

func ourFlagsOf(p *vfs.Proc, name string) (uint32, error) {
	fd, err := p.Open(name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer p.Close(fd)
	var v uint32
	_, err = p.Ioctl(fd, vfs.FS_IOC_GETFLAGS, &v)
	return v, err
}
