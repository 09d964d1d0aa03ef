package vfat_test

// The kernel differential: random sequences of file operations run on
// Linux's vfat (a Debian kernel in a QEMU guest, package linuxvm, since
// the host kernel here has no vfat) and on iovfs's, each on its own copy
// of one mkfs.fat image, compared errno for errno and result for result;
// fsck.fat -n must find both images clean afterwards.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/linuxvm"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
)

func TestMain(m *testing.M) {
	linuxvm.Main(m, map[string]linuxvm.Handler{"vfat": guestVFAT})
}

var fatModules = []string{"kernel/fs/fat/vfat.ko", "kernel/fs/nls/nls_cp437.ko", "kernel/fs/nls/nls_ascii.ko", "kernel/fs/nls/nls_utf8.ko"}

const mountOpts = "uid=0,gid=0,umask=022"

// op is one step of a sequence. Paths are relative to the mount.
type op struct {
	Op   string
	A, B string
	N    int64 // size, offset, mode or time
	Seed uint64
}

// result is what a step gave: an errno (0 for success) and its output.
type result struct {
	Errno int
	Out   string
}

func pattern(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func errno(err error) int {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	for err != nil {
		if x, ok := err.(syscall.Errno); ok {
			e = x
			break
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return -1
		}
		err = u.Unwrap()
	}
	return int(e)
}

// fsOps is the system-call surface a sequence needs; the guest gives
// it through x/sys/unix, the host through a vfs.Proc.
type fsOps interface {
	open(path string, flags int, mode uint32) (int, error)
	close(fd int) error
	pwrite(fd int, b []byte, off int64) (int, error)
	pread(fd int, b []byte, off int64) (int, error)
	truncate(path string, n int64) error
	unlink(path string) error
	mkdir(path string, mode uint32) error
	rmdir(path string) error
	rename(a, b string, flags uint) error
	stat(path string) (unix.Stat_t, error)
	readdir(path string) ([]string, error)
	utimes(path string, t time.Time) error
	chmod(path string, mode uint32) error
	statfs() (unix.Statfs_t, error)
}

// runOps runs the sequence; a step's output is formatted the same way
// on both sides.
func runOps(f fsOps, ops []op) []result {
	var out []result
	for _, o := range ops {
		var r result
		switch o.Op {
		case "create", "trunc", "write":
			flags := unix.O_WRONLY | unix.O_CREAT
			switch o.Op {
			case "create":
				flags |= unix.O_EXCL
			case "trunc":
				flags |= unix.O_TRUNC
			}
			fd, err := f.open(o.A, flags, 0o644)
			if err != nil {
				r.Errno = errno(err)
				break
			}
			off := int64(0)
			if o.Op == "write" {
				off = o.N >> 20
			}
			n, err := f.pwrite(fd, pattern(o.Seed, int(o.N&0xfffff)), off)
			r.Errno = errno(err)
			if err == nil {
				r.Out = fmt.Sprint(n)
			}
			f.close(fd)
		case "read":
			fd, err := f.open(o.A, unix.O_RDONLY, 0)
			if err != nil {
				r.Errno = errno(err)
				break
			}
			b := make([]byte, 1<<20)
			n, err := f.pread(fd, b, 0)
			r.Errno = errno(err)
			if err == nil {
				r.Out = fmt.Sprintf("%d %08x", n, crc32.ChecksumIEEE(b[:n]))
			}
			f.close(fd)
		case "truncate":
			r.Errno = errno(f.truncate(o.A, o.N))
		case "unlink":
			r.Errno = errno(f.unlink(o.A))
		case "mkdir":
			r.Errno = errno(f.mkdir(o.A, 0o755))
		case "rmdir":
			r.Errno = errno(f.rmdir(o.A))
		case "rename":
			r.Errno = errno(f.rename(o.A, o.B, uint(o.N)))
		case "stat":
			st, err := f.stat(o.A)
			r.Errno = errno(err)
			if err == nil {
				r.Out = fmt.Sprintf("mode %o size %d nlink %d uid %d gid %d blocks %d blksize %d", st.Mode, st.Size, st.Nlink, st.Uid, st.Gid, st.Blocks, st.Blksize)
			}
		case "newer":
			st, err := f.stat(o.A)
			r.Errno = errno(err)
			if err == nil {
				r.Out = fmt.Sprintf("mtime after %d: %v", o.N, st.Mtim.Sec > o.N)
			}
		case "statmtime":
			st, err := f.stat(o.A)
			r.Errno = errno(err)
			if err == nil {
				r.Out = fmt.Sprintf("mtime %d atime-day %d", st.Mtim.Sec, st.Atim.Sec/86400)
			}
		case "readdir":
			names, err := f.readdir(o.A)
			r.Errno = errno(err)
			r.Out = strings.Join(names, "/")
		case "utimes":
			r.Errno = errno(f.utimes(o.A, time.Unix(o.N, 0)))
		case "chmod":
			r.Errno = errno(f.chmod(o.A, uint32(o.N)))
		case "statfs":
			st, err := f.statfs()
			r.Errno = errno(err)
			r.Out = fmt.Sprintf("type %x bsize %d blocks %d bfree %d bavail %d namelen %d", st.Type, st.Bsize, st.Blocks, st.Bfree, st.Bavail, st.Namelen)
		}
		out = append(out, r)
	}
	return out
}

// Names: 8.3 names in both cases, long names, names that differ only in
// case or trailing dots, aliases, characters vfat replaces or refuses.
var namePool = []string{
	"A.TXT", "a.txt", "B.txt", "readme", "README", "Makefile", "long file name number one.text",
	"long file name number two.text", "LONG FILE NAME NUMBER ONE.TEXT", "x.tar.gz", "dots...", ".hidden",
	"résumé", "a+b", "sp ace", "bad:colon", "trail ", "LONGFI~1.TEX", "12345678.123", "123456789.1234",
	"d1", "D2", "dir three",
}

func randPath(r *rand.Rand) string {
	n := namePool[r.IntN(len(namePool))]
	switch r.IntN(4) {
	case 0:
		return "d1/" + n
	case 1:
		return "dir three/" + n
	}
	return n
}

func randOps(seed uint64, count int) []op {
	r := rand.New(rand.NewPCG(seed, 3))
	ops := []op{{Op: "mkdir", A: "d1"}, {Op: "mkdir", A: "dir three"}}
	kinds := []string{"create", "create", "trunc", "write", "read", "truncate", "unlink", "mkdir", "rmdir", "rename", "rename", "stat", "readdir", "utimes", "chmod"}
	for i := 0; i < count; i++ {
		o := op{Op: kinds[r.IntN(len(kinds))], A: randPath(r), Seed: r.Uint64()}
		switch o.Op {
		case "create", "trunc":
			o.N = int64(r.IntN(20000))
		case "write":
			o.N = int64(r.IntN(30000))<<20 | int64(r.IntN(9000))
		case "truncate":
			o.N = int64(r.IntN(40000))
		case "rename":
			o.B = randPath(r)
			switch r.IntN(12) {
			case 0, 1, 2:
				o.N = unix.RENAME_NOREPLACE
			case 3, 4, 5:
				o.N = unix.RENAME_EXCHANGE
			case 6:
				o.N = unix.RENAME_EXCHANGE | unix.RENAME_NOREPLACE
			case 7:
				o.N = unix.RENAME_EXCHANGE | unix.RENAME_WHITEOUT
			}
		case "readdir":
			o.A = []string{".", "d1", "dir three", "d2"}[r.IntN(4)]
		case "utimes":
			o.N = 315532800 + r.Int64N(2e9)
			ops = append(ops, o, op{Op: "statmtime", A: o.A})
			continue
		case "chmod":
			o.N = []int64{0o444, 0o644, 0o755, 0o555, 0o4755, 0o600}[r.IntN(6)]
		}
		ops = append(ops, o)
		if r.IntN(6) == 0 {
			ops = append(ops, op{Op: "stat", A: o.A})
		}
	}
	return append(ops, op{Op: "readdir", A: "."}, op{Op: "readdir", A: "d1"}, op{Op: "readdir", A: "dir three"}, op{Op: "statfs"})
}

// exchangeOps is renameat2's RENAME_EXCHANGE case by case: two files in
// one directory and in two, a directory with a directory and with a file
// in another directory (whose ".." and parents' link counts change), a
// directory with a file in its own parent, the same file under two
// spellings, and the errors: a directory with its own descendant or
// ancestor (EINVAL), a missing name on either side (ENOENT), the flag
// combinations (EINVAL). The parents' modification times are set far
// back first, to see which an exchange sets to now.
func exchangeOps() []op {
	const past = 1_000_000_000
	ex := func(a, b string) op { return op{Op: "rename", A: a, B: b, N: unix.RENAME_EXCHANGE} }
	state := func(paths ...string) []op {
		var ops []op
		for _, p := range paths {
			ops = append(ops, op{Op: "stat", A: p}, op{Op: "newer", A: p, N: past + 100})
		}
		return ops
	}
	back := func(paths ...string) []op {
		var ops []op
		for _, p := range paths {
			ops = append(ops, op{Op: "utimes", A: p, N: past})
		}
		return ops
	}
	ops := []op{
		{Op: "mkdir", A: "d1"}, {Op: "mkdir", A: "dir three"}, {Op: "mkdir", A: "d1/sub"}, {Op: "mkdir", A: "d1/sub/deep"},
		{Op: "create", A: "d1/sub/deep/f", N: 100, Seed: 1}, {Op: "create", A: "a.txt", N: 1000, Seed: 2},
		{Op: "create", A: "long file name number one.text", N: 5000, Seed: 3}, {Op: "create", A: "readme", N: 7, Seed: 4},
		{Op: "create", A: "dir three/x.tar.gz", N: 70000, Seed: 5},
		{Op: "chmod", A: "a.txt", N: 0o555},
	}
	ops = append(ops, back("d1", "dir three", "d1/sub", "d1/sub/deep")...)
	ops = append(ops,
		ex("a.txt", "long file name number one.text"),
		op{Op: "read", A: "a.txt"}, op{Op: "read", A: "long file name number one.text"})
	ops = append(ops, state("a.txt", "long file name number one.text", "d1")...)
	ops = append(ops,
		ex("A.TXT", "d1/sub/deep/f"),
		op{Op: "read", A: "a.txt"}, op{Op: "read", A: "d1/sub/deep/f"})
	ops = append(ops, state("a.txt", "d1/sub/deep/f", "d1/sub/deep", "d1/sub", "d1")...)
	ops = append(ops, back("d1/sub/deep")...)
	ops = append(ops,
		ex("d1/sub", "dir three"),
		op{Op: "readdir", A: "d1"}, op{Op: "readdir", A: "d1/sub"}, op{Op: "readdir", A: "dir three"},
		op{Op: "read", A: "dir three/deep/f"}, op{Op: "read", A: "d1/sub/x.tar.gz"})
	ops = append(ops, state(".", "d1", "d1/sub", "dir three", "dir three/deep")...)
	ops = append(ops, back("d1", "dir three")...)
	ops = append(ops,
		ex("dir three", "readme"),
		op{Op: "read", A: "dir three"}, op{Op: "readdir", A: "readme"}, op{Op: "read", A: "readme/deep/f"})
	ops = append(ops, state(".", "readme", "dir three", "d1")...)
	ops = append(ops,
		ex("readme", "d1/sub"),
		op{Op: "readdir", A: "readme"}, op{Op: "readdir", A: "d1/sub"}, op{Op: "read", A: "d1/sub/deep/f"})
	ops = append(ops, state(".", "readme", "d1", "d1/sub", "d1/sub/deep")...)
	ops = append(ops,
		ex("dir three", "d1/sub/deep"),
		op{Op: "read", A: "d1/sub/deep"}, op{Op: "readdir", A: "dir three"}, op{Op: "read", A: "dir three/f"})
	ops = append(ops, state(".", "d1", "d1/sub", "d1/sub/deep", "dir three")...)
	ops = append(ops,
		ex("d1", "d1/sub"), ex("d1/sub", "d1"), ex("d1", "d1/sub/deep"),
		ex("d1", "d1/nope"), ex("nope", "d1"), ex("d1/nope", "nope"),
		ex("a.txt", "A.TXT"), ex("a.txt", "a.txt"),
		op{Op: "rename", A: "a.txt", B: "d1", N: unix.RENAME_EXCHANGE | unix.RENAME_NOREPLACE},
		op{Op: "rename", A: "a.txt", B: "d1", N: unix.RENAME_EXCHANGE | unix.RENAME_WHITEOUT},
		op{Op: "rename", A: "a.txt", B: "d1", N: unix.RENAME_WHITEOUT},
		ex("d1/sub", "d1/sub"),
		ex("readme", "d1/sub/deep"),
		op{Op: "readdir", A: "readme"}, op{Op: "readdir", A: "d1/sub/deep"})
	ops = append(ops, state(".", "d1", "d1/sub", "d1/sub/deep", "readme", "dir three")...)
	return append(ops, op{Op: "readdir", A: "."}, op{Op: "readdir", A: "d1"}, op{Op: "readdir", A: "dir three"}, op{Op: "statfs"})
}

// The guest side.

type hostOps struct{ root string }

func (h hostOps) p(path string) string { return filepath.Join(h.root, path) }
func (h hostOps) open(path string, flags int, mode uint32) (int, error) {
	return unix.Open(h.p(path), flags, mode)
}
func (h hostOps) close(fd int) error { return unix.Close(fd) }
func (h hostOps) pwrite(fd int, b []byte, off int64) (int, error) {
	return unix.Pwrite(fd, b, off)
}
func (h hostOps) pread(fd int, b []byte, off int64) (int, error) { return unix.Pread(fd, b, off) }
func (h hostOps) truncate(path string, n int64) error            { return unix.Truncate(h.p(path), n) }
func (h hostOps) unlink(path string) error                       { return unix.Unlink(h.p(path)) }
func (h hostOps) mkdir(path string, mode uint32) error           { return unix.Mkdir(h.p(path), mode) }
func (h hostOps) rmdir(path string) error                        { return unix.Rmdir(h.p(path)) }
func (h hostOps) rename(a, b string, flags uint) error {
	return unix.Renameat2(unix.AT_FDCWD, h.p(a), unix.AT_FDCWD, h.p(b), flags)
}
func (h hostOps) stat(path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Lstat(h.p(path), &st)
	return st, err
}
func (h hostOps) readdir(path string) ([]string, error) {
	f, err := os.Open(h.p(path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
func (h hostOps) utimes(path string, t time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	return unix.UtimesNanoAt(unix.AT_FDCWD, h.p(path), ts, 0)
}
func (h hostOps) chmod(path string, mode uint32) error { return unix.Chmod(h.p(path), mode) }
func (h hostOps) statfs() (unix.Statfs_t, error) {
	var st unix.Statfs_t
	err := unix.Statfs(h.root, &st)
	return st, err
}

type guestReq struct {
	Seqs [][]op
}

func guestVFAT(raw json.RawMessage) (any, error) {
	var req guestReq
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, err
	}
	unix.Umask(0o022)
	var out [][]result
	for i, ops := range req.Seqs {
		dev := fmt.Sprintf("/dev/vd%c", 'a'+i)
		mnt := fmt.Sprintf("/tmp/m%d", i)
		os.MkdirAll(mnt, 0o755)
		if err := unix.Mount(dev, mnt, "vfat", 0, mountOpts); err != nil {
			return nil, fmt.Errorf("mount %s: %v", dev, err)
		}
		out = append(out, runOps(hostOps{mnt}, ops))
		if err := unix.Unmount(mnt, 0); err != nil {
			return nil, fmt.Errorf("umount %s: %v", mnt, err)
		}
	}
	unix.Sync()
	return out, nil
}

// The iovfs side.

type procOps struct {
	p    *vfs.Proc
	root string
}

func (h procOps) path(p string) string { return h.root + "/" + p }
func (h procOps) open(path string, flags int, mode uint32) (int, error) {
	return h.p.Open(h.path(path), flags, mode)
}
func (h procOps) close(fd int) error { return h.p.Close(fd) }
func (h procOps) pwrite(fd int, b []byte, off int64) (int, error) {
	return h.p.Pwrite(fd, b, off)
}
func (h procOps) pread(fd int, b []byte, off int64) (int, error) { return h.p.Pread(fd, b, off) }
func (h procOps) truncate(path string, n int64) error            { return h.p.Truncate(h.path(path), n) }
func (h procOps) unlink(path string) error                       { return h.p.Unlink(h.path(path)) }
func (h procOps) mkdir(path string, mode uint32) error           { return h.p.Mkdir(h.path(path), mode) }
func (h procOps) rmdir(path string) error                        { return h.p.Rmdir(h.path(path)) }
func (h procOps) rename(a, b string, flags uint) error {
	return h.p.Renameat2(unix.AT_FDCWD, h.path(a), unix.AT_FDCWD, h.path(b), flags)
}
func (h procOps) stat(path string) (unix.Stat_t, error) {
	st, err := h.p.Lstat(h.path(path))
	if err != nil {
		return unix.Stat_t{}, err
	}
	return unix.Stat_t{Mode: st.Mode, Size: st.Size, Nlink: st.Nlink, Uid: st.Uid, Gid: st.Gid, Blocks: st.Blocks, Blksize: st.Blksize,
		Mtim: unix.NsecToTimespec(st.Mtime.UnixNano()), Atim: unix.NsecToTimespec(st.Atime.UnixNano())}, nil
}
func (h procOps) readdir(path string) ([]string, error) {
	fd, err := h.p.Open(h.path(path), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer h.p.Close(fd)
	var names []string
	for {
		ds, err := h.p.Getdents(fd)
		if err != nil {
			return nil, err
		}
		if len(ds) == 0 {
			return names, nil
		}
		for _, d := range ds {
			if d.Name != "." && d.Name != ".." {
				names = append(names, d.Name)
			}
		}
	}
}
func (h procOps) utimes(path string, t time.Time) error { return h.p.Utimes(h.path(path), t, t) }
func (h procOps) chmod(path string, mode uint32) error  { return h.p.Chmod(h.path(path), mode) }
func (h procOps) statfs() (unix.Statfs_t, error)        { return h.p.Statfs(h.root) }

// mountImage mounts the host image file img as vfat at target in p
// through a loop device, and returns the unmount.
func mountImage(t testing.TB, p *vfs.Proc, img, target, opts string, ro bool) func() {
	t.Helper()
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := p.ImportFile(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	ctl, _ := p.Open("/dev/loop-control", unix.O_RDWR, 0)
	n, err := p.Ioctl(ctl, unix.LOOP_CTL_GET_FREE, nil)
	p.Close(ctl)
	if err != nil {
		t.Fatal(err)
	}
	dev := fmt.Sprintf("/dev/loop%d", n)
	lfd, err := p.Open(dev, unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := unix.LoopConfig{Fd: uint32(fd)}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		t.Fatal(err)
	}
	p.Close(fd)
	p.Mkdir(target, 0o755)
	flags := uintptr(0)
	if ro {
		flags = unix.MS_RDONLY
	}
	if err := p.Mount(dev, target, "vfat", flags, opts); err != nil {
		p.Close(lfd)
		t.Fatal(err)
	}
	p.Close(lfd)
	return func() {
		if err := p.Unmount(target, 0); err != nil {
			t.Errorf("unmount: %v", err)
		}
	}
}

func fsckClean(t testing.TB, img string) {
	t.Helper()
	out, err := exec.Command("fsck.fat", "-n", "-V", img).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("\n  ")) || bytes.Contains(bytes.ToLower(out), []byte("dirty")) {
		t.Errorf("fsck.fat -n %s: %v\n%s", filepath.Base(img), err, out)
	}
}

func mkfsImage(t testing.TB, path string, size int64, args ...string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.fat", append(append([]string{"-i", "12345678"}, args...), path)...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.fat: %v\n%s", err, out)
	}
}

func copyFile(t testing.TB, src, dst string) {
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestKernelDifferential(t *testing.T) {
	testenv.RequireTool(t, "mkfs.fat", "fsck.fat")
	linuxvm.Require(t)
	seqs, opsPer := 12, 60
	if testing.Short() {
		seqs, opsPer = 6, 40
	}
	formats := [][]string{{"-F", "12"}, {"-F", "16"}, {"-F", "32", "-s", "1"}}
	sizes := []int64{4 << 20, 20 << 20, 40 << 20}
	dir := t.TempDir()
	var kernelImgs, ourImgs []string
	var all [][]op
	var fmts []int
	for i := range seqs {
		f := i % 3
		fmts = append(fmts, f)
		base := filepath.Join(dir, fmt.Sprintf("base%d.img", i))
		mkfsImage(t, base, sizes[f], formats[f]...)
		k := filepath.Join(dir, fmt.Sprintf("kernel%d.img", i))
		o := filepath.Join(dir, fmt.Sprintf("ours%d.img", i))
		copyFile(t, base, k)
		copyFile(t, base, o)
		kernelImgs, ourImgs = append(kernelImgs, k), append(ourImgs, o)
		all = append(all, randOps(uint64(i)+1, opsPer))
	}
	// The exchange cases, on FAT16 (a fixed root, ".." of its children
	// cluster 0) and FAT32.
	for _, f := range []int{1, 2} {
		i := len(all)
		base := filepath.Join(dir, fmt.Sprintf("base%d.img", i))
		mkfsImage(t, base, sizes[f], formats[f]...)
		k := filepath.Join(dir, fmt.Sprintf("kernel%d.img", i))
		o := filepath.Join(dir, fmt.Sprintf("ours%d.img", i))
		copyFile(t, base, k)
		copyFile(t, base, o)
		kernelImgs, ourImgs = append(kernelImgs, k), append(ourImgs, o)
		all = append(all, exchangeOps())
		fmts = append(fmts, f)
	}
	seqs = len(all)
	var want [][]result
	if err := linuxvm.Run(t, "vfat", fatModules, kernelImgs, guestReq{Seqs: all}, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != seqs {
		t.Fatalf("guest ran %d sequences", len(want))
	}
	compared := 0
	errnos := map[int]int{}
	for i, ops := range all {
		p, err := iovfs.New()
		if err != nil {
			t.Fatal(err)
		}
		p.Umask(0o022)
		unmount := mountImage(t, p, ourImgs[i], "/mnt/fat", mountOpts, false)
		got := runOps(procOps{p, "/mnt/fat"}, ops)
		unmount()
		bad := 0
		for j := range ops {
			compared++
			errnos[want[i][j].Errno]++
			if got[j] != want[i][j] {
				bad++
				if bad <= 8 {
					t.Errorf("sequence %d (FAT%s) step %d %+v:\n  iovfs  %+v\n  kernel %+v", i, formats[fmts[i]][1], j, ops[j], got[j], want[i][j])
				}
			}
		}
		fsckClean(t, kernelImgs[i])
		fsckClean(t, ourImgs[i])
	}
	var es []string
	for e, n := range errnos {
		name := "ok"
		if e != 0 {
			name = unix.ErrnoName(syscall.Errno(e))
		}
		es = append(es, fmt.Sprintf("%s %d", name, n))
	}
	sort.Strings(es)
	t.Logf("%d steps in %d sequences compared with Linux's vfat (kernel results: %s)", compared, seqs, strings.Join(es, ", "))
}
