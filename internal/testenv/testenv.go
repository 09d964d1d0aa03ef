// Package testenv holds what the tests of several packages share about the
// machine they run on: which tests need privileges, and how they give way
// without them.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Privileged reports whether privileged tests must run: CI sets
// IOVFS_REQUIRE_PRIVILEGED=1, and then a test that cannot run fails.
func Privileged() bool { return os.Getenv("IOVFS_REQUIRE_PRIVILEGED") == "1" }

// Long reports whether the long tests run at full size: the kernel
// differentials' every set and sequence, the soaks, the crash trials and
// the corpus runs. .ci/run sets IOVFS_LONG=1; without it (or with -short)
// they run a quick sample, so that "go test ./..." takes minutes, not
// tens of them. docs/testing.md lists what each test does in each mode.
func Long() bool { return os.Getenv("IOVFS_LONG") == "1" && !testing.Short() }

// Quick reports whether the long tests run their quick sample: !Long().
func Quick() bool { return !Long() }

// Sample reports whether the case called name of a table runs: every case
// when Long, only those in quick otherwise. A table test keeps its full
// table and names a representative few for the quick run.
func Sample(name string, quick ...string) bool {
	if Long() {
		return true
	}
	for _, q := range quick {
		if q == name {
			return true
		}
	}
	return false
}

// Sampled skips the subtest t in the quick run unless its name (the last
// element of t.Name()) is among quick: a table keeps its every case for
// the long run and names a representative few for the quick one.
func Sampled(t testing.TB, quick ...string) {
	t.Helper()
	name := t.Name()
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if !Sample(name, quick...) {
		t.Skip("not in the quick sample; IOVFS_LONG=1 runs every case")
	}
}

// SkipPrivileged skips t because of reason, a missing privilege or device,
// or fails it when Privileged.
func SkipPrivileged(t testing.TB, reason string) {
	t.Helper()
	if Privileged() {
		t.Fatal(reason + " (IOVFS_REQUIRE_PRIVILEGED=1)")
	}
	t.Skip(reason)
}

// RequireRoot calls SkipPrivileged with "needs root: why" unless the test
// runs as root.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipPrivileged(t, "needs root: "+why)
	}
}

// RequireTool calls SkipPrivileged unless every named program is on PATH:
// CI installs them all, so a missing one fails there.
func RequireTool(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			SkipPrivileged(t, "needs "+n+" on PATH: "+err.Error())
		}
	}
}

// Mount runs mount(8) with args and returns its combined output. A loop
// mount ("-o loop,...") races with every other loop user on the machine
// (other test packages run in parallel, and an autoclear loop device is
// torn down asynchronously after an unmount): mount(8) then fails with
// "already mounted or mount point busy" or "failed to setup loop device".
// Mount retries those failures with a growing pause, up to about 20 s.
//
// Before a loop mount, Mount also waits (up to about 20 s) until no loop
// device is bound to the image file any more. mount(8) reuses a loop
// device that is still bound to the same file, for instance one whose
// unmount is still being torn down or that udev holds open for a probe,
// and the reused device serves the blocks it cached of the file's earlier
// contents: a test that rewrites an image in place and mounts it again
// would read the old image.
func Mount(args ...string) ([]byte, error) {
	if img, ok := loopSource(args); ok {
		if err := waitLoopUnbound(img, 20*time.Second); err != nil {
			return []byte(err.Error()), err
		}
	}
	for try := 1; ; try++ {
		out, err := exec.Command("mount", args...).CombinedOutput()
		if err == nil || try == 12 {
			return out, err
		}
		s := string(out)
		if !strings.Contains(s, "busy") && !strings.Contains(s, "failed to setup loop device") {
			return out, err
		}
		time.Sleep(time.Duration(try) * 250 * time.Millisecond)
	}
}

// loopSource returns the source file of mount(8) arguments whose -o
// options include loop.
func loopSource(args []string) (string, bool) {
	loop := false
	var pos []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-o" && i+1 < len(args):
			for _, o := range strings.Split(args[i+1], ",") {
				if o == "loop" || strings.HasPrefix(o, "loop=") {
					loop = true
				}
			}
			i++
		case a == "-t" && i+1 < len(args):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			pos = append(pos, a)
		}
	}
	if !loop || len(pos) == 0 {
		return "", false
	}
	return pos[0], true
}

// loopBound lists the loop devices bound to the file at path (by the
// backing-file name in sysfs, also when that file has been deleted since).
func loopBound(path string) []string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var bound []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // unbound between the glob and the read
		}
		name := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), " (deleted)")
		if name == abs {
			bound = append(bound, strings.Split(f, "/")[3])
		}
	}
	return bound
}

// waitLoopUnbound waits until no loop device is bound to path, or fails
// after timeout.
func waitLoopUnbound(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		bound := loopBound(path)
		if len(bound) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mount %s: loop devices %v are still bound to it after %v; mount(8) would reuse one and serve its stale cached blocks", path, bound, timeout)
		}
		time.Sleep(pause)
	}
}
