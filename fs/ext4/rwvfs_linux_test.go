package ext4_test

// A read-write mount through the VFS: the system calls change the image,
// which then passes e2fsck -fn and shows the same tree in a kernel mount,
// to the nanosecond.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

func TestVFSReadWriteMount(t *testing.T) {
	needMke2fs(t)
	testenv.RequireRoot(t, "the kernel mount of the result")
	img := filepath.Join(t.TempDir(), "rw.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	p, dev, _ := newProc(t, img, viaRAM)
	if err := p.Mount(dev, "/mnt", "ext4", 0, ""); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	st0, err := p.Statfs("/mnt")
	must(err)
	must(p.Mkdir("/mnt/d", 0o755))
	fd, err := p.Open("/mnt/d/f", unix.O_CREAT|unix.O_RDWR|unix.O_EXCL, 0o644)
	must(err)
	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320000 bytes
	if n, err := p.Write(fd, big); n != len(big) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if n, err := p.Pwrite(fd, []byte("tail"), 1<<20); n != 4 || err != nil {
		t.Fatalf("sparse pwrite: %d, %v", n, err)
	}
	must(p.Ftruncate(fd, 1<<20+2))
	must(p.Close(fd))
	fd, err = p.Open("/mnt/d/f", unix.O_WRONLY|unix.O_APPEND, 0)
	must(err)
	if n, err := p.Write(fd, []byte("++")); n != 2 || err != nil {
		t.Fatalf("append: %d, %v", n, err)
	}
	must(p.Close(fd))
	st, err := p.Stat("/mnt/d/f")
	must(err)
	if st.Size != 1<<20+4 {
		t.Errorf("size %d, want %d", st.Size, 1<<20+4)
	}
	must(p.Symlink("short", "/mnt/d/fast"))
	long := string(bytes.Repeat([]byte("x"), 300))
	must(p.Symlink(long, "/mnt/slow"))
	must(p.Link("/mnt/d/f", "/mnt/hard"))
	must(p.Mkdir("/mnt/e", 0o700))
	must(p.Rename("/mnt/d", "/mnt/e/d2"))
	must(p.Chmod("/mnt/hard", 0o600))
	mt := time.Unix(1700000000, 123456789)
	must(p.Utimes("/mnt/hard", mt, mt))
	if err := p.Rmdir("/mnt/e"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("rmdir non-empty: %v, want ENOTEMPTY", err)
	}

	// An unlinked open file keeps its data until the last close.
	fd, err = p.Open("/mnt/gone", unix.O_CREAT|unix.O_RDWR, 0o644)
	must(err)
	p.Write(fd, []byte("still here"))
	must(p.Unlink("/mnt/gone"))
	buf := make([]byte, 10)
	if n, err := p.Pread(fd, buf, 0); n != 10 || string(buf) != "still here" {
		t.Errorf("read of an unlinked open file: %d, %v, %q", n, err, buf)
	}
	must(p.Close(fd))

	st1, err := p.Statfs("/mnt")
	must(err)
	if st1.Bfree >= st0.Bfree || st1.Ffree != st0.Ffree-5 {
		t.Errorf("statfs: free blocks %d -> %d, inodes %d -> %d (want fewer blocks, 5 inodes fewer: d, f, fast, slow, e)", st0.Bfree, st1.Bfree, st0.Ffree, st1.Ffree)
	}
	must(p.Unmount("/mnt", 0))

	// The RAM disk's bytes, checked by e2fsck and the kernel.
	out := filepath.Join(t.TempDir(), "out.img")
	rfd, err := p.Open(dev, unix.O_RDONLY, 0)
	must(err)
	fi, _ := os.Stat(img)
	data := make([]byte, fi.Size())
	if n, err := p.Pread(rfd, data, 0); n != len(data) {
		t.Fatalf("read back: %d, %v", n, err)
	}
	p.Close(rfd)
	must(os.WriteFile(out, data, 0o600))
	if o, err := exec.Command("e2fsck", "-fn", out).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck -fn: %v\n%s", err, o)
	}
	mnt := t.TempDir()
	if o, err := testenv.Mount("-o", "loop,ro,noload", out, mnt); err != nil {
		t.Fatalf("mount: %v\n%s", err, o)
	}
	defer exec.Command("umount", mnt).Run()
	got, err := os.ReadFile(filepath.Join(mnt, "e/d2/f"))
	must(err)
	want := make([]byte, 1<<20+4)
	copy(want, big)
	copy(want[1<<20:], "ta++")
	if !bytes.Equal(got, want) {
		t.Errorf("kernel reads e/d2/f differently (%d bytes)", len(got))
	}
	var hs unix.Stat_t
	must(unix.Lstat(filepath.Join(mnt, "hard"), &hs))
	if hs.Mode != unix.S_IFREG|0o600 || hs.Nlink != 2 || hs.Mtim.Sec != mt.Unix() || hs.Mtim.Nsec != int64(mt.Nanosecond()) {
		t.Errorf("kernel stat of hard: mode %o nlink %d mtime %d.%09d", hs.Mode, hs.Nlink, hs.Mtim.Sec, hs.Mtim.Nsec)
	}
	for name, target := range map[string]string{"e/d2/fast": "short", "slow": long} {
		if l, err := os.Readlink(filepath.Join(mnt, name)); l != target {
			t.Errorf("readlink %s: %q, %v", name, l, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(mnt, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("gone: %v", err)
	}
	var ds unix.Stat_t
	must(unix.Lstat(filepath.Join(mnt, "e"), &ds))
	if ds.Nlink != 3 {
		t.Errorf("e has %d links, want 3", ds.Nlink)
	}
	_ = vfs.Stat{}
}

// TestVFSReadWriteConcurrent: goroutines create, write, read back, list
// and remove through one read-write mount at once (run it with -race);
// the image is e2fsck-clean after unmount.
func TestVFSReadWriteConcurrent(t *testing.T) {
	needMke2fs(t)
	img := filepath.Join(t.TempDir(), "rw.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	p, dev, _ := newProc(t, img, viaRAM)
	if err := p.Mount(dev, "/mnt", "ext4", 0, "commit=1"); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func(g int) {
			errs <- func() error {
				d := "/mnt/g" + string(rune('0'+g))
				if err := p.Mkdir(d, 0o755); err != nil {
					return err
				}
				for i := 0; i < 40; i++ {
					f := d + "/f" + string(rune('a'+i%26)) + string(rune('a'+i/26))
					fd, err := p.Open(f, unix.O_CREAT|unix.O_RDWR, 0o644)
					if err != nil {
						return err
					}
					data := bytes.Repeat([]byte{byte(g), byte(i)}, 3000+i*100)
					if n, err := p.Pwrite(fd, data, int64(i)*1000); n != len(data) {
						p.Close(fd)
						return err
					}
					got := make([]byte, len(data))
					n, err := p.Pread(fd, got, int64(i)*1000)
					p.Close(fd)
					if err != nil {
						return err
					}
					if n != len(data) || !bytes.Equal(got, data) {
						return syscall.EIO
					}
					if i%3 == 0 {
						if err := p.Unlink(f); err != nil {
							return err
						}
					}
					if _, err := p.Stat("/mnt"); err != nil {
						return err
					}
				}
				return nil
			}()
		}(g)
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Unmount("/mnt", 0); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.img")
	rfd, err := p.Open(dev, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(img)
	data := make([]byte, fi.Size())
	if n, err := p.Pread(rfd, data, 0); n != len(data) {
		t.Fatalf("read back: %d, %v", n, err)
	}
	p.Close(rfd)
	os.WriteFile(out, data, 0o600)
	if o, err := exec.Command("e2fsck", "-fn", out).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck -fn: %v\n%s", err, o)
	}
}
