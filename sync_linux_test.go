package iovfs_test

import (
	"fmt"
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

// TestPipeDescriptorCalls runs the descriptor calls of this work on both
// ends of a pipe, on the host and on iovfs, and compares the results:
// fsync and fdatasync (EINVAL), fallocate (ESPIPE, or EBADF on the read
// end), flock and record locks (allowed), F_GETFL and F_SETFL with
// O_DIRECT and O_ASYNC (pipes take both), copy_file_range to and from a
// pipe (EINVAL).
func TestPipeDescriptorCalls(t *testing.T) {
	dir := lockDir(t)
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	var hp [2]int
	if err := unix.Pipe2(hp[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(hp[0])
	defer unix.Close(hp[1])
	vr, vw, err := p.Pipe2(0)
	if err != nil {
		t.Fatal(err)
	}
	vp := [2]int{vr, vw}
	hf, err := unix.Open(dir+"/f", unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(hf)
	unix.Write(hf, []byte("data"))
	vf, err := p.Open("/tmp/f", unix.O_CREAT|unix.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.Write(vf, []byte("data"))
	n := 0
	cmp := func(what string, hv int, herr error, vv int, verr error) {
		t.Helper()
		n++
		if errnoOf(herr) != errnoOf(verr) || herr == nil && hv != vv {
			t.Errorf("%s: host %#o %v, iovfs %#o %v", what, hv, herr, vv, verr)
		}
	}
	for end := 0; end < 2; end++ {
		h, v := hp[end], vp[end]
		name := [2]string{"read end", "write end"}[end]
		cmp(name+" fsync", 0, unix.Fsync(h), 0, p.Fsync(v))
		cmp(name+" fdatasync", 0, unix.Fdatasync(h), 0, p.Fdatasync(v))
		cmp(name+" fallocate", 0, unix.Fallocate(h, 0, 0, 1), 0, p.Fallocate(v, 0, 0, 1))
		cmp(name+" flock", 0, unix.Flock(h, unix.LOCK_EX|unix.LOCK_NB), 0, p.Flock(v, unix.LOCK_EX|unix.LOCK_NB))
		lk := unix.Flock_t{Type: [2]int16{unix.F_RDLCK, unix.F_WRLCK}[end], Len: 10}
		lk2 := lk
		cmp(name+" F_OFD_SETLK", 0, unix.FcntlFlock(uintptr(h), unix.F_OFD_SETLK, &lk), 0, p.FcntlFlock(v, unix.F_OFD_SETLK, &lk2))
		hv, herr := unix.FcntlInt(uintptr(h), unix.F_GETFL, 0)
		vv, verr := p.Fcntl(v, unix.F_GETFL, 0)
		cmp(name+" F_GETFL", hv, herr, vv, verr)
		for _, arg := range []int{unix.O_DIRECT, unix.O_ASYNC | unix.O_NONBLOCK, 0} {
			_, herr = unix.FcntlInt(uintptr(h), unix.F_SETFL, arg)
			_, verr = p.Fcntl(v, unix.F_SETFL, arg)
			cmp(fmt.Sprintf("%s F_SETFL %#o", name, arg), 0, herr, 0, verr)
			hv, herr = unix.FcntlInt(uintptr(h), unix.F_GETFL, 0)
			vv, verr = p.Fcntl(v, unix.F_GETFL, 0)
			cmp(fmt.Sprintf("%s F_GETFL after F_SETFL %#o", name, arg), hv, herr, vv, verr)
		}
		hn, herr := unix.CopyFileRange(hf, nil, h, nil, 4, 0)
		vn, verr := p.CopyFileRange(vf, nil, v, nil, 4, 0)
		cmp(name+" copy_file_range to it", hn, herr, vn, verr)
		hn, herr = unix.CopyFileRange(h, nil, hf, nil, 4, 0)
		vn, verr = p.CopyFileRange(v, nil, vf, nil, 4, 0)
		cmp(name+" copy_file_range from it", hn, herr, vn, verr)
	}
	t.Logf("%d results compared", n)
}
