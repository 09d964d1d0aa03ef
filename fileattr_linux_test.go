package iovfs_test

// The inode-flag differential (internal/flagdiff) of iovfs's tmpfs
// against a host tmpfs.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/flagdiff"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
)

// chattrFlags are the flags the test sets: those tmpfs has and a few it
// refuses.
var chattrFlags = []uint32{vfs.FS_IMMUTABLE_FL, vfs.FS_APPEND_FL, vfs.FS_NODUMP_FL, vfs.FS_NOATIME_FL,
	vfs.FS_SYNC_FL, vfs.FS_DIRSYNC_FL, vfs.FS_NOTAIL_FL, vfs.FS_COMPR_FL, vfs.FS_TOPDIR_FL, vfs.FS_PROJINHERIT_FL}

// TestFileAttrKernel compares inode flags with a host tmpfs's: 200 random
// cases (2,000 under IOVFS_LONG).
func TestFileAttrKernel(t *testing.T) {
	testenv.RequireRoot(t, "setting the immutable and append-only flags")
	cases := 200
	if testenv.Long() {
		cases = 2000
	}
	host := hostTmpfs(t)
	must(t, os.Chmod(filepath.Dir(host), 0o755))
	root, err := iovfs.New()
	must(t, err)
	must(t, root.Mkdir("/tmp/fa", 0o755))
	must(t, root.Chmod("/tmp/fa", 0o755))
	n := flagdiff.Run(t, flagdiff.Config{HostDir: host, Dir: "/tmp/fa", Root: root, HelperTest: "TestACLHelper", Flags: chattrFlags, Cases: cases, Seed: 5})
	t.Logf("%d results compared", n)
}
