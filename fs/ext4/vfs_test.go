package ext4_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/fs/ext4"
	"github.com/iovfs/iovfs/iofs"
	"github.com/iovfs/iovfs/vfs"
)

// images are the feature sets every VFS test runs over.
var images = []struct {
	name string
	fill func(testing.TB, string)
	args []string
}{
	{"ext4-4k", populate, []string{"-t", "ext4", "-b", "4096"}},
	{"ext4-1k", populate, []string{"-t", "ext4", "-b", "1024"}},
	{"ext2", populate, []string{"-t", "ext2", "-b", "4096"}},
	{"ext3-1k", populate, []string{"-t", "ext3", "-b", "1024"}},
	{"inline", withoutTailHole, []string{"-t", "ext4", "-O", "inline_data", "-I", "512"}},
}

// modes are the ways a test mounts an image: the default path over a
// loop device, dax over the same loop device (mmap of the host file) and
// dax over a RAM disk.
var modes = []struct {
	name string
	src  source
	opts string
}{
	{"default", viaLoop, ""},
	{"dax-loop", viaLoop, "dax"},
	{"dax-ram", viaRAM, "dax"},
}

func TestVFSTree(t *testing.T) {
	for _, im := range images {
		img := mkImage(t, 8192, im.fill, im.args...)
		src := filepath.Join(filepath.Dir(img), "src")
		for _, m := range modes {
			t.Run(im.name+"/"+m.name, func(t *testing.T) {
				p := mountImage(t, img, m.src, m.opts)
				if n := compareTree(t, p, "/mnt", src, false); n < 120 {
					t.Errorf("compared %d files", n)
				}
			})
		}
	}
}

func TestVFSFSTest(t *testing.T) {
	img := mkImage(t, 8192, forFSTest, "-t", "ext4")
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := mountImage(t, img, m.src, m.opts)
			if err := fstest.TestFS(iofs.New(p, "/mnt"), "tiny.txt", "odd", "sparse", "a/b/c/deep.txt", "many/f2", "fastlink", "dirlink"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestVFSMountErrors(t *testing.T) {
	img := mkImage(t, 2048, func(t testing.TB, dir string) {
		os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644)
	}, "-t", "ext4")

	p, dev, done := newProc(t, img, viaLoop)
	defer done()
	// The read path benchmarks exist on read-only mounts only.
	err := p.Mount(dev, "/mnt", "ext4", 0, "x-iovfs-read=iomap")
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-write mount with x-iovfs-read: %v, want EINVAL saying it needs a read-only mount", err)
	}
	if err := p.Mount(dev, "/mnt", "ext4", unix.MS_RDONLY, "dax,bogus"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("unknown option: %v, want EINVAL", err)
	}
	if err := p.Mount("/tmp", "/mnt", "ext4", unix.MS_RDONLY, ""); !errors.Is(err, syscall.ENOTBLK) {
		t.Errorf("directory as source: %v, want ENOTBLK", err)
	}
	if err := p.Mount("/dev/loop1", "/mnt", "ext4", unix.MS_RDONLY, ""); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("unbound loop device: %v, want EINVAL (no file system)", err)
	}

	// A loop device over a file in iovfs's tmpfs has no memory view.
	p2, dev2, done2 := newProc(t, img, viaTmpfsLoop)
	defer done2()
	err = p2.Mount(dev2, "/mnt", "ext4", unix.MS_RDONLY, "dax")
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), dev2) || !strings.Contains(err.Error(), "direct access") {
		t.Errorf("dax without direct access: %v, want EINVAL naming %s", err, dev2)
	}
	// An ext4 volume (extents, 64bit, flex_bg) is refused as ext3 and
	// ext2, as Linux's ext4 driver refuses it under those names.
	for _, typ := range []string{"ext3", "ext2"} {
		if err := p2.Mount(dev2, "/mnt", typ, unix.MS_RDONLY, ""); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("ext4 volume mounted as %s: %v, want EINVAL", typ, err)
		}
	}
	for _, typ := range []string{"ext4"} {
		if err := p2.Mount(dev2, "/mnt", typ, unix.MS_RDONLY, ""); err != nil {
			t.Fatalf("default mount as %s over tmpfs loop: %v", typ, err)
		}
		compareFile(t, p2, "/mnt/f", []byte("data"))
		if err := p2.Unmount("/mnt", 0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVFSHoldsDevice checks that the mount keeps its device open until
// Shutdown: an AUTOCLEAR loop device stays bound while mounted, even with
// no descriptor open, and clears when the last open file of the detached
// mount is closed.
func TestVFSHoldsDevice(t *testing.T) {
	img := mkImage(t, 2048, func(t testing.TB, dir string) {
		os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644)
	}, "-t", "ext4")
	p, dev, done := newProc(t, img, viaLoop)
	if err := p.Mount(dev, "/mnt", "ext4", unix.MS_RDONLY, "dax"); err != nil {
		t.Fatal(err)
	}
	done()
	bound := func() bool {
		fd, err := p.Open(dev, unix.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(fd)
		var info unix.LoopInfo64
		_, err = p.Ioctl(fd, unix.LOOP_GET_STATUS64, &info)
		return err == nil
	}
	if !bound() {
		t.Fatal("loop device cleared while mounted")
	}
	fd, err := p.Open("/mnt/f", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Unmount("/mnt", 0); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("unmount with an open file: %v, want EBUSY", err)
	}
	if err := p.Unmount("/mnt", unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := p.Pread(fd, buf, 0); n != 4 || string(buf[:4]) != "data" {
		t.Errorf("read after lazy unmount: %d, %v", n, err)
	}
	if !bound() {
		t.Error("loop device cleared while a file of the detached mount is open")
	}
	p.Close(fd)
	if bound() {
		t.Error("loop device still bound after the mount's last file closed")
	}
}

// TestVFSConcurrentReads reads one descriptor from several goroutines at
// different offsets, for the race detector and the lock-free mapping
// cache, over a file of many extents (1 KiB blocks, a fragmented file).
func TestVFSConcurrentReads(t *testing.T) {
	var want []byte
	img := mkImage(t, 8192, func(t testing.TB, dir string) {
		populate(t, dir)
		want, _ = os.ReadFile(filepath.Join(dir, "sparse"))
	}, "-t", "ext4", "-b", "1024")
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := mountImage(t, img, m.src, m.opts)
			fd, err := p.Open("/mnt/sparse", unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(fd)
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]byte, 3000)
					for i := range 200 {
						off := (i*7919 + g*104729) % (len(want) - len(buf))
						n, err := p.Pread(fd, buf, int64(off))
						if n != len(buf) || string(buf) != string(want[off:off+n]) {
							t.Errorf("pread at %d: %d, %v", off, n, err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// TestVFSAllocs: after the first read, a 4 KiB pread or preadv inside one
// extent allocates nothing, in either read path (ARCHITECTURE rule 5).
func TestVFSAllocs(t *testing.T) {
	img := mkImage(t, 8192, populate, "-t", "ext4")
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := mountImage(t, img, m.src, m.opts)
			fd, err := p.Open("/mnt/big", unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(fd)
			buf := make([]byte, 4096)
			segs := [][]byte{buf[:1000], buf[1000:]}
			one := [][]byte{buf}
			p.Pread(fd, buf, 8192)
			for _, c := range []struct {
				name string
				f    func()
			}{
				{"pread", func() { p.Pread(fd, buf, 8192) }},
				{"preadv-1seg", func() { p.Preadv(fd, one, 12288) }},
				{"preadv-2seg", func() { p.Preadv(fd, segs, 4096) }},
			} {
				if a := testing.AllocsPerRun(100, c.f); a != 0 {
					t.Errorf("%s: %v allocs per read", c.name, a)
				}
			}
		})
	}
}

// damageInode flips a byte of the atime of path's inode, which only its
// metadata_csum checksum notices.
func damageInode(t testing.TB, img, path string) {
	t.Helper()
	out, err := exec.Command("debugfs", "-R", "imap "+path, img).CombinedOutput()
	if err != nil {
		t.Fatalf("debugfs imap: %v\n%s", err, out)
	}
	var blk, off int64
	i := strings.Index(string(out), "located at block")
	if i < 0 {
		t.Fatalf("debugfs imap: %s", out)
	}
	if _, err := fmt.Sscanf(string(out[i:]), "located at block %d, offset 0x%x", &blk, &off); err != nil {
		t.Fatalf("debugfs imap: %v: %s", err, out)
	}
	out, err = exec.Command("dumpe2fs", "-h", img).CombinedOutput()
	if err != nil {
		t.Fatalf("dumpe2fs: %v", err)
	}
	var bs int64
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Block size:") {
			fmt.Sscan(strings.TrimPrefix(l, "Block size:"), &bs)
		}
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	at := blk*bs + off + 8 // i_atime
	f.ReadAt(b, at)
	b[0] ^= 0x55
	f.WriteAt(b, at)
}

// TestVFSErrno: damage reported by the reader keeps its errno through the
// VFS (EBADMSG, Linux's EFSBADCRC, for a bad inode checksum), and the
// rest of the volume is still served.
func TestVFSErrno(t *testing.T) {
	img := mkImage(t, 2048, func(t testing.TB, dir string) {
		os.WriteFile(filepath.Join(dir, "victim"), []byte("v"), 0o644)
		os.WriteFile(filepath.Join(dir, "other"), []byte("o"), 0o644)
	}, "-t", "ext4", "-I", "256")
	damageInode(t, img, "/victim")
	p := mountImage(t, img, viaLoop, "dax")
	if _, err := p.Open("/mnt/victim", unix.O_RDONLY, 0); !errors.Is(err, syscall.EBADMSG) {
		t.Errorf("open of a damaged inode: %v, want EBADMSG", err)
	}
	compareFile(t, p, "/mnt/other", []byte("o"))
}

// TestVFSDirCookies lists directories through vfs.DirReader in pieces of
// 7 entries, resuming from the last cookie each time, and checks that
// every entry comes exactly once, that cookies are at least 3 (1 and 2
// are the VFS's "." and "..") and that offsets 0, 1 and 2 all start over.
func TestVFSDirCookies(t *testing.T) {
	for _, im := range images {
		t.Run(im.name, func(t *testing.T) {
			img := mkImage(t, 8192, im.fill, im.args...)
			p, dev, done := newProc(t, img, viaLoop)
			defer done()
			fsys, err := ext4.Mount(vfs.MountRequest{Proc: p, Source: dev, Flags: unix.MS_RDONLY})
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.(vfs.Shutdowner).Shutdown()
			for _, name := range []string{"many", "a"} {
				n, err := fsys.Root().(vfs.Lookuper).Lookup(name)
				if err != nil {
					t.Fatal(err)
				}
				dr := n.(vfs.DirReader)
				var all []string
				dr.ReadDir(0, func(d vfs.Dirent) bool { all = append(all, d.Name); return true })
				for _, start := range []int64{1, 2} {
					var again []string
					dr.ReadDir(start, func(d vfs.Dirent) bool { again = append(again, d.Name); return true })
					if strings.Join(again, "/") != strings.Join(all, "/") {
						t.Errorf("%s: ReadDir(%d) does not start over", name, start)
					}
				}
				var got []string
				for off := int64(0); ; {
					k := 0
					dr.ReadDir(off, func(d vfs.Dirent) bool {
						if d.Off < 3 {
							t.Errorf("%s: %q has cookie %d", name, d.Name, d.Off)
						}
						got = append(got, d.Name)
						off = d.Off
						k++
						return k < 7
					})
					if k == 0 {
						break
					}
				}
				if strings.Join(got, "/") != strings.Join(all, "/") || len(all) == 0 {
					t.Errorf("%s: in pieces %d entries, whole %d", name, len(got), len(all))
				}
			}
		})
	}
}
