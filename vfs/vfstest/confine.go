package vfstest

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// RaceConfinement attacks openat2's confinement while directories move, as
// an attacker inside a sandbox would: in directory dir of p's namespace it
// makes jail/a/b, outside/ and secret-canary (outside the jail), then for
// duration d one goroutine moves jail/a/b to outside/b and back, another
// renames an unrelated pair of names, and walkers open
// "a/b/../../secret-canary" relative to jail with RESOLVE_BENEATH and
// with RESOLVE_IN_ROOT. A walker that started inside the jail and had b
// moved out under it must never climb to the canary: Linux's handle_dots
// gives EAGAIN when a rename ran since the walk began. The test runs with
// GOMAXPROCS 8 and fails if any open reaches the canary (compared by
// inode number). It returns the number of walks that completed, and of
// those that gave EAGAIN, so a caller can see that the race was exercised.
func RaceConfinement(t *testing.T, p *vfs.Proc, dir string, d time.Duration) (walks, again int64) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	for _, sub := range []string{"", "/jail", "/jail/a", "/jail/a/b", "/outside", "/noise"} {
		if err := p.Mkdir(dir+sub, 0o755); err != nil && !(sub == "" && errors.Is(err, syscall.EEXIST)) {
			t.Fatalf("setting up the confinement race: %v", err)
		}
	}
	canary := dir + "/secret-canary"
	for _, f := range []string{canary, dir + "/noise/x0"} {
		fd, err := p.Open(f, unix.O_CREAT|unix.O_WRONLY, 0o644)
		if err != nil {
			t.Fatalf("setting up the confinement race: %v", err)
		}
		p.Close(fd)
	}
	cst, err := p.Stat(canary)
	if err != nil {
		t.Fatal(err)
	}
	jail, err := p.Open(dir+"/jail", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(jail)

	var stop atomic.Bool
	var escapes, walked, eagain, moves atomic.Int64
	var wg sync.WaitGroup
	var failOnce sync.Once
	fail := func(err error) {
		failOnce.Do(func() { t.Errorf("confinement race: %v", err) })
		stop.Store(true)
	}
	mover := func(pairs [][2]string) {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			pr := pairs[i%len(pairs)]
			if err := p.Rename(pr[0], pr[1]); err != nil {
				fail(err)
				return
			}
			moves.Add(1)
		}
	}
	wg.Add(2)
	go mover([][2]string{{dir + "/jail/a/b", dir + "/outside/b"}, {dir + "/outside/b", dir + "/jail/a/b"}})
	go mover([][2]string{{dir + "/noise/x0", dir + "/noise/y0"}, {dir + "/noise/y0", dir + "/noise/x0"}})
	for _, resolve := range []uint64{unix.RESOLVE_BENEATH, unix.RESOLVE_IN_ROOT, unix.RESOLVE_BENEATH, unix.RESOLVE_IN_ROOT} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			how := unix.OpenHow{Flags: unix.O_RDONLY, Resolve: resolve}
			for !stop.Load() {
				fd, err := p.Openat2(jail, "a/b/../../secret-canary", &how)
				if err != nil {
					if errors.Is(err, syscall.EAGAIN) {
						eagain.Add(1)
					}
					continue
				}
				walked.Add(1)
				st, err := p.Fstat(fd)
				p.Close(fd)
				if err == nil && st.Ino == cst.Ino && st.Dev == cst.Dev {
					escapes.Add(1)
				}
			}
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	if n := escapes.Load(); n != 0 {
		t.Errorf("confinement race: %d opens relative to %s/jail reached %s outside it (of %d opens, %d EAGAIN, %d renames in %v)",
			n, dir, canary, walked.Load(), eagain.Load(), moves.Load(), d)
	}
	if moves.Load() == 0 {
		t.Errorf("confinement race: no rename ran")
	}
	t.Logf("confinement race: %d renames, %d opens, %d EAGAIN, %d escapes in %v", moves.Load(), walked.Load(), eagain.Load(), escapes.Load(), d)
	return walked.Load(), eagain.Load()
}
