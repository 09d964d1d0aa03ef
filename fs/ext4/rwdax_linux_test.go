package ext4_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/fs/ext4"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
)

// TestVFSReadWriteDax applies the same random changes (creates, pwrites
// at odd and block-aligned offsets, truncates, appends, unlinks, punches,
// preallocation and zeroed ranges) through a plain and a dax read-write
// mount of the same image, each on a RAM disk, with a pread of a random
// range after each: every count, errno and byte read must match (the dax
// mount's reads copy from device memory, the plain one's read the
// device), every file must read back the same, and the dax image must
// pass e2fsck -fn and show the same bytes in a kernel mount.
func TestVFSReadWriteDax(t *testing.T) {
	needMke2fs(t)
	img := filepath.Join(t.TempDir(), "rw.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	plain, pdev, _ := newProc(t, img, viaRAM)
	dax, ddev, _ := newProc(t, img, viaRAM)
	if err := plain.Mount(pdev, "/mnt", "ext4", 0, ""); err != nil {
		t.Fatal(err)
	}
	defer plain.Unmount("/mnt", 0)
	if err := dax.Mount(ddev, "/mnt", "ext4", 0, "dax,commit=600"); err != nil {
		t.Fatalf("read-write dax mount: %v", err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	names := []string{"/mnt/a", "/mnt/b", "/mnt/c", "/mnt/d"}
	ops, reads := 2000, 0
	if testenv.Quick() {
		ops = 300
	}
	for i := 0; i < ops; i++ {
		name := names[r.IntN(len(names))]
		data := make([]byte, r.IntN(3*4096)+1)
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		off := int64(r.IntN(64 << 10))
		if r.IntN(2) == 0 {
			off &^= 4095
		}
		size := int64(r.IntN(80 << 10))
		op := r.IntN(12)
		fmode := []uint32{0, unix.FALLOC_FL_KEEP_SIZE, unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE, unix.FALLOC_FL_ZERO_RANGE, unix.FALLOC_FL_ZERO_RANGE | unix.FALLOC_FL_KEEP_SIZE}[r.IntN(5)]
		flen := int64(r.IntN(6*4096) + 1)
		roff, rlen := int64(r.IntN(96<<10)), r.IntN(5*4096)+1
		do := func(p *vfs.Proc) (int, error) {
			switch {
			case op == 0:
				return 0, p.Unlink(name)
			case op >= 10:
				// Punches, preallocation (unwritten extents, read as
				// zeros) and zeroed ranges.
				fd, err := p.Open(name, unix.O_CREAT|unix.O_WRONLY, 0o644)
				if err != nil {
					return 0, err
				}
				defer p.Close(fd)
				return 0, p.Fallocate(fd, fmode, off, flen)
			case op < 3:
				fd, err := p.Open(name, unix.O_CREAT|unix.O_WRONLY, 0o644)
				if err != nil {
					return 0, err
				}
				defer p.Close(fd)
				return 0, p.Ftruncate(fd, size)
			case op < 4:
				fd, err := p.Open(name, unix.O_CREAT|unix.O_WRONLY|unix.O_APPEND, 0o644)
				if err != nil {
					return 0, err
				}
				defer p.Close(fd)
				return p.Write(fd, data)
			default:
				fd, err := p.Open(name, unix.O_CREAT|unix.O_WRONLY, 0o644)
				if err != nil {
					return 0, err
				}
				defer p.Close(fd)
				return p.Pwrite(fd, data, off)
			}
		}
		pn, perr := do(plain)
		dn, derr := do(dax)
		if pn != dn || errnoOf(perr) != errnoOf(derr) {
			t.Fatalf("op %d (%d on %s): plain %d, %v; dax %d, %v", i, op, name, pn, perr, dn, derr)
		}
		// After every change, a pread of the same range through both:
		// the dax one copies from device memory, the plain one reads
		// the device.
		pread := func(p *vfs.Proc) ([]byte, error) {
			fd, err := p.Open(name, unix.O_RDONLY, 0)
			if err != nil {
				return nil, err
			}
			defer p.Close(fd)
			b := make([]byte, rlen)
			n, err := p.Pread(fd, b, roff)
			return b[:n], err
		}
		pb, perr := pread(plain)
		db, derr := pread(dax)
		if !bytes.Equal(pb, db) || errnoOf(perr) != errnoOf(derr) {
			t.Fatalf("op %d (%d on %s): pread %d+%d: plain %d bytes, %v; dax %d bytes, %v; differ", i, op, name, roff, rlen, len(pb), perr, len(db), derr)
		}
		reads++
	}
	read := func(p *vfs.Proc, name string) []byte {
		fd, err := p.Open(name, unix.O_RDONLY, 0)
		if errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(fd)
		st, err := p.Fstat(fd)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, st.Size)
		if n, err := p.Pread(fd, b, 0); int64(n) != st.Size {
			t.Fatalf("read %s: %d, %v", name, n, err)
		}
		return b
	}
	for _, name := range names {
		if a, b := read(plain, name), read(dax, name); !bytes.Equal(a, b) {
			t.Errorf("%s: plain %d bytes, dax %d bytes, differ", name, len(a), len(b))
		}
	}
	t.Logf("%d operations, %d preads compared after them", ops, reads)
	if err := dax.Unmount("/mnt", 0); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(img)
	out := ramBytes(t, dax, int(st.Size()))
	e2fsckN(t, out)
	if os.Geteuid() == 0 {
		kimg := filepath.Join(t.TempDir(), "k.img")
		os.WriteFile(kimg, out, 0o600)
		kmnt, _, err := hostLoopMount(t, kimg, true, unix.MS_RDONLY, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			want, err := os.ReadFile(filepath.Join(kmnt, filepath.Base(name)))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			if got := read(plain, name); !bytes.Equal(got, want) {
				t.Errorf("%s: kernel mount of the dax image: %d bytes, plain mount %d, differ", name, len(want), len(got))
			}
		}
	}
}

// TestDaxWriteFault: a read-write dax mount of a loop device over an
// imported host file writes and reads file data through the file's
// mapping; when another process truncates the host file under it, a write
// and a read give EIO (the guarded copies) instead of crashing the
// program with SIGBUS, while a plain mount gets EIO from the loop
// device's block path.
func TestDaxWriteFault(t *testing.T) {
	needMke2fs(t)
	for _, mode := range []string{"dax", ""} {
		t.Run("opts="+mode, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "rw.img")
			if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", img, "16M").CombinedOutput(); err != nil {
				t.Fatalf("mke2fs: %v\n%s", err, out)
			}
			p, err := iovfs.New()
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(img, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			fd, err := p.ImportFile(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			lfd, err := p.Open("/dev/loop0", unix.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			cfg := unix.LoopConfig{Fd: uint32(fd)}
			cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
			if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
				t.Fatalf("LOOP_CONFIGURE: %v", err)
			}
			p.Close(fd)
			fsys, err := ext4.Mount(vfs.MountRequest{Proc: p, Source: "/dev/loop0", Data: mode})
			p.Close(lfd)
			if err != nil {
				t.Fatalf("mount %q: %v", mode, err)
			}
			if err := p.Namespace().MountFS("/mnt", fsys, false); err != nil {
				t.Fatal(err)
			}
			defer fsys.(vfs.Shutdowner).Shutdown()
			if got := fsys.(interface{ DAX() bool }).DAX(); got != (mode == "dax") {
				t.Fatalf("DAX() = %v with options %q", got, mode)
			}
			ffd, err := p.Open("/mnt/f", unix.O_CREAT|unix.O_RDWR, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ffd)
			data := bytes.Repeat([]byte("x"), 64<<10)
			if n, err := p.Pwrite(ffd, data, 0); n != len(data) {
				t.Fatalf("write before the truncation: %d, %v", n, err)
			}
			// Another process shrinks the image under the mapping.
			if err := os.Truncate(img, 4096); err != nil {
				t.Fatal(err)
			}
			// dax: the guarded copy faults; plain: the loop device
			// refuses I/O past its backing file's end.
			if n, err := p.Pwrite(ffd, data, 0); n != 0 || !errors.Is(err, syscall.EIO) {
				t.Errorf("write into a truncated image: %d, %v; want 0, EIO", n, err)
			}
			// Reads too: dax copies from the mapping under the guard.
			if n, err := p.Pread(ffd, data, 0); n != 0 || !errors.Is(err, syscall.EIO) {
				t.Errorf("read from a truncated image: %d, %v; want 0, EIO", n, err)
			}
		})
	}
}

// TestVFSDaxReadNoAllocs: preads on a read-write dax mount (copied from
// device memory) allocate nothing, over data, a hole and an unwritten
// extent.
func TestVFSDaxReadNoAllocs(t *testing.T) {
	needMke2fs(t)
	img := filepath.Join(t.TempDir(), "a.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", img, "64M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	p, dev, _ := newProc(t, img, viaRAM)
	if err := p.Mount(dev, "/mnt", "ext4", 0, "dax,commit=3600"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Unmount("/mnt", 0) })
	fd, err := p.Open("/mnt/f", unix.O_CREAT|unix.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(fd)
	if _, err := p.Pwrite(fd, bytes.Repeat([]byte{9}, 1<<20), 0); err != nil {
		t.Fatal(err)
	}
	if err := p.Fallocate(fd, 0, 2<<20, 1<<20); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	off := int64(0)
	for name, fn := range map[string]func(){
		"data":      func() { p.Pread(fd, buf, off); off = (off + 4096*37) % (1 << 20) },
		"hole":      func() { p.Pread(fd, buf, 1<<20+8192) },
		"unwritten": func() { p.Pread(fd, buf, 2<<20+8192) },
	} {
		fn()
		if a := testing.AllocsPerRun(200, fn); a != 0 && !raceEnabled {
			t.Errorf("%s: %.1f allocations per pread, want 0", name, a)
		}
	}
}
