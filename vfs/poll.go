package vfs

// poll(2) and ppoll(2) (Linux fs/select.c's do_sys_poll), and the wait
// queues that drivers implementing Poller wake.
//
// A poll call scans its descriptors once with a PollWaiter, which each
// Poller registers on its queues (and which holds a reference to each
// file so registered, as Linux's poll_table entries hold theirs); if
// nothing is ready it sleeps on the waiter's channel until a queue is
// woken or the timeout passes, then scans again without registering. At
// the end it leaves every queue and drops the references. Waiters are
// pooled, so a poll call in the steady state does not allocate.
//
// Lock order: a driver's own lock, then WaitQueue.mu (drivers may Wake
// with their lock held). Watch and the removal at the end take only
// WaitQueue.mu.

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// defaultPollMask is what poll reports for a file whose handle is not a
// Poller (Linux DEFAULT_POLLMASK).
const defaultPollMask = unix.POLLIN | unix.POLLOUT | unix.EPOLLRDNORM | unix.EPOLLWRNORM

// A WaitQueue is where pollers wait for a driver's events (Linux's
// wait_queue_head_t for poll). The zero value is an empty queue. A driver
// embeds one per kind of event it signals (or one for all) and calls Wake
// after each change.
type WaitQueue struct {
	// n counts the waiters, so Wake on a queue nobody polls costs one
	// atomic load. It changes only under mu.
	n atomic.Int32
	// mu protects ws.
	mu sync.Mutex
	ws []*PollWaiter
}

// Wake wakes every poller registered on q. It does not block and may be
// called with the driver's own locks held.
func (q *WaitQueue) Wake() {
	if q.n.Load() == 0 {
		return
	}
	q.mu.Lock()
	for _, w := range q.ws {
		select {
		case w.ch <- struct{}{}:
		default: // already woken
		}
	}
	q.mu.Unlock()
}

func (q *WaitQueue) add(w *PollWaiter) {
	q.mu.Lock()
	q.ws = append(q.ws, w)
	q.n.Add(1)
	q.mu.Unlock()
}

func (q *WaitQueue) remove(w *PollWaiter) {
	q.mu.Lock()
	for i, x := range q.ws {
		if x == w {
			last := len(q.ws) - 1
			q.ws[i] = q.ws[last]
			q.ws[last] = nil
			q.ws = q.ws[:last]
			q.n.Add(-1)
			break
		}
	}
	q.mu.Unlock()
}

// A PollWaiter is one poll call's registration (Linux's poll_table). A
// Poller passes it the queues to wait on through Watch; only the VFS
// creates waiters.
type PollWaiter struct {
	// ch receives a token when a queue is woken; capacity 1.
	ch chan struct{}
	// queues and files are what the call must leave and release at its
	// end. Only the polling goroutine touches them.
	queues []*WaitQueue
	files  []*file
	timer  *time.Timer
}

// Watch registers w on q until the poll call ends.
func (w *PollWaiter) Watch(q *WaitQueue) {
	q.add(w)
	w.queues = append(w.queues, q)
}

var waiters = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &PollWaiter{ch: make(chan struct{}, 1), timer: t}
}}

// finish leaves every queue, releases the held files and returns w to the
// pool.
func (w *PollWaiter) finish() {
	for i, q := range w.queues {
		q.remove(w)
		w.queues[i] = nil
	}
	w.queues = w.queues[:0]
	for i, f := range w.files {
		f.release()
		w.files[i] = nil
	}
	w.files = w.files[:0]
	w.timer.Stop()
	select {
	case <-w.ch:
	default:
	}
	waiters.Put(w)
}

// Poll waits until one of the descriptors in fds is ready for one of its
// Events, or timeout milliseconds pass, and sets each entry's Revents, as
// poll(2) does. It returns the number of entries with a non-zero Revents.
// A negative timeout waits without limit, 0 does not wait.
//
// Revents holds the ready events among Events (POLLIN, POLLOUT,
// POLLRDNORM and POLLWRNORM; unix.EPOLLRDNORM and EPOLLWRNORM have their
// values) and POLLERR and POLLHUP, which are reported whether asked for or
// not; POLLNVAL for a descriptor that is not open. An entry with a
// negative Fd is ignored and gets Revents 0. Pipes and FIFOs report as
// Linux's pipe_poll; files of drivers that are not Pollers (regular files,
// the memory devices) are always ready. More than 1<<20 entries give
// EINVAL. Every poller waiting on an object is woken by its events.
func (p *Proc) Poll(fds []unix.PollFd, timeout int) (int, error) {
	d := time.Duration(-1)
	if timeout >= 0 {
		d = time.Duration(timeout) * time.Millisecond
	}
	return p.poll(fds, d)
}

// Ppoll is Poll with the timeout as a unix.Timespec, as ppoll(2): nil
// waits without limit; a negative or denormal value (nanoseconds outside
// 0..999999999) gives EINVAL. There are no signals in iovfs, so ppoll's
// signal mask has no counterpart.
func (p *Proc) Ppoll(fds []unix.PollFd, ts *unix.Timespec) (int, error) {
	d := time.Duration(-1)
	if ts != nil {
		if ts.Sec < 0 || ts.Nsec < 0 || ts.Nsec >= 1e9 {
			return 0, errEINVAL
		}
		const maxSec = (1<<63 - 1) / int64(time.Second)
		if ts.Sec >= maxSec {
			d = -1 // a wait longer than time.Duration holds: without limit
		} else {
			d = time.Duration(ts.Sec)*time.Second + time.Duration(ts.Nsec)
		}
	}
	return p.poll(fds, d)
}

// poll is do_sys_poll with a timeout d (negative: none).
func (p *Proc) poll(fds []unix.PollFd, d time.Duration) (int, error) {
	if len(fds) > maxFDs {
		return 0, errEINVAL
	}
	if d == 0 {
		return p.pollScan(fds, nil), nil
	}
	w := waiters.Get().(*PollWaiter)
	defer w.finish()
	n := p.pollScan(fds, w)
	if n > 0 {
		return n, nil
	}
	var expired <-chan time.Time
	if d > 0 {
		w.timer.Reset(d)
		expired = w.timer.C
	}
	for {
		select {
		case <-w.ch:
			if n = p.pollScan(fds, nil); n > 0 {
				return n, nil
			}
		case <-expired:
			return p.pollScan(fds, nil), nil
		}
	}
}

// pollScan sets every entry's Revents and returns how many are non-zero.
// With w, Pollers register w and the files stay referenced until the call
// ends.
func (p *Proc) pollScan(fds []unix.PollFd, w *PollWaiter) int {
	n := 0
	for i := range fds {
		pfd := &fds[i]
		pfd.Revents = 0
		if pfd.Fd < 0 {
			continue
		}
		f := p.files.get(int(pfd.Fd))
		if f == nil || !f.tryRef() {
			pfd.Revents = unix.POLLNVAL
			n++
			continue
		}
		filter := uint32(uint16(pfd.Events)) | unix.POLLERR | unix.POLLHUP
		mask := uint32(defaultPollMask)
		keep := false
		if pl, ok := f.h.(Poller); ok {
			mask = pl.Poll(filter, w)
			keep = w != nil
		}
		if keep {
			w.files = append(w.files, f)
		} else {
			f.release()
		}
		if m := mask & filter; m != 0 {
			pfd.Revents = int16(m)
			n++
		}
	}
	return n
}
