package bench

// The fuse experiment: reads through a FUSE export of iovfs (tmpfs, and
// ext4 with dax) against the same file on a kernel tmpfs and a kernel ext4
// loop mount, and against go-fuse's loopback file system over a kernel
// tmpfs. The FUSE variants open the file with O_DIRECT, so each read is
// a READ request served by the file system, not a page-cache hit (but for
// iovfs-ext4-dax-cached, which shows the page cache of the FUSE mount);
// the kernel variants read through the page cache, which is what they are.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/fuse"
	"github.com/iovfs/iovfs/vfs"
)

var fuseExperiment = &Experiment{
	Name:     "fuse",
	Check:    checkFileFlags,
	Summary:  "reads through a FUSE export of iovfs (tmpfs, ext4-dax) against kernel tmpfs, a kernel ext4 loop mount and go-fuse loopback (root)",
	Baseline: "kernel-ext4",
	Defaults: Params{Loops: 5, Ops: 256, Size: 1 << 20},
	Unit:     "reads",
	Describe: func(p Params) string {
		return fmt.Sprintf("%d preads of %d B (%s, wrapping) from a %s file; FUSE variants open it O_DIRECT", p.Ops, p.Size, p.Extra["pattern"], p.Extra["file-size"])
	},
	Flags: []Flag{
		{Name: "file-size", Default: "256M", Usage: "size of the file read, in bytes or with a K, M or G suffix"},
		{Name: "pattern", Default: "seq", Usage: "seq (sequential, wrapping at the end) or rand (random offsets, multiples of --size)"},
	},
	Setup: fuseSetup,
	Variants: []Variant{
		{Name: "kernel-tmpfs", Doc: "pread(2) of the file on a private kernel tmpfs", Setup: fuseKernelTmpfs},
		{Name: "kernel-ext4", Doc: "pread(2) of the file in a read-only kernel loop mount of the ext4 image", Setup: fuseKernelExt4},
		{Name: "iovfs-tmpfs", Doc: "pread(2), O_DIRECT, through an iovfs FUSE export of a tmpfs holding the file", Setup: fuseIovfsTmpfs},
		{Name: "iovfs-ext4-dax", Doc: "pread(2), O_DIRECT, through an iovfs FUSE export of the image mounted ext4 -o dax", Setup: fuseIovfsExt4(unix.O_DIRECT)},
		{Name: "iovfs-ext4-dax-cached", Doc: "the same without O_DIRECT: after the warm-up round the reads come from the FUSE mount's page cache, what a program re-reading the file sees", Setup: fuseIovfsExt4(0)},
		{Name: "iovfs-hostfs", Doc: "pread(2), O_DIRECT, through an iovfs FUSE export of a hostfs mount of the kernel tmpfs: with FUSE passthrough, as loopback, so the kernel reads the host file itself once iovfs has served the OPEN", Setup: fuseIovfsHostfs(false)},
		{Name: "iovfs-hostfs-nopt", Doc: "the same with passthrough off (fuse.Options.NoPassthrough): every read is a READ served by iovfs's hostfs (one host pread)", Setup: fuseIovfsHostfs(true)},
		{Name: "loopback", Doc: "pread(2), O_DIRECT, through go-fuse's loopback file system over the kernel tmpfs, as it ships: with FUSE passthrough where the kernel has it, the kernel then reads the backing file itself", Setup: fuseLoopback(false)},
		{Name: "memfile", Doc: "pread(2), O_DIRECT, through a go-fuse server whose file is one Go slice in memory (go-fuse's MemRegularFile, each READ a slice of it): no file system behind the READ, the floor of a FUSE export's O_DIRECT read on this kernel", Setup: fuseMemFile},
		{Name: "loopback-nopt", Doc: "the same with passthrough disabled (CAP_PASSTHROUGH off): every read is a READ request served by go-fuse", Setup: fuseLoopback(true)},
	},
}

// fuseSkip is the env of a run that cannot mount: every variant is
// skipped with the reason.
type fuseSkip string

func fuseSetup(p Params) (any, func() error, error) {
	if os.Geteuid() != 0 {
		return fuseSkip("needs root: FUSE mounts, a kernel tmpfs and a kernel loop mount"), nil, nil
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fuseSkip("needs /dev/fuse: " + err.Error()), nil, nil
	}
	return daxSetup(p)
}

// fuseEnv returns the shared set-up, or the skip that replaces it.
func fuseEnv(e any) (*daxEnv, error) {
	if r, ok := e.(fuseSkip); ok {
		return nil, Skip(string(r))
	}
	return e.(*daxEnv), nil
}

// fillFile writes the experiment's file content (daxSetup's bytes) with
// write.
func fillFile(size int64, write func([]byte) error) error {
	rng := rand.NewChaCha8([32]byte{'d', 'a', 'x'})
	buf := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(buf)) {
		rng.Read(buf)
		if err := write(buf[:min(left, int64(len(buf)))]); err != nil {
			return err
		}
	}
	return nil
}

// hostPreads opens path with flags and returns the Op that preads it.
func hostPreads(env *daxEnv, prm Params, path string, flags int, closeAll func() error) (Op, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		closeAll()
		return Op{}, err
	}
	return Op{
		Run: preadLoop(func(b []byte, off int64) (int, error) { return unix.Pread(fd, b, off) }, env.offs, prm.Size),
		Close: func() error {
			unix.Close(fd)
			return closeAll()
		},
	}, nil
}

// kernelTmpfs mounts a private kernel tmpfs holding the file.
func kernelTmpfs(env *daxEnv) (string, func() error, error) {
	dir, err := os.MkdirTemp("", "iovfs-bench-fuse-tmpfs-")
	if err != nil {
		return "", nil, err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", env.fileSize+1<<20)); err != nil {
		os.Remove(dir)
		return "", nil, err
	}
	cl := func() error {
		err := unix.Unmount(dir, 0)
		if err != nil {
			// Busy (a hostfs export's descriptors wait for the garbage
			// collector): detach, so no mount outlives the run.
			err = unix.Unmount(dir, unix.MNT_DETACH)
		}
		os.Remove(dir)
		return err
	}
	f, err := os.Create(filepath.Join(dir, "file"))
	if err == nil {
		err = fillFile(env.fileSize, func(b []byte) error { _, err := f.Write(b); return err })
		f.Close()
	}
	if err != nil {
		cl()
		return "", nil, err
	}
	return dir, cl, nil
}

func fuseKernelTmpfs(prm Params, e any) (Op, error) {
	env, err := fuseEnv(e)
	if err != nil {
		return Op{}, err
	}
	dir, cl, err := kernelTmpfs(env)
	if err != nil {
		return Op{}, err
	}
	return hostPreads(env, prm, filepath.Join(dir, "file"), 0, cl)
}

func fuseKernelExt4(prm Params, e any) (Op, error) {
	env, err := fuseEnv(e)
	if err != nil {
		return Op{}, err
	}
	hm, err := hostLoopMount(env.img)
	if err != nil {
		return Op{}, Skip("kernel loop mount failed: " + err.Error())
	}
	return hostPreads(env, prm, filepath.Join(hm.dir, "file"), 0, hm.close)
}

// exportOp exports root of p on a fresh directory and preads file there,
// opened with flags.
func exportOp(env *daxEnv, prm Params, p *vfs.Proc, root string, flags int) (Op, error) {
	return exportOpts(env, prm, p, root, flags, fuse.Options{}, nil)
}

// exportOpts is exportOp with export options and a clean-up run after
// the unmount.
func exportOpts(env *daxEnv, prm Params, p *vfs.Proc, root string, flags int, o fuse.Options, after func() error) (Op, error) {
	mnt, err := os.MkdirTemp("", "iovfs-bench-fuse-mnt-")
	if err != nil {
		if after != nil {
			after()
		}
		return Op{}, err
	}
	s, err := fuse.Mount(p, root, mnt, o)
	if err != nil {
		os.Remove(mnt)
		if after != nil {
			after()
		}
		return Op{}, err
	}
	return hostPreads(env, prm, filepath.Join(mnt, "file"), flags, func() error {
		err := s.Unmount()
		os.Remove(mnt)
		if after != nil {
			if err2 := after(); err == nil {
				err = err2
			}
		}
		return err
	})
}

func fuseIovfsHostfs(noPassthrough bool) func(Params, any) (Op, error) {
	return func(prm Params, e any) (Op, error) {
		env, err := fuseEnv(e)
		if err != nil {
			return Op{}, err
		}
		dir, cl, err := kernelTmpfs(env)
		if err != nil {
			return Op{}, err
		}
		p, err := iovfs.New()
		if err == nil {
			err = p.Mount(dir, "/mnt", "hostfs", 0, "")
		}
		if err != nil {
			cl()
			return Op{}, err
		}
		return exportOpts(env, prm, p, "/mnt", unix.O_DIRECT, fuse.Options{NoPassthrough: noPassthrough}, func() error {
			if err := p.Unmount("/mnt", 0); err != nil {
				cl()
				return fmt.Errorf("iovfs unmount of hostfs: %w", err)
			}
			// hostfs closes its host O_PATH descriptors when the
			// garbage collector drops its inodes, so the kernel
			// tmpfs is busy until then.
			for range 10 {
				runtime.GC()
				time.Sleep(10 * time.Millisecond)
				if unix.Unmount(dir, 0) == nil {
					break
				}
			}
			if err := cl(); err != nil && !errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("kernel tmpfs unmount: %w", err)
			}
			return nil
		})
	}
}

func fuseIovfsTmpfs(prm Params, e any) (Op, error) {
	env, err := fuseEnv(e)
	if err != nil {
		return Op{}, err
	}
	p, err := iovfs.New()
	if err != nil {
		return Op{}, err
	}
	if err := p.Mount("tmpfs", "/mnt", "tmpfs", 0, ""); err != nil {
		return Op{}, err
	}
	fd, err := p.Open("/mnt/file", unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err != nil {
		return Op{}, err
	}
	err = fillFile(env.fileSize, func(b []byte) error { _, err := p.Write(fd, b); return err })
	p.Close(fd)
	if err != nil {
		return Op{}, err
	}
	return exportOp(env, prm, p, "/mnt", unix.O_DIRECT)
}

func fuseIovfsExt4(flags int) func(Params, any) (Op, error) {
	return func(prm Params, e any) (Op, error) { return fuseIovfsExt4Op(prm, e, flags) }
}

func fuseIovfsExt4Op(prm Params, e any, flags int) (Op, error) {
	env, err := fuseEnv(e)
	if err != nil {
		return Op{}, err
	}
	m, err := newDaxMachine(env)
	if err != nil {
		return Op{}, err
	}
	err = m.p.Mount("/dev/loop0", "/mnt", "ext4", unix.MS_RDONLY, "dax")
	m.p.Close(m.lfd)
	if err != nil {
		return Op{}, err
	}
	return exportOp(env, prm, m.p, "/mnt", flags)
}

func fuseLoopback(noPassthrough bool) func(Params, any) (Op, error) {
	return func(prm Params, e any) (Op, error) { return fuseLoopbackOp(prm, e, noPassthrough) }
}

func fuseLoopbackOp(prm Params, e any, noPassthrough bool) (Op, error) {
	env, err := fuseEnv(e)
	if err != nil {
		return Op{}, err
	}
	dir, cl, err := kernelTmpfs(env)
	if err != nil {
		return Op{}, err
	}
	root, err := gofs.NewLoopbackRoot(dir)
	if err != nil {
		cl()
		return Op{}, err
	}
	mnt, err := os.MkdirTemp("", "iovfs-bench-fuse-loop-")
	if err != nil {
		cl()
		return Op{}, err
	}
	mo := gofuse.MountOptions{DirectMount: true, MaxWrite: 1 << 20, MaxReadAhead: 1 << 20, DisableSplice: true}
	if noPassthrough {
		mo.DisabledCapabilities = gofuse.CAP_PASSTHROUGH
	}
	srv, err := gofs.Mount(mnt, root, &gofs.Options{MountOptions: mo})
	if err != nil {
		os.Remove(mnt)
		cl()
		return Op{}, err
	}
	return hostPreads(env, prm, filepath.Join(mnt, "file"), unix.O_DIRECT, func() error {
		err := srv.Unmount()
		os.Remove(mnt)
		cl()
		return err
	})
}

// fuseMemFile mounts a go-fuse file system of one file held in a Go
// slice: every READ is answered with a slice of it, so what is left is
// the FUSE request path itself (the kernel's copy into the reader's
// pages, the round trip through /dev/fuse, go-fuse's dispatch).
func fuseMemFile(prm Params, e any) (Op, error) {
	env, err := fuseEnv(e)
	if err != nil {
		return Op{}, err
	}
	data := make([]byte, 0, env.fileSize)
	if err := fillFile(env.fileSize, func(b []byte) error { data = append(data, b...); return nil }); err != nil {
		return Op{}, err
	}
	file := &gofs.MemRegularFile{Data: data, Attr: gofuse.Attr{Mode: 0o444}}
	root := &gofs.Inode{}
	mnt, err := os.MkdirTemp("", "iovfs-bench-fuse-mem-")
	if err != nil {
		return Op{}, err
	}
	mo := gofuse.MountOptions{DirectMount: true, MaxWrite: 1 << 20, MaxReadAhead: 1 << 20, DisableSplice: true}
	srv, err := gofs.Mount(mnt, root, &gofs.Options{MountOptions: mo, OnAdd: func(ctx context.Context) {
		root.AddChild("file", root.NewPersistentInode(ctx, file, gofs.StableAttr{}), false)
	}})
	if err != nil {
		os.Remove(mnt)
		return Op{}, err
	}
	return hostPreads(env, prm, filepath.Join(mnt, "file"), unix.O_DIRECT, func() error {
		err := srv.Unmount()
		os.Remove(mnt)
		return err
	})
}
