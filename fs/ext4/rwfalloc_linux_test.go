package ext4_test

// fallocate(2) and the write path on a read-write mount through the VFS:
// errnos, sizes, st_blocks and contents against a kernel loop mount of the
// same image; and writes that allocate nothing.

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

// TestVFSFallocateDifferential runs the same fallocate calls through a
// kernel read-write loop mount and an iovfs read-write mount of one image
// and compares every errno, then the size, st_blocks and contents.
func TestVFSFallocateDifferential(t *testing.T) {
	needMke2fs(t)
	testenv.RequireRoot(t, "the kernel side")
	img := filepath.Join(t.TempDir(), "f.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024", img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	p, dev, _ := newProc(t, img, viaRAM)
	if err := p.Mount(dev, "/mnt", "ext4", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Unmount("/mnt", 0) })
	mnt := t.TempDir()
	if out, err := testenv.Mount("-o", "loop", img, mnt); err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })

	data := bytes.Repeat([]byte("abcdefghij"), 3000) // 30000 bytes
	for _, name := range []string{"f", "ro"} {
		kfd, err := unix.Open(filepath.Join(mnt, name), unix.O_CREAT|unix.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		unix.Pwrite(kfd, data, 0)
		unix.Fsync(kfd)
		unix.Close(kfd)
		ifd, err := p.Open("/mnt/"+name, unix.O_CREAT|unix.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		p.Pwrite(ifd, data, 0)
		p.Close(ifd)
	}
	kfd, _ := unix.Open(filepath.Join(mnt, "f"), unix.O_RDWR, 0)
	defer unix.Close(kfd)
	ifd, _ := p.Open("/mnt/f", unix.O_RDWR, 0)
	defer p.Close(ifd)
	kro, _ := unix.Open(filepath.Join(mnt, "ro"), unix.O_RDONLY, 0)
	defer unix.Close(kro)
	iro, _ := p.Open("/mnt/ro", unix.O_RDONLY, 0)
	defer p.Close(iro)

	const (
		keep     = unix.FALLOC_FL_KEEP_SIZE
		punch    = unix.FALLOC_FL_PUNCH_HOLE
		zero     = unix.FALLOC_FL_ZERO_RANGE
		insert   = unix.FALLOC_FL_INSERT_RANGE
		collapse = unix.FALLOC_FL_COLLAPSE_RANGE
	)
	cases := []struct {
		name   string
		ro     bool
		mode   uint32
		off, n int64
	}{
		{name: "rdonly fd", ro: true, off: 0, n: 4096},
		{name: "zero length", off: 0, n: 0},
		{name: "negative offset", off: -1, n: 10},
		{name: "unknown flag", mode: 0x100, off: 0, n: 10},
		{name: "punch without keep", mode: punch, off: 0, n: 10},
		{name: "insert with keep", mode: insert | keep, off: 0, n: 4096},
		{name: "two modes", mode: punch | zero | keep, off: 0, n: 10},
		{name: "overflow", off: 1 << 62, n: 1 << 62},
		{name: "past max size", off: 1 << 43, n: 4096},
		{name: "keep size past max", mode: keep, off: 1 << 43, n: 4096},
		{name: "alloc past eof", off: 40000, n: 10000},
		{name: "keep past eof", mode: keep, off: 70000, n: 20000},
		{name: "punch middle", mode: punch | keep, off: 1500, n: 5000},
		{name: "punch past eof", mode: punch | keep, off: 49000, n: 100000},
		{name: "punch beyond size", mode: punch | keep, off: 60000, n: 1000},
		{name: "zero range partial", mode: zero, off: 10100, n: 7000},
		{name: "zero range extends", mode: zero, off: 48000, n: 9000},
		{name: "zero range keep", mode: zero | keep, off: 56000, n: 9000},
		{name: "alloc inside", off: 0, n: 8192},
		{name: "punch past max size", mode: punch | keep, off: 1 << 43, n: 4096},
		{name: "collapse unaligned", mode: collapse, off: 1000, n: 4096},
		{name: "collapse to eof", mode: collapse, off: 4096, n: 60000},
		{name: "collapse", mode: collapse, off: 4096, n: 8192},
		{name: "collapse one block", mode: collapse, off: 1024, n: 1024},
		{name: "insert unaligned", mode: insert, off: 4096, n: 100},
		{name: "insert at eof", mode: insert, off: 48128, n: 1024},
		{name: "insert", mode: insert, off: 2048, n: 5120},
		{name: "insert past max size", mode: insert, off: 0, n: 1<<42 - 2048},
		{name: "insert at 0", mode: insert, off: 0, n: 3072},
		{name: "enospc", off: 0, n: 64 << 20},
	}
	for _, c := range cases {
		kf, xf := kfd, ifd
		if c.ro {
			kf, xf = kro, iro
		}
		ek := unix.Fallocate(kf, c.mode, c.off, c.n)
		ex := p.Fallocate(xf, c.mode, c.off, c.n)
		if errnoOf(ex) != errnoOf(ek) {
			t.Errorf("%s: kernel %v, iovfs %v", c.name, ek, ex)
		}
		if c.name == "enospc" {
			continue // how much the kernel allocates before ENOSPC depends on its reservations
		}
		var kst unix.Stat_t
		unix.Fstat(kf, &kst)
		ist, err := p.Fstat(xf)
		if err != nil {
			t.Fatal(err)
		}
		if kst.Size != ist.Size || kst.Blocks != ist.Blocks {
			t.Errorf("%s: kernel size %d blocks %d, iovfs size %d blocks %d", c.name, kst.Size, kst.Blocks, ist.Size, ist.Blocks)
		}
		kb, ib := make([]byte, kst.Size), make([]byte, ist.Size)
		unix.Pread(kf, kb, 0)
		p.Pread(xf, ib, 0)
		if !bytes.Equal(kb, ib) {
			t.Errorf("%s: contents differ", c.name)
		}
	}
}

// TestVFSWriteNoAllocs: overwrites, appends into allocatable space,
// writes into unwritten extents and two-segment pwritev on a read-write
// mount allocate nothing in steady state (the running transaction already
// holds the metadata blocks they change; commit=3600 keeps it running).
func TestVFSWriteNoAllocs(t *testing.T) {
	needMke2fs(t)
	img := filepath.Join(t.TempDir(), "a.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", img, "64M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	p, dev, _ := newProc(t, img, viaRAM)
	if err := p.Mount(dev, "/mnt", "ext4", 0, "commit=3600"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Unmount("/mnt", 0) })
	fd, err := p.Open("/mnt/f", unix.O_CREAT|unix.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	buf := bytes.Repeat([]byte{7}, 4096)
	if _, err := p.Pwrite(fd, make([]byte, 1<<20), 0); err != nil {
		t.Fatal(err)
	}
	if err := p.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 1<<20, 8<<20); err != nil {
		t.Fatal(err)
	}
	iovs := [][]byte{buf[:1000], buf[1000:]}
	afd, err := p.Open("/mnt/f", unix.O_WRONLY|unix.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(afd)
	off, app, unw := int64(0), int64(1<<20), int64(0)
	for name, fn := range map[string]func(){
		"overwrite": func() { p.Pwrite(fd, buf, off); off = (off + 4096*37) % (1 << 20) },
		"partial":   func() { p.Pwrite(fd, buf[:100], off+10); off = (off + 4096*37) % (1 << 20) },
		"pwritev":   func() { p.Pwritev(fd, iovs, off); off = (off + 4096*37) % (1 << 20) },
		"unwritten": func() { p.Pwrite(fd, buf, 1<<20+unw); unw += 8192 },
		"append":    func() { p.Pwrite(fd, buf, 10<<20+app); app += 4096 },
		"read":      func() { p.Pread(fd, buf, off) },
		"o_append":  func() { p.Write(afd, buf) },
	} {
		fn() // warm up: the metadata blocks join the running transaction
		// The race detector's instrumentation allocates on its own
		// (the append path's mutexes); the counts hold without it.
		if a := testing.AllocsPerRun(200, fn); a != 0 && !raceEnabled {
			t.Errorf("%s: %.1f allocations per call, want 0", name, a)
		}
	}
	var st vfs.Stat
	if st, err = p.Fstat(fd); err != nil || st.Size < 10<<20 {
		t.Fatalf("size %d, %v", st.Size, err)
	}
	p.Close(fd)
}
