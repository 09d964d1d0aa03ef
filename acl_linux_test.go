package iovfs_test

// The POSIX ACL differential (internal/acldiff) of iovfs's tmpfs against
// a host tmpfs.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/acldiff"
	"github.com/iovfs/iovfs/internal/testenv"
)

// TestACLHelper is a caller's child process; run by itself it does
// nothing.
func TestACLHelper(t *testing.T) { acldiff.Helper(t) }

// TestACLKernel compares POSIX ACLs with a host tmpfs's: 150 random
// files and directories (1,500 under IOVFS_LONG), each checked by five
// callers.
func TestACLKernel(t *testing.T) {
	testenv.RequireRoot(t, "setting ACLs as root and running callers as other users")
	cases := 150
	if testenv.Long() {
		cases = 1500
	}
	host := hostTmpfs(t)
	must(t, os.Chmod(filepath.Dir(host), 0o755))
	root, err := iovfs.New()
	must(t, err)
	must(t, root.Mkdir("/tmp/acl", 0o755))
	must(t, root.Chmod("/tmp/acl", 0o755))
	n := acldiff.Run(t, acldiff.Config{HostDir: host, Dir: "/tmp/acl", Root: root, HelperTest: "TestACLHelper", Cases: cases, Seed: 31})
	t.Logf("%d results compared (%d accesses allowed), %d nodes with an access ACL", n.Compared, n.Allowed, n.WithACL)
}
