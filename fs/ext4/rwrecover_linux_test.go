package ext4_test

// Journal recovery on read-only mounts against the kernel's: a journal
// the kernel left dirty (the backing file of a live mount copied after
// sync) mounted "ro" by the kernel and by iovfs.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/fs/ext4/disk"
)

// hostLoopMount mounts img with mount(2) (flags, data) on a free host
// loop device set to AUTOCLEAR, read-only if roDev. It returns the mount
// point and a function that unmounts it (also run at cleanup), or the
// mount's error, with nothing left mounted or attached.
func hostLoopMount(t *testing.T, img string, roDev bool, flags uintptr, data string) (string, func(), error) {
	t.Helper()
	dir := t.TempDir()
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ctl)
	mode := unix.O_RDWR
	if roDev {
		mode = unix.O_RDONLY
	}
	imgFd, err := unix.Open(img, mode|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(imgFd)
	for try := 0; ; try++ {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			t.Fatalf("LOOP_CTL_GET_FREE: %v", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		lfd, err := unix.Open(dev, mode|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := unix.LoopConfig{Fd: uint32(imgFd)}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		if roDev {
			cfg.Info.Flags |= unix.LO_FLAGS_READ_ONLY
		}
		err = unix.IoctlLoopConfigure(lfd, &cfg)
		if errors.Is(err, unix.EBUSY) && try < 10 {
			unix.Close(lfd)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			unix.Close(lfd)
			t.Fatalf("LOOP_CONFIGURE %s: %v", dev, err)
		}
		err = unix.Mount(dev, dir, "ext4", flags, data)
		unix.Close(lfd) // the mount keeps it bound; unmounting clears it
		if err != nil {
			return "", nil, err
		}
		break
	}
	var once sync.Once
	um := func() {
		once.Do(func() {
			err := unix.Unmount(dir, 0)
			for try := 0; errors.Is(err, unix.EBUSY) && try < 50; try++ {
				time.Sleep(20 * time.Millisecond)
				err = unix.Unmount(dir, 0)
			}
			if err != nil {
				t.Errorf("kernel unmount %s: %v", dir, err)
			}
		})
	}
	t.Cleanup(um)
	return dir, um, nil
}

// kernelDirtyImage makes an image with mke2fs args, changes it through a
// read-write kernel mount (commit=600, so only sync and fsync commit) and
// returns the backing file's bytes copied after an fsync while still
// mounted: the journal holds a committed transaction not yet checkpointed
// and the superblock needs_recovery.
func kernelDirtyImage(t *testing.T, seed uint64, args ...string) []byte {
	t.Helper()
	img := mkImage(t, 16<<10, func(testing.TB, string) {}, append([]string{"-t", "ext4"}, args...)...)
	mnt, um, err := hostLoopMount(t, img, false, 0, "commit=600,noinit_itable")
	if err != nil {
		t.Fatalf("kernel rw mount: %v", err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < 80; i++ {
		if i == 40 {
			unix.Sync() // the first half checkpointed, the second only committed
		}
		d := filepath.Join(mnt, fmt.Sprintf("d%d", i%5))
		os.Mkdir(d, 0o755)
		f := filepath.Join(d, fmt.Sprintf("f%d", r.IntN(12)))
		data := make([]byte, r.IntN(40<<10)+1)
		for j := range data {
			data[j] = byte(r.IntN(255) + 1)
		}
		switch r.IntN(6) {
		case 0:
			os.Remove(f)
		case 1:
			os.Rename(f, filepath.Join(mnt, fmt.Sprintf("d%d/r%d", r.IntN(5), i)))
		case 2:
			os.Symlink(f, filepath.Join(d, fmt.Sprintf("l%d", i)))
		case 3:
			os.Truncate(f, int64(r.IntN(30<<10)))
		default:
			if h, err := os.OpenFile(f, os.O_RDWR|os.O_CREATE, 0o640); err == nil {
				h.WriteAt(data, int64(r.IntN(64<<10)))
				h.Close()
			}
		}
	}
	// fsync commits the running transaction (all of it: ext4 has one)
	// and leaves its blocks to writeback, which waits 30 s.
	f, err := os.Create(filepath.Join(mnt, "fsynced"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("fsynced")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, err := os.ReadFile(img)
	um()
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(b[1024+0x60:])&0x4 == 0 {
		t.Fatal("the copy of a live mount does not need recovery")
	}
	return b
}

// journalBlocks returns the device blocks of img's journal (inode 8).
func journalBlocks(t *testing.T, img []byte) (map[uint64]bool, int) {
	t.Helper()
	v, err := disk.Open(memDev(img), disk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	in, err := v.Inode(8)
	if err != nil {
		t.Fatal(err)
	}
	bs := int(v.BlockSize())
	out := map[uint64]bool{}
	var c disk.ExtentCache
	for l := uint64(0); l < in.Size/uint64(bs); {
		m, err := v.MapBlocks(in, &c, l)
		if err != nil {
			t.Fatal(err)
		}
		for k := l - m.Logical; k < m.Len; k++ {
			out[m.Physical+k] = true
		}
		l = m.Logical + m.Len
	}
	return out, bs
}

type memDev []byte

func (d memDev) Size() int64 { return int64(len(d)) }
func (d memDev) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(d)) {
		return 0, unix.EIO
	}
	return copy(p, d[off:]), nil
}

// sbState is what a read-only mount's recovery leaves in the superblock
// and the journal superblock that both must agree on.
func sbState(t *testing.T, img []byte) string {
	t.Helper()
	sb := img[1024:]
	jb, bs := journalBlocks(t, img)
	first := ^uint64(0)
	for b := range jb {
		first = min(first, b)
	}
	// The journal superblock is the journal's first block (mke2fs makes
	// the journal one extent).
	js := img[first*uint64(bs):]
	return fmt.Sprintf("incompat=%#x free_blocks=%d free_inodes=%d state=%d j_start=%d j_sequence=%d",
		binary.LittleEndian.Uint32(sb[0x60:]), binary.LittleEndian.Uint32(sb[0xC:]), binary.LittleEndian.Uint32(sb[0x10:]),
		binary.LittleEndian.Uint16(sb[0x3A:]), binary.BigEndian.Uint32(js[0x1C:]), binary.BigEndian.Uint32(js[0x18:]))
}

func e2fsckN(t *testing.T, img []byte) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "fsck.img")
	if err := os.WriteFile(f, img, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("e2fsck", "-fn", f).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck -fn: %v\n%s", err, out)
	}
}

// ramBytes reads the whole of /dev/ram0 of p.
func ramBytes(t *testing.T, p interface {
	Open(string, int, uint32) (int, error)
	Pread(int, []byte, int64) (int, error)
	Close(int) error
}, n int) []byte {
	t.Helper()
	fd, err := p.Open("/dev/ram0", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(fd)
	b := make([]byte, n)
	if got, err := p.Pread(fd, b, 0); got != n {
		t.Fatalf("read /dev/ram0: %d, %v", got, err)
	}
	return b
}

// TestReadOnlyMountReplay: the kernel replays the journal of a "ro" mount
// of a volume that needs recovery, writing the device, and so does iovfs:
// the trees match (strictly: inode numbers, link counts, ns times), the
// image bytes after unmount match block for block outside the superblock
// and the journal, and the superblock fields recovery sets match too.
// With noload neither writes anything; on a read-only device both refuse
// with EROFS.
func TestReadOnlyMountReplay(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	for _, fs := range []struct {
		name string
		args []string
	}{{"ext4", nil}, {"ext4-nocsum", []string{"-O", "^metadata_csum"}}} {
		t.Run(fs.name, func(t *testing.T) {
			dirty := kernelDirtyImage(t, 3, fs.args...)
			dir := t.TempDir()

			// Replay on "ro".
			kimg := filepath.Join(dir, "k.img")
			if err := os.WriteFile(kimg, dirty, 0o600); err != nil {
				t.Fatal(err)
			}
			kmnt, kum, err := hostLoopMount(t, kimg, false, unix.MS_RDONLY, "")
			if err != nil {
				t.Fatalf("kernel ro mount: %v", err)
			}
			oimg := filepath.Join(dir, "o.img")
			if err := os.WriteFile(oimg, dirty, 0o600); err != nil {
				t.Fatal(err)
			}
			p, dev, done := newProc(t, oimg, viaRAM)
			if err := p.Mount(dev, "/mnt", "ext4", unix.MS_RDONLY, ""); err != nil {
				t.Fatalf("iovfs ro mount: %v", err)
			}
			done()
			files := compareTree(t, p, "/mnt", kmnt, true)
			if err := p.Unmount("/mnt", 0); err != nil {
				t.Fatal(err)
			}
			kum()
			ours := ramBytes(t, p, len(dirty))
			theirs, err := os.ReadFile(kimg)
			if err != nil {
				t.Fatal(err)
			}
			jb, bs := journalBlocks(t, theirs)
			var diff []int
			changed := 0
			for b := 0; b*bs < len(dirty); b++ {
				blk := func(x []byte) []byte { return x[b*bs : (b+1)*bs] }
				if b == 1024/bs {
					continue // the superblock: compared below
				}
				if !bytes.Equal(blk(dirty), blk(theirs)) {
					changed++
				}
				if !jb[uint64(b)] && !bytes.Equal(blk(ours), blk(theirs)) {
					diff = append(diff, b)
				}
			}
			if changed == 0 {
				t.Fatal("the kernel's ro mount wrote nothing: no replay to compare")
			}
			if len(diff) != 0 {
				t.Errorf("blocks differing from the kernel's ro replay: %v", diff)
				for _, b := range diff[:1] {
					for i := b * bs; i < (b+1)*bs; i++ {
						if ours[i] != theirs[i] {
							t.Logf("block %d +%#x: iovfs %#x kernel %#x dirty %#x", b, i-b*bs, ours[i], theirs[i], dirty[i])
						}
					}
				}
			}
			// The superblock, but for s_kbytes_written (the kernel counts
			// what it wrote since mount) and the checksum that covers it.
			mask := func(x []byte) []byte {
				sb := bytes.Clone(x[1024:2048])
				clear(sb[0x178:0x180])
				clear(sb[0x3FC:])
				return sb
			}
			if o, k := mask(ours), mask(theirs); !bytes.Equal(o, k) {
				for i := range o {
					if o[i] != k[i] {
						t.Errorf("superblock +%#x: iovfs %#x, kernel %#x", i, o[i], k[i])
					}
				}
			}
			if o, k := sbState(t, ours), sbState(t, theirs); o != k {
				t.Errorf("after the ro replay:\niovfs  %s\nkernel %s", o, k)
			}
			e2fsckN(t, ours)
			t.Logf("%d files compared; the kernel's ro mount changed %d blocks, iovfs's the same outside the journal; %s", files, changed, sbState(t, ours))

			// noload: mounted as the checkpointed state, nothing written.
			nimg := filepath.Join(dir, "n.img")
			if err := os.WriteFile(nimg, dirty, 0o600); err != nil {
				t.Fatal(err)
			}
			nmnt, _, err := hostLoopMount(t, nimg, true, unix.MS_RDONLY, "noload")
			if err != nil {
				t.Fatalf("kernel ro,noload mount: %v", err)
			}
			p2, dev2, done2 := newProc(t, oimg, viaRAM)
			if err := p2.Mount(dev2, "/mnt", "ext4", unix.MS_RDONLY, "noload"); err != nil {
				t.Fatalf("iovfs ro,noload mount: %v", err)
			}
			done2()
			compareTree(t, p2, "/mnt", nmnt, true)
			if err := p2.Unmount("/mnt", 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ramBytes(t, p2, len(dirty)), dirty) {
				t.Error("ro,noload wrote to the device")
			}

			// A read-only device: EROFS from both, nothing written.
			_, _, kerr := hostLoopMount(t, nimg, true, unix.MS_RDONLY, "")
			p3, dev3, done3 := newProc(t, oimg, viaLoop) // a read-only iovfs loop device
			oerr := p3.Mount(dev3, "/mnt", "ext4", unix.MS_RDONLY, "")
			done3()
			if oerr == nil {
				p3.Unmount("/mnt", 0)
			}
			if !errors.Is(kerr, unix.EROFS) || !errors.Is(oerr, unix.EROFS) {
				t.Errorf("ro mount of a volume needing recovery on a read-only device: iovfs %v, kernel %v (want EROFS)", oerr, kerr)
			}
			if b, _ := os.ReadFile(oimg); !bytes.Equal(b, dirty) {
				t.Error("the read-only device's image was written")
			}
		})
	}
}
