package vfs_test

import (
	"bytes"
	"errors"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func newPipeProc(t testing.TB) *vfs.Proc {
	t.Helper()
	p, err := iovfs.New(iovfs.WithRAMDisks(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func pipe2(t testing.TB, p *vfs.Proc, flags int) (int, int) {
	t.Helper()
	r, w, err := p.Pipe2(flags)
	if err != nil {
		t.Fatalf("Pipe2(%#x): %v", flags, err)
	}
	return r, w
}

// checkGoroutines fails t if more goroutines run at its end than at its
// start, after giving finished ones up to 10 s to exit (a loaded machine
// can take long to schedule them).
func checkGoroutines(t *testing.T) {
	t.Helper()
	newPipeProc(t) // tmpfs starts its clock goroutine once per process
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		var now int
		for range 1000 {
			if now = runtime.NumGoroutine(); now <= before {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutines leaked: %d at start, %d at end\n%s", before, now, buf)
	})
}

// blocked reports whether the goroutine that will send on done has not
// sent within a short grace period: proof that it waits, not a timing.
func blocked[T any](done <-chan T) bool {
	select {
	case <-done:
		return false
	case <-time.After(50 * time.Millisecond):
		return true
	}
}

type rwResult struct {
	n   int
	err error
	buf []byte
}

func TestPipe2Flags(t *testing.T) {
	p := newPipeProc(t)
	for _, c := range []struct {
		flags int
		err   error
	}{
		{0, nil},
		{unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_DIRECT, nil},
		{unix.O_APPEND, syscall.EINVAL},
		{unix.O_RDWR, syscall.EINVAL},
		{unix.O_EXCL, syscall.ENOPKG}, // O_NOTIFICATION_PIPE without CONFIG_WATCH_QUEUE
	} {
		r, w, err := p.Pipe2(c.flags)
		if err != c.err {
			t.Errorf("Pipe2(%#x) = %v, want %v", c.flags, err, c.err)
		}
		if err == nil {
			if w != r+1 {
				t.Errorf("Pipe2 fds %d, %d: want consecutive lowest", r, w)
			}
			p.Close(r)
			p.Close(w)
		}
	}
}

func TestPipeStatAndSeek(t *testing.T) {
	p := newPipeProc(t)
	r, w := pipe2(t, p, 0)
	for _, fd := range []int{r, w} {
		st, err := p.Fstat(fd)
		if err != nil || st.Mode != unix.S_IFIFO|0o600 || st.Nlink != 1 || st.Size != 0 || st.Blksize != 4096 {
			t.Errorf("Fstat(%d) = %+v, %v", fd, st, err)
		}
		if _, err := p.Seek(fd, 0, unix.SEEK_CUR); err != syscall.ESPIPE {
			t.Errorf("Seek: %v, want ESPIPE", err)
		}
	}
	if _, err := p.Pread(r, make([]byte, 1), 0); err != syscall.ESPIPE {
		t.Errorf("Pread: %v", err)
	}
	if _, err := p.Pwrite(w, []byte{1}, 0); err != syscall.ESPIPE {
		t.Errorf("Pwrite: %v", err)
	}
	if _, err := p.Read(w, make([]byte, 1)); err != syscall.EBADF {
		t.Errorf("Read of write end: %v", err)
	}
	if _, err := p.Write(r, []byte{1}); err != syscall.EBADF {
		t.Errorf("Write to read end: %v", err)
	}
	st1, _ := p.Fstat(r)
	r2, w2 := pipe2(t, p, 0)
	st2, _ := p.Fstat(r2)
	if st1.Ino == st2.Ino {
		t.Errorf("two pipes share inode %d", st1.Ino)
	}
	for _, fd := range []int{r, w, r2, w2} {
		p.Close(fd)
	}
}

func TestPipeReadWriteEOFAndEPIPE(t *testing.T) {
	p := newPipeProc(t)
	r, w := pipe2(t, p, 0)
	if n, err := p.Writev(w, [][]byte{[]byte("hel"), nil, []byte("lo")}); n != 5 || err != nil {
		t.Fatalf("Writev = %d, %v", n, err)
	}
	var q int
	if _, err := p.Ioctl(r, unix.TIOCINQ, &q); err != nil || q != 5 {
		t.Fatalf("FIONREAD = %d, %v", q, err)
	}
	a, b := make([]byte, 2), make([]byte, 10)
	if n, err := p.Readv(r, [][]byte{a, b}); n != 5 || err != nil || string(a)+string(b[:3]) != "hello" {
		t.Fatalf("Readv = %d, %v, %q %q", n, err, a, b)
	}
	if err := p.Close(w); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Read(r, b); n != 0 || err != nil {
		t.Fatalf("Read after last writer closed = %d, %v; want 0, nil", n, err)
	}
	r, w = pipe2(t, p, 0)
	p.Close(r)
	if n, err := p.Write(w, nil); n != 0 || err != nil {
		t.Fatalf("empty Write with no reader = %d, %v; want 0, nil", n, err)
	}
	if n, err := p.Write(w, []byte("x")); n != 0 || err != syscall.EPIPE {
		t.Fatalf("Write with no reader = %d, %v; want EPIPE", n, err)
	}
	p.Close(w)
}

func TestPipeBlockingRead(t *testing.T) {
	checkGoroutines(t)
	p := newPipeProc(t)
	r, w := pipe2(t, p, 0)
	done := make(chan rwResult)
	read := func() {
		b := make([]byte, 100)
		n, err := p.Read(r, b)
		done <- rwResult{n, err, b[:n]}
	}
	go read()
	if !blocked(done) {
		t.Fatal("read of an empty pipe did not wait")
	}
	p.Write(w, []byte("wake"))
	if res := <-done; res.n != 4 || string(res.buf) != "wake" {
		t.Fatalf("woken read = %d, %v, %q", res.n, res.err, res.buf)
	}
	go read()
	if !blocked(done) {
		t.Fatal("read did not wait")
	}
	p.Close(w)
	if res := <-done; res.n != 0 || res.err != nil {
		t.Fatalf("read woken by the last writer's close = %d, %v", res.n, res.err)
	}
	p.Close(r)
}

// TestPipeCloseOwnFDWhileBlocked closes the descriptor a read waits on: as
// in Linux, the read keeps its reference to the open file and goes on
// waiting, the pipe keeps its reader (a write succeeds), and the read
// end is released when the read returns.
func TestPipeCloseOwnFDWhileBlocked(t *testing.T) {
	checkGoroutines(t)
	p := newPipeProc(t)
	r, w := pipe2(t, p, 0)
	done := make(chan rwResult)
	go func() {
		b := make([]byte, 10)
		n, err := p.Read(r, b)
		done <- rwResult{n, err, b[:n]}
	}()
	if !blocked(done) {
		t.Fatal("read did not wait")
	}
	if err := p.Close(r); err != nil {
		t.Fatal(err)
	}
	if !blocked(done) {
		t.Fatal("closing the descriptor ended the blocked read")
	}
	if n, err := p.Write(w, []byte("late")); n != 4 || err != nil {
		t.Fatalf("write while the closed descriptor's read waits = %d, %v; want 4, nil", n, err)
	}
	if res := <-done; res.n != 4 || string(res.buf) != "late" {
		t.Fatalf("read = %d, %v, %q", res.n, res.err, res.buf)
	}
	if n, err := p.Write(w, []byte("x")); n != 0 || err != syscall.EPIPE {
		t.Fatalf("write after the read returned = %d, %v; want EPIPE", n, err)
	}
	p.Close(w)
}

func TestPipeBlockingWrite(t *testing.T) {
	checkGoroutines(t)
	p := newPipeProc(t)
	r, w := pipe2(t, p, 0)
	big := bytes.Repeat([]byte{'a'}, 65536+100)
	done := make(chan rwResult)
	go func() {
		n, err := p.Write(w, big)
		done <- rwResult{n: n, err: err}
	}()
	if !blocked(done) {
		t.Fatal("a write larger than the pipe did not wait")
	}
	got := 0
	b := make([]byte, 8192)
	for got < len(big) {
		n, err := p.Read(r, b)
		if err != nil || n == 0 {
			t.Fatalf("read = %d, %v", n, err)
		}
		got += n
	}
	if res := <-done; res.n != len(big) || res.err != nil {
		t.Fatalf("write = %d, %v", res.n, res.err)
	}
	// A writer blocked on a full pipe gets its partial count when the
	// last reader closes, and EPIPE when it had written nothing.
	go func() {
		n, err := p.Write(w, big)
		done <- rwResult{n: n, err: err}
	}()
	if !blocked(done) {
		t.Fatal("write did not wait")
	}
	p.Close(r)
	if res := <-done; res.n != 65536 || res.err != nil {
		t.Fatalf("write woken by the reader's close = %d, %v; want 65536, nil", res.n, res.err)
	}
	p.Close(w)
}

func TestPipeNonblock(t *testing.T) {
	p := newPipeProc(t)
	r, w := pipe2(t, p, unix.O_NONBLOCK)
	if _, err := p.Read(r, make([]byte, 1)); err != syscall.EAGAIN {
		t.Fatalf("read of empty pipe: %v, want EAGAIN", err)
	}
	page := make([]byte, 4096)
	for i := range 16 {
		if n, err := p.Write(w, page); n != 4096 || err != nil {
			t.Fatalf("write %d = %d, %v", i, n, err)
		}
	}
	if n, err := p.Write(w, []byte{1}); n != 0 || err != syscall.EAGAIN {
		t.Fatalf("write to a full pipe = %d, %v; want EAGAIN", n, err)
	}
	// Free one slot: a large write writes what fits.
	p.Read(r, page)
	if n, err := p.Write(w, make([]byte, 10000)); n != 4096 || err != nil {
		t.Fatalf("large write with one free slot = %d, %v; want 4096", n, err)
	}
	p.Close(r)
	p.Close(w)
}

func TestPipePacketMode(t *testing.T) {
	p := newPipeProc(t)
	r, w := pipe2(t, p, unix.O_DIRECT|unix.O_NONBLOCK)
	p.Write(w, []byte("one"))
	p.Write(w, []byte("two!"))
	p.Write(w, make([]byte, 5000)) // two packets: 4096 + 904
	b := make([]byte, 8192)
	for _, want := range []int{3, 4, 4096, 904} {
		if n, err := p.Read(r, b); n != want || err != nil {
			t.Fatalf("packet read = %d, %v; want %d", n, err, want)
		}
	}
	// A short read drops the rest of its packet.
	p.Write(w, []byte("abcdef"))
	p.Write(w, []byte("gh"))
	if n, _ := p.Read(r, b[:2]); n != 2 || string(b[:2]) != "ab" {
		t.Fatalf("short packet read = %d %q", n, b[:2])
	}
	if n, _ := p.Read(r, b); n != 2 || string(b[:2]) != "gh" {
		t.Fatalf("next packet = %d %q", n, b[:2])
	}
	p.Close(r)
	p.Close(w)
}

func TestPipeSetSize(t *testing.T) {
	p := newPipeProc(t)
	r, w := pipe2(t, p, unix.O_NONBLOCK)
	if n, err := p.Fcntl(r, unix.F_GETPIPE_SZ, 0); n != 65536 || err != nil {
		t.Fatalf("F_GETPIPE_SZ = %d, %v", n, err)
	}
	for _, c := range []struct {
		arg, want int
		err       error
	}{
		{0, 4096, nil}, {1, 4096, nil}, {4097, 8192, nil}, {100000, 131072, nil},
		{-1, 0, syscall.EINVAL}, {1<<31 + 1, 0, syscall.EINVAL},
	} {
		if n, err := p.Fcntl(w, unix.F_SETPIPE_SZ, c.arg); n != c.want || err != c.err {
			t.Errorf("F_SETPIPE_SZ %d = %d, %v; want %d, %v", c.arg, n, err, c.want, c.err)
		}
	}
	restore := vfs.SetPipeCapable(false)
	if _, err := p.Fcntl(w, unix.F_SETPIPE_SZ, 1<<20+1); err != syscall.EPERM {
		t.Errorf("unprivileged F_SETPIPE_SZ past 1 MiB: %v, want EPERM", err)
	}
	restore()
	if n, err := p.Fcntl(w, unix.F_SETPIPE_SZ, 1<<21); n != 1<<21 || err != nil {
		t.Errorf("privileged F_SETPIPE_SZ 2 MiB = %d, %v", n, err)
	}
	p.Fcntl(w, unix.F_SETPIPE_SZ, 65536)
	for range 3 {
		p.Write(w, make([]byte, 4096))
	}
	if _, err := p.Fcntl(w, unix.F_SETPIPE_SZ, 8192); err != syscall.EBUSY {
		t.Errorf("shrinking below the buffers in use: %v, want EBUSY", err)
	}
	if n, err := p.Fcntl(w, unix.F_SETPIPE_SZ, 16384); n != 16384 || err != nil {
		t.Errorf("shrinking to 4 pages with 3 in use = %d, %v", n, err)
	}
	b := make([]byte, 4096)
	for i := range 3 {
		if n, _ := p.Read(r, b); n != 4096 {
			t.Fatalf("read %d after resize = %d", i, n)
		}
	}
	if _, err := p.Fcntl(w, unix.F_GETFL+1000, 0); err != syscall.EINVAL {
		t.Errorf("unknown command: %v", err)
	}
	p.Close(r)
	p.Close(w)
}

func TestPipeAllocs(t *testing.T) {
	p := newPipeProc(t)
	r, w := pipe2(t, p, 0)
	buf := make([]byte, 512)
	v := [][]byte{buf[:100], buf[100:300], buf[300:]}
	for _, c := range []struct {
		name string
		fn   func()
	}{
		{"Write+Read", func() { p.Write(w, buf); p.Read(r, buf) }},
		{"Writev+Readv", func() { p.Writev(w, v); p.Readv(r, v) }},
		{"Writev+Read 1 segment", func() { p.Writev(w, v[:1]); p.Read(r, buf) }},
	} {
		if a := testing.AllocsPerRun(1000, c.fn); a != 0 {
			t.Errorf("%s: %v allocs/op, want 0", c.name, a)
		}
	}
	fds := []unix.PollFd{{Fd: int32(r), Events: unix.POLLIN}, {Fd: int32(w), Events: unix.POLLOUT}}
	if a := testing.AllocsPerRun(1000, func() { p.Poll(fds, 0) }); a != 0 {
		t.Errorf("Poll: %v allocs/op, want 0", a)
	}
	p.Write(w, buf)
	// Under -race sync.Pool drops items on purpose, so the pooled waiter
	// is remade now and then.
	if a := testing.AllocsPerRun(1000, func() { p.Poll(fds, -1) }); a != 0 && !raceEnabled {
		t.Errorf("Poll with a waiter: %v allocs/op, want 0", a)
	}
	p.Close(r)
	p.Close(w)
}

func TestFIFOOpen(t *testing.T) {
	checkGoroutines(t)
	p := newPipeProc(t)
	if err := p.Mknod("/tmp/f", unix.S_IFIFO|0o644, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Open("/tmp/f", unix.O_WRONLY|unix.O_NONBLOCK, 0); !errors.Is(err, syscall.ENXIO) {
		t.Fatalf("O_WRONLY|O_NONBLOCK without reader: %v, want ENXIO", err)
	}
	type res struct {
		fd  int
		err error
	}
	done := make(chan res)
	go func() {
		fd, err := p.Open("/tmp/f", unix.O_RDONLY, 0)
		done <- res{fd, err}
	}()
	if !blocked(done) {
		t.Fatal("O_RDONLY open of a FIFO without writer did not wait")
	}
	wfd, err := p.Open("/tmp/f", unix.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	rr := <-done
	if rr.err != nil {
		t.Fatal(rr.err)
	}
	p.Write(wfd, []byte("fifo"))
	b := make([]byte, 10)
	if n, _ := p.Read(rr.fd, b); string(b[:n]) != "fifo" {
		t.Fatalf("read %q", b[:n])
	}
	if st, _ := p.Fstat(rr.fd); st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Fatalf("Fstat mode %#o", st.Mode)
	}
	// The pipe lives while an end is open: bytes written stay.
	p.Write(wfd, []byte("kept"))
	p.Close(rr.fd)
	rdwr, err := p.Open("/tmp/f", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := p.Read(rdwr, b); string(b[:n]) != "kept" {
		t.Fatalf("bytes written while an end was open: %q", b[:n])
	}
	p.Write(wfd, []byte("lost"))
	p.Close(wfd)
	p.Close(rdwr)
	// All ends closed: the pipe and its bytes are gone.
	nb, err := p.Open("/tmp/f", unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Read(nb, b); n != 0 || err != nil {
		t.Fatalf("read of a reopened FIFO = %d, %v; want 0 (no writer, bytes dropped)", n, err)
	}
	// A writer blocked in open waits for a reader.
	go func() {
		fd, err := p.Open("/tmp/f", unix.O_WRONLY, 0)
		done <- res{fd, err}
	}()
	if rr := <-done; rr.err != nil { // nb is a reader: no wait
		t.Fatal(rr.err)
	} else {
		p.Close(rr.fd)
	}
	p.Close(nb)
	go func() {
		fd, err := p.Open("/tmp/f", unix.O_WRONLY, 0)
		done <- res{fd, err}
	}()
	if !blocked(done) {
		t.Fatal("O_WRONLY open without reader did not wait")
	}
	r2, err := p.Open("/tmp/f", unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	rr = <-done
	p.Close(rr.fd)
	p.Close(r2)
	if _, err := p.Open("/tmp/f", unix.O_RDWR|unix.O_DIRECT, 0); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("O_DIRECT FIFO open: %v, want EINVAL", err)
	}
}

func TestPollFilesAndDevices(t *testing.T) {
	p := newPipeProc(t)
	f, err := p.Open("/tmp/reg", unix.O_CREAT|unix.O_RDONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	z, err := p.Open("/dev/zero", unix.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	all := int16(unix.POLLIN | unix.POLLOUT | unix.EPOLLRDNORM | unix.EPOLLWRNORM | unix.POLLPRI)
	fds := []unix.PollFd{{Fd: int32(f), Events: all}, {Fd: int32(z), Events: unix.POLLOUT}, {Fd: 4000, Events: unix.POLLIN}, {Fd: -5, Events: unix.POLLIN}}
	n, err := p.Poll(fds, -1)
	if n != 3 || err != nil {
		t.Fatalf("Poll = %d, %v; want 3", n, err)
	}
	want := []int16{unix.POLLIN | unix.POLLOUT | unix.EPOLLRDNORM | unix.EPOLLWRNORM, unix.POLLOUT, unix.POLLNVAL, 0}
	for i, fd := range fds {
		if fd.Revents != want[i] {
			t.Errorf("entry %d: revents %#x, want %#x", i, fd.Revents, want[i])
		}
	}
}

func TestPollTimeouts(t *testing.T) {
	checkGoroutines(t)
	p := newPipeProc(t)
	r, w := pipe2(t, p, 0)
	fds := []unix.PollFd{{Fd: int32(r), Events: unix.POLLIN}}
	for _, c := range []struct {
		name string
		call func() (int, error)
		min  time.Duration
	}{
		{"Poll 40ms", func() (int, error) { return p.Poll(fds, 40) }, 40 * time.Millisecond},
		{"Poll 0", func() (int, error) { return p.Poll(fds, 0) }, 0},
		{"Ppoll 30ms", func() (int, error) { return p.Ppoll(fds, &unix.Timespec{Nsec: 30e6}) }, 30 * time.Millisecond},
	} {
		start := time.Now()
		n, err := c.call()
		if d := time.Since(start); n != 0 || err != nil || d < c.min || d > 10*time.Second {
			t.Errorf("%s on an empty pipe = %d, %v after %v; want 0 after at least %v", c.name, n, err, d, c.min)
		}
	}
	for _, ts := range []unix.Timespec{{Sec: -1}, {Nsec: -1}, {Nsec: 1e9}} {
		if _, err := p.Ppoll(fds, &ts); err != syscall.EINVAL {
			t.Errorf("Ppoll(%+v): %v, want EINVAL", ts, err)
		}
	}
	// A poller without limit wakes on the event, and on the writer's
	// close with POLLHUP.
	done := make(chan rwResult)
	go func() {
		n, err := p.Ppoll(fds, nil)
		done <- rwResult{n: n, err: err}
	}()
	if !blocked(done) {
		t.Fatal("Ppoll(nil) on an empty pipe did not wait")
	}
	p.Close(w)
	if res := <-done; res.n != 1 || fds[0].Revents != unix.POLLHUP {
		t.Fatalf("Ppoll woken by the close = %d, %v, revents %#x; want POLLHUP", res.n, res.err, fds[0].Revents)
	}
	p.Close(r)
}

// TestPipeManyReadersWriters has several blocked readers and writers on
// one pipe at once: no wake-up may be lost (the test would hang), every
// byte written is read once, and the last writer's close ends every read.
func TestPipeManyReadersWriters(t *testing.T) {
	checkGoroutines(t)
	p := newPipeProc(t)
	r, w := pipe2(t, p, 0)
	const writers, readers = 4, 4
	per := 2000
	if raceEnabled {
		per = 200
	}
	var wsum, rsum [writers + readers]uint64
	var wn, rn [writers + readers]int
	done := make(chan int, writers+readers)
	for i := range writers {
		go func() {
			buf := make([]byte, 9000)
			for j := range per {
				n := 1 + (i*7919+j*104729)%len(buf)
				for k := range n {
					buf[k] = byte(i + j + k)
					wsum[i] += uint64(buf[k])
				}
				if m, err := p.Write(w, buf[:n]); m != n || err != nil {
					t.Errorf("write = %d, %v; want %d", m, err, n)
					break
				}
				wn[i] += n
			}
			done <- i
		}()
	}
	for i := range readers {
		go func() {
			buf := make([]byte, 1+i*3000)
			for {
				n, err := p.Read(r, buf)
				if err != nil {
					t.Errorf("read: %v", err)
					break
				}
				if n == 0 {
					break
				}
				for _, c := range buf[:n] {
					rsum[i] += uint64(c)
				}
				rn[i] += n
			}
			done <- writers + i
		}()
	}
	for range writers {
		<-done
	}
	p.Close(w) // the only write descriptor: every reader now sees the end
	for range readers {
		<-done
	}
	p.Close(r)
	var tw, tr int
	var sw, sr uint64
	for i := range wn {
		tw, tr, sw, sr = tw+wn[i], tr+rn[i], sw+wsum[i], sr+rsum[i]
	}
	if tw != tr || sw != sr {
		t.Fatalf("written %d bytes (sum %d), read %d (sum %d)", tw, sw, tr, sr)
	}
}
