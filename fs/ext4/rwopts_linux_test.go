package ext4_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountOptionsKernel mounts the same images with the same option
// strings in the kernel (a loop device) and in iovfs (a RAM disk),
// read-write and read-only, and compares the errno: unknown options and
// bad values, the conflicts ext4 checks (data=journal with delalloc),
// and the journal options a volume without a journal (or a noload mount)
// refuses. (noatime and the other atime words are mount(8) flags the
// kernel's ext4 refuses in the data string; iovfs's ext4 accepts and
// ignores them, since iovfs mount and the shell pass them as data.)
func TestMountOptionsKernel(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	opts := []string{
		"", "bogus", "rw", "ro",
		"data=ordered", "data=journal", "data=writeback", "data=bogus", "data",
		"errors=continue", "errors=remount-ro", "errors=panic", "errors=bogus", "errors",
		"commit=0", "commit=5", "commit=7", "commit=-1", "commit=abc", "commit", "commit=8589934", "commit=8589935",
		"noload", "norecovery", "noload,data=journal", "noload,commit=7", "noload,commit=5", "noload,journal_checksum", "norecovery,data=ordered",
		"journal_checksum", "nojournal_checksum", "barrier", "nobarrier", "barrier=0", "barrier=1", "barrier=x",
		"data=journal,delalloc", "delalloc,data=journal", "nodelalloc,data=journal", "delalloc",
		"user_xattr,acl", "errors=remount-ro,data=journal,commit=1,journal_checksum,barrier",
	}
	n := 0
	for _, fs := range []struct {
		name string
		args []string
	}{{"ext4", []string{"-t", "ext4"}}, {"ext4-nojournal", []string{"-t", "ext4", "-O", "^has_journal"}}} {
		t.Run(fs.name, func(t *testing.T) {
			img := mkImage(t, 8<<10, func(tb testing.TB, dir string) {
				os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644)
			}, fs.args...)
			p, dev, done := newProc(t, img, viaRAM)
			defer done()
			for _, flags := range []uintptr{0, unix.MS_RDONLY} {
				for _, o := range opts {
					_, kum, kerr := hostLoopMount(t, img, false, flags, o)
					if kerr == nil {
						kum()
					}
					oerr := p.Mount(dev, "/mnt", "ext4", flags, o)
					if oerr == nil {
						if err := p.Unmount("/mnt", 0); err != nil {
							t.Fatalf("unmount after %q: %v", o, err)
						}
					}
					n++
					if errnoOf(kerr) != errnoOf(oerr) {
						t.Errorf("flags %#x, options %q: iovfs %v, kernel %v", flags, o, oerr, kerr)
					}
				}
			}
		})
	}
	t.Logf("%d mounts compared", n)
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}
