package ext4_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestVFSBlockMapMount mounts an ext2 volume (1 KiB blocks) as "ext2" and
// an inline_data volume made by mke2fs -d as "ext4", read-write through
// the VFS: a file reaching the double and triple indirect levels, a slow
// symlink read back through Readlink (block-mapped, and inline), inline
// files read and then changed. After the unmount the image is e2fsck
// clean and a kernel mount reads the same bytes and targets.
func TestVFSBlockMapMount(t *testing.T) {
	needMke2fs(t)
	testenv.RequireRoot(t, "the kernel mount of the result")
	long := strings.Repeat("l", 300)
	inlineTarget := "/nonexistent/" + strings.Repeat("t", 70)
	for _, tc := range []struct{ name, typ string }{{"ext2-1k", "ext2"}, {"inline", "ext4"}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			img := filepath.Join(dir, "rw.img")
			args := []string{"-q", "-F", "-t", "ext2", "-b", "1024", img, "16M"}
			if tc.name == "inline" {
				src := filepath.Join(dir, "src")
				must(t, os.Mkdir(src, 0o755))
				must(t, os.WriteFile(filepath.Join(src, "small"), bytes.Repeat([]byte("i"), 100), 0o644))
				must(t, os.Symlink(inlineTarget, filepath.Join(src, "s")))
				args = []string{"-q", "-F", "-t", "ext4", "-O", "inline_data", "-d", src, img, "16M"}
			}
			if out, err := exec.Command("mke2fs", args...).CombinedOutput(); err != nil {
				t.Fatalf("mke2fs: %v\n%s", err, out)
			}
			p, dev, _ := newProc(t, img, viaRAM)
			must(t, p.Mount(dev, "/mnt", tc.typ, 0, ""))
			want := map[string][]byte{}
			if tc.name == "inline" {
				if l, err := p.Readlink("/mnt/s"); l != inlineTarget {
					t.Errorf("readlink of an inline symlink: %q, %v", l, err)
				}
				fd, err := p.Open("/mnt/small", unix.O_RDWR, 0)
				must(t, err)
				buf := make([]byte, 200)
				if n, err := p.Pread(fd, buf, 0); n != 100 || !bytes.Equal(buf[:n], bytes.Repeat([]byte("i"), 100)) {
					t.Errorf("pread of an inline file: %d, %v", n, err)
				}
				if n, err := p.Pwrite(fd, []byte("changed"), 50); n != 7 {
					t.Fatalf("pwrite to an inline file: %d, %v", n, err)
				}
				must(t, p.Close(fd))
				w := bytes.Repeat([]byte("i"), 100)
				copy(w[50:], "changed")
				want["small"] = w
			}
			// A file through the direct, single and double indirect
			// levels (at 1 KiB: 12, 268, 65804 blocks), and one byte at
			// the triple level.
			fd, err := p.Open("/mnt/big", unix.O_CREAT|unix.O_RDWR, 0o644)
			must(t, err)
			data := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16)
			if n, err := p.Pwrite(fd, data, 0); n != len(data) {
				t.Fatalf("pwrite: %d, %v", n, err)
			}
			const far = 70 << 20
			if n, err := p.Pwrite(fd, []byte("T"), far); n != 1 {
				t.Fatalf("pwrite at %d: %d, %v", far, n, err)
			}
			back := make([]byte, len(data))
			if n, err := p.Pread(fd, back, 0); n != len(back) || !bytes.Equal(back, data) {
				t.Errorf("pread back: %d, %v", n, err)
			}
			must(t, p.Ftruncate(fd, 200<<10))
			must(t, p.Close(fd))
			w := make([]byte, 200<<10)
			copy(w, data)
			want["big"] = w
			must(t, p.Symlink(long, "/mnt/slow"))
			if l, err := p.Readlink("/mnt/slow"); l != long {
				t.Errorf("readlink of a slow symlink: %d bytes, %v", len(l), err)
			}
			must(t, p.Unmount("/mnt", 0))

			out := filepath.Join(dir, "out.img")
			rfd, err := p.Open(dev, unix.O_RDONLY, 0)
			must(t, err)
			fi, _ := os.Stat(img)
			raw := make([]byte, fi.Size())
			if n, err := p.Pread(rfd, raw, 0); n != len(raw) {
				t.Fatalf("read back: %d, %v", n, err)
			}
			p.Close(rfd)
			must(t, os.WriteFile(out, raw, 0o600))
			if o, err := exec.Command("e2fsck", "-fn", out).CombinedOutput(); err != nil {
				t.Fatalf("e2fsck -fn: %v\n%s", err, o)
			}
			mnt := t.TempDir()
			opts := "loop,ro,noload"
			if tc.typ == "ext2" {
				opts = "loop,ro" // ext2 takes no journal options (noload is EINVAL)
			}
			if o, err := testenv.Mount("-t", tc.typ, "-o", opts, out, mnt); err != nil {
				t.Fatalf("mount: %v\n%s", err, o)
			}
			defer exec.Command("umount", mnt).Run()
			for name, b := range want {
				if got, err := os.ReadFile(filepath.Join(mnt, name)); !bytes.Equal(got, b) {
					t.Errorf("kernel reads %s differently (%d bytes, %v)", name, len(got), err)
				}
			}
			if l, err := os.Readlink(filepath.Join(mnt, "slow")); l != long {
				t.Errorf("kernel readlink slow: %d bytes, %v", len(l), err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
