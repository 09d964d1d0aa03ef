package bench

// The splice and copy experiments: moving a large file through a pipe to
// /dev/null with splice (page references in, dropped at the sink) against
// read and write through a 64 KiB buffer, for a tmpfs file and a file on
// ext4 mounted with dax, beside the host kernel's splice between a tmpfs
// file and a pipe; and io.Copy of a tmpfs file into another against a
// single memmove of the same bytes.

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/sysmem"
	"github.com/iovfs/iovfs/vfs"
)

// spliceChunk is the read+write variants' buffer, and the most a splice
// asks for at a time (a default pipe holds 64 KiB).
const spliceChunk = 64 << 10

// checkCopySize checks --copy-size: the splice and copy experiments keep
// the file (copy: two, and a slice for memmove) in memory, which must
// hold them.
func checkCopySize(extra map[string]string) error {
	size, err := parseSize(extra["copy-size"])
	if err != nil {
		return fmt.Errorf("--copy-size %q: %w", extra["copy-size"], err)
	}
	if err := sysmem.Check(3*size, "--copy-size "+extra["copy-size"]+" (three copies of the file in memory)"); err != nil {
		return err
	}
	return nil
}

var spliceExperiment = &Experiment{
	Name:     "splice",
	Check:    checkCopySize,
	Summary:  "a large file into a pipe and out to /dev/null: splice against read+write with a 64 KiB buffer, tmpfs and ext4-dax, and the host kernel's splice",
	Baseline: "splice-tmpfs",
	// Two copies a round, in turns: each variant's copy is timed beside
	// the others', not a whole round apart.
	Defaults: Params{Loops: 10, Ops: 2, Size: spliceChunk, Turns: 2},
	Unit:     "copies of the file",
	Describe: func(p Params) string {
		return fmt.Sprintf("%d copies of a %s file through a 64 KiB pipe to /dev/null, %d B per call", p.Ops, p.Extra["copy-size"], p.Size)
	},
	Flags: []Flag{{Name: "copy-size", Default: "256M", Usage: "size of the file copied, in bytes or with a K, M or G suffix"}},
	Setup: spliceSetup,
	Variants: []Variant{
		{Name: "splice-tmpfs", Doc: "iovfs: splice from a tmpfs file into a pipe (references to its pages), then from the pipe to /dev/null (dropped unread)", Setup: spliceVariant("/tmp/file", true)},
		{Name: "rw-tmpfs", Doc: "iovfs: read 64 KiB of the tmpfs file into a buffer, write it to /dev/null", Setup: spliceVariant("/tmp/file", false)},
		{Name: "splice-dax", Doc: "iovfs: splice from a file on ext4 mounted with dax (references to device memory), then to /dev/null", Setup: spliceVariant("/mnt/file", true)},
		{Name: "rw-dax", Doc: "iovfs: read 64 KiB of the dax file into a buffer, write it to /dev/null", Setup: spliceVariant("/mnt/file", false)},
		{Name: "host-splice", Doc: "the host kernel: splice(2) from a file on a tmpfs into a pipe, then to /dev/null", Setup: spliceHost(true)},
		{Name: "host-rw", Doc: "the host kernel: read(2) 64 KiB of the tmpfs file, write(2) it to /dev/null", Setup: spliceHost(false)},
	},
	Report: spliceRates,
}

var copyExperiment = &Experiment{
	Name:     "copy",
	Check:    checkCopySize,
	Summary:  "io.Copy of a large tmpfs file into another against one memmove of the same bytes",
	Baseline: "memmove",
	// Four copies a round, in four turns: a copy of 256 MiB is bound by
	// the memory bandwidth the machine leaves, which moves within a round
	// on a shared machine, so each copy is timed beside the others'.
	Defaults: Params{Loops: 10, Ops: 4, Size: 1, Turns: 4},
	Unit:     "copies of the file",
	Describe: func(p Params) string {
		return fmt.Sprintf("%d copies of a %s tmpfs file into another (already as large)", p.Ops, p.Extra["copy-size"])
	},
	Flags: []Flag{{Name: "copy-size", Default: "256M", Usage: "size of the file copied, in bytes or with a K, M or G suffix"}},
	Setup: copySetup,
	Variants: []Variant{
		{Name: "io-copy", Doc: "io.Copy(dst, src) between two vfs.Files on tmpfs: WriteTo, a private pipe holding the source's pages, one vectored write", Setup: copyVariant(false)},
		{Name: "io-copy-buffer", Doc: "io.CopyBuffer through a 32 KiB buffer, the files hidden behind plain io.Reader and io.Writer: what io.Copy did before (two copies)", Setup: copyVariant(true)},
		{Name: "memmove", Doc: "copy() of one Go slice into another as large: the floor", Setup: copyMemmove},
		{Name: "host-copy-file-range", Doc: "the host kernel: copy_file_range(2) between two files on a tmpfs", Setup: copyHost},
	},
	Report: spliceRates,
}

// spliceEnv is what the splice variants share: one iovfs process with the
// file on tmpfs and on a dax mount, and the host's copy on a tmpfs.
type spliceEnv struct {
	p        *vfs.Proc
	m        *daxMachine
	size     int64
	hostFile string
}

// fileBytes writes size random bytes, the same for every file of a run,
// to w in 1 MiB writes.
func fileBytes(w io.Writer, size int64) error {
	rng := rand.NewChaCha8([32]byte{'s', 'p', 'l', 'i', 'c', 'e'})
	buf := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(buf)) {
		rng.Read(buf)
		if _, err := w.Write(buf[:min(left, int64(len(buf)))]); err != nil {
			return err
		}
	}
	return nil
}

// hostTmpfs returns a directory for the host's files on a tmpfs, and the
// function that removes it.
func hostTmpfs() (string, func() error, error) {
	dir, err := os.MkdirTemp("/dev/shm", "iovfs-bench-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() error { return os.RemoveAll(dir) }, nil
}

func spliceSetup(prm Params) (any, func() error, error) {
	dax, daxClean, err := daxSetup(Params{Size: 4096, Ops: 1, Extra: map[string]string{"file-size": prm.Extra["copy-size"], "pattern": "seq"}})
	if err != nil {
		return nil, nil, err
	}
	denv := dax.(*daxEnv)
	env := &spliceEnv{size: denv.fileSize}
	var cleanups []func() error
	cleanup := func() error {
		var errs []error
		for i := len(cleanups) - 1; i >= 0; i-- {
			errs = append(errs, cleanups[i]())
		}
		return errors.Join(errs...)
	}
	cleanups = append(cleanups, daxClean)
	fail := func(err error) (any, func() error, error) {
		cleanup()
		return nil, nil, err
	}
	if env.m, err = newDaxMachine(denv); err != nil {
		return fail(err)
	}
	env.p = env.m.p
	err = env.p.Mount("/dev/loop0", "/mnt", "ext4", unix.MS_RDONLY, "dax")
	env.p.Close(env.m.lfd)
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, func() error { return env.p.Unmount("/mnt", 0) })
	f, err := env.p.OpenFile("/tmp/file", unix.O_WRONLY|unix.O_CREAT, 0o644)
	if err != nil {
		return fail(err)
	}
	// The dax file's bytes (daxSetup's) need not match these: each
	// variant only moves its own file.
	err = errors.Join(fileBytes(f, env.size), f.Close())
	if err != nil {
		return fail(err)
	}
	dir, rm, err := hostTmpfs()
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, rm)
	env.hostFile = filepath.Join(dir, "file")
	hf, err := os.Create(env.hostFile)
	if err != nil {
		return fail(err)
	}
	if err := errors.Join(fileBytes(hf, env.size), hf.Close()); err != nil {
		return fail(err)
	}
	return env, cleanup, nil
}

// spliceVariant returns an iovfs variant over the file at name: with
// splice, file to pipe to /dev/null; without, read and write through a
// 64 KiB buffer.
func spliceVariant(name string, splice bool) func(Params, any) (Op, error) {
	return func(prm Params, e any) (Op, error) {
		env := e.(*spliceEnv)
		p := env.p
		in, err := p.Open(name, unix.O_RDONLY, 0)
		if err != nil {
			return Op{}, err
		}
		null, err := p.Open("/dev/null", unix.O_WRONLY, 0)
		if err != nil {
			p.Close(in)
			return Op{}, err
		}
		r, w, err := p.Pipe2(0)
		if err != nil {
			p.Close(in)
			p.Close(null)
			return Op{}, err
		}
		buf := make([]byte, prm.Size)
		run := func(n int) error {
			for range n {
				var off int64
				for off < env.size {
					if splice {
						k, err := p.Splice(in, &off, w, nil, prm.Size, 0)
						if k <= 0 {
							return fmt.Errorf("splice in at %d: %d, %v", off, k, err)
						}
						if m, err := p.Splice(r, nil, null, nil, int(k), 0); m != k {
							return fmt.Errorf("splice out: %d of %d, %v", m, k, err)
						}
						continue
					}
					k, err := p.Pread(in, buf, off)
					if k <= 0 {
						return fmt.Errorf("read at %d: %d, %v", off, k, err)
					}
					if m, err := p.Write(null, buf[:k]); m != k {
						return fmt.Errorf("write: %d of %d, %v", m, k, err)
					}
					off += int64(k)
				}
			}
			return nil
		}
		return Op{Run: run, Close: func() error {
			return errors.Join(p.Close(in), p.Close(null), p.Close(r), p.Close(w))
		}}, nil
	}
}

// spliceHost is the same on the host kernel, with the host's copy of the
// file on a tmpfs.
func spliceHost(splice bool) func(Params, any) (Op, error) {
	return func(prm Params, e any) (Op, error) {
		env := e.(*spliceEnv)
		in, err := unix.Open(env.hostFile, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return Op{}, err
		}
		null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(in)
			return Op{}, err
		}
		var pfd [2]int
		if err := unix.Pipe2(pfd[:], unix.O_CLOEXEC); err != nil {
			unix.Close(in)
			unix.Close(null)
			return Op{}, err
		}
		buf := make([]byte, prm.Size)
		run := func(n int) error {
			for range n {
				var off int64
				for off < env.size {
					if splice {
						k, err := unix.Splice(in, &off, pfd[1], nil, prm.Size, 0)
						if k <= 0 {
							return fmt.Errorf("host splice in at %d: %d, %v", off, k, err)
						}
						if m, err := unix.Splice(pfd[0], nil, null, nil, int(k), 0); m != k {
							return fmt.Errorf("host splice out: %d of %d, %v", m, k, err)
						}
						continue
					}
					k, err := unix.Pread(in, buf, off)
					if k <= 0 {
						return fmt.Errorf("host read at %d: %d, %v", off, k, err)
					}
					if m, err := unix.Write(null, buf[:k]); m != k {
						return fmt.Errorf("host write: %d of %d, %v", m, k, err)
					}
					off += int64(k)
				}
			}
			return nil
		}
		return Op{Run: run, Close: func() error {
			return errors.Join(unix.Close(in), unix.Close(null), unix.Close(pfd[0]), unix.Close(pfd[1]))
		}}, nil
	}
}

// copyEnv is what the copy variants share: an iovfs process with the
// source file, and the host's files.
type copyEnv struct {
	p       *vfs.Proc
	size    int64
	hostDir string
	hostSrc string
}

func copySetup(prm Params) (any, func() error, error) {
	size, err := parseSize(prm.Extra["copy-size"])
	if err != nil {
		return nil, nil, fmt.Errorf("--copy-size %q: %w", prm.Extra["copy-size"], err)
	}
	p, err := iovfs.New(iovfs.WithRAMDisks(0, 0))
	if err != nil {
		return nil, nil, err
	}
	env := &copyEnv{p: p, size: size}
	f, err := p.OpenFile("/tmp/src", unix.O_WRONLY|unix.O_CREAT, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := errors.Join(fileBytes(f, size), f.Close()); err != nil {
		return nil, nil, err
	}
	dir, rm, err := hostTmpfs()
	if err != nil {
		return nil, nil, err
	}
	env.hostDir = dir
	env.hostSrc = filepath.Join(dir, "src")
	hf, err := os.Create(env.hostSrc)
	if err != nil {
		rm()
		return nil, nil, err
	}
	if err := errors.Join(fileBytes(hf, size), hf.Close()); err != nil {
		rm()
		return nil, nil, err
	}
	return env, rm, nil
}

// plainReader and plainWriter hide a File's WriterTo and ReaderFrom.
type plainReader struct{ io.Reader }
type plainWriter struct{ io.Writer }

// copyVariant returns an io.Copy variant: each op copies /tmp/src into
// its own destination file from the start (the warm-up round makes the
// destination's pages).
func copyVariant(buffered bool) func(Params, any) (Op, error) {
	return func(prm Params, e any) (Op, error) {
		env := e.(*copyEnv)
		p := env.p
		name := "/tmp/dst-io-copy"
		if buffered {
			name += "-buffer"
		}
		src, err := p.OpenFile("/tmp/src", unix.O_RDONLY, 0)
		if err != nil {
			return Op{}, err
		}
		dst, err := p.OpenFile(name, unix.O_WRONLY|unix.O_CREAT, 0o644)
		if err != nil {
			src.Close()
			return Op{}, err
		}
		buf := make([]byte, 32<<10)
		run := func(n int) error {
			for range n {
				src.Seek(0, io.SeekStart)
				dst.Seek(0, io.SeekStart)
				var k int64
				var err error
				if buffered {
					k, err = io.CopyBuffer(plainWriter{dst}, plainReader{src}, buf)
				} else {
					k, err = io.Copy(dst, src)
				}
				if k != env.size || err != nil {
					return fmt.Errorf("io.Copy: %d of %d, %v", k, env.size, err)
				}
			}
			return nil
		}
		return Op{Run: run, Close: func() error {
			return errors.Join(src.Close(), dst.Close(), p.Unlink(name))
		}}, nil
	}
}

// copyMemmove copies one Go slice into another of the file's size.
func copyMemmove(prm Params, e any) (Op, error) {
	env := e.(*copyEnv)
	src := make([]byte, env.size)
	if err := fileBytes(&sliceWriter{b: src}, env.size); err != nil {
		return Op{}, err
	}
	dst := make([]byte, env.size)
	clear(dst) // fault the pages in before the first round
	run := func(n int) error {
		for range n {
			copy(dst, src)
		}
		return nil
	}
	return Op{Run: run}, nil
}

type sliceWriter struct {
	b   []byte
	off int
}

func (w *sliceWriter) Write(p []byte) (int, error) {
	n := copy(w.b[w.off:], p)
	w.off += n
	return n, nil
}

// copyHost copies the host's tmpfs file into another with
// copy_file_range(2).
func copyHost(prm Params, e any) (Op, error) {
	env := e.(*copyEnv)
	in, err := unix.Open(env.hostSrc, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Op{}, err
	}
	dstName := filepath.Join(env.hostDir, "dst")
	out, err := unix.Open(dstName, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		unix.Close(in)
		return Op{}, err
	}
	run := func(n int) error {
		for range n {
			var roff, woff int64
			for roff < env.size {
				k, err := unix.CopyFileRange(in, &roff, out, &woff, int(env.size-roff), 0)
				if k <= 0 {
					return fmt.Errorf("host copy_file_range at %d: %d, %v", roff, k, err)
				}
			}
		}
		return nil
	}
	return Op{Run: run, Close: func() error {
		return errors.Join(unix.Close(in), unix.Close(out), os.Remove(dstName))
	}}, nil
}

// spliceRates writes each variant's rate in MB/s of the file moved.
func spliceRates(w io.Writer, res *Result) {
	size, err := parseSize(res.Params.Extra["copy-size"])
	if err != nil {
		return
	}
	fmt.Fprintln(w)
	for _, v := range res.Variants {
		line := fmt.Sprintf("%-22s %8.0f MB/s", v.Name, float64(size)/v.NsPerOp*1e3)
		if r, ok := res.Ratio(v.Name); ok {
			line += fmt.Sprintf(", %sx %s's time (95%% CI %s .. %s)", fmtRatio(r.Median), res.Experiment.Baseline, fmtRatio(r.CI.Low), fmtRatio(r.CI.High))
		}
		fmt.Fprintln(w, line)
	}
}
