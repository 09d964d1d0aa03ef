package main

import (
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
)

func TestBenchFuse(t *testing.T) {
	testenv.RequireRoot(t, "the fuse experiment mounts FUSE, a kernel tmpfs and a loop device")
	code, out, errOut := runArgs("bench", "fuse", "--file-size", "4M", "--loops", "2", "--reads", "64", "--size", "4096", "--pattern", "rand")
	if code != 0 {
		t.Fatalf("status %d\n%s", code, errOut)
	}
	for _, s := range []string{"== fuse:", "kernel-tmpfs", "kernel-ext4", "iovfs-tmpfs", "iovfs-ext4-dax", "loopback", "ratio to kernel-ext4"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "skipped") {
		t.Errorf("a variant was skipped as root:\n%s", out)
	}
}
