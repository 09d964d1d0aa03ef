package ext4_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

// TestSeekHoleDataKernel compares lseek's SEEK_DATA and SEEK_HOLE on a
// read-only mount with the kernel's on a read-only loop mount of the same
// image: sparse files made by mke2fs -d (holes at the start, inside and at
// the end, a file that is one hole, a small and an empty file), then
// changed (by a kernel read-write mount, and by iovfs's) with fallocate (unwritten extents,
// KEEP_SIZE past the end) and PUNCH_HOLE, for extent-mapped (4 KiB and
// 1 KiB blocks) and block-mapped (ext3) files. Every offset at and around
// each block boundary of every file is asked both ways; positions and
// errnos must be equal. Nothing reads the files first: the kernel reports
// an unwritten extent as data once its page cache holds pages over it.
func TestSeekHoleDataKernel(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	for _, set := range []struct {
		name string
		args []string
		bs   int64
	}{
		{"ext4-4k", []string{"-t", "ext4", "-b", "4096"}, 4096},
		{"ext4-1k", []string{"-t", "ext4", "-b", "1024"}, 1024},
		{"ext3-1k", []string{"-t", "ext3", "-b", "1024"}, 1024},
	} {
		t.Run(set.name, func(t *testing.T) {
			bs := set.bs
			files := map[string]int64{}
			img := mkImage(t, 8<<10, func(t testing.TB, dir string) {
				write := func(name string, size int64, data ...[2]int64) {
					f, err := os.Create(filepath.Join(dir, name))
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					for _, d := range data { // [offset, length] of data
						if _, err := f.WriteAt(make([]byte, d[1]), d[0]); err != nil {
							t.Fatal(err)
						}
						// Not zeros: mke2fs -d may skip zero blocks.
						if _, err := f.WriteAt([]byte{1}, d[0]); err != nil {
							t.Fatal(err)
						}
						for o := d[0]; o < d[0]+d[1]; o += bs {
							f.WriteAt([]byte{2}, o)
						}
					}
					if err := f.Truncate(size); err != nil {
						t.Fatal(err)
					}
					files[name] = size
				}
				write("dense", 5*bs+7, [2]int64{0, 5*bs + 7})
				write("lead-hole", 20*bs, [2]int64{8 * bs, 12 * bs})
				write("mid-hole", 40*bs+100, [2]int64{0, 3 * bs}, [2]int64{20 * bs, 4 * bs}, [2]int64{39 * bs, bs + 100})
				write("tail-hole", 30*bs, [2]int64{0, 2 * bs})
				write("all-hole", 16*bs+3)
				write("small", 10, [2]int64{0, 10})
				write("empty", 0)
				write("falloc", 32*bs, [2]int64{0, 4 * bs}, [2]int64{24 * bs, 2 * bs})
				write("punch", 24*bs, [2]int64{0, 24 * bs})
			}, set.args...)

			// The same changes through a kernel read-write mount (which
			// then unmounts) and through an iovfs read-write mount of a
			// copy of the image, which stays mounted to be compared too.
			extents := set.name != "ext3-1k"
			type fallocFn func(name string, mode uint32, off, length int64) error
			change := func(fa fallocFn) {
				if extents {
					for _, c := range []struct {
						mode     uint32
						off, len int64
					}{{0, 8 * bs, 4 * bs}, {unix.FALLOC_FL_KEEP_SIZE, 30 * bs, 8 * bs}, {unix.FALLOC_FL_ZERO_RANGE, 1 * bs, 2 * bs}} {
						if err := fa("falloc", c.mode, c.off, c.len); err != nil {
							t.Fatalf("fallocate %+v: %v", c, err)
						}
					}
				}
				for _, r := range [][2]int64{{2 * bs, 3 * bs}, {10*bs + 5, 2 * bs}, {20 * bs, 4 * bs}} {
					if err := fa("punch", unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, r[0], r[1]); err != nil {
						t.Fatalf("punch %v: %v", r, err)
					}
				}
			}
			orig, err := os.ReadFile(img)
			if err != nil {
				t.Fatal(err)
			}
			dir, umount, err := hostLoopMount(t, img, false, 0, "")
			if err != nil {
				t.Fatal(err)
			}
			change(func(name string, mode uint32, off, length int64) error {
				f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := unix.Fallocate(int(f.Fd()), mode, off, length); err != nil {
					return err
				}
				return unix.Fsync(int(f.Fd()))
			})
			umount()
			vimg := filepath.Join(t.TempDir(), "v.img")
			if err := os.WriteFile(vimg, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			rw, rdev, done := newProc(t, vimg, viaRAM)
			if err := rw.Mount(rdev, "/mnt", "ext4", 0, ""); err != nil {
				t.Fatal(err)
			}
			done()
			t.Cleanup(func() { rw.Unmount("/mnt", 0) })
			change(func(name string, mode uint32, off, length int64) error {
				fd, err := rw.Open("/mnt/"+name, unix.O_RDWR, 0)
				if err != nil {
					return err
				}
				defer rw.Close(fd)
				return rw.Fallocate(fd, mode, off, length)
			})

			kmnt := loopMount(t, img, "ro,noload")
			ro := mountImage(t, img, viaRAM, "")
			asked, holes := 0, 0
			for _, side := range []struct {
				name string
				p    *vfs.Proc
			}{{"ro", ro}, {"rw", rw}} {
				for name, size := range files {
					offs := []int64{-1, 0, 1, size - 1, size, size + 1, size + bs}
					for b := int64(0); b*bs <= size+bs; b++ {
						offs = append(offs, b*bs-1, b*bs, b*bs+1)
					}
					st := compareSeeks(t, side.name+" "+name, filepath.Join(kmnt, name), side.p, "/mnt/"+name, size, offs)
					asked, holes = asked+st.asked, holes+st.holes
				}
			}
			if holes == 0 {
				t.Fatal("the kernel found no hole before the end of any file: nothing was compared")
			}
			t.Logf("%d lseeks compared, %d of them found a hole before the end", asked, holes)
		})
	}
}

// TestSeekHoleDataInlineKernel is TestSeekHoleDataKernel for inline_data
// files: made by mke2fs -d, some then truncated up and down by an iovfs
// read-write mount (never the kernel's: a kernel read-write mount of an
// inline_data image is a hazard here, see the package README), compared on
// a read-only kernel mount and a read-only iovfs mount of the result.
func TestSeekHoleDataInlineKernel(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	sizes := map[string]int64{"tiny": 10, "i-block": 60, "xattr": 100, "grown": 30, "grown-more": 90, "shrunk": 120}
	img := mkImage(t, 8<<10, func(t testing.TB, dir string) {
		for name, size := range sizes {
			b := make([]byte, size)
			for i := range b {
				b[i] = byte('a' + i%26)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}, "-t", "ext4", "-b", "4096", "-I", "256", "-O", "inline_data")
	rw, dev, done := newProc(t, img, viaRAM)
	if err := rw.Mount(dev, "/mnt", "ext4", 0, ""); err != nil {
		t.Fatal(err)
	}
	done()
	for name, size := range map[string]int64{"grown": 50, "grown-more": 3000, "shrunk": 40} {
		if err := rw.Truncate("/mnt/"+name, size); err != nil {
			t.Fatal(err)
		}
		sizes[name] = size
	}
	if err := rw.Unmount("/mnt", 0); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, ramBytes(t, rw, int(st.Size())), 0o600); err != nil {
		t.Fatal(err)
	}
	kmnt := loopMount(t, img, "ro,noload")
	p := mountImage(t, img, viaRAM, "")
	asked, errs := 0, 0
	for name, size := range sizes {
		var offs []int64
		for off := int64(-1); off <= size+2; off++ {
			offs = append(offs, off)
		}
		st := compareSeeks(t, name, filepath.Join(kmnt, name), p, "/mnt/"+name, size, offs)
		asked, errs = asked+st.asked, errs+st.errs
	}
	t.Logf("%d lseeks compared, %d of them errors on both sides", asked, errs)
}

// seekStats counts what compareSeeks asked.
type seekStats struct{ asked, errs, holes int }

// compareSeeks asks lseek SEEK_DATA and SEEK_HOLE at every offset of offs
// of the kernel's file kpath and of iovfs's file vpath in p (size bytes
// long): positions and errnos must be equal. It counts the calls, the
// errors both sides gave, and the holes found before the end.
func compareSeeks(t *testing.T, what, kpath string, p *vfs.Proc, vpath string, size int64, offs []int64) seekStats {
	t.Helper()
	kfd, err := unix.Open(kpath, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(kfd)
	vfd, err := p.Open(vpath, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(vfd)
	var st seekStats
	for _, off := range offs {
		for _, whence := range []int{unix.SEEK_DATA, unix.SEEK_HOLE} {
			kpos, kerr := unix.Seek(kfd, off, whence)
			vpos, verr := p.Seek(vfd, off, whence)
			st.asked++
			if kerr != nil || verr != nil {
				st.errs++
				if !errors.Is(verr, kerr) || kerr == nil {
					t.Errorf("%s (size %d): lseek(%d, %d): iovfs %d, %v; kernel %d, %v", what, size, off, whence, vpos, verr, kpos, kerr)
				}
				continue
			}
			if kpos != vpos {
				t.Errorf("%s (size %d): lseek(%d, %d): iovfs %d, kernel %d", what, size, off, whence, vpos, kpos)
			}
			if whence == unix.SEEK_HOLE && kpos < size {
				st.holes++
			}
		}
	}
	return st
}
