package vfs_test

import (
	"runtime"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// waitAsleep yields until n lock waiters are asleep.
func waitAsleep(t *testing.T, n int) {
	t.Helper()
	for vfs.LockWaiters() != n {
		runtime.Gosched()
	}
}

// lockKind takes and releases one kind of lock for a test.
type lockKind struct {
	name string
	// lock takes an exclusive lock on fd, waiting if wait.
	lock func(p *vfs.Proc, fd int, wait bool) error
	// unlock releases it.
	unlock func(p *vfs.Proc, fd int) error
}

var lockKinds = []lockKind{
	{"posix",
		func(p *vfs.Proc, fd int, wait bool) error {
			cmd := unix.F_SETLK
			if wait {
				cmd = unix.F_SETLKW
			}
			return p.FcntlFlock(fd, cmd, &unix.Flock_t{Type: unix.F_WRLCK, Start: 2, Len: 3})
		},
		func(p *vfs.Proc, fd int) error {
			return p.FcntlFlock(fd, unix.F_SETLK, &unix.Flock_t{Type: unix.F_UNLCK, Start: 2, Len: 3})
		}},
	{"ofd",
		func(p *vfs.Proc, fd int, wait bool) error {
			cmd := unix.F_OFD_SETLK
			if wait {
				cmd = unix.F_OFD_SETLKW
			}
			return p.FcntlFlock(fd, cmd, &unix.Flock_t{Type: unix.F_WRLCK, Start: 2, Len: 3})
		},
		func(p *vfs.Proc, fd int) error {
			return p.FcntlFlock(fd, unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_UNLCK, Start: 2, Len: 3})
		}},
	{"flock",
		func(p *vfs.Proc, fd int, wait bool) error {
			how := unix.LOCK_EX
			if !wait {
				how |= unix.LOCK_NB
			}
			return p.Flock(fd, how)
		},
		func(p *vfs.Proc, fd int) error { return p.Flock(fd, unix.LOCK_UN) }},
}

// TestLockWaitWakes blocks a waiter behind a lock of another owner and
// checks that it wakes, and gets the lock, when the holder unlocks and
// when the holder closes the descriptor that frees the lock.
func TestLockWaitWakes(t *testing.T) {
	for _, k := range lockKinds {
		for _, how := range []string{"unlock", "close"} {
			t.Run(k.name+"/"+how, func(t *testing.T) {
				s := newProc(t) // before counting: tmpfs starts its clock goroutine once
				g0 := runtime.NumGoroutine()
				holder := s.p
				waiter := vfs.NewProc(holder.Namespace())
				hfd := mustOpen(t, holder, "/both", unix.O_RDWR)
				wfd := mustOpen(t, waiter, "/both", unix.O_RDWR)
				if err := k.lock(holder, hfd, false); err != nil {
					t.Fatal(err)
				}
				if err := k.lock(waiter, wfd, false); err != syscall.EAGAIN {
					t.Fatalf("non-blocking lock behind a holder: %v, want EAGAIN", err)
				}
				done := make(chan error)
				go func() { done <- k.lock(waiter, wfd, true) }()
				waitAsleep(t, 1)
				select {
				case err := <-done:
					t.Fatalf("waiter returned %v while the lock was held", err)
				default:
				}
				if how == "unlock" {
					if err := k.unlock(holder, hfd); err != nil {
						t.Fatal(err)
					}
				} else if err := holder.Close(hfd); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatalf("waiter woke with %v", err)
				}
				// The waiter holds it now: the holder is refused.
				hfd2 := mustOpen(t, holder, "/both", unix.O_RDWR)
				if err := k.lock(holder, hfd2, false); err != syscall.EAGAIN {
					t.Fatalf("lock after the waiter got it: %v, want EAGAIN", err)
				}
				holder.Close(hfd2)
				waiter.Close(wfd)
				if how == "unlock" {
					holder.Close(hfd)
				}
				if n := vfs.LockNodes(); n != 0 {
					t.Errorf("%d nodes keep lock state after every descriptor closed", n)
				}
				if n := vfs.LockWaiters(); n != 0 {
					t.Errorf("%d waiters left", n)
				}
				for i := 0; runtime.NumGoroutine() > g0; i++ {
					if i == 1e6 {
						t.Fatalf("%d goroutines, %d before the test", runtime.NumGoroutine(), g0)
					}
					runtime.Gosched() // the waiter goroutine is on its way out
				}
			})
		}
	}
}

// TestLockPosixCloseAnyDescriptor checks Linux's rule that closing any
// descriptor of a file drops the process's POSIX locks on it, while OFD
// and flock locks stay until their own description's last close.
func TestLockPosixCloseAnyDescriptor(t *testing.T) {
	s := newProc(t)
	p, q := s.p, vfs.NewProc(s.p.Namespace())
	a := mustOpen(t, p, "/both", unix.O_RDWR)
	b := mustOpen(t, p, "/both", unix.O_RDWR)
	c := mustOpen(t, p, "/both", unix.O_RDWR)
	qfd := mustOpen(t, q, "/both", unix.O_RDWR)
	wr := func(start int64) *unix.Flock_t { return &unix.Flock_t{Type: unix.F_WRLCK, Start: start, Len: 1} }
	if err := p.FcntlFlock(a, unix.F_SETLK, wr(0)); err != nil {
		t.Fatal(err)
	}
	if err := p.FcntlFlock(b, unix.F_OFD_SETLK, wr(5)); err != nil {
		t.Fatal(err)
	}
	if err := p.Flock(b, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	d, err := p.Dup(b)
	if err != nil {
		t.Fatal(err)
	}
	p.Close(c) // another descriptor: the POSIX lock goes
	if err := q.FcntlFlock(qfd, unix.F_SETLK, wr(0)); err != nil {
		t.Fatalf("POSIX lock survived the close of another descriptor: %v", err)
	}
	p.Close(b) // d still refers to the description: OFD and flock stay
	if err := q.FcntlFlock(qfd, unix.F_SETLK, wr(5)); err != syscall.EAGAIN {
		t.Fatalf("OFD lock after closing one of two descriptors: %v, want EAGAIN", err)
	}
	if err := q.Flock(qfd, unix.LOCK_SH|unix.LOCK_NB); err != syscall.EWOULDBLOCK {
		t.Fatalf("flock after closing one of two descriptors: %v, want EWOULDBLOCK", err)
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Start: 0, Len: 0}
	if err := q.FcntlFlock(qfd, unix.F_GETLK, &lk); err != nil || lk.Type != unix.F_WRLCK || lk.Start != 5 || lk.Pid != -1 {
		t.Fatalf("F_GETLK = %+v, %v; want the OFD lock at 5 with pid -1", lk, err)
	}
	p.Close(d)
	if err := q.FcntlFlock(qfd, unix.F_SETLK, wr(5)); err != nil {
		t.Fatalf("OFD lock survived the last close: %v", err)
	}
	if err := q.Flock(qfd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("flock survived the last close: %v", err)
	}
	lk = unix.Flock_t{Type: unix.F_WRLCK}
	if err := p.FcntlFlock(a, unix.F_GETLK, &lk); err != nil || lk.Pid != int32(q.Pid()) || lk.Start != 0 || lk.Len != 1 {
		t.Fatalf("F_GETLK = %+v, %v; want q's lock at 0 with pid %d", lk, err, q.Pid())
	}
	p.Close(a)
	q.Close(qfd)
	if n := vfs.LockNodes(); n != 0 {
		t.Errorf("%d nodes keep lock state", n)
	}
}

// TestLockDeadlock builds the cycle Linux's posix_locks_deadlock finds: p
// holds byte 0 and waits for byte 1, q holds byte 1 and asks for byte 0.
func TestLockDeadlock(t *testing.T) {
	s := newProc(t)
	p, q := s.p, vfs.NewProc(s.p.Namespace())
	pfd := mustOpen(t, p, "/both", unix.O_RDWR)
	qfd := mustOpen(t, q, "/both", unix.O_RDWR)
	wr := func(start int64) *unix.Flock_t { return &unix.Flock_t{Type: unix.F_WRLCK, Start: start, Len: 1} }
	if err := p.FcntlFlock(pfd, unix.F_SETLK, wr(0)); err != nil {
		t.Fatal(err)
	}
	if err := q.FcntlFlock(qfd, unix.F_SETLK, wr(1)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- p.FcntlFlock(pfd, unix.F_SETLKW, wr(1)) }()
	waitAsleep(t, 1)
	if err := q.FcntlFlock(qfd, unix.F_SETLKW, wr(0)); err != syscall.EDEADLK {
		t.Fatalf("F_SETLKW closing a cycle: %v, want EDEADLK", err)
	}
	// OFD waits are never deadlock-checked: q's OFD request would wait;
	// a non-blocking one is simply refused.
	if err := q.FcntlFlock(qfd, unix.F_OFD_SETLK, wr(0)); err != syscall.EAGAIN {
		t.Fatalf("F_OFD_SETLK on p's byte: %v, want EAGAIN", err)
	}
	if err := q.FcntlFlock(qfd, unix.F_SETLK, &unix.Flock_t{Type: unix.F_UNLCK, Start: 1, Len: 1}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("p's wait ended with %v", err)
	}
	// A three-process chain: r waits for q, q waits for p, p asks for r's.
	r := vfs.NewProc(s.p.Namespace())
	rfd := mustOpen(t, r, "/both", unix.O_RDWR)
	if err := r.FcntlFlock(rfd, unix.F_SETLK, wr(2)); err != nil {
		t.Fatal(err)
	}
	if err := q.FcntlFlock(qfd, unix.F_SETLK, wr(3)); err != nil {
		t.Fatal(err)
	}
	go func() { done <- r.FcntlFlock(rfd, unix.F_SETLKW, wr(3)) }() // r waits for q
	waitAsleep(t, 1)
	go func() { done <- q.FcntlFlock(qfd, unix.F_SETLKW, wr(0)) }() // q waits for p
	waitAsleep(t, 2)
	if err := p.FcntlFlock(pfd, unix.F_SETLKW, wr(2)); err != syscall.EDEADLK {
		t.Fatalf("p closing a three-process cycle: %v, want EDEADLK", err)
	}
	p.Close(pfd) // q gets byte 0, then q's close lets r have byte 3
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	q.Close(qfd)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.Close(rfd)
	if n := vfs.LockNodes(); n != 0 {
		t.Errorf("%d nodes keep lock state", n)
	}
}

// TestLockAccessMode: a read lock needs a readable descriptor and a write
// lock a writable one (EBADF), as check_fmode_for_setlk.
func TestLockAccessMode(t *testing.T) {
	s := newProc(t)
	ro := mustOpen(t, s.p, "/both", unix.O_RDONLY)
	wo := mustOpen(t, s.p, "/both", unix.O_WRONLY)
	if err := s.p.FcntlFlock(ro, unix.F_SETLK, &unix.Flock_t{Type: unix.F_WRLCK}); err != syscall.EBADF {
		t.Errorf("write lock on O_RDONLY: %v, want EBADF", err)
	}
	if err := s.p.FcntlFlock(wo, unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_RDLCK}); err != syscall.EBADF {
		t.Errorf("read lock on O_WRONLY: %v, want EBADF", err)
	}
	if err := s.p.FcntlFlock(99, unix.F_SETLK, &unix.Flock_t{Type: unix.F_RDLCK}); err != syscall.EBADF {
		t.Errorf("lock on a closed fd: %v, want EBADF", err)
	}
	if err := s.p.Flock(99, 7); err != syscall.EINVAL {
		t.Errorf("flock with a bad operation on a closed fd: %v, want EINVAL (checked first)", err)
	}
}

// TestLockNoAllocs: an uncontended lock and unlock of each kind allocates
// nothing once the lock table has warmed up.
func TestLockNoAllocs(t *testing.T) {
	s := newProc(t)
	fd := mustOpen(t, s.p, "/both", unix.O_RDWR)
	for _, k := range lockKinds {
		if n := testing.AllocsPerRun(100, func() {
			if err := k.lock(s.p, fd, false); err != nil {
				t.Fatal(err)
			}
			if err := k.unlock(s.p, fd); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s lock and unlock: %v allocations, want 0", k.name, n)
		}
	}
}

// TestLockFork: a forked child is a new owner of process-associated locks
// (it inherits none, and its locks conflict with the parent's), while OFD
// and flock locks belong to the shared open file description, as after
// fork(2). The child's close of its copy of a descriptor drops only its
// own POSIX locks.
func TestLockFork(t *testing.T) {
	s := newProc(t)
	p := s.p
	fd := mustOpen(t, p, "/both", unix.O_RDWR)
	wr := func(start int64) *unix.Flock_t { return &unix.Flock_t{Type: unix.F_WRLCK, Start: start, Len: 1} }
	if err := p.FcntlFlock(fd, unix.F_SETLK, wr(0)); err != nil {
		t.Fatal(err)
	}
	if err := p.FcntlFlock(fd, unix.F_OFD_SETLK, wr(5)); err != nil {
		t.Fatal(err)
	}
	if err := p.Flock(fd, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	c, err := p.Fork()
	if err != nil {
		t.Fatal(err)
	}
	if c.Pid() == p.Pid() || c.Pid() <= 0 {
		t.Fatalf("child pid %d, parent %d", c.Pid(), p.Pid())
	}
	if err := c.FcntlFlock(fd, unix.F_SETLK, wr(0)); err != syscall.EAGAIN {
		t.Errorf("child F_SETLK on the parent's POSIX lock: %v, want EAGAIN", err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := c.FcntlFlock(fd, unix.F_GETLK, &lk); err != nil || lk.Pid != int32(p.Pid()) {
		t.Errorf("child F_GETLK: %+v, %v; want the parent's pid %d", lk, err, p.Pid())
	}
	// The OFD and flock locks are the description's, so the child holds them.
	if err := c.FcntlFlock(fd, unix.F_OFD_SETLK, wr(5)); err != nil {
		t.Errorf("child F_OFD_SETLK on the shared description's lock: %v", err)
	}
	if err := c.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("child flock on the shared description: %v", err)
	}
	if err := c.FcntlFlock(fd, unix.F_SETLK, wr(9)); err != nil {
		t.Fatal(err)
	}
	c.Close(fd) // the child's POSIX lock at 9 goes; the parent's at 0 stays
	q := vfs.NewProc(p.Namespace())
	qfd := mustOpen(t, q, "/both", unix.O_RDWR)
	if err := q.FcntlFlock(qfd, unix.F_SETLK, wr(9)); err != nil {
		t.Errorf("child's POSIX lock after its close: %v", err)
	}
	if err := q.FcntlFlock(qfd, unix.F_SETLK, wr(0)); err != syscall.EAGAIN {
		t.Errorf("parent's POSIX lock after the child's close: %v, want EAGAIN", err)
	}
	if err := q.FcntlFlock(qfd, unix.F_SETLK, wr(5)); err != syscall.EAGAIN {
		t.Errorf("OFD lock after the child's close (parent still has the description): %v, want EAGAIN", err)
	}
	p.Close(fd)
	q.Close(qfd)
	if n := vfs.LockNodes(); n != 0 {
		t.Errorf("%d nodes keep lock state", n)
	}
}
