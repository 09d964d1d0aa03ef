// Package pipe is the pipe object of Linux's fs/pipe.c: a ring of page
// buffers with blocking reads and writes, PIPE_BUF atomicity, packet mode,
// resizing, FIFO open rules and readiness for poll.
//
// The package knows nothing of file descriptors or the VFS: a Pipe counts
// its readers and writers, and whoever holds an end (the VFS's pipe
// handles) tells it about opens and closes. Blocking calls wait on
// condition variables and are woken by the other end; nothing polls.
//
// Invariants (fs/pipe.c's): the ring has len(slots) entries, a power of
// two; head and tail count slots written and consumed and run freely
// (head-tail is the occupancy, at most maxUsage); a slot between tail and
// head holds n > 0 bytes at off in its page, except transiently inside a
// write. Pages stay attached to their slot once allocated, so a pipe in
// use does not allocate.
package pipe

import (
	"sync"
	"syscall"

	"github.com/iovfs/iovfs/iov"
	"golang.org/x/sys/unix"
)

// Sizes, as Linux has them on this architecture.
const (
	// PageSize is the size of one ring buffer.
	PageSize = 4096
	// Buf is PIPE_BUF: a write of at most this many bytes is atomic.
	Buf = 4096
	// DefaultSize is the capacity of a new pipe (PIPE_DEF_BUFFERS pages).
	DefaultSize = 16 * PageSize
	// MaxSize is /proc/sys/fs/pipe-max-size's default: the largest size an
	// unprivileged process may set with F_SETPIPE_SZ.
	MaxSize = 1 << 20
)

// Slot flags (PIPE_BUF_FLAG_*).
const (
	canMerge = 1 << iota // later small writes may append to this buffer
	packet               // O_DIRECT: the buffer is one packet
)

type slot struct {
	page  *[PageSize]byte
	off   int
	n     int
	flags uint8
}

// Errors, made once so returning them does not allocate.
var (
	errEAGAIN error = syscall.EAGAIN
	errEPIPE  error = syscall.EPIPE
	errEBUSY  error = syscall.EBUSY
	errEINVAL error = syscall.EINVAL
	errEPERM  error = syscall.EPERM
	errENXIO  error = syscall.ENXIO
)

// Pipe is one pipe or FIFO buffer. Its methods are safe for concurrent
// use.
type Pipe struct {
	// mu protects every field below; the conditions use it. It is held
	// while bytes are copied, as Linux holds pipe->mutex.
	mu       sync.Mutex
	slots    []slot
	head     uint32
	tail     uint32
	maxUsage uint32
	// readers and writers count the open ends; rCounter and wCounter
	// count every open of each kind, for FIFO opens that wait for a
	// partner and for POLLHUP (Linux r_counter, w_counter).
	readers, writers   int
	rCounter, wCounter uint32
	// rdWait and wrWait are waited on by blocked reads and writes,
	// partner by FIFO opens waiting for the other end.
	rdWait, wrWait, partner sync.Cond

	// notify is set before the pipe is shared and only read afterwards.
	// If not nil it is called whenever readiness may have changed (bytes
	// became readable, room became writable, an end went away, the size
	// changed), after the change, with or without mu held. It must not
	// block or take mu.
	notify func()
}

// New returns an empty pipe of DefaultSize with no ends open.
func New() *Pipe {
	p := &Pipe{maxUsage: DefaultSize / PageSize, rCounter: 1, wCounter: 1}
	p.slots = make([]slot, p.maxUsage)
	p.rdWait.L = &p.mu
	p.wrWait.L = &p.mu
	p.partner.L = &p.mu
	return p
}

// NewPair returns a pipe with one read end and one write end open, as
// pipe(2) creates it.
func NewPair() *Pipe {
	p := New()
	p.readers, p.writers = 1, 1
	return p
}

// SetNotify sets the function called when readiness may have changed (see
// the notify field). Call it before the pipe is shared.
func (p *Pipe) SetNotify(fn func()) { p.notify = fn }

func (p *Pipe) empty() bool { return p.head == p.tail }
func (p *Pipe) full() bool  { return p.head-p.tail >= p.maxUsage }

func (p *Pipe) wake() {
	if p.notify != nil {
		p.notify()
	}
}

// Read moves up to dst.Len() bytes out of the pipe into dst, as
// fs/pipe.c's pipe_read. It blocks while the pipe is empty and has a
// writer, unless nonblock is set, in which case it gives EAGAIN. It
// returns 0, nil when the pipe is empty and has no writer. A read returns
// what is there (it does not wait to fill dst), and at most one packet of
// a packet-mode buffer; the rest of a packet that does not fit is dropped.
func (p *Pipe) Read(dst iov.Iter, nonblock bool) (int, error) {
	total := dst.Len()
	if total == 0 {
		return 0, nil
	}
	ret := 0
	var err error
	wakeWriter, wakeNextReader := false, false
	p.mu.Lock()
	for {
		if !p.empty() {
			mask := uint32(len(p.slots) - 1)
			b := &p.slots[p.tail&mask]
			chars := min(b.n, total)
			dst.CopyOut(b.page[b.off : b.off+chars])
			ret += chars
			b.off += chars
			b.n -= chars
			if b.flags&packet != 0 {
				total = chars
				b.n = 0
			}
			if b.n == 0 {
				wakeWriter = wakeWriter || p.full()
				p.tail++
			}
			total -= chars
			if total == 0 {
				break
			}
			if !p.empty() {
				continue
			}
		}
		if p.writers == 0 || ret > 0 {
			break
		}
		if nonblock {
			err = errEAGAIN
			break
		}
		if wakeWriter {
			p.wrWait.Signal()
			p.wake()
		}
		p.rdWait.Wait()
		wakeNextReader, wakeWriter = true, false
	}
	if p.empty() {
		wakeNextReader = false
	}
	p.mu.Unlock()
	// Wake after unlocking, as Linux does, so the woken goroutine does not
	// find the lock still held.
	if wakeWriter {
		p.wrWait.Signal()
		p.wake()
	}
	if wakeNextReader {
		p.rdWait.Signal()
	}
	return ret, err
}

// Write moves the bytes of src into the pipe, as fs/pipe.c's pipe_write.
// It blocks until all are in, unless nonblock is set; then it writes what
// fits and gives EAGAIN if that is nothing. A write of at most Buf bytes
// is atomic: it goes into the last buffer's free tail or one new buffer,
// never in part. With no reader it gives EPIPE (the caller reports it; no
// signal is sent). With packet set (O_DIRECT) each page-sized piece is a
// packet that a read returns alone. A write of 0 bytes returns 0 before
// anything is checked.
func (p *Pipe) Write(src iov.Iter, nonblock, pkt bool) (int, error) {
	total := src.Len()
	if total == 0 {
		return 0, nil
	}
	p.mu.Lock()
	if p.readers == 0 {
		p.mu.Unlock()
		return 0, errEPIPE
	}
	ret := 0
	var err error
	wakeNextWriter := false
	wasEmpty := p.empty()
	mask := uint32(len(p.slots) - 1)
	// Merge a tail shorter than a page into the last buffer, so small
	// writes share pages and the rest of a large one is page-aligned.
	if chars := total & (PageSize - 1); chars != 0 && !wasEmpty {
		b := &p.slots[(p.head-1)&mask]
		end := b.off + b.n
		if b.flags&canMerge != 0 && end+chars <= PageSize {
			src.CopyIn(b.page[end : end+chars])
			b.n += chars
			ret = chars
			if src.Len() == 0 {
				goto out
			}
		}
	}
	for {
		if p.readers == 0 {
			if ret == 0 {
				err = errEPIPE
			}
			break
		}
		if !p.full() {
			mask = uint32(len(p.slots) - 1)
			b := &p.slots[p.head&mask]
			if b.page == nil {
				b.page = new([PageSize]byte)
			}
			p.head++
			b.off = 0
			b.flags = canMerge
			if pkt {
				b.flags = packet
			}
			b.n = src.CopyIn(b.page[:])
			ret += b.n
			if src.Len() == 0 {
				break
			}
		}
		if !p.full() {
			continue
		}
		if nonblock {
			if ret == 0 {
				err = errEAGAIN
			}
			break
		}
		if wasEmpty {
			p.rdWait.Signal()
			p.wake()
		}
		p.wrWait.Wait()
		wasEmpty = p.empty()
		wakeNextWriter = true
	}
out:
	if p.full() {
		wakeNextWriter = false
	}
	p.mu.Unlock()
	if wasEmpty && ret > 0 {
		p.rdWait.Signal()
		p.wake()
	}
	if wakeNextWriter {
		p.wrWait.Signal()
	}
	return ret, err
}

// Len returns the number of bytes queued (FIONREAD).
func (p *Pipe) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	mask := uint32(len(p.slots) - 1)
	for i := p.tail; i != p.head; i++ {
		n += p.slots[i&mask].n
	}
	return n
}

// Size returns the capacity in bytes (F_GETPIPE_SZ).
func (p *Pipe) Size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(p.maxUsage) * PageSize
}

// SetSize sets the capacity to n bytes rounded up to a power-of-two number
// of pages, at least one, and returns the new capacity (F_SETPIPE_SZ,
// fs/pipe.c's pipe_set_size). n is taken as Linux's unsigned int: a value
// past 2^31 gives EINVAL. Growing past MaxSize gives EPERM unless
// privileged (CAP_SYS_RESOURCE); shrinking below the number of buffers in
// use gives EBUSY.
func (p *Pipe) SetSize(n int, privileged bool) (int, error) {
	size := roundSize(uint32(n))
	if size == 0 {
		return 0, errEINVAL
	}
	slots := uint32(size / PageSize)
	p.mu.Lock()
	defer p.mu.Unlock()
	if slots > p.maxUsage && size > MaxSize && !privileged {
		return 0, errEPERM
	}
	if used := p.head - p.tail; slots < used {
		return 0, errEBUSY
	}
	if slots != uint32(len(p.slots)) {
		ns := make([]slot, slots)
		omask, nmask := uint32(len(p.slots)-1), slots-1
		used := p.head - p.tail
		for i := range used {
			ns[(p.tail+i)&nmask] = p.slots[(p.tail+i)&omask]
		}
		// Keep the pages of free slots, as many as fit.
		j := used
		for i := used; i < uint32(len(p.slots)) && j < slots; i++ {
			if pg := p.slots[(p.tail+i)&omask].page; pg != nil {
				ns[(p.tail+j)&nmask].page = pg
				j++
			}
		}
		p.slots = ns
	}
	p.maxUsage = slots
	p.wrWait.Broadcast()
	p.wake()
	return int(size), nil
}

// roundSize is Linux's round_pipe_size.
func roundSize(n uint32) int {
	if n > 1<<31 {
		return 0
	}
	if n < PageSize {
		return PageSize
	}
	s := 1
	for uint32(s) < n {
		s <<= 1
	}
	return s
}

// Poll returns the readiness of an end that reads (rd) and/or writes (wr),
// as fs/pipe.c's pipe_poll: POLLIN|POLLRDNORM when bytes are queued,
// POLLHUP for a reader when no writer is left (unless seen equals the
// write counter: a FIFO reader opened with O_NONBLOCK before any writer),
// POLLOUT|POLLWRNORM when a buffer is free, POLLERR for a writer when no
// reader is left.
func (p *Pipe) Poll(rd, wr bool, seen uint32) uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var m uint32
	if rd {
		if !p.empty() {
			m |= unix.POLLIN | unix.EPOLLRDNORM
		}
		if p.writers == 0 && seen != p.wCounter {
			m |= unix.POLLHUP
		}
	}
	if wr {
		if !p.full() {
			m |= unix.POLLOUT | unix.EPOLLWRNORM
		}
		if p.readers == 0 {
			m |= unix.POLLERR
		}
	}
	return m
}

// OpenFIFO adds an end to a FIFO's pipe as fs/pipe.c's fifo_open does,
// and returns the value to pass to Poll as seen. A reader (rd && !wr)
// waits until a writer has opened, unless nonblock; a writer waits for a
// reader, and with nonblock gives ENXIO when there is none; an end that
// reads and writes never waits. A waiting opener already counts as an
// end of its kind, as in Linux.
func (p *Pipe) OpenFIFO(rd, wr, nonblock bool) (seen uint32, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case rd && !wr:
		p.rCounter++
		p.readers++
		if p.readers == 1 {
			p.partner.Broadcast()
		}
		if p.writers == 0 {
			if nonblock {
				return p.wCounter, nil // no POLLHUP until a writer was seen
			}
			for c := p.wCounter; c == p.wCounter; {
				p.partner.Wait()
			}
		}
	case wr && !rd:
		if nonblock && p.readers == 0 {
			return 0, errENXIO
		}
		p.wCounter++
		p.writers++
		if p.writers == 1 {
			p.partner.Broadcast()
		}
		if p.readers == 0 {
			for c := p.rCounter; c == p.rCounter; {
				p.partner.Wait()
			}
		}
	default:
		p.readers++
		p.writers++
		p.rCounter++
		p.wCounter++
		if p.readers == 1 || p.writers == 1 {
			p.partner.Broadcast()
		}
	}
	return 0, nil
}

// Close drops an end (fs/pipe.c's pipe_release). When the last reader or
// the last writer goes while the other side remains, blocked calls and
// pollers are woken: readers see end of file, writers EPIPE.
func (p *Pipe) Close(rd, wr bool) {
	p.mu.Lock()
	if rd {
		p.readers--
	}
	if wr {
		p.writers--
	}
	if (p.readers == 0) != (p.writers == 0) {
		p.rdWait.Broadcast()
		p.wrWait.Broadcast()
		p.wake()
	}
	p.mu.Unlock()
}
