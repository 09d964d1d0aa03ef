package iovfs_test

import (
	"os"
	"testing"

	"github.com/iovfs/iovfs"
	"golang.org/x/sys/unix"
)

// TestSyncDifferential runs fsync and fdatasync on each kind of file iovfs
// and the host both have, in each access mode, and compares the errnos.
func TestSyncDifferential(t *testing.T) {
	dir := lockDir(t)
	if err := os.WriteFile(dir+"/f", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir+"/d", 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := p.Open("/tmp/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.Write(fd, []byte("x"))
	p.Close(fd)
	if err := p.Mkdir("/tmp/d", 0o755); err != nil {
		t.Fatal(err)
	}
	files := []struct{ host, iovfs string }{
		{dir + "/f", "/tmp/f"}, {dir + "/d", "/tmp/d"}, {dir, "/tmp"},
		{"/dev/null", "/dev/null"}, {"/dev/zero", "/dev/zero"}, {"/dev/full", "/dev/full"},
		{"/dev/random", "/dev/random"}, {"/dev/urandom", "/dev/urandom"},
		{"/dev/loop-control", "/dev/loop-control"}, {"/dev", "/dev"},
	}
	n := 0
	for _, f := range files {
		for _, acc := range []int{unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR, unix.O_PATH} {
			hfd, herr := unix.Open(f.host, acc|unix.O_CLOEXEC, 0)
			vfd, verr := p.Open(f.iovfs, acc, 0)
			if errnoOf(herr) != errnoOf(verr) {
				t.Fatalf("open %s %d: host %v, iovfs %v", f.iovfs, acc, herr, verr)
			}
			if herr != nil {
				continue
			}
			for _, c := range []struct {
				name string
				host func(int) error
				vfs  func(int) error
			}{{"fsync", unix.Fsync, p.Fsync}, {"fdatasync", unix.Fdatasync, p.Fdatasync}} {
				n++
				if h, v := c.host(hfd), c.vfs(vfd); errnoOf(h) != errnoOf(v) {
					t.Errorf("%s %s (access %d): host %v, iovfs %v", c.name, f.iovfs, acc, h, v)
				}
			}
			unix.Close(hfd)
			p.Close(vfd)
			// And on the closed descriptor: EBADF.
			n++
			if h, v := unix.Fsync(hfd), p.Fsync(vfd); errnoOf(h) != errnoOf(v) {
				t.Errorf("fsync of closed %s: host %v, iovfs %v", f.iovfs, h, v)
			}
		}
	}
	t.Logf("%d results compared", n)
}
