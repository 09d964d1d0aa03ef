package mem_test

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/dev/mem"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

func newProc(t testing.TB) *vfs.Proc {
	p, err := iovfs.New(iovfs.WithDevice("zero-iter", mem.VecZero{}))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSemantics pins the drivers/char/mem.c rules.
func TestSemantics(t *testing.T) {
	p := newProc(t)
	buf := bytes.Repeat([]byte{0xAA}, 10)
	open := func(path string) int {
		fd, err := p.Open(path, unix.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	null, zero, full, rnd := open("/dev/null"), open("/dev/zero"), open("/dev/full"), open("/dev/urandom")
	if n, err := p.Read(null, buf); n != 0 || err != nil {
		t.Errorf("null read = %d, %v; want EOF (0, nil)", n, err)
	}
	if n, err := p.Write(null, buf); n != 10 || err != nil {
		t.Errorf("null write = %d, %v; want 10", n, err)
	}
	if n, err := p.Read(zero, buf); n != 10 || err != nil || !bytes.Equal(buf, make([]byte, 10)) {
		t.Errorf("zero read = %d, %v, %x", n, err, buf)
	}
	if n, err := p.Write(zero, buf); n != 10 || err != nil {
		t.Errorf("zero write = %d, %v", n, err)
	}
	buf[0] = 1
	if n, err := p.Read(full, buf); n != 10 || err != nil || buf[0] != 0 {
		t.Errorf("full read = %d, %v, %x", n, err, buf)
	}
	if n, err := p.Write(full, buf); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("full write = %d, %v; want ENOSPC", n, err)
	}
	a, b := make([]byte, 32), make([]byte, 32)
	if n, err := p.Readv(rnd, [][]byte{a[:16], a[16:]}); n != 32 || err != nil {
		t.Errorf("urandom readv = %d, %v", n, err)
	}
	p.Read(rnd, b)
	if bytes.Equal(a, b) || bytes.Equal(a, make([]byte, 32)) {
		t.Errorf("urandom gave %x then %x", a, b)
	}
	for _, c := range []struct {
		path        string
		major, minr uint32
	}{{"/dev/null", 1, 3}, {"/dev/zero", 1, 5}, {"/dev/full", 1, 7}, {"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}} {
		fd := open(c.path)
		st, err := p.Fstat(fd)
		if err != nil || st.Mode != unix.S_IFCHR|0o666 || st.Rdev != unix.Mkdev(c.major, c.minr) {
			t.Errorf("%s: Fstat = %+v, %v", c.path, st, err)
		}
	}
	if pos, err := p.Seek(zero, 100, unix.SEEK_SET); pos != 0 || err != nil {
		t.Errorf("lseek on /dev/zero = %d, %v; want 0 (null_lseek)", pos, err)
	}
}

// TestNoAllocs checks that the hot paths do not allocate.
func TestNoAllocs(t *testing.T) {
	p := newProc(t)
	buf := make([]byte, 4096)
	one := [][]byte{buf}
	eight := make([][]byte, 8)
	for i := range eight {
		eight[i] = buf[i*512 : (i+1)*512]
	}
	for _, dev := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/zero-iter"} {
		rfd, err := p.Open(dev, unix.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		wfd, err := p.Open(dev, unix.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f := p.NewFile(rfd, dev)
		var r io.Reader = f
		var ra io.ReaderAt = f
		calls := []struct {
			name string
			do   func()
		}{
			{"Read", func() { p.Read(rfd, buf) }},
			{"Pread", func() { p.Pread(rfd, buf, 4096) }},
			{"Readv 1 segment", func() { p.Readv(rfd, one) }},
			{"Readv 8 segments", func() { p.Readv(rfd, eight) }},
			{"Preadv", func() { p.Preadv(rfd, eight, 512) }},
			{"Preadv2", func() { p.Preadv2(rfd, eight, -1, unix.RWF_HIPRI) }},
			{"Write", func() { p.Write(wfd, buf) }},
			{"Writev", func() { p.Writev(wfd, eight) }},
			{"Pwrite", func() { p.Pwrite(wfd, buf, 0) }},
			{"io.Reader", func() { r.Read(buf) }},
			{"io.ReaderAt", func() { ra.ReadAt(buf, 0) }},
		}
		for _, c := range calls {
			if dev == "/dev/full" && (c.name == "Write" || c.name == "Writev" || c.name == "Pwrite") {
				continue // ENOSPC is a preallocated error value, but skip: not a hot path
			}
			if a := testing.AllocsPerRun(200, c.do); a != 0 {
				t.Errorf("%s %s: %v allocs per call, want 0", dev, c.name, a)
			}
		}
	}
}

// TestReadvMatchesReadLoop: for random vectors, Readv on /dev/zero fills
// exactly the bytes a loop of Read over the same segments fills.
func TestReadvMatchesReadLoop(t *testing.T) {
	p := newProc(t)
	for _, dev := range []string{"/dev/zero", "/dev/zero-iter"} {
		fd, err := p.Open(dev, unix.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		rapid.Check(t, func(t *rapid.T) {
			lens := rapid.SliceOfN(rapid.IntRange(0, 300), 0, 40).Draw(t, "lens")
			a, b := make([][]byte, len(lens)), make([][]byte, len(lens))
			total := 0
			for i, l := range lens {
				a[i] = bytes.Repeat([]byte{0xAA}, l+2)[1 : l+1] // guard bytes around
				b[i] = bytes.Repeat([]byte{0xAA}, l+2)[1 : l+1]
				total += l
			}
			n, err := p.Readv(fd, a)
			if err != nil || n != total {
				t.Fatalf("Readv = %d, %v; want %d", n, err, total)
			}
			m := 0
			for _, s := range b {
				k, err := p.Read(fd, s)
				if err != nil {
					t.Fatal(err)
				}
				m += k
			}
			if m != n {
				t.Fatalf("Read loop moved %d, Readv %d", m, n)
			}
			for i := range a {
				// Compare up to the guard byte after each segment.
				if !bytes.Equal(a[i][:cap(a[i])], b[i][:cap(b[i])]) {
					t.Fatalf("segment %d: Readv %x, Read %x", i, a[i][:cap(a[i])], b[i][:cap(b[i])])
				}
			}
		})
	}
}
