// Package testenv holds what the tests of several packages share about the
// machine they run on: which tests need privileges, and how they give way
// without them.
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Privileged reports whether privileged tests must run: CI sets
// IOVFS_REQUIRE_PRIVILEGED=1, and then a test that cannot run fails.
func Privileged() bool { return os.Getenv("IOVFS_REQUIRE_PRIVILEGED") == "1" }

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

// Mount runs mount(8) with args and returns its combined output. A loop
// mount ("-o loop,...") races with every other loop user on the machine
// (other test packages run in parallel, and an autoclear loop device is
// torn down asynchronously after an unmount): mount(8) then fails with
// "already mounted or mount point busy" or "failed to setup loop device".
// Mount retries those failures with a growing pause, up to about 20 s.
func Mount(args ...string) ([]byte, error) {
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
