package testenv

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// WithSignalsBlocked runs f on a locked OS thread with every signal
// blocked, for a system call on the host whose answer a test compares
// with iovfs's. Some kernel paths stop early when a signal is pending
// (filldir64 after the first entry, read of /dev/zero after each page),
// and Go's runtime sends its threads preemption signals at any time, so an
// unguarded call may return less than Linux gives a caller that is not
// signalled. If the mask cannot be set, f runs anyway.
func WithSignalsBlocked(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, &old); err != nil {
		f()
		return
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	f()
}

// KernelGetdents is getdents64(2) on a host descriptor under
// WithSignalsBlocked. It returns what unix.Getdents returns.
func KernelGetdents(fd int, buf []byte) (n int, err error) {
	WithSignalsBlocked(func() { n, err = unix.Getdents(fd, buf) })
	return n, err
}
