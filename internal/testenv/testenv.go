// Package testenv holds what the tests of several packages share about the
// machine they run on: which tests need privileges, and how they give way
// without them.
package testenv

import (
	"os"
	"testing"
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
