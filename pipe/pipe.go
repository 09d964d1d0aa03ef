// Package pipe is the pipe object of Linux's fs/pipe.c: a ring of page
// buffers with blocking reads and writes, PIPE_BUF atomicity, packet mode,
// resizing, FIFO open rules and readiness for poll, and the buffer moves
// of fs/splice.c (splice.go).
//
// The package knows nothing of file descriptors or the VFS: a Pipe counts
// its readers and writers, and whoever holds an end (the VFS's pipe
// handles) tells it about opens and closes. Blocking calls wait on a
// channel of their own and are woken by the other end; nothing polls.
//
// One copy when a reader waits. A read that finds the ring empty leaves
// its destination in the pipe and sleeps; a write that finds such a
// reader copies straight into its destination and wakes it with the
// count, as io.Pipe hands a write to a waiting read. The woken reader
// returns without taking the lock again, so a round trip costs one
// hand-off each way and no lock convoy. The ring is used only when no
// reader waits, or for what the waiting readers' buffers cannot take; a
// write that the first waiting reader's buffer takes whole is handed
// over at the top of Write. The count travels on the waiter's channel,
// and a pipe has a reader waiter of its own (rown), taken under the lock
// with no atomic and free again once its count is received, so a blocked
// read costs the lock, the channel and nothing else.
// This is one of the interleavings Linux allows (the reader ran the
// moment the bytes arrived): counts, atomicity and ordering are those of
// the ring alone.
//
// Invariants (fs/pipe.c's): the ring has len(slots) entries, a power of
// two; head and tail count slots written and consumed and run freely
// (head-tail is the occupancy, at most maxUsage); a slot between tail and
// head holds n > 0 bytes at off in its data, except transiently inside a
// write. A reader waits in rdq only while the ring is empty, and a writer
// in wrq only while it is full (or while it waits for a slot to take a
// whole atomic write). Pages stay attached to their slot once allocated
// (spare), so a pipe in use does not allocate.
//
// Lock order: a Pipe's mu before the WaitQueue lock its notify takes; two
// pipes' locks (splice, tee) in the order of their ids.
package pipe

import (
	"runtime"
	"sync"
	"sync/atomic"
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

// Slot flags (PIPE_BUF_FLAG_*, and where the bytes live).
const (
	canMerge = 1 << iota // later small writes may append to this buffer
	packet               // O_DIRECT: the buffer is one packet
	gift                 // vmsplice(SPLICE_F_GIFT): the pages were given away
	own                  // data is the slot's spare page
	guarded              // data is device memory that may fault: copy it with the guard
)

// A Page is a ring buffer's memory. A pipe allocates its pages; tee and
// splice between pipes let other slots refer to one, and refs counts
// those, so its owner writes into it again only once they are gone
// (Linux's page count on an anonymous pipe buffer).
type Page struct {
	b    [PageSize]byte
	refs atomic.Int32
}

// A Keeper keeps the memory of a buffer added by reference valid while a
// pipe holds it: each slot that holds the buffer holds one count, taken
// with Get and dropped with Put (which may release the memory). Both are
// called with a pipe's lock held and must not block or take it.
type Keeper interface {
	Get()
	Put()
}

type slot struct {
	// data is the buffer's memory and [off, off+n) its queued bytes:
	// the slot's own spare page (flag own), another slot's page (page is
	// then that page, holding one of its refs), or memory added by
	// reference (a file's page, the caller's bytes), kept by keep if
	// the garbage collector is not enough.
	data  []byte
	page  *Page
	keep  Keeper
	spare *Page
	off   int
	n     int
	flags uint8
}

// release drops what a consumed slot held; its spare page stays.
func (s *slot) release() {
	if s.page != nil {
		s.page.refs.Add(-1)
		s.page = nil
	}
	if s.keep != nil {
		s.keep.Put()
		s.keep = nil
	}
	s.data, s.off, s.n, s.flags = nil, 0, 0, 0
}

// ownPage makes the slot's data its spare page, which it allocates when
// it has none or when other slots still refer to the one it has.
func (s *slot) ownPage() []byte {
	pg := s.spare
	if pg == nil || pg.refs.Load() != 0 {
		pg = new(Page)
		s.spare = pg
	}
	s.data = pg.b[:]
	return s.data
}

// Errors, made once so returning them does not allocate.
var (
	errEAGAIN error = syscall.EAGAIN
	errEPIPE  error = syscall.EPIPE
	errEBUSY  error = syscall.EBUSY
	errEINVAL error = syscall.EINVAL
	errEPERM  error = syscall.EPERM
	errENXIO  error = syscall.ENXIO
	errEIO    error = syscall.EIO
	errEBADF  error = syscall.EBADF
)

// A waiter is one blocked call. Its waker removes it from its queue under
// the pipe's lock and sends it a count on ch, once: the bytes it handed
// over (for a reader that takes bytes directly, having consumed dst), or
// 0 for "look again". The count travels on ch, so a woken call needs
// nothing else from its waiter.
type waiter struct {
	ch chan int
	// dst is a waiting reader's destination; direct says a writer may
	// copy into it (false for a splice, which wants buffers in the ring).
	dst  iov.Iter
	next *waiter
	// n is the count to send, for a waiter on a wakeList.
	n      int32
	direct bool
	// queued says the waiter is in a queue.
	queued bool
}

func newWaiter() *waiter { return &waiter{ch: make(chan int, 1)} }

var waiters = sync.Pool{New: func() any { return newWaiter() }}

// getWaiter returns a waiter: one of the pipe's spares, which a pipe
// with up to len(spare) calls blocked at once always has once warm (an
// atomic swap, where the pool costs several times that, and the garbage
// collector empties the pool but not the spares), or one from the pool.
func (p *Pipe) getWaiter() *waiter {
	for i := range p.spare {
		if w := p.spare[i].Swap(nil); w != nil {
			return w
		}
	}
	return waiters.Get().(*waiter)
}

// putWaiter gives back a woken waiter other than the reader's own.
func (p *Pipe) putWaiter(w *waiter) {
	w.dst, w.n, w.next, w.direct = iov.Iter{}, 0, nil, false
	for i := range p.spare {
		if p.spare[i].CompareAndSwap(nil, w) {
			return
		}
	}
	waiters.Put(w)
}

// readWaiter returns a waiter for a reader about to wait; mu is held.
// It is the pipe's own reader waiter unless that one is in use: queued,
// or woken with its count not yet received. Its waker sends the count
// under mu (wakeOne), so the test of ch here cannot see a count that is
// on its way. Taking and returning it costs no atomic and no pool.
func (p *Pipe) readWaiter() *waiter {
	if w := &p.rown; !w.queued && len(w.ch) == 0 {
		return w
	}
	return p.getWaiter()
}

// waitq is a FIFO of waiters.
type waitq struct{ head, tail *waiter }

func (q *waitq) push(w *waiter) {
	w.next = nil
	w.queued = true
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
}

func (q *waitq) pop() *waiter {
	w := q.head
	if w != nil {
		q.head = w.next
		if q.head == nil {
			q.tail = nil
		}
		w.next = nil
		w.queued = false
	}
	return w
}

// wakeList is a list of popped waiters, woken after the lock is dropped.
type wakeList struct{ head *waiter }

// wakeOne wakes w, popped from a queue, with count n; mu is held. The
// pipe's own reader waiter gets its count at once, under mu (see
// readWaiter); the channel has room, as it holds at most one count a
// wait. Others get theirs after the lock is dropped (woken.wake), so a
// goroutine woken to look again does not find the lock still held.
func (p *Pipe) wakeOne(w *waiter, n int, woken *wakeList) {
	if w == &p.rown {
		w.dst, w.direct = iov.Iter{}, false
		w.ch <- n
		return
	}
	w.n = int32(n)
	w.next, woken.head = woken.head, w
}

// wakeAll pops every waiter of q and wakes it with 0 (look again); mu is
// held.
func (p *Pipe) wakeAll(q *waitq, woken *wakeList) {
	for w := q.pop(); w != nil; w = q.pop() {
		p.wakeOne(w, 0, woken)
	}
}

// wake sends each waiter its count. The list must not be used after: a
// woken waiter goes back to the pool.
func (l *wakeList) wake() {
	for w := l.head; w != nil; {
		next := w.next
		w.ch <- int(w.n)
		w = next
	}
	l.head = nil
}

// wait queues w on q, drops the lock, sleeps until woken and takes the
// lock again unless the waker handed over bytes (a count above 0), which
// it returns.
func (p *Pipe) wait(q *waitq, w *waiter, woken *wakeList) int {
	q.push(w)
	p.mu.Unlock()
	woken.wake()
	n := <-w.ch
	if w != &p.rown {
		p.putWaiter(w)
	}
	if n == 0 {
		p.mu.Lock()
	}
	return n
}

var pipeIDs atomic.Uint64

// Pipe is one pipe or FIFO buffer. Its methods are safe for concurrent
// use.
//
// The fields a read or a write loads every time come first, to share a
// cache line with the lock.
type Pipe struct {
	// mu protects every field below but id and notify. It is held while
	// bytes are copied, as Linux holds pipe->mutex.
	mu   sync.Mutex
	head uint32
	tail uint32
	// readers and writers count the open ends.
	readers, writers int32
	// handed says the last write handed its bytes to a waiting reader,
	// which is likely on its way back for more (see yieldSize).
	handed bool
	// rdq and wrq are the blocked reads and writes; rown is the reader
	// waiter of the pipe's own (readWaiter).
	rdq   waitq
	rown  waiter
	slots []slot
	wrq   waitq
	// maxUsage is the capacity in slots.
	maxUsage uint32
	// private is set at NewPrivate and read-only after.
	private bool
	// rCounter and wCounter count every open of each kind, for FIFO opens
	// that wait for a partner and for POLLHUP (Linux r_counter,
	// w_counter).
	rCounter, wCounter uint32
	// partner is waited on by FIFO opens waiting for the other end.
	partner sync.Cond
	// vec is scratch for the vectors of a splice, one entry a slot.
	vec [][]byte

	// spare are waiters kept for the next blocked calls (getWaiter).
	spare [4]atomic.Pointer[waiter]

	// id orders the locks of two pipes; set at New.
	id uint64
	// notify is set before the pipe is shared and only read afterwards.
	// If not nil it is called whenever readiness may have changed (bytes
	// became readable, room became writable, an end went away, the size
	// changed), after the change, with or without mu held. It must not
	// block or take mu.
	notify func()
}

// New returns an empty pipe of DefaultSize with no ends open.
func New() *Pipe {
	p := &Pipe{maxUsage: DefaultSize / PageSize, rCounter: 1, wCounter: 1, id: pipeIDs.Add(1)}
	p.slots = make([]slot, p.maxUsage)
	p.vec = make([][]byte, p.maxUsage)
	p.partner.L = &p.mu
	p.rown.ch = make(chan int, 1)
	// One spare waiter for a blocked writer, so that a pipe's first wait
	// does not allocate, and one for a second reader or a splice.
	p.spare[0].Store(newWaiter())
	p.spare[1].Store(newWaiter())
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

func (p *Pipe) empty() bool  { return p.head == p.tail }
func (p *Pipe) full() bool   { return p.head-p.tail >= p.maxUsage }
func (p *Pipe) mask() uint32 { return uint32(len(p.slots) - 1) }

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
// While it waits, a writer may copy into dst directly; it then returns
// that write's bytes. A buffer of device memory that faults gives EIO.
func (p *Pipe) Read(dst iov.Iter, nonblock bool) (int, error) {
	if dst.Len() == 0 {
		return 0, nil
	}
	p.mu.Lock()
	for p.head == p.tail {
		if p.writers == 0 {
			p.mu.Unlock()
			return 0, nil
		}
		if nonblock {
			p.mu.Unlock()
			return 0, errEAGAIN
		}
		// p.wait, written out: a blocked read returns through this frame
		// alone.
		w := p.readWaiter()
		w.dst, w.direct = dst, true
		p.rdq.push(w)
		p.mu.Unlock()
		n := <-w.ch
		if w != &p.rown {
			p.putWaiter(w)
		}
		if n > 0 {
			return n, nil
		}
		p.mu.Lock()
	}
	return p.readRing(&dst)
}

// readRing is pipe_read's copy out of a ring that is not empty; mu is
// held, and dropped on return.
func (p *Pipe) readRing(dst *iov.Iter) (int, error) {
	total := dst.Len()
	ret := 0
	var err error
	freed := false
	wasFull := p.full()
	mask := p.mask()
	for !p.empty() {
		b := &p.slots[p.tail&mask]
		chars := min(b.n, total)
		src := b.data[b.off : b.off+chars]
		var k int
		if b.flags&guarded != 0 {
			if k, err = guardedCopyOut(dst, src); err != nil {
				break // the buffer stays, as a failed pipe_buf_confirm leaves it
			}
		} else {
			k = dst.CopyOut(src)
		}
		ret += k
		b.off += k
		b.n -= k
		if b.flags&packet != 0 {
			total = k
			b.n = 0
		}
		if b.n == 0 {
			b.release()
			p.tail++
			freed = true
		}
		total -= k
		if total == 0 {
			break
		}
	}
	var woken wakeList
	if freed && p.wrq.head != nil {
		p.wakeOne(p.wrq.pop(), 0, &woken)
	}
	p.mu.Unlock()
	// Wake after unlocking, as Linux does, so the woken goroutine does not
	// find the lock still held.
	woken.wake()
	if freed && wasFull {
		p.wake()
	}
	if ret > 0 {
		return ret, nil
	}
	return 0, err
}

// yieldSize is the smallest write that yields once before it copies into
// an empty ring when the previous write went to a waiting reader: that
// reader is then likely runnable and about to read again, and letting it
// run first turns the two copies of the ring (in, then out) into one
// straight into its buffer. Below this size a copy costs less than the
// yield. The yield never waits for anything: a writer whose reader does
// not come back writes into the ring, and yields again only after its
// bytes have once more gone straight to a reader.
const yieldSize = 2 * PageSize

// Write moves the bytes of src into the pipe, as fs/pipe.c's pipe_write.
// It blocks until all are in, unless nonblock is set; then it writes what
// fits and gives EAGAIN if that is nothing. A write of at most Buf bytes
// is atomic: it goes into the last buffer's free tail or one new buffer,
// never in part, or straight to waiting readers. With no reader it gives
// EPIPE (the caller reports it; no signal is sent). With packet set
// (O_DIRECT) each page-sized piece is a packet that a read returns alone.
// A write of 0 bytes returns 0 before anything is checked.
func (p *Pipe) Write(src iov.Iter, nonblock, pkt bool) (int, error) {
	n, _, err := p.write(src, nonblock, pkt, nil)
	return n, err
}

// A Holder is a reference to the write end a call of WriteHold comes
// through, which its caller takes only if the call drops the lock
// (to wait, or to yield): the open file, which a concurrent close may
// release. Hold takes the reference, or reports false when the end was
// released already. It is called with the pipe's lock held and must not
// block or take that lock.
type Holder interface {
	Hold() bool
}

// WriteHold is Write for a caller that holds no reference to its write
// end (h) unless the call asks for one: a write that never drops the
// lock needs none, as an end's close takes the lock too and so comes
// wholly before or after it. With no write end left (the caller's was
// released under it) it gives EBADF; before the write drops the lock it
// takes h.Hold, and if that fails it returns what it wrote, or EBADF
// when that is nothing. held says it took the reference, which the
// caller then drops.
func (p *Pipe) WriteHold(src iov.Iter, nonblock, pkt bool, h Holder) (n int, held bool, err error) {
	return p.write(src, nonblock, pkt, h)
}

// hold takes h's reference for a write about to drop the lock, once; a
// nil h means the caller holds its end already.
func hold(h Holder, held *bool) bool {
	if h == nil || *held {
		return true
	}
	*held = h.Hold()
	return *held
}

// write is Write and WriteHold.
func (p *Pipe) write(src iov.Iter, nonblock, pkt bool, h Holder) (int, bool, error) {
	total := src.Len()
	if total == 0 {
		return 0, false, nil
	}
	p.mu.Lock()
	if p.writers == 0 && h != nil {
		p.mu.Unlock()
		return 0, false, errEBADF
	}
	if p.readers == 0 {
		p.mu.Unlock()
		return 0, false, errEPIPE
	}
	// The whole write fits the first waiting reader's buffer (and is one
	// packet, in packet mode): hand it over, without the ring.
	if w := p.rdq.head; w != nil && w.direct && total <= w.dst.Len() && (!pkt || total <= PageSize) {
		p.rdq.pop()
		if seg := w.dst.Segment(); len(seg) >= total && src.Kind() == iov.KindBuf {
			copy(seg, src.Segment()) // one buffer into one: the common case
		} else {
			moveIter(w.dst, &src, total)
		}
		p.handed = true
		var woken wakeList
		p.wakeOne(w, total, &woken)
		p.mu.Unlock()
		woken.wake()
		return total, false, nil
	}
	ret := 0
	held := false
	var err error
	var woken wakeList
	wakeNextWriter := false
	readable := false // bytes went into the ring: pollers may care
	if p.rdq.head != nil {
		ret += p.feed(&src, pkt, &woken)
		if src.Len() == 0 {
			goto out
		}
	}
	// Merge a tail shorter than a page into the last buffer, so small
	// writes share pages and the rest of a large one is page-aligned.
	if chars := total & (PageSize - 1); chars != 0 && !p.empty() && ret == 0 {
		b := &p.slots[(p.head-1)&p.mask()]
		end := b.off + b.n
		if b.flags&canMerge != 0 && end+chars <= len(b.data) {
			src.CopyIn(b.data[end : end+chars])
			b.n += chars
			ret = chars
			readable = true
			if src.Len() == 0 {
				goto out
			}
		}
	}
	if p.handed && total >= yieldSize && p.empty() && hold(h, &held) {
		p.mu.Unlock()
		runtime.Gosched()
		p.mu.Lock()
		p.handed = false
	}
	for {
		if p.readers == 0 {
			if ret == 0 {
				err = errEPIPE
			}
			break
		}
		if p.rdq.head != nil { // a reader came while this write waited or yielded
			ret += p.feed(&src, pkt, &woken)
			if src.Len() == 0 {
				break
			}
			continue
		}
		if !p.full() {
			b := &p.slots[p.head&p.mask()]
			page := b.ownPage()
			p.head++
			b.off = 0
			b.flags = own | canMerge
			if pkt {
				b.flags = own | packet
			}
			b.n = src.CopyIn(page)
			ret += b.n
			readable = true
			if src.Len() == 0 {
				break
			}
			continue
		}
		if nonblock {
			if ret == 0 {
				err = errEAGAIN
			}
			break
		}
		if !hold(h, &held) {
			if ret == 0 {
				err = errEBADF
			}
			break
		}
		if readable {
			p.wake()
			readable = false
		}
		p.wait(&p.wrq, p.getWaiter(), &woken)
		wakeNextWriter = true
	}
out:
	if p.full() {
		wakeNextWriter = false
	}
	if wakeNextWriter && p.wrq.head != nil {
		p.wakeOne(p.wrq.pop(), 0, &woken)
	}
	p.mu.Unlock()
	woken.wake()
	if readable {
		p.wake()
	}
	return ret, held, err
}

// feed copies src straight into the waiting readers' buffers, in the
// order they came, and returns the count; mu is held. Each reader takes
// what fits from one write and is done. A reader that waits for buffers
// rather than bytes (a splice) stops the hand-off: every waiter is woken
// to look at the ring, where the rest goes.
func (p *Pipe) feed(src *iov.Iter, pkt bool, woken *wakeList) int {
	ret := 0
	for src.Len() > 0 {
		w := p.rdq.pop()
		if w == nil {
			break
		}
		if !w.direct {
			p.wakeOne(w, 0, woken)
			p.wakeAll(&p.rdq, woken)
			break
		}
		var k int
		if pkt {
			piece := min(src.Len(), PageSize)
			k = moveIter(w.dst, src, min(piece, w.dst.Len()))
			src.Advance(piece - k) // the rest of the packet is dropped, as a read drops it
			ret += piece
		} else {
			k = moveIter(w.dst, src, w.dst.Len())
			ret += k
		}
		p.wakeOne(w, k, woken)
	}
	p.handed = ret > 0
	return ret
}

// moveIter copies n bytes from src, which it consumes, into dst, a
// waiting reader's destination that is not used afterwards (taken by
// value, it is consumed only between its segments), and returns n (both
// must hold at least n).
func moveIter(dst iov.Iter, src *iov.Iter, n int) int {
	done := 0
	for {
		if dst.Kind() == iov.KindDiscard {
			src.Advance(n - done)
			return n
		}
		seg := dst.Segment()
		k := src.CopyIn(seg[:min(len(seg), n-done)])
		if done += k; done == n || k == 0 {
			return done
		}
		dst.Advance(k)
	}
}

// Len returns the number of bytes queued (FIONREAD).
func (p *Pipe) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	mask := p.mask()
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
	if slots > p.maxUsage && size > MaxSize && !privileged {
		p.mu.Unlock()
		return 0, errEPERM
	}
	if used := p.head - p.tail; slots < used {
		p.mu.Unlock()
		return 0, errEBUSY
	}
	if slots != uint32(len(p.slots)) {
		ns := make([]slot, slots)
		omask, nmask := p.mask(), slots-1
		used := p.head - p.tail
		for i := range used {
			ns[(p.tail+i)&nmask] = p.slots[(p.tail+i)&omask]
		}
		// Keep the spare pages of free slots, as many as fit.
		j := used
		for i := used; i < uint32(len(p.slots)) && j < slots; i++ {
			if pg := p.slots[(p.tail+i)&omask].spare; pg != nil {
				ns[(p.tail+j)&nmask].spare = pg
				j++
			}
		}
		p.slots = ns
		p.vec = make([][]byte, slots)
	}
	p.maxUsage = slots
	var woken wakeList
	p.wakeAll(&p.wrq, &woken)
	p.mu.Unlock()
	woken.wake()
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
// pollers are woken: readers see end of file, writers EPIPE. A pipe whose
// last end goes drops the buffers it still holds.
func (p *Pipe) Close(rd, wr bool) {
	p.mu.Lock()
	if rd {
		p.readers--
	}
	if wr {
		p.writers--
	}
	var woken wakeList
	if (p.readers == 0) != (p.writers == 0) {
		p.wakeAll(&p.rdq, &woken)
		p.wakeAll(&p.wrq, &woken)
		defer p.wake()
	}
	if p.readers == 0 && p.writers == 0 {
		p.drop()
	}
	p.mu.Unlock()
	woken.wake()
}

// drop releases every queued buffer (free_pipe_info); mu is held.
func (p *Pipe) drop() {
	mask := p.mask()
	for ; p.tail != p.head; p.tail++ {
		p.slots[p.tail&mask].release()
	}
}
