package loop_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func newProc(t testing.TB) *vfs.Proc {
	t.Helper()
	p, err := iovfs.New(iovfs.WithRAMDisks(1, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// tmpfsFile makes path in p's tmpfs with data and returns an fd opened
// with flags.
func tmpfsFile(t testing.TB, p *vfs.Proc, path string, data []byte, flags int) int {
	t.Helper()
	fd, err := p.Open(path, unix.O_CREAT|unix.O_RDWR|unix.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Pwrite(fd, data, 0); err != nil || n != len(data) {
		t.Fatalf("pwrite %s: %d, %v", path, n, err)
	}
	p.Close(fd)
	fd, err = p.Open(path, flags, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

type geom struct {
	bs            uint32
	offset, limit uint64
	flags         uint32
}

// attach opens /dev/loop<n> with devFlags and configures it over backing.
func attach(t testing.TB, p *vfs.Proc, n, backing int, g geom, devFlags int) int {
	t.Helper()
	fd, err := p.Open(fmt.Sprintf("/dev/loop%d", n), devFlags, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := unix.LoopConfig{Fd: uint32(backing), Size: g.bs}
	cfg.Info.Offset, cfg.Info.Sizelimit, cfg.Info.Flags = g.offset, g.limit, g.flags
	if _, err := p.Ioctl(fd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		t.Fatalf("LOOP_CONFIGURE %+v: %v", g, err)
	}
	return fd
}

func wantErr(t testing.TB, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

func status(t testing.TB, p *vfs.Proc, fd int) (unix.LoopInfo64, error) {
	var info unix.LoopInfo64
	_, err := p.Ioctl(fd, unix.LOOP_GET_STATUS64, &info)
	return info, err
}

func TestSize(t *testing.T) {
	p := newProc(t)
	data := randBytes(1, 1<<20+1000)
	bfd := tmpfsFile(t, p, "/tmp/img", data, unix.O_RDWR)
	for _, c := range []struct {
		g    geom
		want int64
	}{
		{geom{}, 1<<20 + 512},
		{geom{bs: 4096}, 1<<20 + 512},
		{geom{bs: 4096, offset: 1000}, 1 << 20},
		{geom{offset: 512, limit: 5000}, 4608},
		{geom{bs: 2048, offset: 512, limit: 5000}, 4608},
		{geom{offset: 2 << 20}, 0},
	} {
		fd := attach(t, p, 0, bfd, c.g, unix.O_RDWR)
		st, err := p.Fstat(fd)
		if err != nil || st.Size != c.want || st.Mode&unix.S_IFMT != unix.S_IFBLK {
			t.Errorf("%+v: fstat size %d mode %o, %v; want %d", c.g, st.Size, st.Mode, err, c.want)
		}
		if end, err := p.Seek(fd, 0, unix.SEEK_END); end != c.want || err != nil {
			t.Errorf("%+v: SEEK_END %d, %v", c.g, end, err)
		}
		var sz uint64
		if _, err := p.Ioctl(fd, unix.BLKGETSIZE64, &sz); err != nil || int64(sz) != c.want {
			t.Errorf("%+v: BLKGETSIZE64 %d, %v", c.g, sz, err)
		}
		p.Ioctl(fd, unix.LOOP_CLR_FD, nil)
		p.Close(fd)
	}
}

// TestByteIO checks reads and writes at random byte offsets and lengths
// against a model, on loop devices over tmpfs and on a RAM disk.
func TestByteIO(t *testing.T) {
	for _, c := range []struct {
		name string
		g    geom
	}{
		{"loop512", geom{}},
		{"loop4096-off1000", geom{bs: 4096, offset: 1000}},
		{"loop1024-limit", geom{bs: 1024, offset: 3, limit: 70000}},
		{"ram", geom{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProc(t)
			var fd int
			var model []byte
			if c.name == "ram" {
				var err error
				if fd, err = p.Open("/dev/ram0", unix.O_RDWR, 0); err != nil {
					t.Fatal(err)
				}
				model = make([]byte, 1<<20)
			} else {
				data := randBytes(2, 200000)
				bfd := tmpfsFile(t, p, "/tmp/img", data, unix.O_RDWR)
				fd = attach(t, p, 0, bfd, c.g, unix.O_RDWR)
				size := int64(len(data)) - int64(c.g.offset)
				if c.g.limit > 0 {
					size = min(size, int64(c.g.limit))
				}
				size &^= 511
				bs := int64(max(c.g.bs, 512))
				model = append([]byte(nil), data[c.g.offset:c.g.offset+uint64(size&^(bs-1))]...)
			}
			r := rand.New(rand.NewPCG(3, 4))
			end := int64(len(model))
			for i := 0; i < 2000; i++ {
				off := r.Int64N(end + 100)
				n := r.IntN(10000)
				if r.IntN(3) == 0 {
					buf := randBytes(uint64(i), n)
					got, err := p.Pwrite(fd, buf, off)
					want := int(max(0, min(int64(n), end-off)))
					if off >= end && n > 0 {
						wantErr(t, "pwrite past end", err, syscall.ENOSPC)
						continue
					}
					if got != want || err != nil {
						t.Fatalf("pwrite(%d, %d) = %d, %v; want %d", off, n, got, err, want)
					}
					copy(model[off:], buf[:got])
					continue
				}
				// readv with two segments split at a random point
				buf := make([]byte, n)
				k := r.IntN(n + 1)
				got, err := p.Preadv(fd, [][]byte{buf[:k], buf[k:]}, off)
				want := int(max(0, min(int64(n), end-off)))
				if got != want || err != nil {
					t.Fatalf("preadv(%d, %d) = %d, %v; want %d", off, n, got, err, want)
				}
				if !bytes.Equal(buf[:got], model[off:off+int64(got)]) {
					t.Fatalf("preadv(%d, %d): bytes differ", off, n)
				}
			}
		})
	}
}

func TestBlockFileRules(t *testing.T) {
	p := newProc(t)
	data := randBytes(5, 10000) // 512-rounded 9728; 4096 blocks end at 8192
	bfd := tmpfsFile(t, p, "/tmp/img", data, unix.O_RDWR)
	fd := attach(t, p, 0, bfd, geom{bs: 4096}, unix.O_RDWR)
	buf := make([]byte, 1000)
	if n, err := p.Pread(fd, buf, 9728); n != 0 || err != nil {
		t.Errorf("read at end: %d, %v", n, err)
	}
	_, err := p.Pread(fd, buf, 8192)
	wantErr(t, "read in tail block", err, syscall.EIO)
	if n, err := p.Pread(fd, buf, 8000); n != 192 || err != nil {
		t.Errorf("read into tail block: %d, %v; want 192", n, err)
	}
	_, err = p.Pwrite(fd, buf, 9728)
	wantErr(t, "write at end", err, syscall.ENOSPC)
	_, err = p.Pwrite(fd, buf, 9000)
	wantErr(t, "write in tail block", err, syscall.EIO)
	if n, err := p.Pwrite(fd, buf, 0); n != 0 && err != nil || n != 1000 {
		t.Errorf("write: %d, %v", n, err)
	}
	if n, err := p.Pwrite(fd, nil, 1<<30); n != 0 || err != nil {
		t.Errorf("empty write past end: %d, %v", n, err)
	}
	_, err = p.Seek(fd, 9729, unix.SEEK_SET)
	wantErr(t, "seek past end", err, syscall.EINVAL)
	if pos, err := p.Seek(fd, -1, unix.SEEK_END); pos != 9727 || err != nil {
		t.Errorf("SEEK_END-1: %d, %v", pos, err)
	}
	var ss int
	if _, err := p.Ioctl(fd, unix.BLKSSZGET, &ss); ss != 4096 || err != nil {
		t.Errorf("BLKSSZGET %d, %v", ss, err)
	}
	_, err = p.Ioctl(fd, 0x1234, nil)
	wantErr(t, "unknown ioctl", err, syscall.EINVAL)

	// Read-only, forced by a read-only backing fd: EPERM even for 0 bytes.
	rfd, _ := p.Open("/tmp/img", unix.O_RDONLY, 0)
	fd1 := attach(t, p, 1, rfd, geom{}, unix.O_RDWR)
	info, _ := status(t, p, fd1)
	if info.Flags&unix.LO_FLAGS_READ_ONLY == 0 {
		t.Errorf("read-only backing: flags %#x", info.Flags)
	}
	_, err = p.Pwrite(fd1, nil, 0)
	wantErr(t, "write to read-only device", err, syscall.EPERM)
	var ro int
	if _, err := p.Ioctl(fd1, unix.BLKROGET, &ro); ro != 1 || err != nil {
		t.Errorf("BLKROGET %d, %v", ro, err)
	}
	// Forced too by a device fd not open for writing.
	fd2 := attach(t, p, 2, bfd, geom{}, unix.O_RDONLY)
	if info, _ := status(t, p, fd2); info.Flags&unix.LO_FLAGS_READ_ONLY == 0 {
		t.Errorf("read-only device fd: flags %#x", info.Flags)
	}
}

func TestConfigureErrors(t *testing.T) {
	p := newProc(t)
	bfd := tmpfsFile(t, p, "/tmp/img", randBytes(6, 8192), unix.O_RDWR)
	fd, err := p.Open("/dev/loop0", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	try := func(cfg unix.LoopConfig) error {
		_, err := p.Ioctl(fd, unix.LOOP_CONFIGURE, &cfg)
		return err
	}
	_, err = status(t, p, fd)
	wantErr(t, "status of unbound", err, syscall.ENXIO)
	_, err = p.Ioctl(fd, unix.LOOP_CLR_FD, nil)
	wantErr(t, "clear unbound", err, syscall.ENXIO)
	wantErr(t, "bad flag", try(unix.LoopConfig{Fd: uint32(bfd), Info: unix.LoopInfo64{Flags: 32}}), syscall.EINVAL)
	for _, bs := range []uint32{256, 1000, 3000, 128 << 10} {
		wantErr(t, fmt.Sprint("block size ", bs), try(unix.LoopConfig{Fd: uint32(bfd), Size: bs}), syscall.EINVAL)
	}
	wantErr(t, "encryption", try(unix.LoopConfig{Fd: uint32(bfd), Info: unix.LoopInfo64{Encrypt_type: 1}}), syscall.EINVAL)
	wantErr(t, "bad fd", try(unix.LoopConfig{Fd: 999}), syscall.EBADF)
	dfd, _ := p.Open("/tmp", unix.O_RDONLY, 0)
	wantErr(t, "directory", try(unix.LoopConfig{Fd: uint32(dfd)}), syscall.EINVAL)
	zfd, _ := p.Open("/dev/zero", unix.O_RDWR, 0)
	wantErr(t, "char device", try(unix.LoopConfig{Fd: uint32(zfd)}), syscall.EINVAL)
	wantErr(t, "itself", try(unix.LoopConfig{Fd: uint32(fd)}), syscall.EINVAL)
	if err := try(unix.LoopConfig{Fd: uint32(bfd), Size: 65536}); err != nil {
		t.Fatalf("64 KiB blocks: %v", err)
	}
	wantErr(t, "bound", try(unix.LoopConfig{Fd: uint32(bfd)}), syscall.EBUSY)
	_, err = p.Ioctl(fd, unix.LOOP_SET_FD, bfd)
	wantErr(t, "LOOP_SET_FD bound", err, syscall.EBUSY)
	// A cycle through another device: loop6 over (unbound) loop5, then
	// loop5 over loop6.
	fd5, _ := p.Open("/dev/loop5", unix.O_RDWR, 0)
	fd6 := attach(t, p, 6, fd5, geom{}, unix.O_RDWR)
	cfg := unix.LoopConfig{Fd: uint32(fd6)}
	_, err = p.Ioctl(fd5, unix.LOOP_CONFIGURE, &cfg)
	wantErr(t, "cycle", err, syscall.EINVAL)
}

// TestClearLazy pins LOOP_CLR_FD on a busy device: it succeeds, sets
// AUTOCLEAR, and the device is cleared at the last close.
func TestClearLazy(t *testing.T) {
	p := newProc(t)
	data := randBytes(7, 8192)
	bfd := tmpfsFile(t, p, "/tmp/img", data, unix.O_RDWR)
	fd := attach(t, p, 0, bfd, geom{}, unix.O_RDWR)
	fd2, _ := p.Open("/dev/loop0", unix.O_RDONLY, 0)
	if _, err := p.Ioctl(fd, unix.LOOP_CLR_FD, nil); err != nil {
		t.Fatalf("CLR_FD busy: %v", err)
	}
	info, err := status(t, p, fd)
	if err != nil || info.Flags&unix.LO_FLAGS_AUTOCLEAR == 0 {
		t.Fatalf("after CLR_FD: flags %#x, %v", info.Flags, err)
	}
	fd3, err := p.Open("/dev/loop0", unix.O_RDONLY, 0) // not in rundown: two openers
	if err != nil {
		t.Fatalf("open after lazy clear: %v", err)
	}
	p.Close(fd3)
	p.Close(fd2)
	buf := make([]byte, 512)
	if n, err := p.Pread(fd, buf, 0); n != 512 || err != nil || !bytes.Equal(buf, data[:512]) {
		t.Fatalf("read while still open: %d, %v", n, err)
	}
	// The backing fd may go: the device keeps its own reference.
	p.Close(bfd)
	if n, err := p.Pread(fd, buf, 512); n != 512 || err != nil || !bytes.Equal(buf, data[512:1024]) {
		t.Fatalf("read after backing fd closed: %d, %v", n, err)
	}
	p.Close(fd)
	fd, _ = p.Open("/dev/loop0", unix.O_RDONLY, 0)
	_, err = status(t, p, fd)
	wantErr(t, "status after last close", err, syscall.ENXIO)
	if st, _ := p.Fstat(fd); st.Size != 0 {
		t.Errorf("cleared device size %d", st.Size)
	}

	// Only opener: rundown, so new opens fail until the last close.
	bfd = tmpfsFile(t, p, "/tmp/img", data, unix.O_RDWR)
	p.Close(fd)
	fd = attach(t, p, 0, bfd, geom{}, unix.O_RDWR)
	p.Ioctl(fd, unix.LOOP_CLR_FD, nil)
	_, err = p.Open("/dev/loop0", unix.O_RDONLY, 0)
	wantErr(t, "open in rundown", err, syscall.ENXIO)
	p.Close(fd)
	if fd, err = p.Open("/dev/loop0", unix.O_RDONLY, 0); err != nil {
		t.Fatalf("open after clear: %v", err)
	}
	p.Close(fd)
}

func TestAutoclear(t *testing.T) {
	p := newProc(t)
	bfd := tmpfsFile(t, p, "/tmp/img", randBytes(8, 8192), unix.O_RDWR)
	fd := attach(t, p, 0, bfd, geom{flags: unix.LO_FLAGS_AUTOCLEAR}, unix.O_RDWR)
	dup, _ := p.Dup(fd)
	p.Close(fd)
	if _, err := status(t, p, dup); err != nil {
		t.Fatalf("bound while a dup is open: %v", err)
	}
	p.Close(dup)
	fd, _ = p.Open("/dev/loop0", unix.O_RDONLY, 0)
	_, err := status(t, p, fd)
	wantErr(t, "after last close", err, syscall.ENXIO)
	p.Close(fd)

	// SET_STATUS64 may clear AUTOCLEAR; PARTSCAN can be set but not
	// cleared; READ_ONLY and unknown bits are ignored.
	fd = attach(t, p, 0, bfd, geom{flags: unix.LO_FLAGS_AUTOCLEAR}, unix.O_RDWR)
	for _, c := range []struct{ set, want uint32 }{
		{0, 0},
		{unix.LO_FLAGS_PARTSCAN, unix.LO_FLAGS_PARTSCAN},
		{0, unix.LO_FLAGS_PARTSCAN},
		{unix.LO_FLAGS_AUTOCLEAR | unix.LO_FLAGS_READ_ONLY | 0x100, unix.LO_FLAGS_PARTSCAN | unix.LO_FLAGS_AUTOCLEAR},
	} {
		info, _ := status(t, p, fd)
		info.Flags = c.set
		if _, err := p.Ioctl(fd, unix.LOOP_SET_STATUS64, &info); err != nil {
			t.Fatal(err)
		}
		if info, _ = status(t, p, fd); info.Flags != c.want {
			t.Errorf("set %#x: flags %#x, want %#x", c.set, info.Flags, c.want)
		}
	}
	p.Close(fd)
}

func TestSetStatusGeometry(t *testing.T) {
	p := newProc(t)
	data := randBytes(9, 20000)
	bfd := tmpfsFile(t, p, "/tmp/img", data, unix.O_RDWR)
	fd := attach(t, p, 0, bfd, geom{}, unix.O_RDWR)
	info, _ := status(t, p, fd)
	info.Offset, info.Sizelimit = 1024, 4096
	copy(info.File_name[:], "/tmp/img")
	if _, err := p.Ioctl(fd, unix.LOOP_SET_STATUS64, &info); err != nil {
		t.Fatal(err)
	}
	info, _ = status(t, p, fd)
	if info.Offset != 1024 || info.Sizelimit != 4096 || string(bytes.TrimRight(info.File_name[:], "\x00")) != "/tmp/img" || info.Number != 0 {
		t.Errorf("status %+v", info)
	}
	if end, _ := p.Seek(fd, 0, unix.SEEK_END); end != 4096 {
		t.Errorf("size %d", end)
	}
	buf := make([]byte, 4096)
	if n, _ := p.Pread(fd, buf, 0); n != 4096 || !bytes.Equal(buf, data[1024:5120]) {
		t.Errorf("read after new offset")
	}
	// LOOP_SET_CAPACITY after the backing file grows.
	info.Sizelimit = 0
	p.Ioctl(fd, unix.LOOP_SET_STATUS64, &info)
	p.Pwrite(bfd, make([]byte, 1000), 20000)
	if end, _ := p.Seek(fd, 0, unix.SEEK_END); end != (20000-1024)&^511 {
		t.Errorf("size before SET_CAPACITY %d", end)
	}
	p.Ioctl(fd, unix.LOOP_SET_CAPACITY, 0)
	if end, _ := p.Seek(fd, 0, unix.SEEK_END); end != (21000-1024)&^511 {
		t.Errorf("size after SET_CAPACITY %d", end)
	}
}

func TestControl(t *testing.T) {
	p := newProc(t)
	ctl, err := p.Open("/dev/loop-control", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Ioctl(ctl, unix.LOOP_CTL_GET_FREE, nil); n != 0 || err != nil {
		t.Fatalf("GET_FREE %d, %v", n, err)
	}
	bfd := tmpfsFile(t, p, "/tmp/img", randBytes(10, 4096), unix.O_RDWR)
	var fds []int
	for i := 0; i < 8; i++ {
		fds = append(fds, attach(t, p, i, bfd, geom{}, unix.O_RDWR))
	}
	if n, err := p.Ioctl(ctl, unix.LOOP_CTL_GET_FREE, nil); n != 8 || err != nil {
		t.Fatalf("GET_FREE with all bound: %d, %v", n, err)
	}
	if _, err := p.Stat("/dev/loop8"); err != nil {
		t.Fatalf("loop8 not in /dev: %v", err)
	}
	if n, err := p.Ioctl(ctl, unix.LOOP_CTL_ADD, 100); n != 100 || err != nil {
		t.Fatalf("ADD 100: %d, %v", n, err)
	}
	_, err = p.Ioctl(ctl, unix.LOOP_CTL_ADD, 100)
	wantErr(t, "ADD twice", err, syscall.EEXIST)
	_, err = p.Ioctl(ctl, unix.LOOP_CTL_REMOVE, 3)
	wantErr(t, "REMOVE bound", err, syscall.EBUSY)
	fd100, _ := p.Open("/dev/loop100", unix.O_RDONLY, 0)
	_, err = p.Ioctl(ctl, unix.LOOP_CTL_REMOVE, 100)
	wantErr(t, "REMOVE open", err, syscall.EBUSY)
	p.Close(fd100)
	if n, err := p.Ioctl(ctl, unix.LOOP_CTL_REMOVE, 100); n != 0 || err != nil {
		t.Fatalf("REMOVE: %d, %v", n, err)
	}
	_, err = p.Ioctl(ctl, unix.LOOP_CTL_REMOVE, 100)
	wantErr(t, "REMOVE again", err, syscall.ENODEV)
	_, err = p.Ioctl(ctl, unix.LOOP_CTL_REMOVE, -1)
	wantErr(t, "REMOVE -1", err, syscall.EINVAL)
	_, err = p.Stat("/dev/loop100")
	wantErr(t, "stat removed", err, syscall.ENOENT)
	_, err = p.Ioctl(ctl, 0x4C99, nil)
	wantErr(t, "unknown control request", err, syscall.ENOSYS)
	p.Ioctl(fds[3], unix.LOOP_CLR_FD, nil)
	p.Close(fds[3])
	if n, err := p.Ioctl(ctl, unix.LOOP_CTL_GET_FREE, nil); n != 3 || err != nil {
		t.Fatalf("GET_FREE after clearing loop3: %d, %v", n, err)
	}
}

// TestLoopOverLoop stacks loop1 on loop0 on a tmpfs file, each with an
// offset, and checks bytes both ways.
func TestLoopOverLoop(t *testing.T) {
	p := newProc(t)
	data := randBytes(11, 1<<18)
	bfd := tmpfsFile(t, p, "/tmp/img", data, unix.O_RDWR)
	fd0 := attach(t, p, 0, bfd, geom{bs: 4096, offset: 4096}, unix.O_RDWR)
	fd1 := attach(t, p, 1, fd0, geom{offset: 1024, limit: 65536}, unix.O_RDWR)
	buf := make([]byte, 65536)
	if n, err := p.Pread(fd1, buf, 0); n != 65536 || err != nil || !bytes.Equal(buf, data[5120:5120+65536]) {
		t.Fatalf("read through two loops: %d, %v", n, err)
	}
	msg := []byte("written through loop1")
	if n, err := p.Pwrite(fd1, msg, 777); n != len(msg) || err != nil {
		t.Fatal(n, err)
	}
	got := make([]byte, len(msg))
	p.Pread(bfd, got, 5120+777)
	if !bytes.Equal(got, msg) {
		t.Fatalf("backing has %q", got)
	}
	// loop0 is busy under loop1: clearing it is deferred to its last close,
	// which loop1's reference delays until loop1 is cleared.
	p.Ioctl(fd0, unix.LOOP_CLR_FD, nil)
	p.Close(fd0)
	if n, err := p.Pread(fd1, buf[:512], 0); n != 512 || err != nil {
		t.Fatalf("loop1 after loop0's clear: %d, %v", n, err)
	}
	p.Ioctl(fd1, unix.LOOP_CLR_FD, nil)
	p.Close(fd1)
	fd0, _ = p.Open("/dev/loop0", unix.O_RDONLY, 0)
	_, err := status(t, p, fd0)
	wantErr(t, "loop0 after loop1 cleared", err, syscall.ENXIO)
}

// shortDev is a block-device node whose reads return at most 100 bytes,
// and nothing at all from offset stop on, to test the retry rules.
type shortDev struct{ stop int64 }

func (d *shortDev) DevInfo() (uint32, uint64)              { return unix.S_IFBLK | 0o600, vfs.Mkdev(240, 0) }
func (d *shortDev) Size() int64                            { return 1 << 20 }
func (d *shortDev) Open(int, vfs.Cred) (vfs.Handle, error) { return d, nil }
func (d *shortDev) Stat() (vfs.Stat, error)                { return vfs.Stat{Mode: unix.S_IFBLK, Size: 1 << 20}, nil }
func (d *shortDev) Read(p []byte, off int64) (int, error) {
	if off >= d.stop {
		return 0, nil
	}
	n := min(len(p), 100, int(d.stop-off))
	for i := range p[:n] {
		p[i] = byte(off + int64(i))
	}
	return n, nil
}

func TestShortBackingReads(t *testing.T) {
	d := &shortDev{stop: 3000}
	p, err := iovfs.New(iovfs.WithDevice("short", d))
	if err != nil {
		t.Fatal(err)
	}
	bfd, _ := p.Open("/dev/short", unix.O_RDONLY, 0)
	fd := attach(t, p, 0, bfd, geom{}, unix.O_RDONLY)
	buf := make([]byte, 2048)
	if n, err := p.Pread(fd, buf, 512); n != 2048 || err != nil {
		t.Fatalf("short reads not retried: %d, %v", n, err)
	}
	for i, b := range buf {
		if b != byte(512+i) {
			t.Fatalf("byte %d = %d", i, b)
		}
	}
	_, err = p.Pread(fd, buf, 3072)
	wantErr(t, "zero-byte backing read", err, syscall.EIO)
	for i := range buf {
		buf[i] = 0xff
	}
	// A request that crosses stop: the whole sectors before the failure
	// are a short read.
	if n, err := p.Pread(fd, buf, 2048); n != 512 || err != nil {
		t.Fatalf("read across the failure: %d, %v", n, err)
	}
}

// TestConcurrentClear runs readers and writers on one loop device while
// another goroutine clears it; run it with -race. I/O either completes or
// fails with EIO once the device is gone; nothing else.
func TestConcurrentClear(t *testing.T) {
	for round := 0; round < 20; round++ {
		p := newProc(t)
		bfd := tmpfsFile(t, p, "/tmp/img", randBytes(12, 1<<16), unix.O_RDWR)
		fd := attach(t, p, 0, bfd, geom{}, unix.O_RDWR)
		p.Close(bfd)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				buf := make([]byte, 1536)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					off := int64((i*7919 + g*512) % 60000)
					var err error
					if g%2 == 0 {
						_, err = p.Pread(fd, buf, off)
					} else {
						_, err = p.Pwritev(fd, [][]byte{buf[:100], buf[100:]}, off)
					}
					if err != nil && !errors.Is(err, syscall.EIO) && !errors.Is(err, syscall.EBADF) && !errors.Is(err, syscall.ENOSPC) {
						t.Errorf("I/O during clear: %v", err)
						return
					}
				}
			}(g)
		}
		go func() {
			p.Ioctl(fd, unix.LOOP_CLR_FD, nil)
			p.Close(fd) // the last close: teardown waits for I/O in flight
			close(stop)
		}()
		wg.Wait()
		fd, _ = p.Open("/dev/loop0", unix.O_RDONLY, 0)
		if _, err := status(t, p, fd); !errors.Is(err, syscall.ENXIO) {
			t.Fatalf("device still bound: %v", err)
		}
		p.Close(fd)
	}
}

// blockDevice returns the block device behind fd, as a file system that
// mounts on it would get it.
func blockDevice(t testing.TB, p *vfs.Proc, fd int) block.Device {
	t.Helper()
	b, err := p.Backing(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	h, ok := b.Handle().(interface{ Device() block.Device })
	if !ok {
		t.Fatalf("fd %d is not a block device: %T", fd, b.Handle())
	}
	return h.Device()
}

func TestDirectAccess(t *testing.T) {
	p := newProc(t)
	data := randBytes(13, 1<<16)
	bfd := tmpfsFile(t, p, "/tmp/img", data, unix.O_RDWR)
	fd := attach(t, p, 0, bfd, geom{}, unix.O_RDWR)
	da := blockDevice(t, p, fd).(block.DirectAccessor)
	_, err := da.DirectAccess(0, 512)
	wantErr(t, "loop over tmpfs", err, syscall.EOPNOTSUPP)

	// loop over ram forwards to the RAM disk.
	rfd, _ := p.Open("/dev/ram0", unix.O_RDWR, 0)
	p.Pwrite(rfd, data, 0)
	fd1 := attach(t, p, 1, rfd, geom{offset: 4096, limit: 8192}, unix.O_RDWR)
	da = blockDevice(t, p, fd1).(block.DirectAccessor)
	v, err := da.DirectAccess(100, 1000)
	if err != nil || !bytes.Equal(v, data[4196:5196]) {
		t.Fatalf("loop over ram: %v", err)
	}
	p.Pwrite(fd1, []byte("xyz"), 100)
	if string(v[:3]) != "xyz" {
		t.Errorf("write not visible in view")
	}
	_, err = da.DirectAccess(8000, 500)
	wantErr(t, "past the end", err, syscall.EIO)
}
