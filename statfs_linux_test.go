package iovfs_test

import (
	"fmt"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestStatfsDifferential mounts a tmpfs with the same limits on the host
// and in iovfs, read-write and read-only, fills them the same way, and
// compares the statfs fields that mean something after each step (all but
// f_fsid, which Linux takes from a random per-mount UUID). /dev is
// compared by type, block size and name length, as devtmpfs's limits are
// the host's own.
func TestStatfsDifferential(t *testing.T) {
	testenv.RequireRoot(t, "mounting host tmpfs instances with limits")
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, c := range []struct {
		opts  string
		flags uintptr
	}{{"size=256k,nr_inodes=40", 0}, {"size=1m,nr_inodes=1000", 0}, {"size=64k,nr_inodes=9", unix.MS_RDONLY},
		{"size=128k,nr_inodes=20", unix.MS_NOSUID | unix.MS_NODEV},
		{"size=128k,nr_inodes=20", unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NOSYMFOLLOW},
		{"size=128k,nr_inodes=20", unix.MS_STRICTATIME | unix.MS_SYNCHRONOUS | unix.MS_NODIRATIME}} {
		hdir := t.TempDir()
		if err := unix.Mount("tmpfs", hdir, "tmpfs", c.flags, c.opts); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(hdir, unix.MNT_DETACH) })
		vdir := fmt.Sprintf("/mnt/s%d", compared)
		if err := p.Mkdir(vdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := p.Mount("tmpfs", vdir, "tmpfs", c.flags, c.opts); err != nil {
			t.Fatal(err)
		}
		check := func(step string) {
			t.Helper()
			var h unix.Statfs_t
			if err := unix.Statfs(hdir, &h); err != nil {
				t.Fatal(err)
			}
			v, err := p.Statfs(vdir)
			if err != nil {
				t.Fatal(err)
			}
			h.Fsid, v.Fsid = unix.Fsid{}, unix.Fsid{}
			compared++
			if h != v {
				t.Errorf("%s %s: host %+v\niovfs %+v", c.opts, step, h, v)
			}
			fd, err := p.Open(vdir, unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fv, err := p.Fstatfs(fd)
			p.Close(fd)
			fv.Fsid = unix.Fsid{}
			compared++
			if err != nil || fv != v {
				t.Errorf("%s %s: Fstatfs %+v, %v; Statfs %+v", c.opts, step, fv, err, v)
			}
		}
		check("empty")
		if c.flags&unix.MS_RDONLY != 0 {
			continue
		}
		for i := 0; i < 12; i++ {
			name := fmt.Sprintf("/f%d", i)
			data := make([]byte, 5000*i)
			hfd, herr := unix.Open(hdir+name, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			vfd, verr := p.Open(vdir+name, unix.O_CREAT|unix.O_WRONLY, 0o644)
			if errnoOf(herr) != errnoOf(verr) {
				t.Fatalf("%s create %s: host %v, iovfs %v", c.opts, name, herr, verr)
			}
			if herr == nil {
				hn, herr := unix.Write(hfd, data)
				vn, verr := p.Write(vfd, data)
				if errnoOf(herr) != errnoOf(verr) || herr == nil && hn != vn {
					t.Fatalf("%s write %s: host %d %v, iovfs %d %v", c.opts, name, hn, herr, vn, verr)
				}
				unix.Close(hfd)
				p.Close(vfd)
			}
			check("after " + name)
			if i%4 == 3 {
				unix.Mkdir(hdir+name+"d", 0o755)
				p.Mkdir(vdir+name+"d", 0o755)
				check("after mkdir " + name)
			}
		}
		// Hard links take a share of nr_inodes on tmpfs (shmem_link), and
		// dropping a link that is not the last gives it back.
		for i, op := range []struct{ what, a, b string }{
			{"link", "/f1", "/l1"}, {"link", "/f1", "/l2"}, {"link", "/f2", "/l3"}, {"link", "/f3", "/l4"},
			{"rename", "/f2", "/l1"}, {"unlink", "/l2", ""}, {"unlink", "/f1", ""}, {"rename", "/l3", "/f4"},
			{"link", "/f4", "/l5"}, {"unlink", "/f4", ""}, {"unlink", "/l5", ""},
		} {
			var herr, verr error
			switch op.what {
			case "link":
				herr, verr = unix.Link(hdir+op.a, hdir+op.b), p.Link(vdir+op.a, vdir+op.b)
			case "rename":
				herr, verr = unix.Rename(hdir+op.a, hdir+op.b), p.Rename(vdir+op.a, vdir+op.b)
			case "unlink":
				herr, verr = unix.Unlink(hdir+op.a), p.Unlink(vdir+op.a)
			}
			compared++
			if errnoOf(herr) != errnoOf(verr) {
				t.Fatalf("%s %s %s %s: host %v, iovfs %v", c.opts, op.what, op.a, op.b, herr, verr)
			}
			check(fmt.Sprintf("after step %d, %s %s %s", i, op.what, op.a, op.b))
		}
	}
	// /dev: devtmpfs on the host.
	var h unix.Statfs_t
	if err := unix.Statfs("/dev", &h); err != nil {
		t.Fatal(err)
	}
	v, err := p.Statfs("/dev/null")
	compared++
	if err != nil || v.Type != h.Type || v.Bsize != h.Bsize || v.Namelen != h.Namelen || v.Frsize != h.Frsize {
		t.Errorf("/dev: host %+v\niovfs %+v, %v", h, v, err)
	}
	t.Logf("%d results compared", compared)
}
