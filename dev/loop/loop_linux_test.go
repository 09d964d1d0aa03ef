package loop_test

// Differential tests against the host kernel's loop driver. Each case sets
// up a host loop device and an iovfs loop device the same way, over two
// copies of one file of random bytes (the iovfs one brought in with
// ImportFile), does the same calls on both and compares counts, bytes,
// errnos and LOOP_GET_STATUS64.
//
// Host devices are configured with LO_FLAGS_AUTOCLEAR and their only
// descriptor is closed in t.Cleanup, so nothing outlives the test; check
// with losetup -a.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// requireLoop skips unless the test can make host loop devices; under
// IOVFS_REQUIRE_PRIVILEGED=1 that is a failure.
func requireLoop(t testing.TB) {
	t.Helper()
	reason := ""
	if os.Geteuid() != 0 {
		reason = "needs root for host loop devices"
	} else if _, err := os.Stat("/dev/loop-control"); err != nil {
		reason = "no /dev/loop-control"
	}
	if reason != "" {
		testenv.SkipPrivileged(t, reason)
	}
}

// hostAttach configures a free host loop device over path and returns a
// descriptor on it, opened with devFlags. The device has AUTOCLEAR and is
// cleared when the descriptor is closed, by hostClose or in t.Cleanup.
func hostAttach(t testing.TB, path string, backingFlags, devFlags int, g geom) int {
	t.Helper()
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ctl)
	bf, err := unix.Open(path, backingFlags|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(bf) // the device holds its own reference
	for try := 0; try < 20; try++ {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(fmt.Sprintf("/dev/loop%d", n), devFlags|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // raced with another user of loop devices
		}
		cfg := hostConfig(bf, g)
		if err := unix.IoctlLoopConfigure(fd, &cfg); err != nil {
			unix.Close(fd)
			if err == unix.EBUSY {
				continue
			}
			t.Fatalf("host LOOP_CONFIGURE %+v: %v", g, err)
		}
		hostOpen[fd] = true
		t.Cleanup(func() { hostClose(fd) })
		return fd
	}
	t.Fatal("no free host loop device")
	return -1
}

// hostOpen holds the host loop descriptors not yet closed, so that a
// descriptor is closed once and never after its number is reused.
var hostOpen = map[int]bool{}

func hostClose(fd int) {
	if hostOpen[fd] {
		delete(hostOpen, fd)
		unix.Close(fd)
	}
}

func hostConfig(fd int, g geom) unix.LoopConfig {
	cfg := unix.LoopConfig{Fd: uint32(fd), Size: g.bs}
	cfg.Info.Offset, cfg.Info.Sizelimit = g.offset, g.limit
	cfg.Info.Flags = g.flags | unix.LO_FLAGS_AUTOCLEAR
	copy(cfg.Info.File_name[:], "backing.img")
	return cfg
}

// iovfsAttach imports path into p and configures /dev/loop0 over it the
// way hostAttach does.
func iovfsAttach(t *testing.T, p *vfs.Proc, path string, backingFlags, devFlags int, g geom) int {
	t.Helper()
	f, err := os.OpenFile(path, backingFlags, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bfd, err := p.ImportFile(f)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(bfd)
	fd, err := p.Open("/dev/loop0", devFlags, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := hostConfig(bfd, g)
	if _, err := p.Ioctl(fd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		t.Fatalf("iovfs LOOP_CONFIGURE %+v: %v", g, err)
	}
	t.Cleanup(func() { p.Close(fd) })
	return fd
}

// result is one call's outcome, comparable between host and iovfs.
type result struct {
	n     int
	errno syscall.Errno
	data  string
}

func mkResult(n int, err error, buf []byte) result {
	r := result{n: n}
	if err != nil {
		if !errors.As(err, &r.errno) {
			r.errno = 0xffff
		}
		r.n = 0
	}
	if r.n > 0 && buf != nil {
		r.data = string(buf[:r.n])
	}
	return r
}

func (r result) String() string {
	if r.errno != 0 {
		return fmt.Sprintf("%v", r.errno)
	}
	return fmt.Sprintf("%d bytes", r.n)
}

// geometries are the (block size, offset, size limit) cases, over a file of
// fileSize bytes, which is not a multiple of any block size.
const fileSize = 1<<20 + 1003

var geometries = []geom{
	{bs: 512},
	{bs: 4096},
	{bs: 4096, offset: 1000},
	{bs: 1024, offset: 3000, limit: 70000},
	{bs: 2048, offset: 512, limit: 5000},
	{bs: 512, offset: 4096, limit: 1<<19 + 100},
	// Not compared: block sizes above the page size, which Linux 6.18
	// accepts but whose page cache fails reads in the last whole block
	// before a partial one with EIO (read-ahead into the partial block
	// fails the folio); iovfs reads those bytes.
}

func TestLinuxLoopDifferential(t *testing.T) {
	requireLoop(t)
	data := randBytes(42, fileSize)
	for _, g := range geometries {
		for _, ro := range []bool{false, true} {
			g := g
			if ro {
				g.flags = unix.LO_FLAGS_READ_ONLY
			}
			t.Run(fmt.Sprintf("bs%d-off%d-limit%d-ro%v", g.bs, g.offset, g.limit, ro), func(t *testing.T) {
				compareLoop(t, data, g)
			})
		}
	}
}

func compareLoop(t *testing.T, data []byte, g geom) {
	dir := t.TempDir()
	hostPath, ourPath := filepath.Join(dir, "host.img"), filepath.Join(dir, "iovfs.img")
	for _, path := range []string{hostPath, ourPath} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hfd := hostAttach(t, hostPath, unix.O_RDWR, unix.O_RDWR, g)
	p := newProc(t)
	ofd := iovfsAttach(t, p, ourPath, unix.O_RDWR, unix.O_RDWR, g)

	// Size, three ways.
	hsize, err := unix.IoctlGetUint64(hfd, unix.BLKGETSIZE64)
	if err != nil {
		t.Fatal(err)
	}
	var osize uint64
	p.Ioctl(ofd, unix.BLKGETSIZE64, &osize)
	oend, _ := p.Seek(ofd, 0, unix.SEEK_END)
	st, _ := p.Fstat(ofd)
	if osize != hsize || uint64(oend) != hsize || uint64(st.Size) != hsize {
		t.Fatalf("size: host %d, iovfs ioctl %d, SEEK_END %d, fstat %d", hsize, osize, oend, st.Size)
	}
	hss, _ := unix.IoctlGetInt(hfd, unix.BLKSSZGET)
	var oss int
	p.Ioctl(ofd, unix.BLKSSZGET, &oss)
	if hss != oss {
		t.Errorf("BLKSSZGET host %d iovfs %d", hss, oss)
	}
	hro, _ := unix.IoctlGetInt(hfd, unix.BLKROGET)
	var oro int
	p.Ioctl(ofd, unix.BLKROGET, &oro)
	if hro != oro {
		t.Errorf("BLKROGET host %d iovfs %d", hro, oro)
	}

	// LOOP_GET_STATUS64: every field but the device number.
	hinfo, err := unix.IoctlLoopGetStatus64(hfd)
	if err != nil {
		t.Fatal(err)
	}
	oinfo, err := status(t, p, ofd)
	if err != nil {
		t.Fatal(err)
	}
	// The two devices are over two copies: the inodes differ, and each
	// must be its own copy's.
	var hst, ost unix.Stat_t
	unix.Stat(hostPath, &hst)
	unix.Stat(ourPath, &ost)
	if hinfo.Inode != hst.Ino || oinfo.Inode != ost.Ino {
		t.Errorf("lo_inode: host %d (file %d), iovfs %d (file %d)", hinfo.Inode, hst.Ino, oinfo.Inode, ost.Ino)
	}
	hinfo.Number, oinfo.Number = 0, 0
	hinfo.Inode, oinfo.Inode = 0, 0
	if *hinfo != oinfo {
		t.Errorf("LOOP_GET_STATUS64:\nhost  %+v\niovfs %+v", *hinfo, oinfo)
	}

	// Seeks.
	size := int64(hsize)
	for _, c := range []struct {
		off    int64
		whence int
	}{{0, unix.SEEK_END}, {-1, unix.SEEK_END}, {1, unix.SEEK_END}, {size, unix.SEEK_SET}, {size + 1, unix.SEEK_SET}, {-1, unix.SEEK_SET}, {0, unix.SEEK_DATA}, {1, unix.SEEK_HOLE}, {0, 99}} {
		hp, herr := unix.Seek(hfd, c.off, c.whence)
		op, oerr := p.Seek(ofd, c.off, c.whence)
		if mkResult(int(hp), herr, nil) != mkResult(int(op), oerr, nil) {
			t.Errorf("lseek(%d, %d): host %d %v, iovfs %d %v", c.off, c.whence, hp, herr, op, oerr)
		}
	}

	// Reads at edge and random offsets and lengths.
	bs := int64(max(g.bs, 512))
	readEnd := size &^ (bs - 1)
	offs := []int64{0, 1, 511, 512, 4095, 4096, readEnd - 1, readEnd - 512, readEnd, readEnd + 1, size - 1, size - 512, size, size + 1, size + 10000}
	r := rand.New(rand.NewPCG(uint64(g.bs), g.offset))
	for i := 0; i < 150; i++ {
		offs = append(offs, r.Int64N(size+2000))
	}
	lens := []int{1, 100, 512, 4096, 5000, 65536}
	hbuf, obuf := make([]byte, 65536), make([]byte, 65536)
	for _, off := range offs {
		if off < 0 {
			continue
		}
		for _, n := range lens {
			hn, herr := unix.Pread(hfd, hbuf[:n], off)
			on, oerr := p.Pread(ofd, obuf[:n], off)
			if h, o := mkResult(hn, herr, hbuf), mkResult(on, oerr, obuf); h != o {
				t.Fatalf("pread(%d, %d): host %v, iovfs %v", off, n, h, o)
			}
		}
		// readv with odd segments.
		hs := [][]byte{hbuf[:7], hbuf[7:700], hbuf[700:4096], hbuf[4096:9000]}
		os := [][]byte{obuf[:7], obuf[7:700], obuf[700:4096], obuf[4096:9000]}
		hn, herr := unix.Preadv(hfd, hs, off)
		on, oerr := p.Preadv(ofd, os, off)
		if h, o := mkResult(hn, herr, hbuf), mkResult(on, oerr, obuf); h != o {
			t.Fatalf("preadv(%d, 4 segments): host %v, iovfs %v", off, h, o)
		}
	}

	// Writes, then the backing files' bytes.
	for i := 0; i < 150; i++ {
		off := offs[i%len(offs)]
		n := lens[r.IntN(len(lens))]
		if i%10 == 0 {
			n = 0
		}
		buf := randBytes(uint64(i), n)
		hn, herr := unix.Pwrite(hfd, buf, off)
		on, oerr := p.Pwrite(ofd, buf, off)
		if h, o := mkResult(hn, herr, nil), mkResult(on, oerr, nil); h != o {
			t.Fatalf("pwrite(%d, %d): host %v, iovfs %v", off, n, h, o)
		}
		if i%5 == 0 {
			hs := [][]byte{buf[:n/3], buf[n/3:]}
			hn, herr := unix.Pwritev(hfd, hs, off+3)
			on, oerr := p.Pwritev(ofd, hs, off+3)
			if h, o := mkResult(hn, herr, nil), mkResult(on, oerr, nil); h != o {
				t.Fatalf("pwritev(%d, %d): host %v, iovfs %v", off+3, n, h, o)
			}
		}
	}
	if err := unix.Fsync(hfd); err != nil {
		t.Fatal(err)
	}
	hostBytes, _ := os.ReadFile(hostPath)
	ourBytes, _ := os.ReadFile(ourPath)
	if !bytes.Equal(hostBytes, ourBytes) {
		i := 0
		for i < len(hostBytes) && i < len(ourBytes) && hostBytes[i] == ourBytes[i] {
			i++
		}
		t.Fatalf("backing files differ from byte %d", i)
	}
}

// TestLinuxLoopRules pins the set-up and teardown rules on the host.
func TestLinuxLoopRules(t *testing.T) {
	requireLoop(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "img")
	if err := os.WriteFile(path, randBytes(1, 65536+100), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newProc(t)
	same := func(what string, herr, oerr error) {
		t.Helper()
		if mkResult(0, herr, nil) != mkResult(0, oerr, nil) {
			t.Errorf("%s: host %v, iovfs %v", what, herr, oerr)
		}
	}

	// A read-only backing descriptor, or a read-only device descriptor,
	// forces READ_ONLY; writes then give EPERM.
	for _, c := range []struct{ bflags, dflags int }{{unix.O_RDONLY, unix.O_RDWR}, {unix.O_RDWR, unix.O_RDONLY}} {
		hfd := hostAttach(t, path, c.bflags, c.dflags, geom{})
		ofd := iovfsAttach(t, p, path, c.bflags, c.dflags, geom{})
		hinfo, _ := unix.IoctlLoopGetStatus64(hfd)
		oinfo, _ := status(t, p, ofd)
		if hinfo.Flags != oinfo.Flags {
			t.Errorf("flags with backing %#x device %#x: host %#x iovfs %#x", c.bflags, c.dflags, hinfo.Flags, oinfo.Flags)
		}
		if c.dflags == unix.O_RDWR {
			_, herr := unix.Pwrite(hfd, []byte("x"), 0)
			_, oerr := p.Pwrite(ofd, []byte("x"), 0)
			same("write to forced read-only device", herr, oerr)
		}
		// Configuring a bound device: EBUSY.
		bf, _ := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		cfg := hostConfig(bf, geom{})
		herr := unix.IoctlLoopConfigure(hfd, &cfg)
		unix.Close(bf)
		f, _ := os.Open(path)
		obf, _ := p.ImportFile(f)
		f.Close()
		cfg = hostConfig(obf, geom{})
		_, oerr := p.Ioctl(ofd, unix.LOOP_CONFIGURE, &cfg)
		p.Close(obf)
		same("configure bound device", herr, oerr)
		// Unknown request on a loop device.
		_, herr = unix.IoctlRetInt(hfd, 0x4CFF)
		_, oerr = p.Ioctl(ofd, 0x4CFF, nil)
		same("unknown loop request", herr, oerr)
		hostClose(hfd) // AUTOCLEAR: cleared now
		p.Close(ofd)
	}

	// Configure errors on a free device.
	for _, c := range []struct {
		name string
		g    geom
		enc  uint32
	}{
		{"flag 0x20", geom{flags: 0x20}, 0},
		{"block size 256", geom{bs: 256}, 0},
		{"block size 3000", geom{bs: 3000}, 0},
		{"block size 128K", geom{bs: 128 << 10}, 0},
		{"encryption", geom{}, 1},
	} {
		herr := hostConfigureErr(t, path, c.g, c.enc)
		f, _ := os.Open(path)
		obf, _ := p.ImportFile(f)
		f.Close()
		ofd, _ := p.Open("/dev/loop0", unix.O_RDWR, 0)
		cfg := hostConfig(obf, c.g)
		cfg.Info.Encrypt_type = c.enc
		_, oerr := p.Ioctl(ofd, unix.LOOP_CONFIGURE, &cfg)
		if oerr == nil {
			p.Ioctl(ofd, unix.LOOP_CLR_FD, nil)
		}
		p.Close(ofd)
		p.Close(obf)
		same("configure "+c.name, herr, oerr)
	}

	// LOOP_CLR_FD with a second opener: success, AUTOCLEAR, still bound;
	// with one opener: further opens give ENXIO.
	g := geom{}
	hfd := hostAttachNoAutoclear(t, path)
	ofd := iovfsAttach(t, p, path, unix.O_RDWR, unix.O_RDWR, g)
	oinfo0, _ := status(t, p, ofd)
	oinfo0.Flags &^= unix.LO_FLAGS_AUTOCLEAR
	p.Ioctl(ofd, unix.LOOP_SET_STATUS64, &oinfo0)
	hname := hostName(t, hfd)
	hfd2, err := unix.Open(hname, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ofd2, _ := p.Open("/dev/loop0", unix.O_RDONLY, 0)
	_, herr := unix.IoctlRetInt(hfd, unix.LOOP_CLR_FD)
	_, oerr := p.Ioctl(ofd, unix.LOOP_CLR_FD, nil)
	same("LOOP_CLR_FD with two openers", herr, oerr)
	hinfo, herr := unix.IoctlLoopGetStatus64(hfd)
	oinfo, oerr := status(t, p, ofd)
	same("status after lazy clear", herr, oerr)
	if herr == nil && oerr == nil && hinfo.Flags != oinfo.Flags {
		t.Errorf("flags after lazy clear: host %#x iovfs %#x", hinfo.Flags, oinfo.Flags)
	}
	unix.Close(hfd2)
	p.Close(ofd2)
	hbuf, obuf := make([]byte, 512), make([]byte, 512)
	hn, herr := unix.Pread(hfd, hbuf, 0)
	on, oerr := p.Pread(ofd, obuf, 0)
	if mkResult(hn, herr, hbuf) != mkResult(on, oerr, obuf) {
		t.Errorf("read after lazy clear: host %d %v, iovfs %d %v", hn, herr, on, oerr)
	}
	hostClose(hfd) // the last close clears it
	p.Close(ofd)
	ofd, _ = p.Open("/dev/loop0", unix.O_RDONLY, 0)
	_, oerr = status(t, p, ofd)
	if h, err := unix.Open(hname, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		_, herr = unix.IoctlLoopGetStatus64(h)
		unix.Close(h)
		same("status after the last close", herr, oerr)
	}
	p.Close(ofd)

	// Status calls on an unbound device.
	ofd, _ = p.Open("/dev/loop7", unix.O_RDONLY, 0)
	_, oerr = status(t, p, ofd)
	same("status of an unbound device", syscall.ENXIO, oerr)
	_, oerr = p.Ioctl(ofd, unix.LOOP_CLR_FD, nil)
	same("clear an unbound device", syscall.ENXIO, oerr)
	p.Close(ofd)
}

// hostConfigureErr tries LOOP_CONFIGURE with g on a free host device and
// returns its error; a success is undone.
func hostConfigureErr(t *testing.T, path string, g geom, enc uint32) error {
	ctl, _ := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	defer unix.Close(ctl)
	bf, _ := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	defer unix.Close(bf)
	for try := 0; try < 20; try++ {
		n, _ := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		fd, err := unix.Open(fmt.Sprintf("/dev/loop%d", n), unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		cfg := hostConfig(bf, g) // AUTOCLEAR: a success is cleared at close
		cfg.Info.Encrypt_type = enc
		err = unix.IoctlLoopConfigure(fd, &cfg)
		unix.Close(fd)
		if err == unix.EBUSY {
			continue
		}
		return err
	}
	t.Fatal("no free host loop device")
	return nil
}

// hostAttachNoAutoclear attaches path read-write without AUTOCLEAR, and
// clears it with LOOP_CLR_FD in t.Cleanup if the test has not.
func hostAttachNoAutoclear(t *testing.T, path string) int {
	fd := hostAttach(t, path, unix.O_RDWR, unix.O_RDWR, geom{})
	info, err := unix.IoctlLoopGetStatus64(fd)
	if err != nil {
		t.Fatal(err)
	}
	info.Flags &^= unix.LO_FLAGS_AUTOCLEAR
	if err := unix.IoctlLoopSetStatus64(fd, info); err != nil {
		t.Fatal(err)
	}
	name := hostName(t, fd)
	ino := info.Inode
	t.Cleanup(func() {
		// Clear it only if it is still ours: the number may have been
		// reused by another user since the test cleared it.
		h, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		defer unix.Close(h)
		if info, err := unix.IoctlLoopGetStatus64(h); err == nil && info.Inode == ino {
			unix.IoctlRetInt(h, unix.LOOP_CLR_FD)
		}
	})
	return fd
}

// hostName returns the /dev path of the host loop device open as fd.
func hostName(t *testing.T, fd int) string {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("/dev/loop%d", unix.Minor(st.Rdev))
}
