package iovfs_test

import (
	"fmt"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestOPathHoldsUnlinked: an O_PATH descriptor holds an unlinked tmpfs
// node as Linux's does, for every node type: the inode (statfs f_ffree),
// a regular file's pages (f_bfree) and its extended attributes (fgetxattr
// through the O_PATH descriptor still answers), until the last descriptor
// closes. The same steps run on a host tmpfs and an iovfs one with equal
// limits; f_bfree and f_ffree are compared after each.
func TestOPathHoldsUnlinked(t *testing.T) {
	testenv.RequireRoot(t, "mounting a host tmpfs with limits")
	const opts = "size=1m,nr_inodes=16"
	hroot := t.TempDir()
	if err := unix.Mount("tmpfs", hroot, "tmpfs", 0, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(hroot, unix.MNT_DETACH) })
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	vroot := "/mnt/opath"
	if err := p.Mkdir(vroot, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("tmpfs", vroot, "tmpfs", 0, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Unmount(vroot, unix.MNT_DETACH) })

	compared := 0
	check := func(step string) {
		t.Helper()
		var h unix.Statfs_t
		if err := unix.Statfs(hroot, &h); err != nil {
			t.Fatal(err)
		}
		v, err := p.Statfs(vroot)
		if err != nil {
			t.Fatal(err)
		}
		compared++
		if h.Ffree != v.Ffree || h.Bfree != v.Bfree {
			t.Errorf("%s: f_ffree, f_bfree host %d, %d; iovfs %d, %d", step, h.Ffree, h.Bfree, v.Ffree, v.Bfree)
		}
	}
	data := make([]byte, 3*4096+1)
	for _, c := range []struct {
		name  string
		make  func(root string) error
		vmake func() error
		flags int
		plain int // flags of a plain open, -1 for none
	}{
		{"file", func(r string) error { return writeHost(r+"/file", data) },
			func() error { return writeVFS(p, vroot+"/file", data) }, 0, unix.O_RDONLY},
		{"dir", func(r string) error { return unix.Mkdir(r+"/dir", 0o755) },
			func() error { return p.Mkdir(vroot+"/dir", 0o755) }, 0, unix.O_RDONLY | unix.O_DIRECTORY},
		{"symlink", func(r string) error { return unix.Symlink("target", r+"/symlink") },
			func() error { return p.Symlink("target", vroot+"/symlink") }, unix.O_NOFOLLOW, -1},
		{"fifo", func(r string) error { return unix.Mkfifo(r+"/fifo", 0o644) },
			func() error { return p.Mknod(vroot+"/fifo", unix.S_IFIFO|0o644, 0) }, 0, unix.O_RDWR},
	} {
		for _, plain := range []bool{false, true} {
			if plain && c.plain < 0 {
				continue
			}
			oflags := unix.O_PATH | c.flags
			if plain {
				oflags = c.plain
			}
			herr, verr := c.make(hroot), c.vmake()
			if herr != nil || verr != nil {
				t.Fatalf("%s: make: host %v, iovfs %v", c.name, herr, verr)
			}
			if c.name == "file" {
				herr = unix.Setxattr(hroot+"/file", "trusted.x", []byte("v"), 0)
				verr = p.Setxattr(vroot+"/file", "trusted.x", []byte("v"), 0)
				if herr != nil || verr != nil {
					t.Fatalf("setxattr: host %v, iovfs %v", herr, verr)
				}
			}
			check(fmt.Sprintf("%s made (flags %#o next)", c.name, oflags))
			var hfd, vfd [2]int
			for i := range hfd {
				if hfd[i], herr = unix.Open(hroot+"/"+c.name, oflags|unix.O_CLOEXEC, 0); herr != nil {
					t.Fatal(herr)
				}
				if vfd[i], verr = p.Open(vroot+"/"+c.name, oflags, 0); verr != nil {
					t.Fatal(verr)
				}
			}
			if c.name == "dir" {
				herr, verr = unix.Rmdir(hroot+"/dir"), p.Rmdir(vroot+"/dir")
			} else {
				herr, verr = unix.Unlink(hroot+"/"+c.name), p.Unlink(vroot+"/"+c.name)
			}
			if herr != nil || verr != nil {
				t.Fatalf("%s: remove: host %v, iovfs %v", c.name, herr, verr)
			}
			check(fmt.Sprintf("%s removed, two descriptors (flags %#o) open", c.name, oflags))
			if c.name == "file" {
				buf := make([]byte, 8)
				hn, herr := unix.Fgetxattr(hfd[0], "trusted.x", buf)
				vv, verr := p.Fgetxattr(vfd[0], "trusted.x")
				if errnoOf(herr) != errnoOf(verr) || (herr == nil && string(buf[:hn]) != string(vv)) {
					t.Errorf("fgetxattr through O_PATH after unlink: host %q %v, iovfs %q %v", buf[:max(hn, 0)], herr, vv, verr)
				}
			}
			for i := range hfd {
				unix.Close(hfd[i])
				p.Close(vfd[i])
				check(fmt.Sprintf("%s removed, a descriptor (flags %#o) closed", c.name, oflags))
			}
		}
	}
	t.Logf("%d statfs results compared", compared)
}

func writeHost(path string, data []byte) error {
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, data)
	return err
}

func writeVFS(p *vfs.Proc, path string, data []byte) error {
	fd, err := p.Open(path, unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer p.Close(fd)
	_, err = p.Write(fd, data)
	return err
}
