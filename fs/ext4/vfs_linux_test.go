package ext4_test

// Differential tests through the VFS against the Linux kernel's ext4: the
// same image mounted read-only by the kernel (loop, noload) and by iovfs
// (default, dax over a loop device on the imported image, dax over a RAM
// disk), compared field by field.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// needRoot skips a test that needs root, or fails it under
// IOVFS_REQUIRE_PRIVILEGED=1.
func needRoot(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t, "kernel loop mounts")
}

// kernelMount mounts img read-only in the host kernel on an AUTOCLEAR
// loop device and returns the mount point; the test's cleanup unmounts
// it, which frees the device.
func kernelMount(t *testing.T, img string) string {
	t.Helper()
	dir, _, err := hostLoopMount(t, img, true, unix.MS_RDONLY, "noload") // rwrecover_linux_test.go
	if err != nil {
		t.Fatalf("kernel mount %s: %v", img, err)
	}
	return dir
}

func TestVFSKernel(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	ims := append(images[:len(images):len(images)],
		struct {
			name string
			fill func(testing.TB, string)
			args []string
		}{"nocsum-32bit-I128", populate, []string{"-t", "ext4", "-O", "^metadata_csum,^64bit", "-I", "128"}},
		struct {
			name string
			fill func(testing.TB, string)
			args []string
		}{"htree-5000-sparse-5G", withBigDirAndHugeFile, []string{"-t", "ext4", "-N", "8192"}})
	for _, im := range ims {
		// One kernel mount at a time: there are only 8 loop devices.
		t.Run(im.name, func(t *testing.T) {
			if strings.HasPrefix(im.name, "htree") && testenv.Quick() {
				t.Skip("a 5,000-entry htree and a 5 GiB sparse file: IOVFS_LONG=1 runs it")
			}
			img := mkImage(t, 8192, im.fill, im.args...)
			if strings.HasPrefix(im.name, "htree") {
				indexDirs(t, img)
			}
			host := kernelMount(t, img)
			for _, m := range modes {
				t.Run(m.name, func(t *testing.T) {
					p := mountImage(t, img, m.src, m.opts)
					if n := compareTree(t, p, "/mnt", host, true); n < 120 {
						t.Errorf("compared %d files", n)
					}
				})
			}
		})
	}
}

// TestVFSKernelErrno damages a file's inode in a metadata_csum image and
// checks that iovfs and the kernel both refuse it with EBADMSG (Linux's
// EFSBADCRC) through the descriptor API, and both still serve the others.
func TestVFSKernelErrno(t *testing.T) {
	needRoot(t)
	img := mkImage(t, 2048, func(t testing.TB, dir string) {
		os.WriteFile(filepath.Join(dir, "victim"), []byte("v"), 0o644)
		os.WriteFile(filepath.Join(dir, "other"), []byte("o"), 0o644)
	}, "-t", "ext4", "-I", "256")
	damageInode(t, img, "/victim")
	host := kernelMount(t, img)
	_, herr := os.Stat(filepath.Join(host, "victim"))
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := mountImage(t, img, m.src, m.opts)
			_, err := p.Stat("/mnt/victim")
			if !errors.Is(err, unix.EBADMSG) || !errors.Is(herr, unix.EBADMSG) {
				t.Errorf("stat of a damaged inode: iovfs %v, kernel %v; want EBADMSG from both", err, herr)
			}
			compareFile(t, p, "/mnt/other", []byte("o"))
		})
	}
}

// indexDirs has e2fsck -D rebuild img's large directories as htrees
// (mke2fs -d writes them linear).
func indexDirs(t *testing.T, img string) {
	t.Helper()
	out, err := exec.Command("e2fsck", "-fyD", img).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: fixed (indexed)
		t.Fatalf("e2fsck -fyD: %v\n%s", err, out)
	}
	out, _ = exec.Command("debugfs", "-R", "stat /huge-dir", img).CombinedOutput()
	if !strings.Contains(string(out), "Flags: 0x81000") {
		t.Fatalf("huge-dir is not indexed:\n%s", out)
	}
}
