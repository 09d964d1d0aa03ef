package bench

// The dax experiment: the ext4-dax "Expense of read_iter" measurement from
// the seed (reference/seed-lkml-expense-of-read-iter.txt), 4 KiB reads of
// a file on ext4 mounted with dax, through each read path the thread
// compared, plus a plain memory copy (the floor) and the host kernel.

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// daxSeedReads is the seed's read count, 2^26.
const daxSeedReads = 1 << 26

// daxRounds is the default number of rounds; the default --reads is 2^20
// in total per variant, split across them.
const daxRounds = 10

// daxTurns is the default number of turns a round is split into (about
// 2,100 reads, 0.1 to 0.5 ms, per turn). Timed a whole variant's round
// apart (5 to 25 ms), read and memcpy met different shares of the
// machine's memory bandwidth and their per-round ratios scattered by
// +-30%; turns pair them within a turn of each other.
const daxTurns = 50

var daxExperiment = &Experiment{
	Name:     "dax",
	Check:    checkFileFlags,
	Summary:  "the ext4-dax \"Expense of read_iter\" experiment: 4 KiB reads of a file on ext4 mounted with dax, through each read path",
	Baseline: "read",
	Defaults: Params{Loops: daxRounds, Ops: (1<<20 + daxRounds - 1) / daxRounds, Size: 4096, Turns: daxTurns},
	Unit:     "reads",
	Describe: func(p Params) string {
		return fmt.Sprintf("%d preads of %d B (%s, wrapping) from a %s file on ext4 (mke2fs -d, ImportFile, /dev/loop0, mount -o dax); %d reads per variant in all",
			p.Ops, p.Size, p.Extra["pattern"], p.Extra["file-size"], p.Ops*p.Loops)
	},
	Flags: []Flag{
		{Name: "file-size", Default: "64M", Usage: "size of the file read, in bytes or with a K, M or G suffix"},
		{Name: "pattern", Default: "seq", Usage: "seq (sequential, wrapping at the end) or rand (random offsets, multiples of --size)"},
	},
	Setup: daxSetup,
	Variants: []Variant{
		{Name: "iomap", Doc: "ReadIter only, through begin/copy/end mapping callbacks that walk the extent tree on every read (dax_iomap_rw)", Setup: daxVFS("x-iovfs-read=iomap")},
		{Name: "iter-wrap", Doc: "ReadIter only, which calls the internal scalar read for each segment", Setup: daxVFS("x-iovfs-read=iter-wrap")},
		{Name: "iter-1seg", Doc: "ReadIter only, which tests for one segment and calls the scalar read", Setup: daxVFS("x-iovfs-read=iter-1seg")},
		{Name: "read", Doc: "the driver's scalar Read (the production handle, which also has ReadIter)", Setup: daxVFS("")},
		{Name: "memcpy", Doc: "copy the same ranges straight out of the loop device's mapping: no file system, the floor", Setup: daxMemcpy},
		{Name: "host", Doc: "the host kernel's pread(2) on the same file in a read-only kernel loop mount of the image (root)", Setup: daxHost},
	},
	ReferenceNote: "the seed's figures: LKML \"Expense of read_iter\", January 2021, ext4-dax on persistent memory,\n" +
		"  2^26 reads of 4 KiB; total seconds divided by 2^26 reads. Their reads are system calls, ours function calls.",
	Reference: []Reference{
		{Label: "read_iter through dax_iomap_rw (original), 36.477 s", Variant: "iomap", NsPerOp: 36.477e9 / daxSeedReads},
		{Label: "read_iter wrapping an internal read, 28.950 s", Variant: "iter-wrap", NsPerOp: 28.950e9 / daxSeedReads},
		{Label: "read_iter testing for one segment, 27.947 s", Variant: "iter-1seg", NsPerOp: 27.947e9 / daxSeedReads},
		{Label: "read, 26.899 s", Variant: "read", NsPerOp: 26.899e9 / daxSeedReads},
	},
	Report: daxTable,
}

// daxEnv is what the variants share: the image and the read offsets.
type daxEnv struct {
	img      string
	fileSize int64
	offs     []int64 // the offsets of one round's reads, the same for every variant
	seq      bool    // offs[i] is i%slots blocks of --size in
	slots    int
	enrolled int // variants set up so far (enroll)
	// buf is every variant's destination: the variants run one at a time,
	// and with one buffer each they differed by where their buffers fell
	// in the caches, which changed from run to run.
	buf []byte
}

// enroll counts a variant in and returns the function that gives its
// first index into offs, for its first Run, once every variant has
// enrolled: the variants start evenly spread over the offsets (for seq,
// over the file), so that when they alternate in turns no turn reads what
// the turn before it has just brought into the cache. (At 64 MiB the
// second of two turns over the same 8 MiB found much of it in L3 and took
// half the time.) Each still reads every offset in turn.
func (env *daxEnv) enroll() func() int {
	k := env.enrolled
	env.enrolled++
	return func() int {
		period := len(env.offs)
		if env.seq {
			period = min(period, env.slots)
		}
		return k * period / env.enrolled
	}
}

// parseSize reads "4096", "64M", "1G".
func parseSize(s string) (int64, error) {
	mul := int64(1)
	switch {
	case strings.HasSuffix(s, "K") || strings.HasSuffix(s, "k"):
		mul = 1 << 10
	case strings.HasSuffix(s, "M") || strings.HasSuffix(s, "m"):
		mul = 1 << 20
	case strings.HasSuffix(s, "G") || strings.HasSuffix(s, "g"):
		mul = 1 << 30
	}
	if mul != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mul {
		return 0, errors.New("want a positive size such as 4096 or 64M")
	}
	return n * mul, nil
}

// checkFileFlags checks --file-size and --pattern of the experiments that
// read one file (dax, fuse): the file, made in the temporary directory,
// must fit in the space free there.
func checkFileFlags(extra map[string]string) error {
	size, err := parseSize(extra["file-size"])
	if err != nil {
		return fmt.Errorf("--file-size %q: %w", extra["file-size"], err)
	}
	if p := extra["pattern"]; p != "seq" && p != "rand" {
		return fmt.Errorf("--pattern %q: want seq or rand", p)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(os.TempDir(), &st); err == nil {
		// The file, and the image holding it (twice the file, at most).
		if free := int64(st.Bavail) * st.Bsize; 2*size > free {
			return fmt.Errorf("--file-size %s: the file and its image need %d MiB in %s, which has %d MiB free", extra["file-size"], 2*size>>20, os.TempDir(), free>>20)
		}
	}
	return nil
}

// daxSetup builds the image: one file of --file-size random bytes, put in
// by mke2fs -d into an ext4 file system with 4 KiB blocks.
func daxSetup(p Params) (any, func() error, error) {
	size, err := parseSize(p.Extra["file-size"])
	if err != nil {
		return nil, nil, fmt.Errorf("--file-size %q: %w", p.Extra["file-size"], err)
	}
	if int64(p.Size) > size {
		return nil, nil, fmt.Errorf("--size %d is larger than --file-size %d", p.Size, size)
	}
	pattern := p.Extra["pattern"]
	if pattern != "seq" && pattern != "rand" {
		return nil, nil, fmt.Errorf("--pattern %q: want seq or rand", pattern)
	}
	mke2fs, err := exec.LookPath("mke2fs")
	if err != nil {
		return nil, nil, errors.New("mke2fs not found: the dax experiment builds its ext4 image with e2fsprogs (apt-get install e2fsprogs)")
	}
	dir, err := os.MkdirTemp("", "iovfs-bench-dax-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() error { return os.RemoveAll(dir) }
	fail := func(err error) (any, func() error, error) {
		cleanup()
		return nil, nil, err
	}
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		return fail(err)
	}
	f, err := os.Create(filepath.Join(src, "file"))
	if err != nil {
		return fail(err)
	}
	rng := rand.NewChaCha8([32]byte{'d', 'a', 'x'})
	buf := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(buf)) {
		rng.Read(buf)
		if _, err := f.Write(buf[:min(left, int64(len(buf)))]); err != nil {
			f.Close()
			return fail(err)
		}
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	img := filepath.Join(dir, "ext4.img")
	imgKiB := (size+size/8)>>10 + 8<<10
	out, err := exec.Command(mke2fs, "-q", "-F", "-t", "ext4", "-b", "4096", "-d", src, img, strconv.FormatInt(imgKiB, 10)+"k").CombinedOutput()
	if err != nil {
		return fail(fmt.Errorf("mke2fs: %v: %s", err, out))
	}
	os.Remove(filepath.Join(src, "file"))

	slots := size / int64(p.Size)
	env := &daxEnv{img: img, fileSize: size, offs: make([]int64, p.Ops), seq: pattern == "seq", slots: int(min(slots, 1<<40)), buf: make([]byte, p.Size)}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range env.offs {
		if pattern == "seq" {
			env.offs[i] = int64(i) % slots * int64(p.Size)
		} else {
			env.offs[i] = r.Int64N(slots) * int64(p.Size)
		}
	}
	return env, cleanup, nil
}

// daxMachine is an iovfs process with the image on /dev/loop0, over the
// imported host file (so the loop device maps it and offers direct
// access), and the descriptor that keeps the device bound.
type daxMachine struct {
	p   *vfs.Proc
	lfd int
}

func newDaxMachine(env *daxEnv) (*daxMachine, error) {
	p, err := iovfs.New()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(env.img)
	if err != nil {
		return nil, err
	}
	fd, err := p.ImportFile(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	defer p.Close(fd)
	lfd, err := p.Open("/dev/loop0", unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	cfg := unix.LoopConfig{Fd: uint32(fd)}
	cfg.Info.Flags = unix.LO_FLAGS_READ_ONLY | unix.LO_FLAGS_AUTOCLEAR
	if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		p.Close(lfd)
		return nil, fmt.Errorf("LOOP_CONFIGURE: %w", err)
	}
	return &daxMachine{p: p, lfd: lfd}, nil
}

// daxVFS returns the Setup of an iovfs variant: the image mounted with dax
// and the extra mount option opt, and a loop of preads of the file.
func daxVFS(opt string) func(Params, any) (Op, error) {
	return func(prm Params, e any) (Op, error) {
		env := e.(*daxEnv)
		m, err := newDaxMachine(env)
		if err != nil {
			return Op{}, err
		}
		p := m.p
		data := "dax"
		if opt != "" {
			data += "," + opt
		}
		err = p.Mount("/dev/loop0", "/mnt", "ext4", unix.MS_RDONLY, data)
		p.Close(m.lfd) // the mount holds the device now
		if err != nil {
			return Op{}, err
		}
		fd, err := p.Open("/mnt/file", unix.O_RDONLY, 0)
		if err != nil {
			p.Unmount("/mnt", 0)
			return Op{}, err
		}
		// The loop calls Pread itself, as daxMemcpy's calls copy: a
		// function value between them would be the harness's cost.
		buf := env.buf
		start := env.enroll()
		i := -1
		run := func(n int) error {
			if i < 0 {
				i = start()
			}
			for range n {
				if m, err := p.Pread(fd, buf, env.offs[i]); m != len(buf) {
					return shortRead(m, len(buf), err)
				}
				if i++; i == len(env.offs) {
					i = 0
				}
			}
			return nil
		}
		return Op{
			Run: run,
			Close: func() error {
				p.Close(fd)
				return p.Unmount("/mnt", 0)
			},
		}, nil
	}
}

// preadLoop returns a Run that reads size bytes at the offsets in offs in
// turn, continuing across rounds where the last round stopped.
func preadLoop(pread func([]byte, int64) (int, error), offs []int64, size int) func(int) error {
	return preadLoopFrom(pread, offs, make([]byte, size), func() int { return 0 })
}

// preadLoopFrom is preadLoop into buf, starting at offs[start()], asked at
// the first Run.
func preadLoopFrom(pread func([]byte, int64) (int, error), offs []int64, buf []byte, start func() int) func(int) error {
	i := -1
	return func(n int) error {
		if i < 0 {
			i = start()
		}
		for range n {
			if m, err := pread(buf, offs[i]); m != len(buf) {
				return shortRead(m, len(buf), err)
			}
			if i++; i == len(offs) {
				i = 0
			}
		}
		return nil
	}
}

// daxMemcpy copies each range straight out of the loop device's mapping
// (block.DirectAccessor), with the file's block map looked up in a table
// made at set-up: what a read costs without a file system. It copies as
// the production path does, one copy per extent into the same kind of
// buffer, and finds the run with a shift and a mask
// (the block size is a power of two; an integer divide here cost more
// than the file system's lookup).
func daxMemcpy(prm Params, e any) (Op, error) {
	env := e.(*daxEnv)
	m, err := newDaxMachine(env)
	if err != nil {
		return Op{}, err
	}
	b, err := m.p.Backing(m.lfd)
	if err != nil {
		return Op{}, err
	}
	closeAll := func() error {
		b.Release()
		return m.p.Close(m.lfd)
	}
	mem, err := deviceMemory(b)
	if err != nil {
		closeAll()
		return Op{}, err
	}
	runs, bits, err := blockTable(mem, "file")
	if err != nil {
		closeAll()
		return Op{}, err
	}
	mask := int64(1)<<bits - 1
	buf := env.buf
	start := env.enroll()
	i := -1
	run := func(n int) error {
		if i < 0 {
			i = start()
		}
		for range n {
			off := env.offs[i]
			for done := 0; done < len(buf); {
				pos := off + int64(done)
				r := runs[pos>>bits]
				k := copy(buf[done:], mem[r.dev+pos&mask:][:min(int64(len(buf)-done), r.end-pos)])
				done += k
			}
			if i++; i == len(env.offs) {
				i = 0
			}
		}
		return nil
	}
	return Op{Run: run, Close: closeAll}, nil
}

// blockRun is where one block of the file lives: its device offset, and
// the file offset where the extent holding it ends.
type blockRun struct{ dev, end int64 }

// deviceMemory returns a view of the whole block device behind b.
func deviceMemory(b *vfs.Backing) ([]byte, error) {
	dev, ok := block.Of(b.Handle())
	if !ok {
		return nil, errors.New("not a block device")
	}
	da, ok := dev.(block.DirectAccessor)
	if !ok {
		return nil, errors.New("the loop device offers no direct access")
	}
	end := block.ReadEnd(dev)
	mem, err := da.DirectAccess(0, int(end))
	if err != nil {
		return nil, err
	}
	if int64(len(mem)) != end {
		return nil, fmt.Errorf("the device's memory is not contiguous (%d of %d bytes)", len(mem), end)
	}
	return mem, nil
}

// blockTable returns, for every block of the file called name in the
// root directory of the ext4 volume in mem, its device offset and the end
// of its extent (the run a production read copies in one piece), and the
// log2 of the block size.
func blockTable(mem []byte, name string) ([]blockRun, uint, error) {
	v, err := disk.Open(disk.BytesDevice(mem), disk.Options{})
	if err != nil {
		return nil, 0, err
	}
	root, err := v.Inode(v.Root())
	if err != nil {
		return nil, 0, err
	}
	ino, err := v.Lookup(root, name)
	if err != nil {
		return nil, 0, err
	}
	in, err := v.Inode(ino)
	if err != nil {
		return nil, 0, err
	}
	bs := int64(v.BlockSize())
	bits := uint(0)
	for bs>>bits > 1 {
		bits++
	}
	runs := make([]blockRun, (int64(in.Size)+bs-1)/bs)
	for l := uint64(0); l < uint64(len(runs)); {
		m, err := v.MapBlocks(in, nil, l)
		if err != nil {
			return nil, 0, err
		}
		if m.Hole || m.Unwritten {
			return nil, 0, fmt.Errorf("%s has a hole at block %d", name, l)
		}
		end := min(int64(m.Logical+m.Len)*bs, int64(in.Size))
		for ; l < m.Logical+m.Len && l < uint64(len(runs)); l++ {
			runs[l] = blockRun{dev: int64(m.Physical+(l-m.Logical)) * bs, end: end}
		}
	}
	return runs, bits, nil
}

// daxHost mounts the same image read-only in the host kernel, through a
// loop device that clears itself on unmount, and preads the file.
func daxHost(prm Params, e any) (Op, error) {
	env := e.(*daxEnv)
	if os.Geteuid() != 0 {
		return Op{}, Skip("needs root for a kernel loop mount of the image")
	}
	hm, err := hostLoopMount(env.img)
	if err != nil {
		return Op{}, Skip("kernel loop mount failed: " + err.Error())
	}
	fd, err := unix.Open(filepath.Join(hm.dir, "file"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		hm.close()
		return Op{}, err
	}
	return Op{
		Run: preadLoopFrom(func(b []byte, off int64) (int, error) { return unix.Pread(fd, b, off) }, env.offs, env.buf, env.enroll()),
		Close: func() error {
			unix.Close(fd)
			return hm.close()
		},
	}, nil
}

// hostMount is a read-only kernel mount of an image on an AUTOCLEAR loop
// device: unmounting it frees the device.
type hostMount struct{ dir string }

func hostLoopMount(img string) (*hostMount, error) {
	dir, err := os.MkdirTemp("", "iovfs-bench-dax-host-")
	if err != nil {
		return nil, err
	}
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	defer unix.Close(ctl)
	imgFd, err := unix.Open(img, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	defer unix.Close(imgFd)
	for try := 0; ; try++ {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			os.Remove(dir)
			return nil, fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		lfd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			os.Remove(dir)
			return nil, err
		}
		cfg := unix.LoopConfig{Fd: uint32(imgFd)}
		cfg.Info.Flags = unix.LO_FLAGS_READ_ONLY | unix.LO_FLAGS_AUTOCLEAR
		err = unix.IoctlLoopConfigure(lfd, &cfg)
		if errors.Is(err, unix.EBUSY) && try < 10 {
			unix.Close(lfd) // another process took it first
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			unix.Close(lfd)
			os.Remove(dir)
			return nil, fmt.Errorf("LOOP_CONFIGURE %s: %w", dev, err)
		}
		err = unix.Mount(dev, dir, "ext4", unix.MS_RDONLY, "noload")
		unix.Close(lfd) // AUTOCLEAR: the mount keeps it bound until unmount
		if err != nil {
			os.Remove(dir)
			return nil, fmt.Errorf("mount %s: %w", dev, err)
		}
		return &hostMount{dir: dir}, nil
	}
}

func (h *hostMount) close() error {
	err := unix.Unmount(h.dir, 0)
	for try := 0; errors.Is(err, unix.EBUSY) && try < 50; try++ {
		time.Sleep(20 * time.Millisecond)
		err = unix.Unmount(h.dir, 0)
	}
	if err != nil {
		return fmt.Errorf("unmount %s: %w", h.dir, err)
	}
	return os.Remove(h.dir)
}

// daxTable writes the seed's table with our figures beside it: total
// seconds per variant for the reads done, the same scaled to the seed's
// 2^26 reads, and the gap to read in percent (ours from the paired
// per-round ratios). It ends with the ratios to memcpy and to host.
func daxTable(w io.Writer, res *Result) {
	reads := float64(res.Params.Ops) * float64(res.Params.Loops)
	fmt.Fprintf(w, "\nthe seed's table (2^26 reads of 4 KiB, ext4-dax on pmem, 2021) beside ours (%.0f reads of %d B per variant, %s):\n", reads, res.Params.Size, res.Params.Extra["pattern"])
	seed := map[string]float64{"iomap": 36.477, "iter-wrap": 28.950, "iter-1seg": 27.947, "read": 26.899}
	rows := [][]string{{"variant", "seed: total", "seed: gap to read", "ours: total", "ours: scaled to 2^26", "ours: ns/read", "ours: gap to read"}}
	for _, name := range []string{"iomap", "iter-wrap", "iter-1seg", "read", "memcpy", "host"} {
		row := []string{name, "-", "-"}
		if s, ok := seed[name]; ok {
			row[1] = fmt.Sprintf("%.3f s", s)
			row[2] = fmt.Sprintf("%+.1f%%", 100*(s/seed["read"]-1))
		}
		v := res.Variant(name)
		if v == nil {
			row = append(row, "did not run", "", "", "")
			rows = append(rows, row)
			continue
		}
		row = append(row, fmt.Sprintf("%.3f s", v.NsPerOp*reads/1e9), fmt.Sprintf("%.2f s", v.NsPerOp*daxSeedReads/1e9), fmtNs(v.NsPerOp))
		switch r, ok := res.Ratio(name); {
		case name == res.Experiment.Baseline:
			row = append(row, "0 (baseline)")
		case ok:
			row = append(row, fmt.Sprintf("%+.1f%%", 100*(r.Median-1)))
		default:
			row = append(row, "-")
		}
		rows = append(rows, row)
	}
	var b strings.Builder
	writeTable(&b, rows, []bool{false, true, true, true, true, true, true})
	io.WriteString(w, b.String())
	for _, base := range []string{"memcpy", "host"} {
		bv := res.Variant(base)
		if bv == nil {
			continue
		}
		fmt.Fprintf(w, "ratios to %s (median of per-round ratios):", base)
		for _, v := range res.Variants {
			if v.Name == base {
				continue
			}
			r, _ := RoundRatios(v, bv, 0.95, 1000, 1)
			fmt.Fprintf(w, " %s %s", v.Name, fmtRatio(r))
		}
		fmt.Fprintln(w)
	}
	if h, r := res.Variant("host"), res.Variant("read"); h != nil && r != nil {
		x, _ := RoundRatios(h, r, 0.95, 1000, 1)
		fmt.Fprintf(w, "iovfs read is %.1fx as fast as the host kernel's pread on the same file\n", x)
	}
}
