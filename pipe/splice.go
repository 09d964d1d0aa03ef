package pipe

// The buffer moves of Linux's fs/splice.c: filling a pipe with references
// to memory it does not own or with bytes read straight into its pages
// (splice_to_pipe, copy_splice_read, vmsplice), draining it into a
// file's write (iter_file_splice_write, __splice_from_pipe), and moving
// or duplicating buffers between two pipes (splice_pipe_to_pipe,
// link_pipe). Only slots written by write(2) are ever written into; a
// buffer added by reference is read, never written, so a page shared by
// tee or by a file stays as its owner has it.

import (
	"runtime/debug"
	"unsafe"

	"github.com/iovfs/iovfs/iov"
)

// A Ring is a pipe whose lock is held, handed to the function that fills
// it (SpliceIn). It is valid only during that call.
type Ring struct{ p *Pipe }

// Free returns the number of free buffers (max_usage less the occupancy).
func (r Ring) Free() int { return int(r.p.maxUsage - (r.p.head - r.p.tail)) }

// Piece returns how many of n bytes of a file at offset off one buffer
// takes: up to the end of off's page, as Linux queues a file's pages one
// buffer each, or all n in a private pipe, whose buffers nothing else
// sees (NewPrivate).
func (r Ring) Piece(off int64, n int) int {
	if r.p.private {
		return n
	}
	return min(n, PageSize-int(off&(PageSize-1)))
}

// Add queues b, at most PageSize bytes (any length in a private pipe), as
// one buffer that refers to b's memory instead of copying it
// (splice_to_pipe, add_to_pipe). A read
// copies from b later, and sees what b holds then. k, if not nil, has
// already been counted once for this buffer (Keeper) and is Put when the
// buffer is consumed. guardedMem says b is device memory whose reading
// may fault: reads then copy under the fault guard and give EIO instead
// of crashing. Free must be > 0 and b not empty.
func (r Ring) Add(b []byte, k Keeper, guardedMem bool) {
	p := r.p
	s := &p.slots[p.head&p.mask()]
	s.data, s.off, s.n, s.keep, s.flags = b, 0, len(b), k, 0
	if guardedMem {
		s.flags = guarded
	}
	p.head++
}

// Gift queues b as Add does, with the buffer marked as given away
// (vmsplice's SPLICE_F_GIFT).
func (r Ring) Gift(b []byte) {
	r.Add(b, nil, false)
	r.p.slots[(r.p.head-1)&r.p.mask()].flags = gift
}

// Pages returns the pages of the next k free buffers, k <= Free, for a
// read to fill in place (copy_splice_read); Commit then queues them.
// The vector is the pipe's scratch: it is valid until Commit.
func (r Ring) Pages(k int) [][]byte {
	p := r.p
	mask := p.mask()
	v := p.vec[:k]
	for i := range k {
		v[i] = p.slots[(p.head+uint32(i))&mask].ownPage()
	}
	return v
}

// Commit queues the first n bytes read into the pages Pages returned,
// one buffer per page; they cannot be merged into, as Linux's
// copy_splice_read buffers cannot.
func (r Ring) Commit(n int) {
	p := r.p
	mask := p.mask()
	for n > 0 {
		s := &p.slots[p.head&mask]
		s.off, s.n, s.flags = 0, min(n, PageSize), own
		n -= s.n
		p.head++
	}
	clear(p.vec)
}

// SpliceIn is splice_file_to_pipe's part under the pipe lock: it waits
// for a free buffer (wait_for_space: EPIPE when no reader is left,
// EAGAIN if nonblock and the pipe is full), then calls fill, which
// queues buffers through the Ring and returns what it counts as done.
// Readers are woken if fill returns a count above 0.
func (p *Pipe) SpliceIn(nonblock bool, fill func(r Ring) (int, error)) (int, error) {
	p.mu.Lock()
	if err := p.waitSpace(nonblock); err != nil {
		p.mu.Unlock()
		return 0, err
	}
	wasEmpty := p.empty()
	n, err := fill(Ring{p})
	var woken wakeList
	if n > 0 {
		p.wakeAll(&p.rdq, &woken)
	}
	p.mu.Unlock()
	woken.wake()
	if n > 0 && wasEmpty {
		p.wake()
	}
	return n, err
}

// waitSpace is wait_for_space and opipe_prep: it returns with mu held
// and a buffer free, or an error. mu is held.
func (p *Pipe) waitSpace(nonblock bool) error {
	for {
		if p.readers == 0 {
			return errEPIPE
		}
		if !p.full() {
			return nil
		}
		if nonblock {
			return errEAGAIN
		}
		p.wait(&p.wrq, p.getWaiter(), &wakeList{})
	}
}

// waitData is splice_from_pipe_next and ipipe_prep: it returns with mu
// held and the pipe not empty (true), or false when it is empty and no
// writer is left or, for a splice that has moved bytes (moved), at once;
// EAGAIN if nonblock and there is nothing. mu is held.
func (p *Pipe) waitData(nonblock, moved bool) (bool, error) {
	for p.empty() {
		if p.writers == 0 || moved {
			return false, nil
		}
		if nonblock {
			return false, errEAGAIN
		}
		p.wait(&p.rdq, p.readWaiter(), &wakeList{}) // not direct: it wants buffers
	}
	return true, nil
}

// SpliceOut is __splice_from_pipe with the actor of
// iter_file_splice_write: it waits for bytes as a read does (unless
// nonblock, or once it has moved some), then calls drain with a vector
// over the queued bytes, up to n, which drain consumes as a write does
// and returns the count of; SpliceOut drops what it took and goes on
// while n is not reached, bytes are queued and drain took all it was
// given. It returns the total, or drain's error if it took nothing.
//
// With confirm set, a buffer of device memory that may fault is first
// copied into the slot's own page under the fault guard (EIO if it
// faults), so that drain never reads such memory; a drain that does not
// read the bytes (a sink) passes false.
func (p *Pipe) SpliceOut(n int, nonblock, confirm bool, drain func(v [][]byte) (int, error)) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	p.mu.Lock()
	done := 0
	var err error
	freed := false
	wasFull := p.full()
	for n > 0 {
		var ok bool
		if ok, err = p.waitData(nonblock, done > 0); !ok {
			break
		}
		v, cerr := p.vector(n, confirm)
		if len(v) == 0 {
			err = cerr
			break
		}
		m, derr := drain(v)
		clear(v)
		if m <= 0 {
			err = derr
			break
		}
		done += m
		n -= m
		p.consume(m)
		freed = true
	}
	var woken wakeList
	if freed {
		p.wakeAll(&p.wrq, &woken)
	}
	p.mu.Unlock()
	woken.wake()
	if freed && wasFull {
		p.wake()
	}
	if done > 0 {
		return done, nil
	}
	return 0, err
}

// vector puts the queued bytes, up to n, into the scratch vector, one
// entry a buffer, and returns it. With confirm, buffers of device memory
// are copied into their slot's own page first; one that faults ends the
// vector (and gives EIO).
func (p *Pipe) vector(n int, confirm bool) ([][]byte, error) {
	mask := p.mask()
	k, total := 0, 0
	for i := p.tail; i != p.head && total < n; i++ {
		s := &p.slots[i&mask]
		if confirm && s.flags&guarded != 0 {
			if err := s.confirm(); err != nil {
				return p.vec[:k], err
			}
		}
		c := min(s.n, n-total)
		p.vec[k] = s.data[s.off : s.off+c]
		k++
		total += c
	}
	return p.vec[:k], nil
}

// confirm copies a guarded buffer into the slot's own page.
func (s *slot) confirm() error {
	data := s.data
	src := data[s.off : s.off+s.n]
	pg := s.ownPage()
	it := iov.Buf(pg[:len(src)])
	if _, err := guardedCopyOut(&it, src); err != nil {
		s.data = data // the buffer stays as it was
		return err
	}
	if s.keep != nil {
		s.keep.Put()
		s.keep = nil
	}
	s.data = pg
	s.off = 0
	s.flags = s.flags&^guarded | own
	return nil
}

// consume drops the first m queued bytes; mu is held.
func (p *Pipe) consume(m int) {
	mask := p.mask()
	for m > 0 {
		s := &p.slots[p.tail&mask]
		if m < s.n {
			s.off += m
			s.n -= m
			return
		}
		m -= s.n
		s.release()
		p.tail++
	}
}

// lock2 takes the locks of two pipes in the order of their ids (Linux's
// pipe_double_lock orders them by address).
func lock2(a, b *Pipe) {
	if a.id > b.id {
		a, b = b, a
	}
	a.mu.Lock()
	b.mu.Lock()
}

// prep2 is ipipe_prep and opipe_prep: wait for bytes in in (unless it
// has no writer) and room in out, each under its own lock.
func prep2(in, out *Pipe, nonblock bool) error {
	in.mu.Lock()
	_, err := in.waitData(nonblock, false)
	in.mu.Unlock()
	if err != nil {
		return err
	}
	out.mu.Lock()
	err = out.waitSpace(nonblock)
	out.mu.Unlock()
	return err
}

// dup makes d, a free slot of another pipe, hold what s holds: its
// bytes, and a count on its page or keeper. The merge and gift flags are
// not inherited (link_pipe, splice_pipe_to_pipe's partial move).
func (d *slot) dup(s *slot) {
	d.data, d.off, d.n = s.data, s.off, s.n
	d.flags = s.flags &^ (gift | canMerge | own)
	d.page = s.page
	if s.flags&own != 0 {
		d.page = s.spare
	}
	if d.page != nil {
		d.page.refs.Add(1)
	}
	d.keep = s.keep
	if d.keep != nil {
		d.keep.Get()
	}
}

// Splice moves up to n bytes of buffers from in to out, as
// splice_pipe_to_pipe: whole buffers move (a slot of out takes over the
// page, keeping its flags, so later writes may merge into it), a part of
// one is shared. It waits for bytes in in and room in out as read and
// write do (EAGAIN if nonblock), gives EPIPE when out has no reader, and
// 0 when in is empty with no writer. in and out must differ.
func Splice(in, out *Pipe, n int, nonblock bool) (int, error) {
	for {
		if err := prep2(in, out, nonblock); err != nil {
			return 0, err
		}
		ret, again, err := move(in, out, n, nonblock, false)
		if !again {
			return ret, err
		}
	}
}

// Tee duplicates up to n bytes of the buffers queued in in into out, as
// link_pipe: out refers to the same pages, in keeps them. Its waits and
// errors are Splice's, except that an empty in with no writer gives 0
// at once, and an in or out that changed between the waits and the copy
// gives 0.
func Tee(in, out *Pipe, n int, nonblock bool) (int, error) {
	if err := prep2(in, out, nonblock); err != nil {
		return 0, err
	}
	ret, _, err := move(in, out, n, nonblock, true)
	return ret, err
}

// move is the part of Splice (tee false) and Tee under both locks; again
// says that Splice raced with another reader or writer and must wait
// again.
func move(in, out *Pipe, n int, nonblock, tee bool) (ret int, again bool, err error) {
	lock2(in, out)
	wasFull := in.full()
	outEmpty := out.empty()
	imask, omask := in.mask(), out.mask()
	it := in.tail
	moved := false
	for n > 0 {
		if out.readers == 0 {
			if ret == 0 {
				err = errEPIPE
			}
			break
		}
		if it == in.head && in.writers == 0 && !tee {
			break
		}
		if it == in.head || out.full() {
			if tee || ret > 0 {
				break
			}
			if nonblock {
				err = errEAGAIN
				break
			}
			again = true
			break
		}
		ib := &in.slots[it&imask]
		ob := &out.slots[out.head&omask]
		if !tee && n >= ib.n {
			// The whole buffer moves: out takes over what in held.
			ob.data, ob.off, ob.n, ob.keep, ob.page = ib.data, ib.off, ib.n, ib.keep, ib.page
			ob.flags = ib.flags &^ own
			if ib.flags&own != 0 {
				ob.page = ib.spare
				ob.page.refs.Add(1)
			}
			ib.page, ib.keep = nil, nil
			ib.release()
			it++
			in.tail = it
			moved = true
		} else {
			ob.dup(ib)
			ob.n = min(ob.n, n)
			if tee {
				it++
			} else {
				ib.off += ob.n
				ib.n -= ob.n
			}
		}
		out.head++
		ret += ob.n
		n -= ob.n
	}
	var rd, wr wakeList
	if ret > 0 {
		out.wakeAll(&out.rdq, &rd)
	}
	if moved {
		in.wakeAll(&in.wrq, &wr)
	}
	in.mu.Unlock()
	out.mu.Unlock()
	rd.wake()
	wr.wake()
	if ret > 0 && outEmpty {
		out.wake()
	}
	if moved && wasFull {
		in.wake()
	}
	return ret, again, err
}

// Vmsplice queues the bytes of src as buffers that refer to the caller's
// memory, one per page of the address space it spans (iter_to_pipe), as
// vmsplice(2) to a pipe: it waits for a free buffer as SpliceIn does,
// then queues what fits without waiting again. The pipe reads the
// caller's memory when it is read: bytes changed before then are read
// changed. giftFlag marks the buffers SPLICE_F_GIFT.
func (p *Pipe) Vmsplice(src iov.Iter, nonblock, giftFlag bool) (int, error) {
	return p.SpliceIn(nonblock, func(r Ring) (int, error) {
		n := 0
		for src.Len() > 0 && r.Free() > 0 {
			seg := src.Segment()
			// A piece ends where the caller's page does, as
			// get_user_pages hands out one page at a time.
			in := PageSize - int(uintptr(unsafe.Pointer(unsafe.SliceData(seg)))&(PageSize-1))
			b := seg[:min(len(seg), in)]
			if giftFlag {
				r.Gift(b)
			} else {
				r.Add(b, nil, false)
			}
			src.Advance(len(b))
			n += len(b)
		}
		return n, nil
	})
}

// guardedCopyOut copies src, device memory whose reading may fault (a
// host file under a mapping truncated by another process), into dst as
// dst.CopyOut does; a fault gives 0 and EIO instead of crashing. Any
// other panic goes on.
func guardedCopyOut(dst *iov.Iter, src []byte) (n int, err error) {
	old := debug.SetPanicOnFault(true)
	n = -1
	defer func() {
		if n < 0 {
			debug.SetPanicOnFault(old)
			r := recover()
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			n, err = 0, errEIO
		}
	}()
	n = dst.CopyOut(src)
	debug.SetPanicOnFault(old)
	return n, nil
}

// NewPrivate returns a pipe with one reader and one writer that only its
// creator uses, as splice_direct_to_actor's (current->splice_pipe): a
// buffer may then be longer than a page (Ring.Piece), so that a copy
// through it moves a run of a file's pages with one copy.
func NewPrivate(size int) *Pipe {
	p := NewPair()
	p.private = true
	p.SetSize(size, true)
	return p
}

// Reset releases every queued buffer and starts the ring over at its
// first slot, as splice_direct_to_actor does with its private pipe after
// each transfer, so that the pipe's pages are reused from the start.
func (p *Pipe) Reset() {
	p.mu.Lock()
	p.drop()
	p.head, p.tail = 0, 0
	p.mu.Unlock()
}
