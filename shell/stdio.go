package shell

// A program's standard descriptors. The interpreter hands a command its
// streams as Go values; a program needs descriptors of its own process.
// A stream that is a file of an iovfs process (a redirection, a pipe's
// end) is that file, shared as fork and dup2 share it. A host file is
// imported when it behaves as a descriptor would (a regular file, a
// blocking terminal or pipe for output). Anything else (a Go buffer, the
// interpreter's pipes, a terminal being read) is pumped through an iovfs
// pipe by a goroutine that stops when the program ends or is interrupted.

import (
	"context"
	"errors"
	"io"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// procFile is a descriptor of an iovfs process given to the interpreter
// as a stream: a redirection's file or a pipeline side's pipe end. It is
// a stream, not a node: it forwards the file's stream methods only.
type procFile struct {
	p *vfs.Proc
	f *vfs.File
}

func (pf *procFile) Read(b []byte) (int, error)          { return pf.f.Read(b) }
func (pf *procFile) Write(b []byte) (int, error)         { return pf.f.Write(b) }
func (pf *procFile) ReadFrom(r io.Reader) (int64, error) { return pf.f.ReadFrom(r) }
func (pf *procFile) WriteTo(w io.Writer) (int64, error)  { return pf.f.WriteTo(w) }
func (pf *procFile) Close() error                        { return pf.f.Close() }
func (pf *procFile) Fd() int                             { return pf.f.Fd() }
func (pf *procFile) Name() string                        { return pf.f.Name() }

// stdio sets up descriptors 0, 1 and 2 of a program's process and runs
// the pumps its streams need.
type stdio struct {
	child *vfs.Proc
	// pumps holds the other ends of the pumps' pipes, so that the
	// program's process can exit without closing them.
	pumps *vfs.Proc
	// stop closes when the program has ended or ctx is done: the input
	// pump stops reading.
	stop     chan struct{}
	stopOnce sync.Once
	exited   chan struct{}
	wg       sync.WaitGroup
	// errs collects the pumps' write errors to a Go writer.
	mu   sync.Mutex
	errs []error
}

// setupStdio gives child the streams in, out and errw as its descriptors
// 0, 1 and 2. A nil in keeps the child's own descriptor 0 (a pipeline
// side's pipe). When ctx is done the input pump stops and closes its
// pipe, so that a program waiting for input (a terminal) sees its end.
func setupStdio(ctx context.Context, child *vfs.Proc, in io.Reader, out, errw io.Writer) (*stdio, error) {
	s := &stdio{child: child, stop: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		select {
		case <-ctx.Done():
			s.halt()
		case <-s.exited:
		}
	}()
	if in != nil {
		if err := s.input(in); err != nil {
			s.finish()
			return nil, err
		}
	}
	if err := s.output(1, out, nil); err != nil {
		s.finish()
		return nil, err
	}
	if err := s.output(2, errw, out); err != nil {
		s.finish()
		return nil, err
	}
	return s, nil
}

// pumpProc returns the process that holds the pumps' ends.
func (s *stdio) pumpProc() (*vfs.Proc, error) {
	if s.pumps == nil {
		p, err := s.child.Fork()
		if err != nil {
			return nil, err
		}
		p.CloseRange(0, ^uint(0), 0)
		s.pumps = p
	}
	return s.pumps, nil
}

// place puts src's descriptor fd as the child's target descriptor.
func (s *stdio) place(src *vfs.Proc, fd, target int) error {
	nfd, err := s.child.Getfd(src, fd)
	if err != nil {
		return err
	}
	if nfd != target {
		defer s.child.Close(nfd)
		if _, err := s.child.Dup2(nfd, target); err != nil {
			return err
		}
	}
	_, err = s.child.Fcntl(target, unix.F_SETFD, 0)
	return err
}

func (s *stdio) input(in io.Reader) error {
	if pf, ok := in.(*procFile); ok {
		return s.place(pf.p, pf.Fd(), 0)
	}
	if f, ok := in.(*os.File); ok && isRegular(f) {
		return s.importFile(f, 0)
	}
	pp, err := s.pumpProc()
	if err != nil {
		return err
	}
	r, w, err := pp.Pipe2(unix.O_CLOEXEC)
	if err != nil {
		return err
	}
	err = s.place(pp, r, 0)
	pp.Close(r)
	if err != nil {
		pp.Close(w)
		return err
	}
	s.wg.Go(func() {
		defer pp.Close(w)
		pumpIn(in, pp.NewFile(w, "pipe"), s.stop)
	})
	return nil
}

// output gives the child w as descriptor fd; same is the stream already
// given as descriptor 1, which w may be (2>&1).
func (s *stdio) output(fd int, w, same io.Writer) error {
	if pf, ok := w.(*procFile); ok {
		return s.place(pf.p, pf.Fd(), fd)
	}
	if same != nil && sameWriter(w, same) {
		_, err := s.child.Dup2(1, fd)
		return err
	}
	if f, ok := w.(*os.File); ok && blocking(f) {
		return s.importFile(f, fd)
	}
	if w == nil {
		w = io.Discard
	}
	pp, err := s.pumpProc()
	if err != nil {
		return err
	}
	r, pw, err := pp.Pipe2(unix.O_CLOEXEC)
	if err != nil {
		return err
	}
	err = s.place(pp, pw, fd)
	pp.Close(pw)
	if err != nil {
		pp.Close(r)
		return err
	}
	s.wg.Go(func() {
		defer pp.Close(r)
		if _, err := io.Copy(w, pp.NewFile(r, "pipe")); err != nil {
			s.mu.Lock()
			s.errs = append(s.errs, err)
			s.mu.Unlock()
		}
	})
	return nil
}

func (s *stdio) importFile(f *os.File, fd int) error {
	nfd, err := s.child.ImportFile(f)
	if err != nil {
		return err
	}
	defer s.child.Close(nfd)
	_, err = s.child.Dup2(nfd, fd)
	return err
}

// finish is called once the program's process has exited: the input
// pump stops, the output pumps drain what the program wrote.
func (s *stdio) finish() {
	close(s.exited)
	s.halt()
	s.wg.Wait()
	if s.pumps != nil {
		exitProc(s.pumps)
	}
}

func (s *stdio) halt() { s.stopOnce.Do(func() { close(s.stop) }) }

// sameWriter reports whether a and b are the same writer (2>&1 gives the
// interpreter's standard output as its standard error).
func sameWriter(a, b io.Writer) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta != nil && ta == tb && ta.Comparable() && a == b
}

func isRegular(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode().IsRegular()
}

// blocking reports whether a host file's writes block, as a program's
// writes expect: a nonblocking one (Go's own pipes) would give it EAGAIN.
func blocking(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	fl := 0
	ferr := rc.Control(func(fd uintptr) { fl, err = unix.FcntlInt(fd, unix.F_GETFL, 0) })
	return ferr == nil && err == nil && fl&unix.O_NONBLOCK == 0
}

// pumpIn copies in to w until in ends, w's reader goes or stop closes. A
// host file that can take a deadline (a pipe) is read with one, so the
// copy stops at once; a terminal is polled beside a pipe that stop makes
// readable, so that no line typed after the program ended (or was
// interrupted) is taken from the next command.
func pumpIn(in io.Reader, w io.Writer, stop <-chan struct{}) {
	buf := make([]byte, 64<<10)
	read := in.Read
	if f, ok := in.(*os.File); ok {
		if f.SetReadDeadline(time.Time{}) == nil {
			done := make(chan struct{})
			defer close(done)
			go func() {
				select {
				case <-stop:
					f.SetReadDeadline(time.Now())
				case <-done:
				}
			}()
			defer f.SetReadDeadline(time.Time{})
		} else {
			var wake [2]int
			if err := unix.Pipe2(wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
				return
			}
			defer unix.Close(wake[0])
			done := make(chan struct{})
			defer close(done)
			go func() {
				select {
				case <-stop:
				case <-done:
				}
				unix.Write(wake[1], []byte{0})
				unix.Close(wake[1])
			}()
			read = func(b []byte) (int, error) { return pollRead(int(f.Fd()), wake[0], b, stop) }
		}
	}
	for {
		n, err := read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
		select {
		case <-stop:
			return
		default:
		}
	}
}

var errStopped = errors.New("stopped")

// pollRead reads fd once it is readable, or gives up when wake is
// readable (stop closed).
func pollRead(fd, wake int, b []byte, stop <-chan struct{}) (int, error) {
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
		_, err := unix.Poll(pfd, -1)
		select {
		case <-stop:
			return 0, errStopped
		default:
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		n, err := unix.Read(fd, b)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if n == 0 && err == nil {
			return 0, io.EOF
		}
		return max(n, 0), err
	}
}
