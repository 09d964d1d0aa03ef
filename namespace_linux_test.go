package iovfs_test

// A model-based differential test: random sequences of file system calls
// (internal/difftest) run on a host tmpfs through golang.org/x/sys/unix and
// on an iovfs tmpfs, and every result is compared.

import (
	"fmt"
	"os"
	"path"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/difftest"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// hostTmpfs mounts a private tmpfs for the test and returns its path.
func hostTmpfs(t *testing.T) string {
	testenv.RequireRoot(t, "mounting a host tmpfs to compare against")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m,mode=0755"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Fatalf("%s is not a tmpfs (statfs %v, type %#x)", dir, err, st.Type)
	}
	return dir
}

func TestDifferentialTmpfs(t *testing.T) {
	hostRoot := hostTmpfs(t)
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	mask := unix.Umask(0o022)
	unix.Umask(mask)
	p.Umask(uint32(mask))
	checks := 1000
	if testenv.Quick() {
		checks = 100
	}
	c := difftest.Run(t, checks, func(t *rapid.T, seq int) (host, ours difftest.Side) {
		dir := fmt.Sprintf("s%d", seq)
		if err := os.Mkdir(path.Join(hostRoot, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := p.Mkdir("/tmp/"+dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return difftest.HostSide{Root: path.Join(hostRoot, dir)}, difftest.ProcSide{P: p, Root: "/tmp/" + dir}
	})
	t.Logf("%d sequences, %d compared operations (%d of them errors on both sides)", c.Sequences, c.Ops, c.Fails)
}
