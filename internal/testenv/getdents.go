package testenv

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// KernelGetdents is getdents64(2) on a host descriptor with every signal
// blocked on the calling thread, for tests that compare the kernel's
// answer with iovfs's. The kernel's filldir64 stops after the first entry
// when a signal is pending, and Go's runtime sends its threads preemption
// signals at any time, so an unguarded call may return fewer entries than
// the buffer holds. It returns what unix.Getdents returns.
func KernelGetdents(fd int, buf []byte) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, &old); err != nil {
		return 0, err
	}
	n, err := unix.Getdents(fd, buf)
	unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return n, err
}
