package vfs_test

import (
	"bytes"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSpliceAllocs: splice, tee, vmsplice and sendfile allocate nothing
// in the steady state, whichever ends they join.
func TestSpliceAllocs(t *testing.T) {
	p := newPipeProc(t)
	r1, w1 := pipe2(t, p, 0)
	r2, w2 := pipe2(t, p, 0)
	f, err := p.Open("/tmp/f", unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Open("/tmp/g", unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	null, err := p.Open("/dev/null", unix.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3*4096)
	p.Write(f, buf)
	var off, woff int64
	vec := [][]byte{buf[:100], buf[200:5000]}
	for _, c := range []struct {
		name string
		fn   func() (int64, error)
	}{
		{"splice pipe to pipe", func() (int64, error) {
			p.Write(w1, buf)
			n, err := p.Splice(r1, nil, w2, nil, len(buf), 0)
			p.Read(r2, buf)
			return n, err
		}},
		{"tee", func() (int64, error) {
			p.Write(w1, buf)
			n, err := p.Tee(r1, w2, len(buf), 0)
			p.Read(r2, buf)
			p.Read(r1, buf)
			return n, err
		}},
		{"splice file to pipe, pipe to /dev/null", func() (int64, error) {
			off = 0
			if n, err := p.Splice(f, &off, w1, nil, len(buf), 0); n != int64(len(buf)) {
				return n, err
			}
			return p.Splice(r1, nil, null, nil, len(buf), 0)
		}},
		{"splice pipe to file", func() (int64, error) {
			p.Write(w1, buf)
			woff = 0
			return p.Splice(r1, nil, g, &woff, len(buf), 0)
		}},
		{"vmsplice", func() (int64, error) {
			n, err := p.Vmsplice(w1, vec, 0)
			p.Read(r1, buf)
			return int64(n), err
		}},
		{"sendfile file to pipe", func() (int64, error) {
			off = 0
			n, err := p.Sendfile(w1, f, &off, len(buf))
			p.Read(r1, buf)
			return int64(n), err
		}},
		{"sendfile file to file", func() (int64, error) {
			off = 0
			n, err := p.Sendfile(g, f, &off, len(buf))
			p.Seek(g, 0, unix.SEEK_SET)
			return int64(n), err
		}},
	} {
		if n, err := c.fn(); n != int64(len(buf)) && c.name != "vmsplice" || err != nil {
			t.Fatalf("%s: %d, %v", c.name, n, err)
		}
		if a := testing.AllocsPerRun(200, func() { c.fn() }); a != 0 {
			t.Errorf("%s: %v allocs/op, want 0", c.name, a)
		}
	}
}

// TestSpliceSharesPages: a splice from a tmpfs file queues references to
// its pages, as Linux's shmem splice does: a write to the file before the
// pipe is read shows in what the pipe reads; a tee'd buffer is the same
// page too.
func TestSpliceSharesPages(t *testing.T) {
	p := newPipeProc(t)
	r1, w1 := pipe2(t, p, 0)
	r2, w2 := pipe2(t, p, 0)
	f, err := p.Open("/tmp/f", unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.Write(f, bytes.Repeat([]byte("a"), 8192))
	var off int64 = 4000
	if n, err := p.Splice(f, &off, w1, nil, 200, 0); n != 200 || err != nil || off != 4200 {
		t.Fatalf("splice = %d, %v, off %d", n, err, off)
	}
	if n, err := p.Tee(r1, w2, 200, 0); n != 200 || err != nil {
		t.Fatalf("tee = %d, %v", n, err)
	}
	p.Pwrite(f, []byte("XYZ"), 4095)
	want := bytes.Repeat([]byte("a"), 200)
	copy(want[95:], "XYZ")
	for _, r := range []int{r1, r2} {
		got := make([]byte, 300)
		n, err := p.Read(r, got)
		if err != nil || !bytes.Equal(got[:n], want) {
			t.Errorf("pipe read %q, %v; want %q", got[:n], err, want)
		}
	}
}

// TestSpliceErrors checks the order of splice's refusals on cases whose
// answer the kernel differential rarely draws.
func TestSpliceErrors(t *testing.T) {
	p := newPipeProc(t)
	r, w := pipe2(t, p, 0)
	f, err := p.Open("/tmp/f", unix.O_RDWR|unix.O_CREAT|unix.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(0)
	for _, c := range []struct {
		name string
		fn   func() (int64, error)
		want error
	}{
		{"len 0 before bad fds", func() (int64, error) { return p.Splice(100, nil, 101, nil, 0, 0) }, nil},
		{"bad flags", func() (int64, error) { return p.Splice(r, nil, w, nil, 1, 0x10) }, syscall.EINVAL},
		{"bad fd", func() (int64, error) { return p.Splice(100, nil, w, nil, 1, 0) }, syscall.EBADF},
		{"offset on a pipe", func() (int64, error) { return p.Splice(r, &off, f, nil, 1, 0) }, syscall.ESPIPE},
		{"same pipe", func() (int64, error) { return p.Splice(r, nil, w, nil, 1, 0) }, syscall.EINVAL},
		{"two files", func() (int64, error) { return p.Splice(f, nil, f, nil, 1, 0) }, syscall.EINVAL},
		{"to O_APPEND", func() (int64, error) { return p.Splice(r, nil, f, nil, 1, unix.SPLICE_F_NONBLOCK) }, syscall.EINVAL},
		{"tee on one pipe", func() (int64, error) { return p.Tee(r, w, 1, 0) }, syscall.EINVAL},
	} {
		if _, err := c.fn(); err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
