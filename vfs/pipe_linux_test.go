package vfs_test

// Differential tests of pipes, FIFOs and poll: the same calls on the host
// kernel (through golang.org/x/sys/unix) and on iovfs, comparing counts,
// errnos, bytes, poll masks, FIONREAD and pipe sizes.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// pipeSys is one of the two systems under comparison.
type pipeSys interface {
	pipe2(flags int) (r, w int, err error)
	mkfifo(name string) error
	open(name string, flags int) (int, error)
	read(fd int, b []byte) (int, error)
	readv(fd int, v [][]byte) (int, error)
	write(fd int, b []byte) (int, error)
	writev(fd int, v [][]byte) (int, error)
	preadv2(fd int, v [][]byte, off int64, flags int) (int, error)
	pwritev2(fd int, v [][]byte, off int64, flags int) (int, error)
	close(fd int) error
	dup(fd int) (int, error)
	setfl(fd, flags int) error
	fcntl(fd, cmd, arg int) (int, error)
	fionread(fd int) (int, error)
	poll(fds []unix.PollFd, timeout int) (int, error)
	seek(fd int) error
	pread(fd int) error
	fstat(fd int) (string, error) // the fields that mean something for a pipe
}

type hostPipes struct{ dir string }

func (h hostPipes) pipe2(flags int) (int, int, error) {
	var p [2]int
	err := unix.Pipe2(p[:], flags)
	return p[0], p[1], err
}
func (h hostPipes) mkfifo(name string) error { return unix.Mkfifo(path.Join(h.dir, name), 0o644) }
func (h hostPipes) open(name string, flags int) (int, error) {
	return unix.Open(path.Join(h.dir, name), flags, 0)
}
func (hostPipes) read(fd int, b []byte) (int, error)    { return fixHost(unix.Read(fd, b)) }
func (hostPipes) readv(fd int, v [][]byte) (int, error) { return fixHost(unix.Readv(fd, v)) }
func (hostPipes) write(fd int, b []byte) (int, error)   { return fixHost(unix.Write(fd, b)) }
func (hostPipes) writev(fd int, v [][]byte) (int, error) {
	return fixHost(unix.Writev(fd, v))
}
func (hostPipes) preadv2(fd int, v [][]byte, off int64, flags int) (int, error) {
	return fixHost(unix.Preadv2(fd, v, off, flags))
}
func (hostPipes) pwritev2(fd int, v [][]byte, off int64, flags int) (int, error) {
	return fixHost(unix.Pwritev2(fd, v, off, flags))
}
func (hostPipes) close(fd int) error      { return unix.Close(fd) }
func (hostPipes) dup(fd int) (int, error) { return unix.Dup(fd) }
func (hostPipes) setfl(fd, flags int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags)
	return err
}
func (hostPipes) fionread(fd int) (int, error) { return fixHost(unix.IoctlGetInt(fd, unix.TIOCINQ)) }
func (hostPipes) fcntl(fd, cmd, arg int) (int, error) {
	return fixHost(unix.FcntlInt(uintptr(fd), cmd, arg))
}
func (hostPipes) poll(fds []unix.PollFd, timeout int) (int, error) { return unix.Poll(fds, timeout) }
func (hostPipes) seek(fd int) error                                { _, err := unix.Seek(fd, 0, 1); return err }
func (hostPipes) pread(fd int) error {
	_, err := unix.Pread(fd, make([]byte, 1), 0)
	return err
}
func (hostPipes) fstat(fd int) (string, error) {
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	return fmt.Sprintf("mode %#o nlink %d uid %d gid %d size %d blksize %d blocks %d", st.Mode, st.Nlink, st.Uid, st.Gid, st.Size, st.Blksize, st.Blocks), err
}

// fixHost turns x/sys/unix's -1 count on error into 0, as iovfs returns.
func fixHost(n int, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return n, nil
}

type vfsPipes struct{ p *vfs.Proc }

func (v vfsPipes) pipe2(flags int) (int, int, error) { return v.p.Pipe2(flags) }
func (v vfsPipes) mkfifo(name string) error {
	return unwrap(v.p.Mknod("/tmp/"+name, unix.S_IFIFO|0o644, 0))
}
func (v vfsPipes) read(fd int, b []byte) (int, error)     { return v.p.Read(fd, b) }
func (v vfsPipes) readv(fd int, b [][]byte) (int, error)  { return v.p.Readv(fd, b) }
func (v vfsPipes) write(fd int, b []byte) (int, error)    { return v.p.Write(fd, b) }
func (v vfsPipes) writev(fd int, b [][]byte) (int, error) { return v.p.Writev(fd, b) }
func (v vfsPipes) preadv2(fd int, b [][]byte, off int64, flags int) (int, error) {
	return v.p.Preadv2(fd, b, off, flags)
}
func (v vfsPipes) pwritev2(fd int, b [][]byte, off int64, flags int) (int, error) {
	return v.p.Pwritev2(fd, b, off, flags)
}
func (v vfsPipes) close(fd int) error      { return v.p.Close(fd) }
func (v vfsPipes) dup(fd int) (int, error) { return v.p.Dup(fd) }
func (v vfsPipes) setfl(fd, flags int) error {
	_, err := v.p.Fcntl(fd, unix.F_SETFL, flags)
	return err
}
func (v vfsPipes) fcntl(fd, cmd, arg int) (int, error) { return v.p.Fcntl(fd, cmd, arg) }
func (v vfsPipes) fionread(fd int) (int, error) {
	var n int
	_, err := v.p.Ioctl(fd, unix.TIOCINQ, &n)
	return n, err
}
func (v vfsPipes) poll(fds []unix.PollFd, timeout int) (int, error) { return v.p.Poll(fds, timeout) }
func (v vfsPipes) seek(fd int) error                                { _, err := v.p.Seek(fd, 0, 1); return err }
func (v vfsPipes) pread(fd int) error {
	_, err := v.p.Pread(fd, make([]byte, 1), 0)
	return err
}
func (v vfsPipes) fstat(fd int) (string, error) {
	st, err := v.p.Fstat(fd)
	return fmt.Sprintf("mode %#o nlink %d uid %d gid %d size %d blksize %d blocks %d", st.Mode, st.Nlink, st.Uid, st.Gid, st.Size, st.Blksize, st.Blocks), err
}
func (v vfsPipes) open(name string, flags int) (int, error) {
	fd, err := v.p.Open("/tmp/"+name, flags, 0)
	return fd, unwrap(err)
}

func unwrap(err error) error {
	if pe, ok := err.(interface{ Unwrap() error }); ok {
		return pe.Unwrap()
	}
	return err
}

// hostHasCapSysResource reports whether this process may grow a pipe past
// /proc/sys/fs/pipe-max-size; containers often drop the capability even
// for root.
func hostHasCapSysResource(t testing.TB) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			var caps uint64
			fmt.Sscanf(strings.TrimSpace(v), "%x", &caps)
			return caps&(1<<unix.CAP_SYS_RESOURCE) != 0
		}
	}
	return false
}

// pipeEnds are the ends a sequence has open: the same index names the
// same end on both systems.
type pipeEnd struct {
	host, ours int
	what       string
}

// seqRunner runs one random sequence on both systems.
type seqRunner struct {
	t      *testing.T
	rng    *rand.Rand
	h      pipeSys
	o      pipeSys
	ends   []pipeEnd
	fifos  []string
	seq    int
	log    []string
	pat    uint8
	failed bool
	// compared counts the results compared, and oks those that were
	// successes on both sides.
	compared, oks *int
}

func (s *seqRunner) fail(format string, a ...any) {
	if s.failed {
		return
	}
	s.failed = true
	s.t.Errorf("sequence %d diverged: %s\nsteps:\n  %s", s.seq, fmt.Sprintf(format, a...), strings.Join(s.log, "\n  "))
}

func (s *seqRunner) note(format string, a ...any) { s.log = append(s.log, fmt.Sprintf(format, a...)) }

func errnoOfErr(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if e, ok := unwrap(err).(syscall.Errno); ok {
		return e
	}
	return syscall.Errno(0xffff)
}

// same compares a count and an error from both systems.
func (s *seqRunner) same(op string, hn int, herr error, on int, oerr error) bool {
	*s.compared++
	he, oe := errnoOfErr(herr), errnoOfErr(oerr)
	s.note("%s -> %d %v", op, hn, herr)
	if hn != on || he != oe {
		s.fail("%s: Linux %d, %v; iovfs %d, %v", op, hn, herr, on, oerr)
		return false
	}
	if he == 0 {
		*s.oks++
	}
	return he == 0
}

func (s *seqRunner) fill(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		s.pat++
		b[i] = s.pat
	}
	return b
}

var writeSizes = []int{0, 1, 7, 100, 1000, 3000, 4095, 4096, 4097, 5000, 8192, 20000, 65536, 70000}

func (s *seqRunner) randSize() int {
	if s.rng.IntN(3) == 0 {
		return s.rng.IntN(9000)
	}
	return writeSizes[s.rng.IntN(len(writeSizes))]
}

func (s *seqRunner) segments(n int) []int {
	k := 1 + s.rng.IntN(8)
	sz := make([]int, k)
	for i := range n {
		sz[s.rng.IntN(k)]++
		_ = i
	}
	return sz
}

// pollEnd polls end i on the host with timeout 0 and returns its mask.
func (s *seqRunner) hostMask(i int) int16 {
	fds := []unix.PollFd{{Fd: int32(s.ends[i].host), Events: unix.POLLIN | unix.POLLOUT}}
	unix.Poll(fds, 0)
	return fds[0].Revents
}

func (s *seqRunner) newPipe() {
	flags := []int{0, unix.O_NONBLOCK, unix.O_DIRECT | unix.O_NONBLOCK, unix.O_CLOEXEC | unix.O_NONBLOCK, unix.O_APPEND}[s.rng.IntN(5)]
	hr, hw, herr := s.h.pipe2(flags)
	or, ow, oerr := s.o.pipe2(flags)
	if s.same(fmt.Sprintf("pipe2(%#x)", flags), 0, herr, 0, oerr) {
		s.ends = append(s.ends, pipeEnd{hr, or, "r"}, pipeEnd{hw, ow, "w"})
	}
}

func (s *seqRunner) newFIFOEnd() {
	if len(s.fifos) == 0 || s.rng.IntN(8) == 0 {
		name := fmt.Sprintf("f%d.%d", s.seq, len(s.fifos))
		if err := s.h.mkfifo(name); err != nil {
			s.t.Fatal(err)
		}
		if err := s.o.mkfifo(name); err != nil {
			s.t.Fatal(err)
		}
		s.fifos = append(s.fifos, name)
	}
	name := s.fifos[s.rng.IntN(len(s.fifos))]
	// Opens that cannot wait: O_NONBLOCK, or O_RDWR.
	flags := []int{unix.O_RDONLY | unix.O_NONBLOCK, unix.O_WRONLY | unix.O_NONBLOCK, unix.O_RDWR,
		unix.O_RDWR | unix.O_NONBLOCK, unix.O_WRONLY | unix.O_NONBLOCK | unix.O_DIRECT, unix.O_RDWR | unix.O_TRUNC}[s.rng.IntN(6)]
	hfd, herr := s.h.open(name, flags)
	ofd, oerr := s.o.open(name, flags)
	if s.same(fmt.Sprintf("open(%s, %#x)", name, flags), 0, herr, 0, oerr) {
		s.ends = append(s.ends, pipeEnd{hfd, ofd, "fifo" + fmt.Sprint(flags&unix.O_ACCMODE)})
	}
}

func (s *seqRunner) step() {
	if len(s.ends) == 0 {
		if s.rng.IntN(2) == 0 {
			s.newPipe()
		} else {
			s.newFIFOEnd()
		}
		return
	}
	i := s.rng.IntN(len(s.ends))
	e := s.ends[i]
	switch op := s.rng.IntN(100); {
	case op < 22: // write or writev
		n := s.randSize()
		data := s.fill(n)
		form, rwf, off := s.rng.IntN(3), s.rwfFlags(), s.rwfOffset()
		// A blocking write must not block the host: only a write of at
		// most PIPE_BUF into a pipe with a free buffer (POLLOUT), or one
		// that gets EPIPE (POLLERR), or on a non-blocking end, or with
		// RWF_NOWAIT.
		if m := s.hostMask(i); !(m&unix.POLLERR != 0 || (m&unix.POLLOUT != 0 && n <= 4096)) {
			if fl, _ := unix.FcntlInt(uintptr(e.host), unix.F_GETFL, 0); fl&unix.O_NONBLOCK == 0 &&
				(form != 2 || rwf&unix.RWF_NOWAIT == 0 || rwf&^rwfPipe != 0) {
				return
			}
		}
		if form == 2 {
			v := splitBy(data, s.segments(n))
			hn, herr := s.h.pwritev2(e.host, v, off, rwf)
			on, oerr := s.o.pwritev2(e.ours, v, off, rwf)
			s.same(fmt.Sprintf("pwritev2(%d:%s, %d, off %d, flags %#x)", i, e.what, n, off, rwf), hn, herr, on, oerr)
		} else if form == 0 {
			hn, herr := s.h.write(e.host, data)
			on, oerr := s.o.write(e.ours, data)
			s.same(fmt.Sprintf("write(%d:%s, %d)", i, e.what, n), hn, herr, on, oerr)
		} else {
			sz := s.segments(n)
			var v [][]byte
			off := 0
			for _, k := range sz {
				v = append(v, data[off:off+k])
				off += k
			}
			hn, herr := s.h.writev(e.host, v)
			on, oerr := s.o.writev(e.ours, v)
			s.same(fmt.Sprintf("writev(%d:%s, %v)", i, e.what, sz), hn, herr, on, oerr)
		}
	case op < 44: // read or readv
		n := s.randSize()
		form, rwf, off := s.rng.IntN(3), s.rwfFlags(), s.rwfOffset()
		if m := s.hostMask(i); m&(unix.POLLIN|unix.POLLHUP) == 0 {
			if fl, _ := unix.FcntlInt(uintptr(e.host), unix.F_GETFL, 0); fl&unix.O_NONBLOCK == 0 &&
				(form != 2 || rwf&unix.RWF_NOWAIT == 0 || rwf&^rwfPipe != 0) {
				return // would block
			}
		}
		hb, ob := make([]byte, n), make([]byte, n)
		var hn, on int
		var herr, oerr error
		var what string
		if form == 2 {
			sz := s.segments(n)
			hn, herr = s.h.preadv2(e.host, splitBy(hb, sz), off, rwf)
			on, oerr = s.o.preadv2(e.ours, splitBy(ob, sz), off, rwf)
			what = fmt.Sprintf("preadv2(%d:%s, %v, off %d, flags %#x)", i, e.what, sz, off, rwf)
		} else if form == 0 {
			hn, herr = s.h.read(e.host, hb)
			on, oerr = s.o.read(e.ours, ob)
			what = fmt.Sprintf("read(%d:%s, %d)", i, e.what, n)
		} else {
			sz := s.segments(n)
			split := func(b []byte) [][]byte {
				var v [][]byte
				off := 0
				for _, k := range sz {
					v = append(v, b[off:off+k])
					off += k
				}
				return v
			}
			hn, herr = s.h.readv(e.host, split(hb))
			on, oerr = s.o.readv(e.ours, split(ob))
			what = fmt.Sprintf("readv(%d:%s, %v)", i, e.what, sz)
		}
		if s.same(what, hn, herr, on, oerr) && !bytes.Equal(hb[:hn], ob[:on]) {
			s.fail("%s: bytes differ", what)
		}
	case op < 52: // poll every end
		hf := make([]unix.PollFd, len(s.ends)+1)
		ev := int16(unix.POLLIN | unix.POLLOUT | unix.POLLPRI)
		if s.rng.IntN(3) == 0 {
			ev = int16(s.rng.IntN(0x200))
		}
		for j, e := range s.ends {
			hf[j] = unix.PollFd{Fd: int32(e.host), Events: ev}
		}
		hf[len(s.ends)] = unix.PollFd{Fd: -1, Events: unix.POLLIN}
		of := make([]unix.PollFd, len(hf))
		copy(of, hf)
		for j, e := range s.ends {
			of[j].Fd = int32(e.ours)
		}
		hn, herr := s.h.poll(hf, 0)
		on, oerr := s.o.poll(of, 0)
		if s.same(fmt.Sprintf("poll(events %#x)", ev), hn, herr, on, oerr) {
			for j := range hf {
				if hf[j].Revents != of[j].Revents {
					s.fail("poll: end %d revents Linux %#x, iovfs %#x", j, hf[j].Revents, of[j].Revents)
				}
			}
		}
	case op < 58:
		hn, herr := s.h.fionread(e.host)
		on, oerr := s.o.fionread(e.ours)
		s.same(fmt.Sprintf("FIONREAD(%d:%s)", i, e.what), hn, herr, on, oerr)
	case op < 64:
		sizes := []int{0, 1, 4096, 8192, 12288, 16384, 65536, 100000, 1 << 20, 1<<20 + 1, -1, 1<<31 + 1}
		arg := sizes[s.rng.IntN(len(sizes))]
		hn, herr := s.h.fcntl(e.host, unix.F_SETPIPE_SZ, arg)
		on, oerr := s.o.fcntl(e.ours, unix.F_SETPIPE_SZ, arg)
		s.same(fmt.Sprintf("F_SETPIPE_SZ(%d:%s, %d)", i, e.what, arg), hn, herr, on, oerr)
		hn, herr = s.h.fcntl(e.host, unix.F_GETPIPE_SZ, 0)
		on, oerr = s.o.fcntl(e.ours, unix.F_GETPIPE_SZ, 0)
		s.same("F_GETPIPE_SZ", hn, herr, on, oerr)
	case op < 70:
		fl := []int{0, unix.O_NONBLOCK, unix.O_DIRECT, unix.O_DIRECT | unix.O_NONBLOCK}[s.rng.IntN(4)]
		herr := s.h.setfl(e.host, fl)
		oerr := s.o.setfl(e.ours, fl)
		s.same(fmt.Sprintf("F_SETFL(%d:%s, %#x)", i, e.what, fl), 0, herr, 0, oerr)
	case op < 76: // close
		herr := s.h.close(e.host)
		oerr := s.o.close(e.ours)
		s.same(fmt.Sprintf("close(%d:%s)", i, e.what), 0, herr, 0, oerr)
		s.ends = append(s.ends[:i], s.ends[i+1:]...)
	case op < 80:
		hfd, herr := s.h.dup(e.host)
		ofd, oerr := s.o.dup(e.ours)
		if s.same(fmt.Sprintf("dup(%d:%s)", i, e.what), 0, herr, 0, oerr) {
			s.ends = append(s.ends, pipeEnd{hfd, ofd, e.what})
		}
	case op < 84:
		s.same("lseek", 0, s.h.seek(e.host), 0, s.o.seek(e.ours))
		s.same("pread", 0, s.h.pread(e.host), 0, s.o.pread(e.ours))
		hs, herr := s.h.fstat(e.host)
		ost, oerr := s.o.fstat(e.ours)
		if s.same("fstat", 0, herr, 0, oerr) && hs != ost {
			s.fail("fstat(%d:%s): Linux %s, iovfs %s", i, e.what, hs, ost)
		}
	case op < 92:
		s.newPipe()
	default:
		s.newFIFOEnd()
	}
}

// rwfPipe are the RWF_* flags a pipe accepts (Linux FMODE_NOWAIT pipes,
// and .read_iter/.write_iter, take all of RWF_SUPPORTED but the atomic and
// uncached-buffer ones); the guards against a blocking host call only let
// through RWF_NOWAIT calls whose flags are all of these.
const rwfPipe = unix.RWF_HIPRI | unix.RWF_DSYNC | unix.RWF_SYNC | unix.RWF_NOWAIT | unix.RWF_APPEND | unix.RWF_NOAPPEND

// rwfFlags draws the flags of a preadv2 or pwritev2: mostly RWF_NOWAIT,
// alone or with others, sometimes none or an unknown bit.
func (s *seqRunner) rwfFlags() int {
	return []int{unix.RWF_NOWAIT, unix.RWF_NOWAIT, unix.RWF_NOWAIT | unix.RWF_HIPRI, unix.RWF_NOWAIT | unix.RWF_DSYNC,
		unix.RWF_NOWAIT | unix.RWF_APPEND, 0, unix.RWF_HIPRI, 0x1000}[s.rng.IntN(8)]
}

// rwfOffset draws preadv2's offset: -1 (the file position) mostly, and
// sometimes 0 or -2 (ESPIPE on a pipe).
func (s *seqRunner) rwfOffset() int64 {
	return []int64{-1, -1, -1, -1, 0, -2}[s.rng.IntN(6)]
}

// splitBy cuts b into segments of the sizes sz.
func splitBy(b []byte, sz []int) [][]byte {
	var v [][]byte
	off := 0
	for _, k := range sz {
		v = append(v, b[off:off+k])
		off += k
	}
	return v
}

// TestPipeKernel runs random sequences of pipe and FIFO calls on the host
// and on iovfs and compares every result.
func TestPipeKernel(t *testing.T) {
	seqs, steps := 300, 80
	if testing.Short() || raceEnabled {
		seqs = 60
	}
	restore := vfs.SetPipeCapable(hostHasCapSysResource(t))
	defer restore()
	dir := t.TempDir()
	compared, oks := 0, 0
	for seq := range seqs {
		p := newPipeProc(t)
		s := &seqRunner{t: t, rng: rand.New(rand.NewPCG(uint64(seq), 10)), h: hostPipes{dir}, o: vfsPipes{p}, seq: seq,
			compared: &compared, oks: &oks}
		for range steps {
			s.step()
			if s.failed {
				break
			}
		}
		for _, e := range s.ends {
			unix.Close(e.host)
		}
		if s.failed {
			break
		}
	}
	t.Logf("%d sequences, %d results compared, %d successes on both sides", seqs, compared, oks)
}

// blockingScenario runs f against one system and returns its transcript.
type blockingScenario struct {
	name string
	run  func(t *testing.T, s pipeSys) []string
}

func res(op string, n int, err error) string { return fmt.Sprintf("%s=%d/%v", op, n, errnoOfErr(err)) }

// waitsThen runs f in a goroutine and reports whether it was still
// running after a grace period, then waits for it after calling then.
func waitsThen(f func() string, then func()) (blockedFirst bool, result string) {
	done := make(chan string, 1)
	go func() { done <- f() }()
	b := blocked(done)
	then()
	return b, <-done
}

var blockingScenarios = []blockingScenario{
	{"read waits for a write", func(t *testing.T, s pipeSys) []string {
		r, w, _ := s.pipe2(0)
		defer s.close(r)
		defer s.close(w)
		b, out := waitsThen(func() string { n, err := s.read(r, make([]byte, 100)); return res("read", n, err) },
			func() { s.write(w, []byte("0123456789")) })
		return []string{fmt.Sprint(b), out}
	}},
	{"a waiting read takes part of a packet, the rest is dropped", func(t *testing.T, s pipeSys) []string {
		r, w, _ := s.pipe2(unix.O_DIRECT)
		defer s.close(r)
		defer s.close(w)
		b, out := waitsThen(func() string { n, err := s.read(r, make([]byte, 10)); return res("read", n, err) },
			func() { s.write(w, make([]byte, 5000)) })
		q, _ := s.fionread(r)
		n, err := s.read(r, make([]byte, 5000))
		return []string{fmt.Sprint(b), out, fmt.Sprint("queued ", q), res("next read", n, err)}
	}},
	{"a waiting readv takes a write across its segments, the rest stays queued", func(t *testing.T, s pipeSys) []string {
		r, w, _ := s.pipe2(0)
		defer s.close(r)
		defer s.close(w)
		v := [][]byte{make([]byte, 3), make([]byte, 0), make([]byte, 5)}
		b, out := waitsThen(func() string { n, err := s.readv(r, v); return res("readv", n, err) },
			func() { s.write(w, []byte("0123456789abc")) })
		q, _ := s.fionread(r)
		rest := make([]byte, 100)
		n, err := s.read(r, rest)
		return []string{fmt.Sprint(b), out, string(v[0]) + string(v[2]), fmt.Sprint("queued ", q), res("next read", n, err), string(rest[:n])}
	}},
	{"read waits for the last writer's close", func(t *testing.T, s pipeSys) []string {
		r, w, _ := s.pipe2(0)
		defer s.close(r)
		w2, _ := s.dup(w)
		s.close(w)
		b, out := waitsThen(func() string { n, err := s.read(r, make([]byte, 100)); return res("read", n, err) },
			func() { s.close(w2) })
		return []string{fmt.Sprint(b), out}
	}},
	{"write waits for room, then the reader's close", func(t *testing.T, s pipeSys) []string {
		r, w, _ := s.pipe2(0)
		defer s.close(w)
		b, out := waitsThen(func() string { n, err := s.write(w, make([]byte, 70000)); return res("write", n, err) },
			func() { s.close(r) })
		return []string{fmt.Sprint(b), out}
	}},
	{"atomic write waits whole", func(t *testing.T, s pipeSys) []string {
		r, w, _ := s.pipe2(0)
		defer s.close(r)
		defer s.close(w)
		for range 15 {
			s.write(w, make([]byte, 4096))
		}
		s.write(w, make([]byte, 4000)) // 96 bytes free in the last buffer
		b, out := waitsThen(func() string { n, err := s.write(w, make([]byte, 200)); return res("write", n, err) },
			func() { s.read(r, make([]byte, 4096)) })
		q, _ := s.fionread(r)
		return []string{fmt.Sprint(b), out, fmt.Sprint("queued ", q)}
	}},
	{"closing the reader's own descriptor", func(t *testing.T, s pipeSys) []string {
		r, w, _ := s.pipe2(0)
		defer s.close(w)
		b, out := waitsThen(func() string { n, err := s.read(r, make([]byte, 100)); return res("read", n, err) },
			func() {
				s.close(r)
				time.Sleep(20 * time.Millisecond)
				n, err := s.write(w, []byte("abc"))
				if n != 3 || err != nil {
					t.Errorf("write after close of a blocked reader's fd = %d, %v", n, err)
				}
			})
		n, err := s.write(w, []byte("x"))
		return []string{fmt.Sprint(b), out, res("write after", n, err)}
	}},
	{"FIFO O_RDONLY open waits for a writer", func(t *testing.T, s pipeSys) []string {
		name := fmt.Sprintf("blk%d", time.Now().UnixNano())
		s.mkfifo(name)
		var rfd int
		var wfd int
		b, out := waitsThen(func() string { fd, err := s.open(name, unix.O_RDONLY); rfd = fd; return res("open r", 0, err) },
			func() { wfd, _ = s.open(name, unix.O_WRONLY|unix.O_NONBLOCK) })
		n, err := s.write(wfd, []byte("hi"))
		m, err2 := s.read(rfd, make([]byte, 10))
		s.close(wfd)
		s.close(rfd)
		return []string{fmt.Sprint(b), out, res("write", n, err), res("read", m, err2)}
	}},
	{"FIFO O_WRONLY open waits for a reader", func(t *testing.T, s pipeSys) []string {
		name := fmt.Sprintf("blkw%d", time.Now().UnixNano())
		s.mkfifo(name)
		var wfd, rfd int
		b, out := waitsThen(func() string { fd, err := s.open(name, unix.O_WRONLY); wfd = fd; return res("open w", 0, err) },
			func() { rfd, _ = s.open(name, unix.O_RDONLY|unix.O_NONBLOCK) })
		// The reader opened with O_NONBLOCK before the writer existed;
		// the writer did exist when it returned: its close means POLLHUP.
		s.close(wfd)
		fds := []unix.PollFd{{Fd: int32(rfd), Events: unix.POLLIN}}
		n, err := s.poll(fds, 0)
		s.close(rfd)
		return []string{fmt.Sprint(b), out, res("poll", n, err), fmt.Sprintf("revents %#x", fds[0].Revents)}
	}},
	{"poll waits for an event and wakes every poller", func(t *testing.T, s pipeSys) []string {
		r, w, _ := s.pipe2(0)
		defer s.close(r)
		defer s.close(w)
		const pollers = 4
		done := make(chan string, pollers)
		for range pollers {
			go func() {
				fds := []unix.PollFd{{Fd: int32(r), Events: unix.POLLIN}}
				n, err := s.poll(fds, 10000)
				done <- fmt.Sprintf("%s %#x", res("poll", n, err), fds[0].Revents)
			}()
		}
		b := blocked(done)
		s.write(w, []byte("e"))
		out := []string{fmt.Sprint(b)}
		for range pollers {
			out = append(out, <-done)
		}
		return out
	}},
	{"poll on a full pipe waits for room", func(t *testing.T, s pipeSys) []string {
		r, w, _ := s.pipe2(unix.O_NONBLOCK)
		defer s.close(r)
		defer s.close(w)
		for {
			if _, err := s.write(w, make([]byte, 4096)); err != nil {
				break
			}
		}
		b, out := waitsThen(func() string {
			fds := []unix.PollFd{{Fd: int32(w), Events: unix.POLLOUT}}
			n, err := s.poll(fds, -1)
			return fmt.Sprintf("%s %#x", res("poll", n, err), fds[0].Revents)
		}, func() { s.read(r, make([]byte, 10)); s.read(r, make([]byte, 5000)) })
		return []string{fmt.Sprint(b), out}
	}},
	{"poll times out", func(t *testing.T, s pipeSys) []string {
		r, w, _ := s.pipe2(0)
		defer s.close(r)
		defer s.close(w)
		fds := []unix.PollFd{{Fd: int32(r), Events: unix.POLLIN}, {Fd: 999, Events: unix.POLLIN}}
		n, err := s.poll(fds[:1], 30)
		m, err2 := s.poll(fds, 30)
		return []string{res("poll", n, err), res("poll with a bad fd", m, err2), fmt.Sprintf("%#x %#x", fds[0].Revents, fds[1].Revents)}
	}},
}

// TestPipeBlockingKernel runs scenarios in which calls wait, on the host
// and on iovfs, and compares what waited and what each call returned.
func TestPipeBlockingKernel(t *testing.T) {
	checkGoroutines(t)
	dir := t.TempDir()
	for _, sc := range blockingScenarios {
		t.Run(sc.name, func(t *testing.T) {
			h := sc.run(t, hostPipes{dir})
			o := sc.run(t, vfsPipes{newPipeProc(t)})
			if strings.Join(h, "|") != strings.Join(o, "|") {
				t.Errorf("Linux %q\niovfs %q", h, o)
			}
		})
	}
}

// TestFIFOReadOnlyMountKernel opens a FIFO on a read-only mount: Linux
// refuses write access there only to regular files, directories and
// symlinks (sb_permission), so a FIFO opens for writing.
func TestFIFOReadOnlyMountKernel(t *testing.T) {
	testenv.RequireRoot(t, "mounting a host tmpfs and remounting it read-only")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	if err := unix.Mkfifo(path.Join(dir, "f"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	p := newPipeProc(t)
	for _, err := range []error{p.Mkdir("/tmp/src", 0o755), p.Mkdir("/tmp/ro", 0o755),
		p.Mknod("/tmp/src/f", unix.S_IFIFO|0o644, 0), p.Mount("/tmp/src", "/tmp/ro", "", unix.MS_BIND|unix.MS_RDONLY, "")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, flags := range []int{unix.O_WRONLY | unix.O_NONBLOCK, unix.O_RDWR, unix.O_RDWR | unix.O_TRUNC, unix.O_RDONLY | unix.O_NONBLOCK} {
		hfd, herr := unix.Open(path.Join(dir, "f"), flags, 0)
		ofd, oerr := p.Open("/tmp/ro/f", flags, 0)
		if errnoOfErr(herr) != errnoOfErr(oerr) {
			t.Errorf("open(%#x) on a read-only mount: Linux %v, iovfs %v", flags, herr, oerr)
		}
		if herr == nil {
			unix.Close(hfd)
		}
		if oerr == nil {
			p.Close(ofd)
		}
	}
}
