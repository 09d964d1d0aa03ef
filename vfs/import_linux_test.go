package vfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs"
	"golang.org/x/sys/unix"
)

// posOps is one side of TestImportSharesHostOffset: the calls of a step,
// on one descriptor.
type posOps struct {
	read    func([]byte) (int, error)
	readv   func([][]byte) (int, error)
	write   func([]byte) (int, error)
	writev  func([][]byte) (int, error)
	pread   func([]byte, int64) (int, error)
	pwrite  func([]byte, int64) (int, error)
	preadv2 func([][]byte, int64, int) (int, error)
	pwritv2 func([][]byte, int64, int) (int, error)
	seek    func(int64, int) (int64, error)
}

func hostPosOps(fd int) posOps {
	return posOps{
		read:    func(b []byte) (int, error) { return unix.Read(fd, b) },
		readv:   func(v [][]byte) (int, error) { return unix.Readv(fd, v) },
		write:   func(b []byte) (int, error) { return unix.Write(fd, b) },
		writev:  func(v [][]byte) (int, error) { return unix.Writev(fd, v) },
		pread:   func(b []byte, off int64) (int, error) { return unix.Pread(fd, b, off) },
		pwrite:  func(b []byte, off int64) (int, error) { return unix.Pwrite(fd, b, off) },
		preadv2: func(v [][]byte, off int64, fl int) (int, error) { return unix.Preadv2(fd, v, off, fl) },
		pwritv2: func(v [][]byte, off int64, fl int) (int, error) { return unix.Pwritev2(fd, v, off, fl) },
		seek:    func(off int64, wh int) (int64, error) { return unix.Seek(fd, off, wh) },
	}
}

func iovfsPosOps(p interface {
	Read(int, []byte) (int, error)
	Readv(int, [][]byte) (int, error)
	Write(int, []byte) (int, error)
	Writev(int, [][]byte) (int, error)
	Pread(int, []byte, int64) (int, error)
	Pwrite(int, []byte, int64) (int, error)
	Preadv2(int, [][]byte, int64, int) (int, error)
	Pwritev2(int, [][]byte, int64, int) (int, error)
	Seek(int, int64, int) (int64, error)
}, fd int) posOps {
	return posOps{
		read:    func(b []byte) (int, error) { return p.Read(fd, b) },
		readv:   func(v [][]byte) (int, error) { return p.Readv(fd, v) },
		write:   func(b []byte) (int, error) { return p.Write(fd, b) },
		writev:  func(v [][]byte) (int, error) { return p.Writev(fd, v) },
		pread:   func(b []byte, off int64) (int, error) { return p.Pread(fd, b, off) },
		pwrite:  func(b []byte, off int64) (int, error) { return p.Pwrite(fd, b, off) },
		preadv2: func(v [][]byte, off int64, fl int) (int, error) { return p.Preadv2(fd, v, off, fl) },
		pwritv2: func(v [][]byte, off int64, fl int) (int, error) { return p.Pwritev2(fd, v, off, fl) },
		seek:    func(off int64, wh int) (int64, error) { return p.Seek(fd, off, wh) },
	}
}

// posStep runs step kind k with arguments from r on o and describes the
// result: count, errno and the bytes read.
func posStep(o posOps, k int, r *rand.Rand) string {
	n := r.Intn(40)
	off := int64(r.Intn(400))
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte('a' + r.Intn(26))
	}
	vec := [][]byte{buf[:n/2], buf[n/2:]}
	res := func(what string, c int64, err error, data []byte) string {
		var e syscall.Errno
		if errors.As(err, &e) {
			c, data = 0, nil // unix's wrappers return -1 with an errno
		}
		return fmt.Sprintf("%s n=%d errno=%d data=%q", what, c, e, data)
	}
	switch k {
	case 0:
		c, err := o.read(buf)
		return res("read", int64(c), err, buf[:max(c, 0)])
	case 1:
		c, err := o.readv(vec)
		return res("readv", int64(c), err, buf[:max(c, 0)])
	case 2:
		c, err := o.write(buf)
		return res("write", int64(c), err, nil)
	case 3:
		c, err := o.writev(vec)
		return res("writev", int64(c), err, nil)
	case 4:
		c, err := o.pread(buf, off)
		return res(fmt.Sprint("pread@", off), int64(c), err, buf[:max(c, 0)])
	case 5:
		c, err := o.pwrite(buf, off)
		return res(fmt.Sprint("pwrite@", off), int64(c), err, nil)
	case 6:
		c, err := o.preadv2(vec, -1, 0)
		return res("preadv2@-1", int64(c), err, buf[:max(c, 0)])
	case 7:
		c, err := o.pwritv2(vec, -1, 0)
		return res("pwritev2@-1", int64(c), err, nil)
	default:
		wh := []int{unix.SEEK_SET, unix.SEEK_CUR, unix.SEEK_END}[r.Intn(3)]
		so := off - 100 // some negative results: EINVAL
		c, err := o.seek(so, wh)
		return res(fmt.Sprint("lseek ", so, " ", wh), c, err, nil)
	}
}

// TestImportSharesHostOffset checks that an imported file shares the host
// descriptor's offset as a dup(2) does. The same random steps run on two
// pairs: (an iovfs descriptor imported from a host file, a host dup of
// that file) and (a host descriptor, its host dup) over a second, equal
// file. Each step acts through one member of its pair, chosen the same way
// on both; counts, errnos, bytes, the offset each member sees afterwards
// and the final contents must agree.
func TestImportSharesHostOffset(t *testing.T) {
	dir := t.TempDir()
	init := bytes.Repeat([]byte("0123456789"), 30)
	open := func(name string) int {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, init, 0o600); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	dup := func(fd int) int {
		d, err := unix.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(d) })
		return d
	}

	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	a := open("a")
	unix.Seek(a, 17, unix.SEEK_SET) // the import starts at the host offset
	ad, err := unix.Dup(a)          // f owns it: no cleanup of its own, or two closes
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(ad), "a")
	defer f.Close()
	vfd, err := p.ImportFile(f)
	if err != nil {
		t.Fatal(err)
	}
	got := [2]posOps{iovfsPosOps(p, vfd), hostPosOps(a)}
	b := open("b")
	unix.Seek(b, 17, unix.SEEK_SET)
	want := [2]posOps{hostPosOps(b), hostPosOps(dup(b))}

	steps := 3000
	if raceEnabled || testing.Short() {
		steps = 400
	}
	seed := int64(1)
	gr, wr := rand.New(rand.NewSource(seed)), rand.New(rand.NewSource(seed))
	for i := 0; i < steps; i++ {
		side, k := gr.Intn(2), gr.Intn(9)
		wr.Intn(2)
		wr.Intn(9)
		g, w := posStep(got[side], k, gr), posStep(want[side], k, wr)
		if g != w {
			t.Fatalf("step %d (side %d): iovfs %s, host %s", i, side, g, w)
		}
		for s := range 2 {
			gp, ge := got[s].seek(0, unix.SEEK_CUR)
			wp, we := want[s].seek(0, unix.SEEK_CUR)
			if gp != wp || ge != we {
				t.Fatalf("step %d: after %s, side %d at %d (%v), host %d (%v)", i, g, s, gp, ge, wp, we)
			}
		}
	}
	ga, _ := os.ReadFile(filepath.Join(dir, "a"))
	wb, _ := os.ReadFile(filepath.Join(dir, "b"))
	if !bytes.Equal(ga, wb) {
		t.Errorf("contents differ: iovfs side %d bytes, host side %d bytes", len(ga), len(wb))
	}
	t.Logf("%d steps, 0 divergences", steps)
}

// TestImportPositionCallsDoNotAllocate: read, write and lseek on an
// imported file are one host call each and allocate nothing.
func TestImportPositionCallsDoNotAllocate(t *testing.T) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, make([]byte, 4096), 0o600)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := p.ImportFile(f)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	vec := [][]byte{buf[:32], buf[32:]}
	allocs := testing.AllocsPerRun(200, func() {
		p.Seek(fd, 0, unix.SEEK_SET)
		p.Read(fd, buf)
		p.Readv(fd, vec)
		p.Write(fd, buf)
		p.Writev(fd, vec)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per seek+read+readv+write+writev", allocs)
	}
	if pos, _ := f.Seek(0, 1); pos != 256 {
		t.Errorf("host offset %d after the calls, want 256", pos)
	}
}

// BenchmarkImportedRead compares a 4 KiB read at the file position
// through an imported descriptor with the same read(2) on the host
// descriptor, and the same for lseek, each rewinding every 256 reads.
func BenchmarkImportedRead(b *testing.B) {
	p, err := iovfs.New()
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "f")
	os.WriteFile(path, make([]byte, 1<<20), 0o600)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fd, err := p.ImportFile(f)
	if err != nil {
		b.Fatal(err)
	}
	hfd := int(f.Fd())
	buf := make([]byte, 4096)
	b.Run("iovfs", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if i&255 == 0 {
				p.Seek(fd, 0, unix.SEEK_SET)
			}
			p.Read(fd, buf)
		}
	})
	b.Run("host", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if i&255 == 0 {
				unix.Seek(hfd, 0, unix.SEEK_SET)
			}
			unix.Read(hfd, buf)
		}
	})
	b.Run("iovfs-lseek", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			p.Seek(fd, int64(i&1023), unix.SEEK_SET)
		}
	})
	b.Run("host-lseek", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			unix.Seek(hfd, int64(i&1023), unix.SEEK_SET)
		}
	})
}

// TestImportSetflShared: F_SETFL on an imported descriptor changes the
// host open file description, as on a dup(2): the host dup sees O_APPEND
// in F_GETFL, and writes through either append. The same steps run on two
// host dups of an equal file.
func TestImportSetflShared(t *testing.T) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	open := func(name string) int {
		os.WriteFile(filepath.Join(dir, name), []byte("0123456789"), 0o600)
		fd, err := unix.Open(filepath.Join(dir, name), unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	a, b := open("a"), open("b")
	ad, err := unix.Dup(a)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(ad), "a")
	defer f.Close()
	vfd, err := p.ImportFile(f)
	if err != nil {
		t.Fatal(err)
	}
	bd, err := unix.Dup(b)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(bd)
	got := [2]posOps{iovfsPosOps(p, vfd), hostPosOps(a)}
	want := [2]posOps{hostPosOps(bd), hostPosOps(b)}
	steps := []func(o posOps, side int) string{
		func(o posOps, _ int) string { n, err := o.write([]byte("ab")); return fmt.Sprint("write ", n, err) },
		func(o posOps, side int) string { p, err := o.seek(0, unix.SEEK_CUR); return fmt.Sprint("pos ", p, err) },
	}
	setfl := func(fd int, iov bool, fl int) error {
		if iov {
			_, err := p.Fcntl(fd, unix.F_SETFL, fl)
			return err
		}
		_, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl)
		return err
	}
	getfl := func(fd int) int { fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); return fl &^ unix.O_LARGEFILE }
	for i, fl := range []int{unix.O_APPEND, 0, unix.O_APPEND | unix.O_NONBLOCK} {
		ge, we := setfl(vfd, true, fl), setfl(bd, false, fl)
		if ge != we {
			t.Fatalf("F_SETFL %#o: iovfs %v, host %v", fl, ge, we)
		}
		if g, w := getfl(a), getfl(b); g != w {
			t.Errorf("round %d: F_GETFL of the other host descriptor %#o, want %#o", i, g, w)
		}
		for side := range 2 {
			for _, s := range steps {
				if g, w := s(got[side], side), s(want[side], side); g != w {
					t.Errorf("round %d side %d: iovfs %s, host %s", i, side, g, w)
				}
			}
		}
	}
	ga, _ := os.ReadFile(filepath.Join(dir, "a"))
	wb, _ := os.ReadFile(filepath.Join(dir, "b"))
	if string(ga) != string(wb) {
		t.Errorf("contents: iovfs side %q, host %q", ga, wb)
	}
}
