package vfs_test

// Differential test of splice, tee, vmsplice and sendfile: random
// sequences of calls on the host kernel (pipes, files of a tmpfs, /dev/null,
// /dev/zero, /dev/full) and on iovfs, comparing counts, errnos, offsets,
// and after every step the bytes queued in each pipe, the bytes and size
// of each file and each descriptor's file position.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"strings"
	"testing"
	"unsafe"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// spliceSys is one of the two systems a sequence runs on.
type spliceSys interface {
	pipe2(flags int) (r, w int, err error)
	open(name string, flags int) (int, error) // a file of the test's tmpfs, or a /dev name
	close(fd int) error
	read(fd int, b []byte) (int, error)
	write(fd int, b []byte) (int, error)
	pread(fd int, b []byte, off int64) (int, error)
	pwrite(fd int, b []byte, off int64) (int, error)
	ftruncate(fd int, size int64) error
	seek(fd int, off int64, whence int) (int64, error)
	fcntl(fd, cmd, arg int) (int, error)
	fionread(fd int) (int, error)
	preadv2(fd int, v [][]byte, off int64, flags int) (int, error)
	splice(rfd int, roff *int64, wfd int, woff *int64, n, flags int) (int64, error)
	tee(rfd, wfd, n, flags int) (int64, error)
	vmsplice(fd int, v [][]byte, flags int) (int, error)
	sendfile(out, in int, off *int64, n int) (int, error)
}

type hostSplice struct{ dir string }

func (hostSplice) pipe2(flags int) (int, int, error) {
	var p [2]int
	err := unix.Pipe2(p[:], flags|unix.O_CLOEXEC)
	return p[0], p[1], err
}
func (h hostSplice) open(name string, flags int) (int, error) {
	if !strings.HasPrefix(name, "/dev/") {
		name = path.Join(h.dir, name)
	}
	return unix.Open(name, flags|unix.O_CLOEXEC, 0o644)
}
func (hostSplice) close(fd int) error { return unix.Close(fd) }
func (hostSplice) read(fd int, b []byte) (n int, err error) {
	testenv.WithSignalsBlocked(func() { n, err = unix.Read(fd, b) })
	return fixHost(n, err)
}
func (hostSplice) write(fd int, b []byte) (int, error) { return fixHost(unix.Write(fd, b)) }
func (hostSplice) ftruncate(fd int, size int64) error  { return unix.Ftruncate(fd, size) }
func (hostSplice) fionread(fd int) (int, error)        { return fixHost(unix.IoctlGetInt(fd, unix.TIOCINQ)) }
func (hostSplice) sendfile(o, i int, off *int64, n int) (int, error) {
	var k int
	var err error
	testenv.WithSignalsBlocked(func() { k, err = unix.Sendfile(o, i, off, n) })
	return fixHost(k, err)
}
func (hostSplice) pread(fd int, b []byte, off int64) (int, error) {
	var n int
	var err error
	testenv.WithSignalsBlocked(func() { n, err = unix.Pread(fd, b, off) })
	return fixHost(n, err)
}
func (hostSplice) pwrite(fd int, b []byte, off int64) (int, error) {
	return fixHost(unix.Pwrite(fd, b, off))
}
func (hostSplice) seek(fd int, off int64, whence int) (int64, error) {
	n, err := unix.Seek(fd, off, whence)
	if err != nil {
		return 0, err
	}
	return n, nil
}
func (hostSplice) fcntl(fd, cmd, arg int) (int, error) {
	return fixHost(unix.FcntlInt(uintptr(fd), cmd, arg))
}
func (hostSplice) preadv2(fd int, v [][]byte, off int64, flags int) (int, error) {
	var n int
	var err error
	testenv.WithSignalsBlocked(func() { n, err = unix.Preadv2(fd, v, off, flags) })
	return fixHost(n, err)
}
func (hostSplice) splice(rfd int, roff *int64, wfd int, woff *int64, n, flags int) (int64, error) {
	var k int64
	var err error
	testenv.WithSignalsBlocked(func() { k, err = unix.Splice(rfd, roff, wfd, woff, n, flags) })
	if err != nil {
		return 0, err
	}
	return k, nil
}
func (hostSplice) tee(rfd, wfd, n, flags int) (int64, error) {
	var k int64
	var err error
	testenv.WithSignalsBlocked(func() { k, err = unix.Tee(rfd, wfd, n, flags) })
	if err != nil {
		return 0, err
	}
	return k, nil
}
func (hostSplice) vmsplice(fd int, v [][]byte, flags int) (int, error) {
	iovs := make([]unix.Iovec, len(v))
	for i, b := range v {
		if len(b) > 0 {
			iovs[i].Base = &b[0]
		}
		iovs[i].SetLen(len(b))
	}
	return fixHost(unix.Vmsplice(fd, iovs, flags))
}

type vfsSplice struct{ p *vfs.Proc }

func (v vfsSplice) pipe2(flags int) (int, int, error) { return v.p.Pipe2(flags | unix.O_CLOEXEC) }
func (v vfsSplice) open(name string, flags int) (int, error) {
	if !strings.HasPrefix(name, "/dev/") {
		name = "/tmp/" + name
	}
	fd, err := v.p.Open(name, flags|unix.O_CLOEXEC, 0o644)
	return fd, unwrap(err)
}
func (v vfsSplice) close(fd int) error                  { return v.p.Close(fd) }
func (v vfsSplice) read(fd int, b []byte) (int, error)  { return v.p.Read(fd, b) }
func (v vfsSplice) write(fd int, b []byte) (int, error) { return v.p.Write(fd, b) }
func (v vfsSplice) ftruncate(fd int, size int64) error  { return unwrap(v.p.Ftruncate(fd, size)) }
func (v vfsSplice) fionread(fd int) (int, error) {
	var n int
	_, err := v.p.Ioctl(fd, unix.TIOCINQ, &n)
	return n, err
}
func (v vfsSplice) sendfile(o, i int, off *int64, n int) (int, error) {
	return v.p.Sendfile(o, i, off, n)
}
func (v vfsSplice) pread(fd int, b []byte, off int64) (int, error)  { return v.p.Pread(fd, b, off) }
func (v vfsSplice) pwrite(fd int, b []byte, off int64) (int, error) { return v.p.Pwrite(fd, b, off) }
func (v vfsSplice) seek(fd int, off int64, whence int) (int64, error) {
	return v.p.Seek(fd, off, whence)
}
func (v vfsSplice) fcntl(fd, cmd, arg int) (int, error) { return v.p.Fcntl(fd, cmd, arg) }
func (v vfsSplice) preadv2(fd int, b [][]byte, off int64, flags int) (int, error) {
	return v.p.Preadv2(fd, b, off, flags)
}
func (v vfsSplice) splice(rfd int, roff *int64, wfd int, woff *int64, n, flags int) (int64, error) {
	return v.p.Splice(rfd, roff, wfd, woff, n, flags)
}
func (v vfsSplice) tee(rfd, wfd, n, flags int) (int64, error) { return v.p.Tee(rfd, wfd, n, flags) }
func (v vfsSplice) vmsplice(fd int, b [][]byte, flags int) (int, error) {
	return v.p.Vmsplice(fd, b, flags)
}

// Descriptor kinds in a sequence.
const (
	kPipeR = iota
	kPipeW
	kFile
	kDev
)

// spliceFd is one descriptor, open on both systems.
type spliceFd struct {
	host, ours int
	kind       int
	what       string
	pipe       int // index in spliceRun.pipes for pipe ends, -1-i for file i, -1 for devices
}

// splicePipe is one pipe; its ends are in fds while open.
type splicePipe struct{ r, w int } // indexes in fds, -1 once closed

type spliceRun struct {
	t        *testing.T
	rng      *rand.Rand
	h, o     spliceSys
	fds      []*spliceFd
	pipes    []*splicePipe
	files    []string  // names of the tmpfs files
	readers  [][2]int  // an O_RDONLY descriptor per file: host, ours
	scratch  [2][2]int // a 1 MiB pipe per system that pipe contents are teed into
	arena    [2][]byte // page-aligned memory vmsplice reads from, the same bytes on both
	seq      int
	log      []string
	failed   bool
	pat      byte
	compared *int
	oks      *int
}

func (s *spliceRun) note(format string, a ...any) { s.log = append(s.log, fmt.Sprintf(format, a...)) }

func (s *spliceRun) fail(format string, a ...any) {
	if s.failed {
		return
	}
	s.failed = true
	s.t.Errorf("sequence %d diverged: %s\nsteps:\n  %s", s.seq, fmt.Sprintf(format, a...), strings.Join(s.log, "\n  "))
}

func (s *spliceRun) same(op string, hn int64, herr error, on int64, oerr error) bool {
	*s.compared++
	s.note("%s -> %d %v", op, hn, herr)
	if hn != on || errnoOfErr(herr) != errnoOfErr(oerr) {
		s.fail("%s: Linux %d, %v; iovfs %d, %v", op, hn, herr, on, oerr)
		return false
	}
	if herr == nil {
		*s.oks++
	}
	return herr == nil
}

func (s *spliceRun) fill(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		s.pat++
		b[i] = s.pat
	}
	return b
}

func (s *spliceRun) add(fd *spliceFd) int {
	s.fds = append(s.fds, fd)
	return len(s.fds) - 1
}

func (s *spliceRun) newPipe() {
	flags := []int{0, unix.O_NONBLOCK, unix.O_NONBLOCK, unix.O_DIRECT | unix.O_NONBLOCK, unix.O_DIRECT}[s.rng.IntN(5)]
	hr, hw, herr := s.h.pipe2(flags)
	or, ow, oerr := s.o.pipe2(flags)
	if !s.same(fmt.Sprintf("pipe2(%#x)", flags), 0, herr, 0, oerr) {
		return
	}
	pi := len(s.pipes)
	name := fmt.Sprintf("p%d", pi)
	r := s.add(&spliceFd{hr, or, kPipeR, name + "r", pi})
	w := s.add(&spliceFd{hw, ow, kPipeW, name + "w", pi})
	s.pipes = append(s.pipes, &splicePipe{r, w})
}

func (s *spliceRun) newFile() {
	name := fmt.Sprintf("f%d", len(s.files))
	data := s.fill([]int{0, 100, 4096, 5000, 20000, 70000}[s.rng.IntN(6)])
	for i, sys := range []spliceSys{s.h, s.o} {
		fd, err := sys.open(name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL)
		if err != nil {
			s.t.Fatalf("create %s: %v", name, err)
		}
		if n, err := sys.write(fd, data); n != len(data) || err != nil {
			s.t.Fatalf("fill %s: %d, %v", name, n, err)
		}
		sys.close(fd)
		rd, err := sys.open(name, unix.O_RDONLY)
		if err != nil {
			s.t.Fatal(err)
		}
		if i == 0 {
			s.readers = append(s.readers, [2]int{rd, 0})
		} else {
			s.readers[len(s.readers)-1][1] = rd
		}
	}
	s.files = append(s.files, name)
	s.openFile(len(s.files) - 1)
}

func (s *spliceRun) openFile(i int) {
	flags := []int{unix.O_RDWR, unix.O_RDWR, unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR | unix.O_APPEND}[s.rng.IntN(5)]
	hfd, herr := s.h.open(s.files[i], flags)
	ofd, oerr := s.o.open(s.files[i], flags)
	if s.same(fmt.Sprintf("open(%s, %#x)", s.files[i], flags), 0, herr, 0, oerr) {
		s.add(&spliceFd{hfd, ofd, kFile, fmt.Sprintf("%s/%#x", s.files[i], flags), -1 - i})
	}
}

func (s *spliceRun) openDev() {
	name := []string{"/dev/null", "/dev/zero", "/dev/full"}[s.rng.IntN(3)]
	flags := []int{unix.O_RDWR, unix.O_RDONLY, unix.O_WRONLY}[s.rng.IntN(3)]
	hfd, herr := s.h.open(name, flags)
	ofd, oerr := s.o.open(name, flags)
	if s.same(fmt.Sprintf("open(%s, %#x)", name, flags), 0, herr, 0, oerr) {
		s.add(&spliceFd{hfd, ofd, kDev, fmt.Sprintf("%s/%#x", name, flags), -1})
	}
}

// pick returns a descriptor of one of the kinds (any, if none given),
// or nil.
func (s *spliceRun) pick(kinds ...int) *spliceFd {
	var c []*spliceFd
	for _, f := range s.fds {
		if f == nil {
			continue
		}
		if len(kinds) == 0 {
			c = append(c, f)
			continue
		}
		for _, k := range kinds {
			if f.kind == k {
				c = append(c, f)
			}
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[s.rng.IntN(len(c))]
}

// hostPoll returns fd's readiness on the host.
func hostPoll(fd int, ev int16) int16 {
	p := []unix.PollFd{{Fd: int32(fd), Events: ev}}
	unix.Poll(p, 0)
	return p[0].Revents
}

func hostNonblock(fd int) bool {
	fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return fl&unix.O_NONBLOCK != 0
}

// waitsIn and waitsOut report whether a call reading from (writing to) f
// would wait on the host: a pipe read end that is empty with a writer, a
// write end that is full with a reader.
func waitsIn(f *spliceFd) bool {
	return f.kind == kPipeR && hostPoll(f.host, unix.POLLIN)&(unix.POLLIN|unix.POLLHUP) == 0
}
func waitsOut(f *spliceFd) bool {
	return f.kind == kPipeW && hostPoll(f.host, unix.POLLOUT)&(unix.POLLOUT|unix.POLLERR) == 0
}

var spliceLens = []int{0, 1, 100, 4095, 4096, 4097, 10000, 65536, 1 << 20, -1}

func (s *spliceRun) randLen() int { return spliceLens[s.rng.IntN(len(spliceLens))] }

func (s *spliceRun) randFlags() int {
	return []int{0, 0, unix.SPLICE_F_NONBLOCK, unix.SPLICE_F_NONBLOCK, unix.SPLICE_F_MOVE, unix.SPLICE_F_MORE | unix.SPLICE_F_NONBLOCK,
		unix.SPLICE_F_GIFT, 0x10}[s.rng.IntN(8)]
}

// randOff returns nil (the file position) or an offset pointer, the same
// value for both systems.
func (s *spliceRun) randOff() (*int64, *int64) {
	if s.rng.IntN(3) != 0 {
		return nil, nil
	}
	v := []int64{0, 1, 100, 4096, 5000, 70000, -1, 1 << 62}[s.rng.IntN(8)]
	a, b := v, v
	return &a, &b
}

func offStr(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func (s *spliceRun) sameOff(op string, h, o *int64) {
	if h != nil && *h != *o {
		s.fail("%s: offset after: Linux %d, iovfs %d", op, *h, *o)
	}
}

func (s *spliceRun) step() {
	switch op := s.rng.IntN(100); {
	case op < 4:
		s.newPipe()
	case op < 6:
		s.newFile()
	case op < 8:
		if len(s.files) > 0 {
			s.openFile(s.rng.IntN(len(s.files)))
		}
	case op < 9:
		s.openDev()
	case op < 33: // splice, mostly between a pipe and something else
		var in, out *spliceFd
		switch s.rng.IntN(5) {
		case 0:
			in, out = s.pick(kFile, kDev), s.pick(kPipeW)
		case 1:
			in, out = s.pick(kPipeR), s.pick(kFile, kDev)
		case 2:
			in, out = s.pick(kPipeR), s.pick(kPipeW)
		default:
			in, out = s.pick(), s.pick()
		}
		if in == nil || out == nil {
			return
		}
		n, flags := s.randLen(), s.randFlags()
		nb := flags&unix.SPLICE_F_NONBLOCK != 0
		if waitsIn(in) && !nb && !hostNonblock(in.host) || waitsOut(out) && !nb && !hostNonblock(out.host) {
			return
		}
		hro, oro := s.randOff()
		hwo, owo := s.randOff()
		what := fmt.Sprintf("splice(%s, %s, %s, %s, %d, %#x)", in.what, offStr(hro), out.what, offStr(hwo), n, flags)
		hn, herr := s.h.splice(in.host, hro, out.host, hwo, n, flags)
		on, oerr := s.o.splice(in.ours, oro, out.ours, owo, n, flags)
		if s.same(what, hn, herr, on, oerr) {
			s.sameOff(what+" in", hro, oro)
			s.sameOff(what+" out", hwo, owo)
		}
	case op < 40: // tee
		in, out := s.pick(kPipeR), s.pick(kPipeW)
		if s.rng.IntN(5) == 0 {
			in, out = s.pick(), s.pick()
		}
		if in == nil || out == nil {
			return
		}
		n, flags := s.randLen(), s.randFlags()
		nb := flags&unix.SPLICE_F_NONBLOCK != 0 || hostNonblock(in.host) || hostNonblock(out.host)
		if (waitsIn(in) || waitsOut(out)) && !nb {
			return
		}
		hn, herr := s.h.tee(in.host, out.host, n, flags)
		on, oerr := s.o.tee(in.ours, out.ours, n, flags)
		s.same(fmt.Sprintf("tee(%s, %s, %d, %#x)", in.what, out.what, n, flags), hn, herr, on, oerr)
	case op < 48: // vmsplice
		f := s.pick(kPipeW, kPipeR)
		if s.rng.IntN(6) == 0 {
			f = s.pick()
		}
		if f == nil {
			return
		}
		flags := s.randFlags()
		if flags&unix.SPLICE_F_NONBLOCK == 0 && (waitsIn(f) || waitsOut(f)) {
			return
		}
		k := s.rng.IntN(4)
		var hv, ov [][]byte
		var sizes []string
		// Reads go to fresh memory: the arena may be queued in the pipe.
		ha, oa := s.arena[0], s.arena[1]
		if f.kind == kPipeR {
			ha, oa = alignedArena(len(ha)), alignedArena(len(oa))
		}
		for range k {
			off := s.rng.IntN(len(ha) / 2)
			n := []int{0, 1, 100, 4000, 4096, 9000}[s.rng.IntN(6)]
			hv = append(hv, ha[off:off+n])
			ov = append(ov, oa[off:off+n])
			sizes = append(sizes, fmt.Sprintf("%d@%d", n, off))
		}
		hn, herr := s.h.vmsplice(f.host, hv, flags)
		on, oerr := s.o.vmsplice(f.ours, ov, flags)
		what := fmt.Sprintf("vmsplice(%s, %v, %#x)", f.what, sizes, flags)
		if s.same(what, int64(hn), herr, int64(on), oerr) && f.kind == kPipeR {
			// Read into the arena: compare what landed there.
			for i := range hv {
				if !bytes.Equal(hv[i], ov[i]) {
					s.fail("%s: bytes read differ", what)
				}
			}
		}
	case op < 51: // change the arena: buffers vmspliced from it show the change
		off := s.rng.IntN(len(s.arena[0]) - 100)
		b := s.fill(100)
		copy(s.arena[0][off:], b)
		copy(s.arena[1][off:], b)
		s.note("arena[%d:%d] changed", off, off+100)
	case op < 60: // sendfile
		out, in := s.pick(kPipeW, kFile, kDev), s.pick(kFile, kDev)
		if s.rng.IntN(5) == 0 {
			out, in = s.pick(), s.pick()
		}
		if in == nil || out == nil {
			return
		}
		if waitsOut(out) && !hostNonblock(out.host) {
			return
		}
		if in.kind == kFile && in.pipe == out.pipe {
			// A copy of a file into itself over overlapping ranges
			// reads bytes as it writes them: what it reads then
			// depends on Linux's copy routine.
			return
		}
		n := s.randLen()
		ho, oo := s.randOff()
		what := fmt.Sprintf("sendfile(%s, %s, %s, %d)", out.what, in.what, offStr(ho), n)
		hn, herr := s.h.sendfile(out.host, in.host, ho, n)
		on, oerr := s.o.sendfile(out.ours, in.ours, oo, n)
		if s.same(what, int64(hn), herr, int64(on), oerr) {
			s.sameOff(what, ho, oo)
		}
	case op < 70: // write to a pipe
		f := s.pick(kPipeW)
		if f == nil {
			return
		}
		n := []int{1, 100, 4096, 5000, 30000}[s.rng.IntN(5)]
		if m := hostPoll(f.host, unix.POLLOUT); !(m&unix.POLLERR != 0 || m&unix.POLLOUT != 0 && n <= 4096) && !hostNonblock(f.host) {
			return
		}
		b := s.fill(n)
		hn, herr := s.h.write(f.host, b)
		on, oerr := s.o.write(f.ours, b)
		s.same(fmt.Sprintf("write(%s, %d)", f.what, n), int64(hn), herr, int64(on), oerr)
	case op < 78: // read from a pipe
		f := s.pick(kPipeR)
		if f == nil || waitsIn(f) && !hostNonblock(f.host) {
			return
		}
		n := []int{1, 100, 4096, 5000, 70000}[s.rng.IntN(5)]
		hb, ob := make([]byte, n), make([]byte, n)
		hn, herr := s.h.read(f.host, hb)
		on, oerr := s.o.read(f.ours, ob)
		what := fmt.Sprintf("read(%s, %d)", f.what, n)
		if s.same(what, int64(hn), herr, int64(on), oerr) && !bytes.Equal(hb[:hn], ob[:on]) {
			s.fail("%s: bytes differ", what)
		}
	case op < 83: // change a file: bytes spliced from it by reference show the change
		f := s.pick(kFile)
		if f == nil {
			return
		}
		off := []int64{0, 50, 4000, 4096, 10000, 69000}[s.rng.IntN(6)]
		b := s.fill([]int{1, 100, 5000}[s.rng.IntN(3)])
		hn, herr := s.h.pwrite(f.host, b, off)
		on, oerr := s.o.pwrite(f.ours, b, off)
		s.same(fmt.Sprintf("pwrite(%s, %d, %d)", f.what, len(b), off), int64(hn), herr, int64(on), oerr)
	case op < 87: // move a file position
		f := s.pick(kFile)
		if f == nil {
			return
		}
		off := []int64{0, 1, 4096, 5000, 70000, 1 << 40}[s.rng.IntN(6)]
		hn, herr := s.h.seek(f.host, off, unix.SEEK_SET)
		on, oerr := s.o.seek(f.ours, off, unix.SEEK_SET)
		s.same(fmt.Sprintf("lseek(%s, %d)", f.what, off), hn, herr, on, oerr)
	case op < 90: // F_SETPIPE_SZ
		f := s.pick(kPipeR, kPipeW)
		if f == nil {
			return
		}
		sz := []int{4096, 8192, 16384, 65536, 262144}[s.rng.IntN(5)]
		hn, herr := s.h.fcntl(f.host, unix.F_SETPIPE_SZ, sz)
		on, oerr := s.o.fcntl(f.ours, unix.F_SETPIPE_SZ, sz)
		s.same(fmt.Sprintf("F_SETPIPE_SZ(%s, %d)", f.what, sz), int64(hn), herr, int64(on), oerr)
	case op < 93: // O_NONBLOCK on or off
		f := s.pick(kPipeR, kPipeW)
		if f == nil {
			return
		}
		fl := []int{0, unix.O_NONBLOCK}[s.rng.IntN(2)]
		_, herr := s.h.fcntl(f.host, unix.F_SETFL, fl)
		_, oerr := s.o.fcntl(f.ours, unix.F_SETFL, fl)
		s.same(fmt.Sprintf("F_SETFL(%s, %#x)", f.what, fl), 0, herr, 0, oerr)
	case op < 96: // preadv2 with RWF_NOWAIT: refused on a spliced pipe end
		f := s.pick(kPipeR)
		if f == nil {
			return
		}
		hb, ob := make([]byte, 10), make([]byte, 10)
		hn, herr := s.h.preadv2(f.host, [][]byte{hb}, -1, unix.RWF_NOWAIT)
		on, oerr := s.o.preadv2(f.ours, [][]byte{ob}, -1, unix.RWF_NOWAIT)
		what := fmt.Sprintf("preadv2(%s, RWF_NOWAIT)", f.what)
		if s.same(what, int64(hn), herr, int64(on), oerr) && !bytes.Equal(hb[:hn], ob[:on]) {
			s.fail("%s: bytes differ", what)
		}
	default: // close a pipe end, or a file descriptor
		f := s.pick()
		if f == nil || f.kind == kFile && s.rng.IntN(2) == 0 {
			return
		}
		herr, oerr := s.h.close(f.host), s.o.close(f.ours)
		s.same(fmt.Sprintf("close(%s)", f.what), 0, herr, 0, oerr)
		for i, g := range s.fds {
			if g == f {
				s.fds[i] = nil
			}
		}
	}
}

// check compares what each pipe holds (teed into the scratch pipe and
// read back), each file's bytes, and each descriptor's position.
func (s *spliceRun) check() {
	for _, f := range s.fds {
		if s.failed {
			return
		}
		if f == nil {
			continue
		}
		switch f.kind {
		case kPipeR:
			hq, herr := s.h.fionread(f.host)
			oq, oerr := s.o.fionread(f.ours)
			if hq != oq || errnoOfErr(herr) != errnoOfErr(oerr) {
				s.fail("FIONREAD(%s): Linux %d, %v; iovfs %d, %v", f.what, hq, herr, oq, oerr)
				return
			}
			if hq == 0 {
				continue
			}
			hb, ob := s.contents(s.h, 0, f.host), s.contents(s.o, 1, f.ours)
			if !bytes.Equal(hb, ob) {
				s.fail("contents of %s differ: Linux %d bytes, iovfs %d (first difference at %d)", f.what, len(hb), len(ob), firstDiff(hb, ob))
				return
			}
		case kFile:
			hp, herr := s.h.seek(f.host, 0, unix.SEEK_CUR)
			op, oerr := s.o.seek(f.ours, 0, unix.SEEK_CUR)
			if hp != op || errnoOfErr(herr) != errnoOfErr(oerr) {
				s.fail("position of %s: Linux %d, iovfs %d", f.what, hp, op)
				return
			}
		}
	}
	for i, name := range s.files {
		hb, ob := make([]byte, 300000), make([]byte, 300000)
		hn, _ := s.h.pread(s.readers[i][0], hb, 0)
		on, _ := s.o.pread(s.readers[i][1], ob, 0)
		if !bytes.Equal(hb[:hn], ob[:on]) {
			s.fail("file %s: Linux %d bytes, iovfs %d (first difference at %d)", name, hn, on, firstDiff(hb[:hn], ob[:on]))
			return
		}
	}
}

// contents returns the bytes queued in the pipe read end fd without
// consuming them: a tee into the scratch pipe, read back.
func (s *spliceRun) contents(sys spliceSys, i, fd int) []byte {
	n, err := sys.tee(fd, s.scratch[i][1], 1<<30, unix.SPLICE_F_NONBLOCK)
	if err != nil || n == 0 {
		return nil
	}
	b := make([]byte, n)
	got := 0
	for got < int(n) {
		k, err := sys.read(s.scratch[i][0], b[got:])
		if err != nil || k == 0 {
			break
		}
		got += k
	}
	return b[:got]
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// alignedArena returns n bytes starting at a page boundary.
func alignedArena(n int) []byte {
	b := make([]byte, n+4096)
	off := int(4096 - uintptr(unsafe.Pointer(&b[0]))&4095)
	return b[off : off+n : off+n]
}

// spliceHostDir returns a directory on a tmpfs for the host's files:
// t.TempDir if it is one, else a private tmpfs mounted there (root), else
// one under /dev/shm.
func spliceHostDir(t *testing.T) string {
	dir := t.TempDir()
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC {
		return dir
	}
	if os.Geteuid() == 0 && unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m") == nil {
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
		return dir
	}
	d, err := os.MkdirTemp("/dev/shm", "iovfs-splice-")
	if err != nil {
		t.Skipf("no tmpfs for the host side: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestSpliceKernel runs random sequences of splice, tee, vmsplice,
// sendfile and the calls around them on the host and on iovfs, and
// compares every result and the state after every step.
func TestSpliceKernel(t *testing.T) {
	seqs, steps := 200, 60 // IOVFS_LONG=1; a quick sample otherwise
	if testenv.Quick() || raceEnabled {
		seqs = 40
	}
	restore := vfs.SetPipeCapable(hostHasCapSysResource(t))
	defer restore()
	compared, oks := 0, 0
	for seq := range seqs {
		dir := path.Join(spliceHostDir(t), fmt.Sprint(seq))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := newPipeProc(t)
		s := &spliceRun{t: t, rng: rand.New(rand.NewPCG(uint64(seq), 30)), h: hostSplice{dir}, o: vfsSplice{p},
			seq: seq, compared: &compared, oks: &oks}
		s.arena[0], s.arena[1] = alignedArena(64<<10), alignedArena(64<<10)
		fill := s.fill(64 << 10)
		copy(s.arena[0], fill)
		copy(s.arena[1], fill)
		for i, sys := range []spliceSys{s.h, s.o} {
			r, w, err := sys.pipe2(unix.O_NONBLOCK)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sys.fcntl(w, unix.F_SETPIPE_SZ, 1<<20); err != nil {
				t.Fatal(err)
			}
			s.scratch[i] = [2]int{r, w}
		}
		s.newPipe()
		s.newFile()
		for range steps {
			s.step()
			s.check()
			if s.failed {
				break
			}
		}
		for _, f := range s.fds {
			if f != nil {
				unix.Close(f.host)
			}
		}
		for _, r := range s.readers {
			unix.Close(r[0])
		}
		unix.Close(s.scratch[0][0])
		unix.Close(s.scratch[0][1])
		if s.failed {
			break
		}
	}
	t.Logf("%d sequences of %d steps, %d results compared, %d successes on both sides", seqs, steps, compared, oks)
}
