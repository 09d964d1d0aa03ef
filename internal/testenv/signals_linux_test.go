package testenv

import (
	"fmt"
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWithSignalsBlocked reads 16 MiB of the host's /dev/zero while a
// shell sends the reading thread SIGURG (Go's preemption signal, which
// the runtime ignores when it did not ask for it) as fast as it can:
// without the guard a read returns short (read_iter_zero stops at a page
// boundary when a signal is pending), with it every read returns the
// whole buffer. It reads until an unguarded read was cut short (at least
// 20 rounds, at most 500), so that the guard is known to have been
// tested.
func TestWithSignalsBlocked(t *testing.T) {
	fd, err := unix.Open("/dev/zero", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no /dev/zero: %v", err)
	}
	defer unix.Close(fd)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// kill(2) of a thread's id sends a process-wide signal, which Linux
	// gives to that thread first when it does not block it.
	storm := exec.Command("sh", "-c", fmt.Sprintf("while kill -s URG %d; do :; done", unix.Gettid()))
	if err := storm.Start(); err != nil {
		t.Skipf("no shell: %v", err)
	}
	defer func() { storm.Process.Kill(); storm.Wait() }()

	buf := make([]byte, 16<<20)
	short, rounds := 0, 0
	for ; rounds < 20 || short == 0 && rounds < 500; rounds++ {
		n, err := unix.Read(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n < len(buf) {
			short++
		}
		WithSignalsBlocked(func() { n, err = unix.Read(fd, buf) })
		if err != nil || n != len(buf) {
			t.Fatalf("guarded read of /dev/zero: %d of %d bytes, %v", n, len(buf), err)
		}
	}
	if short == 0 {
		t.Fatalf("no unguarded read of %d was cut short: the signals did not reach the reading thread, so the guard was not tested", rounds)
	}
	t.Logf("%d of %d unguarded reads cut short", short, rounds)
}
