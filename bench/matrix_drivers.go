package bench

// The drivers of the matrix experiment. Each is one entry of
// matrixDrivers: a name, a line of help and a constructor that returns a
// matrixTarget, the four calls the matrix makes (Preadv, Pread, Pwritev,
// Pwrite at an offset) on one open object of that driver. Adding a driver
// is adding an entry here, as hostfs is: most open a file in a fresh iovfs
// process and return fdTarget. Pipes need more (matrix_pipe.go): pread on
// a pipe is ESPIPE, so their cells compare readv with read, and goroutines
// feed and drain the pipes.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
)

// matrixFileSize is the size of the file or device every driver reads and
// writes: the largest cell (1024 segments of 64 KiB) is one whole pass.
const matrixFileSize = 64 << 20

// MatrixDriver is one driver of the matrix experiment.
type MatrixDriver struct {
	Name, Doc string
	// Open returns the driver's target over a file or device of
	// matrixFileSize bytes, or an error wrapping ErrSkip (via Skip) when
	// the machine cannot provide it.
	Open func(env *matrixEnv) (*matrixTarget, error)
}

// matrixTarget is what the matrix measures on one driver.
type matrixTarget struct {
	preadv  func(iovs [][]byte, off int64) (int, error)
	pread   func(b []byte, off int64) (int, error)
	pwritev func(iovs [][]byte, off int64) (int, error) // nil: not writable
	pwrite  func(b []byte, off int64) (int, error)
	// eof is true for a driver whose reads return 0 (/dev/null).
	eof bool
	// native is true when the driver has its own vectored read, so a
	// vector reaches it in one call rather than through the VFS's
	// per-segment compat loop.
	native bool
	close  func() error
}

// matrixDrivers lists the drivers in display order.
var matrixDrivers = []MatrixDriver{
	{"null", "/dev/null (reads return 0, writes are swallowed)", func(*matrixEnv) (*matrixTarget, error) {
		return vfsDevice("/dev/null", true)
	}},
	{"zero", "/dev/zero", func(*matrixEnv) (*matrixTarget, error) { return vfsDevice("/dev/zero", false) }},
	{"tmpfs", "a 64 MiB file on iovfs's tmpfs", matrixTmpfs},
	{"ram", "/dev/ram0, a 64 MiB RAM disk, through its block-device file", func(*matrixEnv) (*matrixTarget, error) {
		return vfsDevice("/dev/ram0", false)
	}},
	{"loop-tmpfs", "/dev/loop0 over a 64 MiB tmpfs file", matrixLoopTmpfs},
	{"loop-host", "/dev/loop0 over an imported 64 MiB host file: one host pread/preadv per call", matrixLoopHost},
	{"loop-host-dax", "the same loop device through direct access: DirectAccess + block.CopyOut, one per call (reads only)", matrixLoopHostDax},
	{"hostfs", "a 64 MiB host file through hostfs: one host pread/preadv per call", matrixHostfs},
	{"ext4", "a 64 MiB file on ext4 (mke2fs -d) over a loop device over an imported host file", matrixExt4("")},
	{"ext4-dax", "the same file, mounted with dax", matrixExt4("dax")},
	{"pipe", "a 1 MiB pipe kept full by a feeder goroutine (readv against reads) and one emptied by a drainer (writev against writes); offsets are ignored", matrixPipe},
}

// MatrixDriverNames returns the drivers' names in display order.
func MatrixDriverNames() []string {
	var s []string
	for _, d := range matrixDrivers {
		s = append(s, d.Name)
	}
	return s
}

// matrixEnv holds what several drivers share, made on first use: a host
// directory, a host data file and an ext4 image.
type matrixEnv struct {
	dir      string
	hostFile string
	img      string
	imgErr   error
}

func newMatrixEnv() (*matrixEnv, error) {
	dir, err := os.MkdirTemp("", "iovfs-bench-matrix-")
	if err != nil {
		return nil, err
	}
	return &matrixEnv{dir: dir}, nil
}

func (e *matrixEnv) close() error { return os.RemoveAll(e.dir) }

// matrixData returns n bytes that every driver is filled with.
func matrixData(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{'m', 'a', 't', 'r', 'i', 'x'}).Read(b)
	return b
}

// host returns the path of a host file of matrixFileSize bytes.
func (e *matrixEnv) host() (string, error) {
	if e.hostFile != "" {
		return e.hostFile, nil
	}
	path := filepath.Join(e.dir, "host")
	if err := os.WriteFile(path, matrixData(matrixFileSize), 0o600); err != nil {
		return "", err
	}
	e.hostFile = path
	return path, nil
}

// ext4Image returns the path of an ext4 image whose root holds "file", of
// matrixFileSize bytes of matrixData.
func (e *matrixEnv) ext4Image() (string, error) {
	if e.img != "" || e.imgErr != nil {
		return e.img, e.imgErr
	}
	e.imgErr = Skip("mke2fs not found (apt-get install e2fsprogs)")
	mke2fs, err := exec.LookPath("mke2fs")
	if err != nil {
		return "", e.imgErr
	}
	src := filepath.Join(e.dir, "src")
	if e.imgErr = os.Mkdir(src, 0o755); e.imgErr != nil {
		return "", e.imgErr
	}
	if e.imgErr = os.WriteFile(filepath.Join(src, "file"), matrixData(matrixFileSize), 0o644); e.imgErr != nil {
		return "", e.imgErr
	}
	img := filepath.Join(e.dir, "ext4.img")
	kib := (matrixFileSize+matrixFileSize/8)>>10 + 8<<10
	out, err := exec.Command(mke2fs, "-q", "-F", "-t", "ext4", "-b", "4096", "-d", src, img, strconv.Itoa(kib)+"k").CombinedOutput()
	os.RemoveAll(src)
	if err != nil {
		e.imgErr = fmt.Errorf("mke2fs: %v: %s", err, out)
		return "", e.imgErr
	}
	e.img, e.imgErr = img, nil
	return img, nil
}

// fdTarget measures descriptor fd of p through the VFS's calls. close
// runs after fd is closed.
func fdTarget(p *vfs.Proc, fd int, writable, eof, native bool, close func() error) *matrixTarget {
	t := &matrixTarget{
		preadv: func(v [][]byte, off int64) (int, error) { return p.Preadv(fd, v, off) },
		pread:  func(b []byte, off int64) (int, error) { return p.Pread(fd, b, off) },
		eof:    eof,
		native: native,
		close: func() error {
			err := p.Close(fd)
			if close != nil {
				err = errors.Join(err, close())
			}
			return err
		},
	}
	if writable {
		t.pwritev = func(v [][]byte, off int64) (int, error) { return p.Pwritev(fd, v, off) }
		t.pwrite = func(b []byte, off int64) (int, error) { return p.Pwrite(fd, b, off) }
	}
	return t
}

// fill writes matrixData to the start of fd.
func fill(p *vfs.Proc, fd int) error {
	data := matrixData(matrixFileSize)
	if n, err := p.Pwrite(fd, data, 0); n != len(data) {
		return fmt.Errorf("fill: %d of %d bytes: %v", n, len(data), err)
	}
	return nil
}

// vfsDevice opens a device of a fresh process read-write; the RAM disk is
// filled first.
func vfsDevice(path string, eof bool) (*matrixTarget, error) {
	p, err := iovfs.New()
	if err != nil {
		return nil, err
	}
	fd, err := p.Open(path, unix.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if path == "/dev/ram0" {
		if err := fill(p, fd); err != nil {
			return nil, err
		}
	}
	return fdTarget(p, fd, true, eof, true, nil), nil
}

func tmpfsFile(p *vfs.Proc, path string) (int, error) {
	fd, err := p.Open(path, unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		return -1, err
	}
	return fd, fill(p, fd)
}

func matrixTmpfs(*matrixEnv) (*matrixTarget, error) {
	p, err := iovfs.New()
	if err != nil {
		return nil, err
	}
	fd, err := tmpfsFile(p, "/tmp/file")
	if err != nil {
		return nil, err
	}
	return fdTarget(p, fd, true, false, true, nil), nil
}

// attachLoop binds /dev/loop0 of p to backing descriptor bfd and returns
// the device open with flags; the device clears itself at its last close.
func attachLoop(p *vfs.Proc, bfd int, flags int) (int, error) {
	lfd, err := p.Open("/dev/loop0", flags, 0)
	if err != nil {
		return -1, err
	}
	cfg := unix.LoopConfig{Fd: uint32(bfd), Size: 4096}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	if flags&unix.O_ACCMODE == unix.O_RDONLY {
		cfg.Info.Flags |= unix.LO_FLAGS_READ_ONLY
	}
	if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		p.Close(lfd)
		return -1, fmt.Errorf("LOOP_CONFIGURE: %w", err)
	}
	return lfd, nil
}

func matrixLoopTmpfs(*matrixEnv) (*matrixTarget, error) {
	p, err := iovfs.New()
	if err != nil {
		return nil, err
	}
	bfd, err := tmpfsFile(p, "/tmp/img")
	if err != nil {
		return nil, err
	}
	lfd, err := attachLoop(p, bfd, unix.O_RDWR)
	p.Close(bfd)
	if err != nil {
		return nil, err
	}
	return fdTarget(p, lfd, true, false, true, nil), nil
}

// loopHost is a fresh process with /dev/loop0 over the env's host file.
func loopHost(env *matrixEnv) (*vfs.Proc, int, error) {
	path, err := env.host()
	if err != nil {
		return nil, -1, err
	}
	p, err := iovfs.New()
	if err != nil {
		return nil, -1, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, -1, err
	}
	bfd, err := p.ImportFile(f)
	f.Close()
	if err != nil {
		return nil, -1, err
	}
	lfd, err := attachLoop(p, bfd, unix.O_RDWR)
	p.Close(bfd)
	return p, lfd, err
}

func matrixLoopHost(env *matrixEnv) (*matrixTarget, error) {
	p, lfd, err := loopHost(env)
	if err != nil {
		return nil, err
	}
	return fdTarget(p, lfd, true, false, true, nil), nil
}

// matrixLoopHostDax reads the loop device's memory view as a dax file
// system does: DirectAccess for the range, then block.CopyOut into the
// caller's buffers, one fault guard per call.
func matrixLoopHostDax(env *matrixEnv) (*matrixTarget, error) {
	p, lfd, err := loopHost(env)
	if err != nil {
		return nil, err
	}
	b, err := p.Backing(lfd)
	if err != nil {
		p.Close(lfd)
		return nil, err
	}
	dev, _ := block.Of(b.Handle())
	da, ok := dev.(block.DirectAccessor)
	if !ok {
		b.Release()
		p.Close(lfd)
		return nil, Skip("the loop device offers no direct access")
	}
	// copyRange copies len bytes at off into dst: one DirectAccess per
	// contiguous piece (the whole range, for a mapped host file).
	copyRange := func(dst iov.Iter, off int64) (int, error) {
		done := 0
		for dst.Len() > 0 {
			mem, err := da.DirectAccess(off+int64(done), dst.Len())
			if err != nil {
				return done, err
			}
			var k int
			if len(mem) >= dst.Len() { // the rest in one piece: ext4's dax fast path
				k, err = block.CopyAll(dst, mem)
				dst.Advance(k)
			} else {
				k, err = block.CopyOut(&dst, mem)
			}
			done += k
			if err != nil {
				return done, err
			}
		}
		return done, nil
	}
	return &matrixTarget{
		preadv: func(v [][]byte, off int64) (int, error) {
			if len(v) == 1 { // one segment is a single buffer, as the VFS makes it
				return copyRange(iov.Buf(v[0]), off)
			}
			return copyRange(iov.Vec(v), off)
		},
		pread:  func(b []byte, off int64) (int, error) { return copyRange(iov.Buf(b), off) },
		native: true,
		close:  func() error { return errors.Join(b.Release(), p.Close(lfd)) },
	}, nil
}

// matrixExt4 mounts the env's ext4 image read-only with the given mount
// options, over /dev/loop0 over the imported image, and opens the file.
func matrixExt4(opts string) func(*matrixEnv) (*matrixTarget, error) {
	return func(env *matrixEnv) (*matrixTarget, error) {
		img, err := env.ext4Image()
		if err != nil {
			return nil, err
		}
		p, err := iovfs.New()
		if err != nil {
			return nil, err
		}
		f, err := os.Open(img)
		if err != nil {
			return nil, err
		}
		bfd, err := p.ImportFile(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		lfd, err := attachLoop(p, bfd, unix.O_RDONLY)
		p.Close(bfd)
		if err != nil {
			return nil, err
		}
		err = p.Mount("/dev/loop0", "/mnt", "ext4", unix.MS_RDONLY, opts)
		p.Close(lfd) // the mount holds the device now
		if err != nil {
			return nil, err
		}
		fd, err := p.Open("/mnt/file", unix.O_RDONLY, 0)
		if err != nil {
			p.Unmount("/mnt", 0)
			return nil, err
		}
		return fdTarget(p, fd, false, false, true, func() error { return p.Unmount("/mnt", 0) }), nil
	}
}

// matrixHostfs mounts a host directory holding a file of matrixData with
// hostfs and opens the file.
func matrixHostfs(env *matrixEnv) (*matrixTarget, error) {
	dir := filepath.Join(env.dir, "hostfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), matrixData(matrixFileSize), 0o644); err != nil {
		return nil, err
	}
	p, err := iovfs.New()
	if err != nil {
		return nil, err
	}
	if err := p.Mount(dir, "/mnt", "hostfs", 0, ""); err != nil {
		return nil, err
	}
	fd, err := p.Open("/mnt/file", unix.O_RDWR, 0)
	if err != nil {
		p.Unmount("/mnt", 0)
		return nil, err
	}
	return fdTarget(p, fd, true, false, true, func() error { return p.Unmount("/mnt", 0) }), nil
}
