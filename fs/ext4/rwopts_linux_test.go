package ext4_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/fs/ext4"
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
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
			testenv.Sampled(t, "ext4")
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

// TestCommitIntervalMount: a read-write mount with commit=1 commits a
// write within the interval with no fsync and nothing after it: a copy
// of the device taken then (a crash) recovers with the file. The wait is
// bounded (10 s) and the test asserts the result, not the time.
func TestCommitIntervalMount(t *testing.T) {
	needMke2fs(t)
	img := mkImage(t, 8<<10, func(testing.TB, string) {}, "-t", "ext4")
	p, dev, done := newProc(t, img, viaRAM)
	defer done()
	fsys, err := ext4.Mount(vfs.MountRequest{Proc: p, Source: dev, Data: "commit=1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Namespace().MountFS("/mnt", fsys, false); err != nil {
		t.Fatal(err)
	}
	defer fsys.(vfs.Shutdowner).Shutdown()
	w := fsys.(interface{ Writer() *disk.Writer }).Writer()
	fd, err := p.Open("/mnt/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Pwrite(fd, []byte("committed by the timer"), 0); n != 22 {
		t.Fatal(n, err)
	}
	p.Close(fd)
	// Pending takes the Writer's lock: once it reports 0, the commit's
	// device writes happened before the copy below.
	for i := 0; i < 100 && w.Pending() != 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if n := w.Pending(); n != 0 {
		t.Fatalf("10 s after the write, %d blocks are still uncommitted", n)
	}
	crash := memWDevX(ramBytes(t, p, int(fileSize(t, img))))
	if _, err := disk.RecoverJournal(crash, disk.Options{}); err != nil {
		t.Fatal(err)
	}
	v, err := disk.Open(memDev(crash), disk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	root, err := v.Inode(v.Root())
	if err != nil {
		t.Fatal(err)
	}
	ino, err := v.Lookup(root, "f")
	if err != nil {
		t.Fatalf("the crash copy has no f: %v", err)
	}
	if in, err := v.Inode(ino); err != nil || in.Size != 22 {
		t.Fatalf("the crash copy's f: %+v, %v; want size 22", in, err)
	}
}

type memWDevX []byte

func (d memWDevX) Size() int64                              { return int64(len(d)) }
func (d memWDevX) ReadAt(p []byte, off int64) (int, error)  { return copy(p, d[off:]), nil }
func (d memWDevX) WriteAt(p []byte, off int64) (int, error) { return copy(d[off:], p), nil }

func fileSize(t *testing.T, name string) int64 {
	st, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestNoLoadReadWrite: a read-write noload mount runs without the journal,
// as Linux's nojournal mode: changes are written in place, the journal's
// blocks are never written, needs_recovery is never set, and the result
// is e2fsck-clean. A volume that needs recovery is refused (EINVAL).
func TestNoLoadReadWrite(t *testing.T) {
	needMke2fs(t)
	img := mkImage(t, 8<<10, func(testing.TB, string) {}, "-t", "ext4")
	orig, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	jb, bs := journalBlocks(t, orig)
	p, dev, done := newProc(t, img, viaRAM)
	defer done()
	if err := p.Mount(dev, "/mnt", "ext4", 0, "noload"); err != nil {
		t.Fatal(err)
	}
	if b := ramBytes(t, p, len(orig)); binary.LittleEndian.Uint32(b[1024+0x60:])&4 != 0 {
		t.Error("needs_recovery set by a noload mount")
	}
	fd, err := p.Open("/mnt/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Pwrite(fd, []byte("in place"), 0); n != 8 {
		t.Fatal(n, err)
	}
	p.Close(fd)
	if err := p.Unmount("/mnt", 0); err != nil {
		t.Fatal(err)
	}
	out := ramBytes(t, p, len(orig))
	for b := range jb {
		if !bytes.Equal(out[b*uint64(bs):(b+1)*uint64(bs)], orig[b*uint64(bs):(b+1)*uint64(bs)]) {
			t.Errorf("journal block %d written by a noload mount", b)
		}
	}
	e2fsckN(t, out)

	// A volume that needs recovery: refused read-write under noload.
	dirty := bytes.Clone(out)
	binary.LittleEndian.PutUint32(dirty[1024+0x60:], binary.LittleEndian.Uint32(dirty[1024+0x60:])|4)
	binary.LittleEndian.PutUint32(dirty[1024+0x3FC:], ^crc32.Checksum(dirty[1024:1024+0x3FC], crc32.MakeTable(crc32.Castagnoli)))
	dimg := filepath.Join(t.TempDir(), "dirty.img")
	os.WriteFile(dimg, dirty, 0o600)
	p2, dev2, done2 := newProc(t, dimg, viaRAM)
	defer done2()
	if err := p2.Mount(dev2, "/mnt", "ext4", 0, "noload"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("read-write noload mount of a volume needing recovery: %v, want EINVAL", err)
		if err == nil {
			p2.Unmount("/mnt", 0)
		}
	}
}
