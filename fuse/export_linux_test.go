package fuse

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// requireFUSE skips (or fails under IOVFS_REQUIRE_PRIVILEGED) when FUSE
// mounts are impossible here.
func requireFUSE(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t, "FUSE mounts need root")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.SkipPrivileged(t, "no /dev/fuse")
	}
}

// guard is how long one test may keep an export mounted: after it the
// export is torn down (the connection aborted), so a hung request fails
// the test instead of hanging CI.
const guard = 3 * time.Minute

// export mounts root of p's namespace on a fresh directory and returns
// the mountpoint; the export is unmounted when the test ends, or when the
// guard runs out.
func export(t testing.TB, p *vfs.Proc, root string, opts Options) (string, *Server) {
	t.Helper()
	requireFUSE(t)
	mnt := t.TempDir()
	s, err := Mount(p, root, mnt, opts)
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	timer := time.AfterFunc(guard, func() {
		t.Errorf("export of %s still mounted after %v: tearing it down", root, guard)
		s.Unmount()
	})
	t.Cleanup(func() {
		timer.Stop()
		if err := s.Unmount(); err != nil {
			t.Errorf("Unmount: %v", err)
		}
	})
	return mnt, s
}

func newProc(t testing.TB) *vfs.Proc {
	t.Helper()
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// errorIs reports whether err wraps errno.
func errorIs(err error, errno unix.Errno) bool { return errors.Is(err, errno) }
