package mem_test

// A differential test: the same calls on the host kernel's /dev/null,
// /dev/zero and /dev/full (through golang.org/x/sys/unix) and on iovfs's,
// comparing counts, errnos and the bytes that land in the buffers.

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// sys is the read/write family of one side.
type sys struct {
	open     func(path string, flags int) (int, error)
	close    func(fd int) error
	read     func(fd int, p []byte) (int, error)
	pread    func(fd int, p []byte, off int64) (int, error)
	readv    func(fd int, v [][]byte) (int, error)
	preadv   func(fd int, v [][]byte, off int64) (int, error)
	preadv2  func(fd int, v [][]byte, off int64, flags int) (int, error)
	write    func(fd int, p []byte) (int, error)
	pwrite   func(fd int, p []byte, off int64) (int, error)
	writev   func(fd int, v [][]byte) (int, error)
	pwritev  func(fd int, v [][]byte, off int64) (int, error)
	pwritev2 func(fd int, v [][]byte, off int64, flags int) (int, error)
	seek     func(fd int, off int64, whence int) (int64, error)
}

func hostSys() sys {
	return sys{
		open:  func(path string, flags int) (int, error) { return unix.Open(path, flags|unix.O_CLOEXEC, 0) },
		close: unix.Close,
		// Reads of the host's /dev/zero stop after a page when a signal
		// is pending: testenv.WithSignalsBlocked.
		read: func(fd int, p []byte) (n int, err error) {
			testenv.WithSignalsBlocked(func() { n, err = unix.Read(fd, p) })
			return n, err
		},
		pread: func(fd int, p []byte, off int64) (n int, err error) {
			testenv.WithSignalsBlocked(func() { n, err = unix.Pread(fd, p, off) })
			return n, err
		},
		readv: func(fd int, v [][]byte) (n int, err error) {
			testenv.WithSignalsBlocked(func() { n, err = unix.Readv(fd, v) })
			return n, err
		},
		preadv: func(fd int, v [][]byte, off int64) (n int, err error) {
			testenv.WithSignalsBlocked(func() { n, err = unix.Preadv(fd, v, off) })
			return n, err
		},
		preadv2: func(fd int, v [][]byte, off int64, flags int) (n int, err error) {
			testenv.WithSignalsBlocked(func() { n, err = unix.Preadv2(fd, v, off, flags) })
			return n, err
		},
		write:    unix.Write,
		pwrite:   unix.Pwrite,
		writev:   unix.Writev,
		pwritev:  unix.Pwritev,
		pwritev2: unix.Pwritev2,
		seek:     unix.Seek,
	}
}

func iovfsSys(p *vfs.Proc) sys {
	return sys{
		open: func(path string, flags int) (int, error) {
			fd, err := p.Open(path, flags, 0)
			return fd, unwrapErrno(err)
		},
		close:    p.Close,
		read:     p.Read,
		pread:    p.Pread,
		readv:    p.Readv,
		preadv:   p.Preadv,
		preadv2:  p.Preadv2,
		write:    p.Write,
		pwrite:   p.Pwrite,
		writev:   p.Writev,
		pwritev:  p.Pwritev,
		pwritev2: p.Pwritev2,
		seek:     p.Seek,
	}
}

func unwrapErrno(err error) error {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return err
}

// outcome is what one call returned, normalised for comparison.
type outcome struct {
	n     int64
	errno syscall.Errno
	bytes []byte // the buffers after a read, flattened
}

func (o outcome) String() string {
	if o.errno != 0 {
		return fmt.Sprintf("errno %d (%v)", int(o.errno), o.errno)
	}
	return fmt.Sprintf("n=%d bytes=%x", o.n, shorten(o.bytes))
}

func shorten(b []byte) []byte {
	if len(b) > 24 {
		return b[:24]
	}
	return b
}

func result(n int, err error) outcome {
	if err != nil {
		var e syscall.Errno
		if !errors.As(err, &e) {
			return outcome{errno: 9999}
		}
		return outcome{errno: e}
	}
	return outcome{n: int64(n)}
}

// vector shapes, built fresh for each call and filled with 0xAA so that
// zero-filling shows.
var shapes = []struct {
	name string
	lens []int
}{
	{"0 segments", nil},
	{"1 empty segment", []int{0}},
	{"1 segment", []int{7}},
	{"mixed empty and non-empty", []int{0, 3, 0, 0, 5, 0}},
	{"1024 segments", repeat(1024, 2)},
	{"1025 segments", repeat(1025, 2)},
}

func repeat(n, l int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = l
	}
	return v
}

func makeVec(lens []int) [][]byte {
	v := make([][]byte, len(lens))
	for i, l := range lens {
		v[i] = bytes.Repeat([]byte{0xAA}, l)
	}
	return v
}

func flat(v [][]byte) []byte { return bytes.Join(v, nil) }

type call struct {
	name string
	do   func(s sys, fd int) outcome
}

// calls lists every call of the family with each vector shape, offset and
// flag combination.
func calls() []call {
	var cs []call
	add := func(name string, do func(s sys, fd int) outcome) { cs = append(cs, call{name, do}) }
	for _, size := range []int{0, 1, 4096, 70000} {
		add(fmt.Sprintf("read %d", size), func(s sys, fd int) outcome {
			b := bytes.Repeat([]byte{0xAA}, size)
			o := result(s.read(fd, b))
			o.bytes = b
			return o
		})
		add(fmt.Sprintf("write %d", size), func(s sys, fd int) outcome {
			return result(s.write(fd, make([]byte, size)))
		})
		for _, off := range []int64{0, 12345, -1, -2} {
			add(fmt.Sprintf("pread %d at %d", size, off), func(s sys, fd int) outcome {
				b := bytes.Repeat([]byte{0xAA}, size)
				o := result(s.pread(fd, b, off))
				o.bytes = b
				return o
			})
			add(fmt.Sprintf("pwrite %d at %d", size, off), func(s sys, fd int) outcome {
				return result(s.pwrite(fd, make([]byte, size), off))
			})
		}
	}
	flagSets := []int{0, unix.RWF_HIPRI, unix.RWF_DSYNC, unix.RWF_SYNC, unix.RWF_NOWAIT, unix.RWF_APPEND, unix.RWF_NOAPPEND, 0x1000000, 1 << 30}
	for _, sh := range shapes {
		add("readv "+sh.name, func(s sys, fd int) outcome {
			v := makeVec(sh.lens)
			o := result(s.readv(fd, v))
			o.bytes = flat(v)
			return o
		})
		add("writev "+sh.name, func(s sys, fd int) outcome { return result(s.writev(fd, makeVec(sh.lens))) })
		for _, off := range []int64{0, 4096, -1, -7} {
			add(fmt.Sprintf("preadv %s at %d", sh.name, off), func(s sys, fd int) outcome {
				v := makeVec(sh.lens)
				o := result(s.preadv(fd, v, off))
				o.bytes = flat(v)
				return o
			})
			add(fmt.Sprintf("pwritev %s at %d", sh.name, off), func(s sys, fd int) outcome {
				return result(s.pwritev(fd, makeVec(sh.lens), off))
			})
			for _, fl := range flagSets {
				add(fmt.Sprintf("preadv2 %s at %d flags %#x", sh.name, off, fl), func(s sys, fd int) outcome {
					v := makeVec(sh.lens)
					o := result(s.preadv2(fd, v, off, fl))
					o.bytes = flat(v)
					return o
				})
				add(fmt.Sprintf("pwritev2 %s at %d flags %#x", sh.name, off, fl), func(s sys, fd int) outcome {
					return result(s.pwritev2(fd, makeVec(sh.lens), off, fl))
				})
			}
		}
	}
	for _, wh := range []int{unix.SEEK_SET, unix.SEEK_CUR, unix.SEEK_END, unix.SEEK_DATA, unix.SEEK_HOLE, 42} {
		for _, off := range []int64{0, 100, -100} {
			add(fmt.Sprintf("lseek %d whence %d", off, wh), func(s sys, fd int) outcome {
				pos, err := s.seek(fd, off, wh)
				return result(int(pos), err)
			})
		}
	}
	return cs
}

// TestDifferentialMemDevices runs every call on every device and access
// mode, and on a closed descriptor, on the host kernel and on iovfs.
func TestDifferentialMemDevices(t *testing.T) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	host, ours := hostSys(), iovfsSys(p)
	cases := 0
	modes := []struct {
		name  string
		flags int
	}{{"O_RDONLY", unix.O_RDONLY}, {"O_WRONLY", unix.O_WRONLY}, {"O_RDWR", unix.O_RDWR}}
	for _, dev := range []string{"/dev/null", "/dev/zero", "/dev/full"} {
		for _, m := range modes {
			for _, c := range calls() {
				hfd, err := host.open(dev, m.flags)
				if err != nil {
					t.Skipf("host %s: %v", dev, err)
				}
				ofd, err := ours.open(dev, m.flags)
				if err != nil {
					t.Fatalf("iovfs open %s: %v", dev, err)
				}
				want, got := c.do(host, hfd), c.do(ours, ofd)
				cases++
				if want.String() != got.String() || !bytes.Equal(want.bytes, got.bytes) {
					t.Errorf("%s %s %s: host %v, iovfs %v", dev, m.name, c.name, want, got)
				}
				host.close(hfd)
				ours.close(ofd)
				// The same call on the descriptor just closed.
				want, got = c.do(host, hfd), c.do(ours, ofd)
				cases++
				if want.String() != got.String() {
					t.Errorf("%s closed fd %s: host %v, iovfs %v", dev, c.name, want, got)
				}
			}
		}
	}
	t.Logf("%d differential cases", cases)
}
