package vfs

// Advisory locks: flock(2), POSIX record locks and open-file-description
// (OFD) record locks, after Linux's fs/locks.c.
//
// Owners. A flock lock belongs to an open file description (*file). A
// record lock belongs to a process (process-associated, F_SETLK: the
// *Proc that is the group of the calling thread, Proc.group, as Linux's
// fl_owner is the shared files_struct) or to a *file (OFD, F_OFD_SETLK); both kinds sit in one list per node and
// conflict with each other whenever their owners differ, as in Linux's
// flc_posix list. flock and record locks never conflict with each other.
//
// Lifetime. A Proc's record locks on a node go when the Proc closes any
// descriptor of that node (Linux's locks_remove_posix in filp_close). OFD
// and flock locks go when the last descriptor of their open file is closed
// (locks_remove_file).
//
// Waiting. F_SETLKW and flock without LOCK_NB sleep on their node's
// sync.Cond and are woken by every change to the node's locks; they then
// test again. Nothing polls. A waiting process-associated request is
// recorded in locks.waiting, the owner it waits for, so that a new
// F_SETLKW can follow the chain of waiting owners and fail with EDEADLK if
// it leads back to the caller (posix_locks_deadlock, at most 10 steps).
// As in Linux, a waiter's entry is dropped when it is woken and put back
// if it must wait again. A Proc with several goroutines waiting at once
// has one entry, the latest.
//
// Locking. locks.mu guards everything below it: the node table, every
// nodeLocks and locks.waiting. It is a leaf lock: it is taken with no other
// VFS lock held and no driver is called under it (the file position and
// size that SEEK_CUR and SEEK_END need are read before it is taken). Lock
// calls are rare next to reads and writes, so one mutex for all nodes
// keeps the deadlock chain, which crosses nodes, simple.

import (
	"math"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// offsetMax is Linux's OFFSET_MAX, the end of a lock that runs to the end
// of the file (l_len 0).
const offsetMax = math.MaxInt64

// maxDeadlkIterations is Linux's MAX_DEADLK_ITERATIONS.
const maxDeadlkIterations = 10

// lockMand is LOCK_MAND (32), which Linux ignores: flock returns 0.
const lockMand = 32

var locks struct {
	mu      sync.Mutex
	nodes   map[Node]*nodeLocks
	waiting map[*Proc]any // the owner each blocked Proc's F_SETLKW waits for

	// count is len(nodes), read without mu by close's fast path.
	count atomic.Int32
}

// recordLock is one POSIX or OFD record lock. Ranges are inclusive.
type recordLock struct {
	owner      any // *Proc (process-associated) or *file (OFD)
	typ        int16
	start, end int64
	pid        int32 // what F_GETLK reports: the Proc's pid, or -1 for OFD
}

// flockLock is one flock(2) lock.
type flockLock struct {
	f   *file
	typ int16
}

// nodeLocks is the lock state of one node (Linux's file_lock_context).
// record is ordered as Linux's flc_posix list: each owner's locks are
// contiguous and sorted by start, and an owner that had none starts its
// run at the end. F_GETLK reports the first conflicting lock in it.
type nodeLocks struct {
	record  []recordLock
	flock   []flockLock
	waiters int     // goroutines sleeping on cond
	blocked []*Proc // Procs whose locks.waiting entry points into this node
	cond    sync.Cond
}

// nodeLocksFor returns n's lock state, making it if create; locks.mu must
// be held.
func nodeLocksFor(n Node, create bool) *nodeLocks {
	nl := locks.nodes[n]
	if nl == nil && create {
		if locks.nodes == nil {
			locks.nodes = make(map[Node]*nodeLocks)
			locks.waiting = make(map[*Proc]any)
		}
		nl = nodeLocksPool.Get().(*nodeLocks)
		locks.nodes[n] = nl
		locks.count.Add(1)
	}
	return nl
}

// changed wakes every waiter of nl, after any change to its locks, and
// drops nl from the table when nothing is left in it; locks.mu must be
// held.
func (nl *nodeLocks) changed(n Node) {
	nl.wake()
	nl.dropIfEmpty(n)
}

// wake wakes every waiter of nl; locks.mu must be held.
func (nl *nodeLocks) wake() {
	for _, p := range nl.blocked {
		delete(locks.waiting, p)
	}
	nl.blocked = nl.blocked[:0]
	if nl.waiters > 0 {
		nl.cond.Broadcast()
	}
}

func (nl *nodeLocks) dropIfEmpty(n Node) {
	if len(nl.record) == 0 && len(nl.flock) == 0 && nl.waiters == 0 {
		delete(locks.nodes, n)
		locks.count.Add(-1)
		// Nobody holds nl now: lock calls reach it only through the table,
		// under locks.mu, and no waiter sleeps on it.
		nodeLocksPool.Put(nl)
	}
}

// nodeLocksPool keeps emptied nodeLocks, with their slices' capacity, so
// that locking a file that has no locks does not allocate.
var nodeLocksPool = sync.Pool{New: func() any {
	nl := &nodeLocks{}
	nl.cond.L = &locks.mu
	return nl
}}

// wait sleeps until nl changes; locks.mu must be held. A process-associated
// waiter p records that it waits for owner.
func (nl *nodeLocks) wait(p *Proc, owner any) {
	if p != nil {
		locks.waiting[p] = owner
		nl.blocked = append(nl.blocked, p)
	}
	nl.waiters++
	nl.cond.Wait()
	nl.waiters--
	if p != nil && locks.waiting[p] == owner {
		delete(locks.waiting, p)
	}
}

// Flock applies or removes an advisory lock on the open file of fd, as
// flock(2) does. how is LOCK_SH (shared), LOCK_EX (exclusive) or LOCK_UN,
// optionally with LOCK_NB. The lock belongs to the open file description:
// descriptors made by Dup share it, and it goes when the last of them is
// closed. Taking a lock of the other kind converts: the old lock is
// dropped first, so a conversion that fails leaves none (Linux's
// flock_lock_inode). A conflicting lock makes the call wait until it goes,
// or with LOCK_NB fail with EWOULDBLOCK. An invalid how gives EINVAL
// (checked before fd); LOCK_MAND is ignored and returns nil, as Linux 5.15+
// does. Errors are bare syscall.Errno values.
func (p *Proc) Flock(fd, how int) error {
	if how&lockMand != 0 {
		return nil
	}
	var typ int16
	switch how &^ unix.LOCK_NB {
	case unix.LOCK_SH:
		typ = unix.F_RDLCK
	case unix.LOCK_EX:
		typ = unix.F_WRLCK
	case unix.LOCK_UN:
		typ = unix.F_UNLCK
	default:
		return errEINVAL
	}
	f := p.fdget(fd)
	if f == nil {
		return errEBADF
	}
	locks.mu.Lock()
	defer locks.mu.Unlock()
	nl := nodeLocksFor(f.node, typ != unix.F_UNLCK)
	if nl == nil {
		return nil
	}
	for i, l := range nl.flock {
		if l.f != f {
			continue
		}
		if l.typ == typ {
			return nil
		}
		nl.flock = append(nl.flock[:i], nl.flock[i+1:]...)
		nl.wake()
		break
	}
	if typ == unix.F_UNLCK {
		nl.dropIfEmpty(f.node)
		return nil
	}
	for {
		conflict := false
		for _, l := range nl.flock {
			if l.f != f && (l.typ == unix.F_WRLCK || typ == unix.F_WRLCK) {
				conflict = true
				break
			}
		}
		if !conflict {
			nl.flock = append(nl.flock, flockLock{f, typ})
			nl.changed(f.node)
			return nil
		}
		if how&unix.LOCK_NB != 0 {
			nl.dropIfEmpty(f.node)
			return unix.EWOULDBLOCK
		}
		nl.wait(nil, nil)
	}
}

// FcntlFlock performs the record-lock command cmd of fcntl(2) with lk:
//
//   - F_SETLK and F_SETLKW take (F_RDLCK, F_WRLCK) or release (F_UNLCK)
//     the range lk describes for the calling process; F_OFD_SETLK and
//     F_OFD_SETLKW do the same for the open file description of fd, and
//     need lk.Pid == 0 (EINVAL otherwise). A process's, or a description's,
//     locks are merged with adjacent and overlapping ones of the same type
//     and split by ranges of another type or F_UNLCK, as Linux's
//     posix_lock_inode does. A conflicting lock of another owner gives
//     EAGAIN, or, with the W forms, a wait until it goes; a
//     process-associated wait that would close a cycle of processes
//     waiting for each other gives EDEADLK instead. F_RDLCK needs fd open
//     for reading and F_WRLCK for writing (EBADF).
//   - F_GETLK and F_OFD_GETLK test the range: if a lock of another owner
//     conflicts, lk is set to the first one (l_whence SEEK_SET, l_len 0
//     for "to the end of the file", l_pid the owner's Pid, or -1 for an
//     OFD lock); otherwise only lk.Type becomes F_UNLCK.
//
// The range is lk.Start from lk.Whence (SEEK_SET, SEEK_CUR: the file
// position, SEEK_END: the size) for lk.Len bytes; Len 0 means to the end
// of the file and a negative Len covers the bytes before Start. A range
// that starts before 0 gives EINVAL and one that passes the largest
// offset EOVERFLOW; an unknown Whence, Type or cmd gives EINVAL. The
// checks run in Linux's order: fd (EBADF), range, type, access mode, Pid.
func (p *Proc) FcntlFlock(fd int, cmd int, lk *unix.Flock_t) error {
	f := p.fdget(fd) // fcntl's check_fcntl_cmd: no lock commands on O_PATH
	if f == nil {
		return errEBADF
	}
	switch cmd {
	case unix.F_GETLK, unix.F_OFD_GETLK:
		return p.getlk(f, cmd == unix.F_OFD_GETLK, lk)
	case unix.F_SETLK, unix.F_SETLKW, unix.F_OFD_SETLK, unix.F_OFD_SETLKW:
		return p.setlk(f, cmd, lk)
	}
	return errEINVAL
}

// lockRange converts lk's range to inclusive offsets, as Linux's
// flock64_to_posix_lock.
func (f *file) lockRange(lk *unix.Flock_t) (start, end int64, err error) {
	switch lk.Whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		start = f.getPos()
	case unix.SEEK_END:
		st, err := f.stat()
		if err != nil {
			return 0, 0, err
		}
		start = st.Size
	default:
		return 0, 0, errEINVAL
	}
	if lk.Start > offsetMax-start {
		return 0, 0, unix.EOVERFLOW
	}
	start += lk.Start
	if start < 0 {
		return 0, 0, errEINVAL
	}
	switch {
	case lk.Len > 0:
		if lk.Len-1 > offsetMax-start {
			return 0, 0, unix.EOVERFLOW
		}
		end = start + lk.Len - 1
	case lk.Len < 0:
		if start+lk.Len < 0 {
			return 0, 0, errEINVAL
		}
		end = start - 1
		start += lk.Len
	default:
		end = offsetMax
	}
	return start, end, nil
}

func validLockType(t int16) bool {
	return t == unix.F_RDLCK || t == unix.F_WRLCK || t == unix.F_UNLCK
}

// conflicts reports whether record locks a and b conflict (Linux's
// posix_locks_conflict): different owners, overlapping ranges, and at
// least one write lock.
func conflicts(a, b *recordLock) bool {
	return a.owner != b.owner && a.start <= b.end && b.start <= a.end &&
		(a.typ == unix.F_WRLCK || b.typ == unix.F_WRLCK)
}

func (p *Proc) getlk(f *file, ofd bool, lk *unix.Flock_t) error {
	if !ofd && lk.Type != unix.F_RDLCK && lk.Type != unix.F_WRLCK {
		return errEINVAL
	}
	start, end, err := f.lockRange(lk)
	if err != nil {
		return err
	}
	if !validLockType(lk.Type) {
		return errEINVAL
	}
	req := recordLock{owner: p.group, typ: lk.Type, start: start, end: end}
	if ofd {
		if lk.Pid != 0 {
			return errEINVAL
		}
		req.owner = f
	}
	locks.mu.Lock()
	defer locks.mu.Unlock()
	if nl := nodeLocksFor(f.node, false); nl != nil {
		for i := range nl.record {
			c := &nl.record[i]
			if req.typ == unix.F_UNLCK {
				// F_OFD_GETLK with F_UNLCK (Linux 6.10+) finds the
				// description's own locks: posix_test_locks_conflict.
				if c.owner != req.owner || c.start > req.end || req.start > c.end {
					continue
				}
			} else if !conflicts(&req, c) {
				continue
			}
			lk.Type = c.typ
			lk.Whence = unix.SEEK_SET
			lk.Start = c.start
			lk.Len = 0
			if c.end != offsetMax {
				lk.Len = c.end - c.start + 1
			}
			lk.Pid = c.pid
			return nil
		}
	}
	lk.Type = unix.F_UNLCK
	return nil
}

func (p *Proc) setlk(f *file, cmd int, lk *unix.Flock_t) error {
	start, end, err := f.lockRange(lk)
	if err != nil {
		return err
	}
	if !validLockType(lk.Type) {
		return errEINVAL
	}
	if lk.Type == unix.F_RDLCK && f.mode&fmRead == 0 || lk.Type == unix.F_WRLCK && f.mode&fmWrite == 0 {
		return errEBADF // check_fmode_for_setlk
	}
	req := recordLock{owner: p.group, typ: lk.Type, start: start, end: end, pid: p.pid}
	var waiter *Proc // the process-associated owner, for deadlock detection
	switch cmd {
	case unix.F_OFD_SETLK, unix.F_OFD_SETLKW:
		if lk.Pid != 0 {
			return errEINVAL
		}
		req.owner, req.pid = f, -1
	default:
		waiter = p.group
	}
	wait := cmd == unix.F_SETLKW || cmd == unix.F_OFD_SETLKW

	locks.mu.Lock()
	defer locks.mu.Unlock()
	nl := nodeLocksFor(f.node, req.typ != unix.F_UNLCK)
	if nl == nil {
		return nil // unlocking where nothing is locked
	}
	for {
		var conflict *recordLock
		if req.typ != unix.F_UNLCK {
			for i := range nl.record {
				if conflicts(&req, &nl.record[i]) {
					conflict = &nl.record[i]
					break
				}
			}
		}
		if conflict == nil {
			nl.apply(req)
			nl.changed(f.node)
			return nil
		}
		if !wait {
			nl.dropIfEmpty(f.node)
			return unix.EAGAIN
		}
		if waiter != nil && deadlocks(waiter, conflict.owner) {
			nl.dropIfEmpty(f.node)
			return unix.EDEADLK
		}
		nl.wait(waiter, conflict.owner)
	}
}

// deadlocks follows the chain of owners that wait, starting at the owner
// of the lock caller would wait for, and reports whether it reaches
// caller (Linux's posix_locks_deadlock); locks.mu must be held.
func deadlocks(caller *Proc, owner any) bool {
	for i := 0; ; i++ {
		p, ok := owner.(*Proc)
		if !ok {
			return false // OFD owners are never recorded as waiting
		}
		next, ok := locks.waiting[p]
		if !ok {
			return false
		}
		if i > maxDeadlkIterations {
			return false
		}
		if next == any(caller) {
			return true
		}
		owner = next
	}
}

// apply sets req, which conflicts with no lock of another owner, into
// nl's record list: req's owner's locks are merged and split around it
// (F_UNLCK only splits), and the owner's run stays where it was in the
// list, sorted by start. It works in place: an owner's locks go through
// arrays on the stack, so a lock or unlock allocates only when the list
// outgrows its capacity.
func (nl *nodeLocks) apply(req recordLock) {
	var ownBuf, mergedBuf [8]recordLock
	own, merged := ownBuf[:0], mergedBuf[:0]
	first, k := -1, 0
	for _, l := range nl.record {
		if l.owner != req.owner {
			nl.record[k] = l
			k++
			continue
		}
		if first < 0 {
			first = k
		}
		own = append(own, l)
	}
	for _, l := range own {
		switch {
		case l.typ == req.typ:
			// "start - 1" rather than "end + 1": end may be offsetMax.
			if l.end < req.start-1 || l.start-1 > req.end {
				merged = append(merged, l)
				continue
			}
			req.start = min(req.start, l.start)
			req.end = max(req.end, l.end)
		case l.end < req.start || l.start > req.end:
			merged = append(merged, l)
		default:
			if l.start < req.start {
				left := l
				left.end = req.start - 1
				merged = append(merged, left)
			}
			if l.end > req.end {
				right := l
				right.start = req.end + 1
				merged = append(merged, right)
			}
		}
	}
	if req.typ != unix.F_UNLCK {
		merged = append(merged, req)
	}
	sortByStart(merged)
	if first < 0 {
		first = k
	}
	// Open a gap of len(merged) at first and put the owner's run there.
	rec := nl.record[:k]
	n := k + len(merged)
	if n > cap(rec) {
		grown := make([]recordLock, k, n+n/2)
		copy(grown, rec)
		rec = grown
	}
	clear(nl.record[k:]) // the old places of the owner's locks
	rec = rec[:n]
	copy(rec[first+len(merged):], rec[first:k])
	copy(rec[first:], merged)
	nl.record = rec
}

// sortByStart is an insertion sort: an owner has few locks on one node.
func sortByStart(ls []recordLock) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].start < ls[j-1].start; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

// closeFile is the close of one of p's descriptors of f: p's record locks
// on the node go (Linux's locks_remove_posix), then the descriptor's
// reference. Close, Dup2 and Dup3 use it.
func (p *Proc) closeFile(f *file) error {
	if locks.count.Load() != 0 {
		removeLocks(f.node, func(owner any) bool { return owner == any(p.group) }, nil)
	}
	return f.release()
}

// releaseLocks drops f's OFD and flock locks, at the last close of f
// (Linux's locks_remove_file).
func (f *file) releaseLocks() {
	if locks.count.Load() != 0 {
		removeLocks(f.node, func(owner any) bool { return owner == any(f) }, f)
	}
}

// removeLocks removes the record locks of n whose owner matches, and the
// flock lock of fl if fl is not nil.
func removeLocks(n Node, match func(any) bool, fl *file) {
	locks.mu.Lock()
	defer locks.mu.Unlock()
	nl := nodeLocksFor(n, false)
	if nl == nil {
		return
	}
	kept := nl.record[:0]
	for _, l := range nl.record {
		if !match(l.owner) {
			kept = append(kept, l)
		}
	}
	changed := len(kept) != len(nl.record)
	clear(nl.record[len(kept):])
	nl.record = kept
	if fl != nil {
		for i, l := range nl.flock {
			if l.f == fl {
				nl.flock = append(nl.flock[:i], nl.flock[i+1:]...)
				changed = true
				break
			}
		}
	}
	if changed {
		nl.changed(n)
	}
}
