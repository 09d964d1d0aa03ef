package fuse

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestHostAtimeFlags reads the atime flags of a mount from mountinfo
// lines: the per-mount options, "ro" in either option field, octal
// escapes in the mount point, the last mount stacked there, and only a
// fuse mount.
func TestHostAtimeFlags(t *testing.T) {
	info := []byte(`22 1 0:21 / /mnt/a\040b rw,nosuid,nodev,noatime - fuse.iovfs.tmpfs none rw,user_id=0
23 1 0:22 / /mnt/c rw,relatime shared:5 - tmpfs tmpfs rw
24 1 0:23 / /mnt/c rw,nodiratime,relatime - fuse.iovfs.tmpfs none rw
25 1 0:24 / /mnt/d ro,relatime - fuse.iovfs.ext4 none ro
26 1 0:25 / /mnt/e rw - fuse.x none ro,user_id=0
27 1 0:26 / /mnt/f rw,nosuid - fuse.x none rw
28 1 0:27 / /mnt/g rw,noatime - tmpfs none rw
`)
	for _, c := range []struct {
		mnt   string
		flags uintptr
		ok    bool
	}{
		{"/mnt/a b", unix.MS_NOATIME, true},
		{"/mnt/c", unix.MS_NODIRATIME | unix.MS_RELATIME, true},
		{"/mnt/d", unix.MS_NOATIME | unix.MS_RELATIME, true},
		{"/mnt/e", unix.MS_NOATIME, true},
		{"/mnt/f", unix.MS_STRICTATIME, true},
		{"/mnt/g", 0, false},
		{"/mnt/h", 0, false},
	} {
		flags, ok := hostAtimeFlags(info, c.mnt)
		if flags != c.flags || ok != c.ok {
			t.Errorf("%s: %#x %v, want %#x %v", c.mnt, flags, ok, c.flags, c.ok)
		}
	}
	if got := unescapeMount(`a\134b\040\0`); got != `a\b \0` {
		t.Errorf("unescapeMount: %q", got)
	}
}
