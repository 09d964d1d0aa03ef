package vfs

// pipe2(2), and the handle of a pipe end: the open files of a pipe or a
// FIFO (Linux's pipefifo_fops). The pipe itself, its ring, blocking and
// readiness, is package pipe; this file adapts it to the driver contract.
//
// An end is released once, when its open file's last reference goes
// (Releaser); descriptors made by dup, and copies of the fd table, share
// one open file and so one end, as fork(2) shares them.

import (
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/pipe"
	"golang.org/x/sys/unix"
)

// pipeCapable reports whether p may grow a pipe past pipe.MaxSize
// (CAP_SYS_RESOURCE, which iovfs gives to euid 0); tests replace it to
// compare with an unprivileged host.
var pipeCapable = func(p *Proc) bool { return p.cred.Load().capable() }

// pipeObj is one pipe with the queue its pollers wait on.
type pipeObj struct {
	p *pipe.Pipe
	q WaitQueue
	// fifo is the node a FIFO's pipe belongs to, nil for pipe2's; files
	// counts the FIFO's open ends (under fifos.mu), as Linux's
	// pipe->files.
	fifo  Node
	files int
}

func newPipeObj(p *pipe.Pipe) *pipeObj {
	o := &pipeObj{p: p}
	p.SetNotify(o.q.Wake)
	return o
}

// File-status flags a pipe end acts on, kept in pipeEnd.flags.
const (
	endNonblock = 1 << iota // O_NONBLOCK
	endPacket               // O_DIRECT: packet mode
)

// pipeEnd is the handle of one open pipe or FIFO file. The fields every
// read and write loads come first.
type pipeEnd struct {
	// p is obj.p, kept here so a call reaches the pipe in one load.
	p *pipe.Pipe
	// flags holds end* bits; SetFlags replaces it while calls run.
	flags  atomic.Uint32
	rd, wr bool
	// seen is the write counter a FIFO reader opened with O_NONBLOCK saw
	// (Linux f_pipe), for POLLHUP.
	seen uint32
	obj  *pipeObj
	// waits is set once splice, tee or vmsplice used the end: RWF_NOWAIT
	// then gives EOPNOTSUPP, as Linux's pipe_clear_nowait drops
	// FMODE_NOWAIT from the file (a splice may block under the pipe).
	waits atomic.Bool
}

func newPipeEnd(obj *pipeObj, rd, wr bool) *pipeEnd {
	return &pipeEnd{p: obj.p, obj: obj, rd: rd, wr: wr}
}

// pipeOf returns the pipe end f is, or nil: Linux's get_pipe_info, true
// for pipes and FIFOs.
func pipeOf(f *file) *pipeEnd { return f.pipe }

func (e *pipeEnd) setFlags(flags int) {
	var v uint32
	if flags&unix.O_NONBLOCK != 0 {
		v |= endNonblock
	}
	if flags&unix.O_DIRECT != 0 {
		v |= endPacket
	}
	e.flags.Store(v)
}

// ReadIter implements IterReader (pipe_read).
func (e *pipeEnd) ReadIter(dst iov.Iter, _ int64) (int, error) {
	return e.p.Read(dst, e.flags.Load()&endNonblock != 0)
}

// WriteIter implements IterWriter (pipe_write).
func (e *pipeEnd) WriteIter(src iov.Iter, _ int64) (int, error) {
	fl := e.flags.Load()
	return e.p.Write(src, fl&endNonblock != 0, fl&endPacket != 0)
}

// pipe2End is the handle of an end made by pipe2: a pipe honours
// RWF_NOWAIT (Linux's create_pipe_files sets FMODE_NOWAIT); the call gets
// EAGAIN where it would wait, as with O_NONBLOCK (pipe_read and
// pipe_write test IOCB_NOWAIT with it). A FIFO's ends are plain pipeEnds:
// fifo_open does not set FMODE_NOWAIT, so RWF_NOWAIT gives EOPNOTSUPP
// there (measured on Linux 6.x, TestPipeKernel).
type pipe2End struct{ *pipeEnd }

func (pipe2End) NoWait() {}

// ReadIterFlags implements RWFReader: RWF_NOWAIT acts as O_NONBLOCK for
// this call (EOPNOTSUPP once the end was spliced); the other flags
// accepted mean nothing to a pipe.
func (e *pipeEnd) ReadIterFlags(dst iov.Iter, _ int64, flags int) (int, error) {
	if flags&unix.RWF_NOWAIT != 0 && e.waits.Load() {
		return 0, errEOPNOTSUPP
	}
	return e.p.Read(dst, e.flags.Load()&endNonblock != 0 || flags&unix.RWF_NOWAIT != 0)
}

// WriteIterFlags implements RWFWriter, as ReadIterFlags.
func (e *pipeEnd) WriteIterFlags(src iov.Iter, _ int64, flags int) (int, error) {
	if flags&unix.RWF_NOWAIT != 0 && e.waits.Load() {
		return 0, errEOPNOTSUPP
	}
	fl := e.flags.Load()
	return e.p.Write(src, fl&endNonblock != 0 || flags&unix.RWF_NOWAIT != 0, fl&endPacket != 0)
}

// Stream and Positionless: pipes have no offset; pread, pwrite and lseek
// give ESPIPE.
func (*pipeEnd) Stream()       {}
func (*pipeEnd) Positionless() {}

// SetFlags implements FlagSetter: O_NONBLOCK and O_DIRECT (packet mode)
// take effect on the next call, as fcntl(F_SETFL) makes them on Linux.
func (e *pipeEnd) SetFlags(flags int) error {
	e.setFlags(flags)
	return nil
}

// Poll implements Poller (pipe_poll).
func (e *pipeEnd) Poll(_ uint32, w *PollWaiter) uint32 {
	if w != nil {
		w.Watch(&e.obj.q)
	}
	return e.p.Poll(e.rd, e.wr, e.seen)
}

// Fcntl implements Fcntler: F_GETPIPE_SZ and F_SETPIPE_SZ (pipe_fcntl).
func (e *pipeEnd) Fcntl(p *Proc, cmd, arg int) (int, error) {
	switch cmd {
	case unix.F_GETPIPE_SZ:
		return e.p.Size(), nil
	case unix.F_SETPIPE_SZ:
		// fcntl passes the argument as an unsigned int.
		return e.p.SetSize(int(uint32(arg)), pipeCapable(p))
	}
	return 0, errEINVAL
}

// Ioctl implements Ioctler: FIONREAD (unix.TIOCINQ) stores the bytes
// queued in an *int, on either end (pipe_ioctl).
func (e *pipeEnd) Ioctl(_ *Proc, req uint, arg any) (int, error) {
	if req != unix.TIOCINQ {
		return 0, errENOTTY
	}
	ip, ok := arg.(*int)
	if !ok || ip == nil {
		return 0, errEINVAL
	}
	*ip = e.p.Len()
	return 0, nil
}

// Release implements Releaser (pipe_release): the end goes away, waking
// the other side; a FIFO drops its pipe with its last end.
func (e *pipeEnd) Release() error {
	if e.obj.fifo != nil {
		releaseFIFOEnd(e)
		return nil
	}
	e.p.Close(e.rd, e.wr)
	return nil
}

// pipeNode is the inode of a pipe made by pipe2 (Linux's pipefs inode):
// S_IFIFO with mode 0600, owned by its creator.
type pipeNode struct {
	ino   uint64
	uid   uint32
	gid   uint32
	ctime time.Time
}

var pipeIno atomic.Uint64

// Stat implements Node.
func (n *pipeNode) Stat() (Stat, error) {
	return Stat{Ino: n.ino, Mode: unix.S_IFIFO | 0o600, Nlink: 1, Uid: n.uid, Gid: n.gid,
		Blksize: pipe.PageSize, Atime: n.ctime, Mtime: n.ctime, Ctime: n.ctime}, nil
}

var errENOPKG error = syscall.ENOPKG

// Pipe2 creates a pipe and returns a descriptor for its read end and one
// for its write end, the lowest two free, as pipe2(2) does. flags may
// hold O_NONBLOCK (reads of an empty pipe and writes that do not fit give
// EAGAIN instead of waiting), O_DIRECT (packet mode: each write of up to
// 4096 bytes is a packet, and a read returns at most one; F_GETFL shows
// it on the write end only, as Linux's) and O_CLOEXEC;
// other bits give EINVAL, and O_NOTIFICATION_PIPE (O_EXCL) ENOPKG, as on
// a kernel without watch queues.
//
// The pipe holds 65536 bytes; fcntl's F_SETPIPE_SZ changes that. Reads
// block until bytes arrive or the last writer closes (then they return
// 0); writes block until every byte is in, and a write of at most 4096
// bytes, scalar or vectored, is atomic. A write with no reader gives
// EPIPE. The descriptors cannot seek (ESPIPE) and stat as S_IFIFO.
func (p *Proc) Pipe2(flags int) (r, w int, err error) {
	if flags&^(unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_DIRECT|unix.O_EXCL) != 0 {
		return -1, -1, errEINVAL
	}
	if flags&unix.O_EXCL != 0 {
		return -1, -1, errENOPKG
	}
	obj := newPipeObj(pipe.NewPair())
	c := p.cred.Load().fsCred()
	node := &pipeNode{ino: pipeIno.Add(1), uid: c.Uid, gid: c.Gid, ctime: time.Now()}
	// create_pipe_files: O_DIRECT (packet mode) is the write end's alone;
	// a packet's bounds are kept with its bytes, so the reader needs no
	// flag to see them.
	rst := flags & unix.O_NONBLOCK
	wst := flags & (unix.O_NONBLOCK | unix.O_DIRECT)
	re := newPipeEnd(obj, true, false)
	re.setFlags(rst)
	we := newPipeEnd(obj, false, true)
	we.setFlags(wst)
	rf := newFile(node, pipe2End{re}, unix.O_RDONLY|rst)
	wf := newFile(node, pipe2End{we}, unix.O_WRONLY|wst)
	// pipe2's files are not opened, so F_GETFL shows no O_LARGEFILE
	// (measured; a FIFO opened with open(2) has it).
	for _, f := range []*file{rf, wf} {
		f.flags.Store(f.flags.Load() &^ oLargefile)
	}
	cloexec := flags&unix.O_CLOEXEC != 0
	if r, err = p.files.installFlags(rf, 0, cloexec); err != nil {
		rf.release()
		wf.release()
		return -1, -1, err
	}
	if w, err = p.files.installFlags(wf, 0, cloexec); err != nil {
		p.Close(r)
		wf.release()
		return -1, -1, err
	}
	return r, w, nil
}
