package fuse

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// TestPosixtest runs every test of go-fuse's posixtest suite against a
// tmpfs export.
func TestPosixtest(t *testing.T) {
	p := newProc(t)
	if err := p.Mkdir("/tmp/export", 0o777); err != nil {
		t.Fatal(err)
	}
	mnt, _ := export(t, p, "/tmp/export", Options{})
	var names []string
	for k := range posixtest.All {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if k == "FcntlFlockLocksFile" {
			// It expects a process's second POSIX lock on a file to
			// conflict with its first; Linux merges them (go-fuse's
			// own run skips it too). TestLockDifferential checks the
			// same calls against the kernel instead.
			continue
		}
		t.Run(k, func(t *testing.T) {
			sub := filepath.Join(mnt, k)
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatalf("Mkdir: %v", err)
			}
			posixtest.All[k](t, sub)
			os.RemoveAll(sub)
		})
	}
}
