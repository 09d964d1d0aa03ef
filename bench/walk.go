package bench

// The walk experiment: the metadata path. A tree is walked
// through the API: open each directory, getdents until empty, lstat every
// entry by its full path, and descend into the subdirectories. The image
// is made with mke2fs -b 1024 -d from one of two trees: "flat", one
// directory of --dirs subdirectories (dir_index makes it an htree), or
// "nested", --files empty files spread over nested directories; e2fsck
// -D then indexes the directories, as dir_index would have. (As root,
// a large tree is copied in by the kernel instead, through a read-write
// loop mount of the empty file system: mke2fs -d takes many minutes on
// 65,000 entries in one directory. The kernel indexes as it goes.) iovfs
// walks it mounted plain (metadata through the buffer cache, names through
// the dentry cache), with dax (metadata from device memory), and with both
// caches off (the "before"); the host kernel walks a read-only loop mount
// of the same image with the same Go loop (os.ReadDir and unix.Lstat, a
// system call per entry). Cold variants mount, walk once and unmount in
// every operation, so each walk starts with empty caches (the image
// file's host page cache stays warm for both sides); warm variants walk a
// mount that the warm-up round has walked already.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/ext4"
	"github.com/iovfs/iovfs/vfs"
)

var walkExperiment = &Experiment{
	Name:     "walk",
	Check:    checkWalkFlags,
	Summary:  "walk an ext4 image (open, getdents, lstat of every entry by full path): iovfs with and without its caches against the host kernel",
	Baseline: "kernel-warm",
	Defaults: Params{Loops: 5, Ops: 1, Size: 1},
	Unit:     "walks",
	Describe: func(p Params) string {
		return fmt.Sprintf("%d walk(s) per round of a %s tree in an ext4 image (mke2fs -b 1024 -d); cold variants mount and unmount around each walk", p.Ops, walkTreeDesc(p))
	},
	Flags: []Flag{
		{Name: "tree", Default: "flat", Usage: "flat (one directory of --dirs subdirectories) or nested (--files files in nested directories)"},
		{Name: "dirs", Default: "65000", Usage: "subdirectories of the flat tree"},
		{Name: "files", Default: "20000", Usage: "files of the nested tree"},
		{Name: "bcache", Default: "", Usage: "bcache= mount option of the iovfs-* variants (empty: the process-wide default budget)"},
	},
	Setup: walkSetup,
	Variants: []Variant{
		{Name: "kernel-warm", Doc: "host kernel, read-only loop mount walked before (root)", Setup: walkHost(false)},
		{Name: "kernel-cold", Doc: "host kernel: loop mount, walk, unmount (root)", Setup: walkHost(true)},
		{Name: "iovfs-warm", Doc: "iovfs ext4 over a loop device, buffer and dentry caches on, walked before", Setup: walkVFS("", false)},
		{Name: "iovfs-cold", Doc: "iovfs: mount, walk, unmount", Setup: walkVFS("", true)},
		{Name: "dax-warm", Doc: "iovfs ext4 mounted with dax (metadata from device memory), dentry cache on, walked before", Setup: walkVFS("dax", false)},
		{Name: "dax-cold", Doc: "iovfs dax: mount, walk, unmount", Setup: walkVFS("dax", true)},
		{Name: "nocache-warm", Doc: "iovfs with bcache=0 and the dentry cache off (no buffer cache, no dentry cache, no listings), walked before", Setup: walkVFS("bcache=0", false)},
		{Name: "nocache-cold", Doc: "iovfs, no caches: mount, walk, unmount", Setup: walkVFS("bcache=0", true)},
	},
	Report: walkReport,
}

func walkTreeDesc(p Params) string {
	if p.Extra["tree"] == "nested" {
		return p.Extra["files"] + "-file nested"
	}
	return p.Extra["dirs"] + "-subdirectory flat"
}

// walkEnv is what the variants share: the image, how many entries a walk
// must see, and the cache figures the iovfs variants leave for the report.
type walkEnv struct {
	img     string
	entries int
	stats   map[string]string
}

// walkImageCache says whether walkSetup keeps images in the user's cache
// directory (tests turn it off, to leave nothing behind).
var walkImageCache = true

// lastWalkEnv is the env of the last run, for walkReport's cache figures.
var lastWalkEnv *walkEnv

// checkWalkFlags checks --tree, --dirs and --files.
func checkWalkFlags(extra map[string]string) error {
	if t := extra["tree"]; t != "flat" && t != "nested" {
		return fmt.Errorf("--tree %q: want flat or nested", t)
	}
	for _, k := range []string{"dirs", "files"} {
		n, err := strconv.Atoi(extra[k])
		if err != nil || n < 1 || n > 1_000_000 {
			return fmt.Errorf("--%s %q: want a count from 1 to 1000000", k, extra[k])
		}
	}
	if b := extra["bcache"]; b != "" {
		if _, err := parseSize(b); err != nil && b != "0" {
			return fmt.Errorf("--bcache %q: %w", b, err)
		}
	}
	return nil
}

// walkSetup makes the source tree and the image.
func walkSetup(p Params) (any, func() error, error) {
	tree := p.Extra["tree"]
	if tree != "flat" && tree != "nested" {
		return nil, nil, fmt.Errorf("--tree %q: want flat or nested", tree)
	}
	mke2fs, err := exec.LookPath("mke2fs")
	if err != nil {
		return nil, nil, errors.New("mke2fs not found: the walk experiment builds its ext4 image with e2fsprogs (apt-get install e2fsprogs)")
	}
	dir, err := os.MkdirTemp("", "iovfs-bench-walk-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() error { return os.RemoveAll(dir) }
	fail := func(err error) (any, func() error, error) {
		cleanup()
		return nil, nil, err
	}
	src := filepath.Join(dir, "src")
	entries, err := MakeWalkTree(src, tree, p.Extra)
	if err != nil {
		return fail(err)
	}
	// mke2fs -d takes minutes for 65,000 entries in one directory (it
	// links them one by one, linearly), so the image is kept in the user's
	// cache directory, named by its parameters, and made once (small
	// images, such as the tests', are made afresh and removed).
	img := filepath.Join(dir, "ext4.img")
	if cdir, err := os.UserCacheDir(); err == nil && walkImageCache && entries >= 10000 {
		cdir = filepath.Join(cdir, "iovfs-bench")
		if os.MkdirAll(cdir, 0o755) == nil {
			img = filepath.Join(cdir, fmt.Sprintf("walk-%s-%d-v1.img", tree, entries))
		}
	}
	if _, err := os.Stat(img); err != nil {
		tmp := img + ".tmp"
		build := MakeWalkImage
		if os.Geteuid() == 0 && entries >= 10000 {
			build = makeWalkImageKernel
		}
		if err := build(mke2fs, src, tmp, entries); err != nil {
			os.Remove(tmp)
			return fail(err)
		}
		if err := os.Rename(tmp, img); err != nil {
			return fail(err)
		}
	}
	os.RemoveAll(src)
	env := &walkEnv{img: img, entries: entries, stats: map[string]string{}}
	lastWalkEnv = env
	return env, cleanup, nil
}

// MakeWalkTree builds the walk experiment's source tree at src (tree is
// "flat" or "nested"; extra holds "dirs" and "files") and returns the
// number of entries a walk of it lstats.
func MakeWalkTree(src, tree string, extra map[string]string) (int, error) {
	if err := os.Mkdir(src, 0o755); err != nil {
		return 0, err
	}
	if tree == "flat" {
		n, err := strconv.Atoi(extra["dirs"])
		if err != nil || n < 1 {
			return 0, fmt.Errorf("--dirs %q: want a positive count", extra["dirs"])
		}
		top := filepath.Join(src, "d")
		if err := os.Mkdir(top, 0o755); err != nil {
			return 0, err
		}
		for i := range n {
			if err := os.Mkdir(filepath.Join(top, fmt.Sprintf("sub%06d", i)), 0o755); err != nil {
				return 0, err
			}
		}
		return n + 1, nil
	}
	n, err := strconv.Atoi(extra["files"])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("--files %q: want a positive count", extra["files"])
	}
	// 20 top directories, each with 10 subdirectories of files.
	entries := 0
	for i := range n {
		d := filepath.Join(src, fmt.Sprintf("top%02d", i%20), fmt.Sprintf("mid%d", i/20%10))
		if _, err := os.Stat(d); err != nil {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return 0, err
			}
		}
		f, err := os.Create(filepath.Join(d, fmt.Sprintf("file%05d", i)))
		if err != nil {
			return 0, err
		}
		f.Close()
		entries++
	}
	for i := range min(n, 20) {
		entries++ // topNN
		entries += min(10, (n-i+19)/20)
	}
	return entries, nil
}

// MakeWalkImage makes img, an ext4 image with 1 KiB blocks, from src,
// with room for entries inodes, and indexes its directories (htree).
func MakeWalkImage(mke2fs, src, img string, entries int) error {
	kib := 16<<10 + entries*2 + entries/4 // a block per directory or file, inode tables, the journal
	out, err := exec.Command(mke2fs, "-q", "-F", "-t", "ext4", "-b", "1024", "-N", strconv.Itoa(entries+1024), "-d", src, img, strconv.Itoa(kib)+"k").CombinedOutput()
	if err != nil {
		return fmt.Errorf("mke2fs: %v: %s", err, out)
	}
	// mke2fs -d links entries linearly; e2fsck -D indexes every large
	// directory (dir_index), as the kernel's own mkdirs would have.
	// Exit status 1 means it changed the file system, which -D does.
	out, err = exec.Command(filepath.Join(filepath.Dir(mke2fs), "e2fsck"), "-fyD", img).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return fmt.Errorf("e2fsck -fyD: %v: %s", err, out)
	}
	return nil
}

// makeWalkImageKernel is MakeWalkImage for root, in seconds rather than
// minutes: mke2fs makes the empty file system, and the kernel copies src
// into a read-write loop mount of it (so the directories are indexed as
// they grow, as dir_index does).
func makeWalkImageKernel(mke2fs, src, img string, entries int) error {
	kib := 16<<10 + entries*2 + entries/4
	out, err := exec.Command(mke2fs, "-q", "-F", "-t", "ext4", "-b", "1024", "-N", strconv.Itoa(entries+1024), img, strconv.Itoa(kib)+"k").CombinedOutput()
	if err != nil {
		return fmt.Errorf("mke2fs: %v: %s", err, out)
	}
	dir, err := os.MkdirTemp("", "iovfs-bench-walk-mnt-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(ctl)
	imgFd, err := unix.Open(img, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(imgFd)
	var dev string
	for try := 0; ; try++ {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
		}
		dev = fmt.Sprintf("/dev/loop%d", n)
		lfd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		cfg := unix.LoopConfig{Fd: uint32(imgFd)}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		err = unix.IoctlLoopConfigure(lfd, &cfg)
		if errors.Is(err, unix.EBUSY) && try < 10 {
			unix.Close(lfd)
			continue
		}
		if err == nil {
			err = unix.Mount(dev, dir, "ext4", 0, "")
		}
		unix.Close(lfd) // AUTOCLEAR: the mount keeps it bound
		if err != nil {
			return fmt.Errorf("mount %s read-write: %w", dev, err)
		}
		break
	}
	cp := exec.Command("cp", "-a", src+"/.", dir)
	out, cerr := cp.CombinedOutput()
	uerr := (&hostMount{dir: dir}).close()
	if cerr != nil {
		return fmt.Errorf("cp -a: %v: %s", cerr, out)
	}
	return uerr
}

// WalkVFS walks root in p: open, getdents until empty, lstat of every
// entry by its full path, then each subdirectory. It returns the number
// of entries lstat'ed.
func WalkVFS(p *vfs.Proc, root string) (int, error) {
	fd, err := p.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return 0, err
	}
	var subdirs []string
	n := 0
	for {
		ents, err := p.Getdents(fd)
		if err != nil {
			p.Close(fd)
			return n, err
		}
		if len(ents) == 0 {
			break
		}
		for _, e := range ents {
			if e.Name == "." || e.Name == ".." {
				continue
			}
			path := root + "/" + e.Name
			st, err := p.Lstat(path)
			if err != nil {
				p.Close(fd)
				return n, err
			}
			n++
			if st.IsDir() {
				subdirs = append(subdirs, path)
			}
		}
	}
	p.Close(fd)
	for _, d := range subdirs {
		k, err := WalkVFS(p, d)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// WalkHost is WalkVFS on the host kernel: os.ReadDir (open, getdents64)
// and unix.Lstat, a system call per entry.
func WalkHost(root string) (int, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return 0, err
	}
	var subdirs []string
	n := 0
	var st unix.Stat_t
	for _, e := range ents {
		path := root + "/" + e.Name()
		if err := unix.Lstat(path, &st); err != nil {
			return n, err
		}
		n++
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			subdirs = append(subdirs, path)
		}
	}
	for _, d := range subdirs {
		k, err := WalkHost(d)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// walkCheck runs walk n times and checks each saw want entries. lost+found
// is in both sides' trees, so it is not counted apart.
func walkCheck(n, want int, walk func() (int, error)) error {
	for range n {
		got, err := walk()
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("walk saw %d entries, want %d", got, want)
		}
	}
	return nil
}

// walkHost returns the Setup of a kernel variant.
func walkHost(cold bool) func(Params, any) (Op, error) {
	return func(prm Params, e any) (Op, error) {
		env := e.(*walkEnv)
		if os.Geteuid() != 0 {
			return Op{}, Skip("needs root for a kernel loop mount of the image")
		}
		if cold {
			return Op{Run: func(n int) error {
				for range n {
					hm, err := hostLoopMount(env.img)
					if err != nil {
						return err
					}
					err = walkCheck(1, env.entries+1, func() (int, error) { return WalkHost(hm.dir) })
					if cerr := hm.close(); err == nil {
						err = cerr
					}
					if err != nil {
						return err
					}
				}
				return nil
			}}, nil
		}
		hm, err := hostLoopMount(env.img)
		if err != nil {
			return Op{}, Skip("kernel loop mount failed: " + err.Error())
		}
		return Op{
			Run:   func(n int) error { return walkCheck(n, env.entries+1, func() (int, error) { return WalkHost(hm.dir) }) },
			Close: hm.close,
		}, nil
	}
}

// walkVFS returns the Setup of an iovfs variant mounted with options opt
// ("bcache=0" also turns the dentry cache off).
func walkVFS(opt string, cold bool) func(Params, any) (Op, error) {
	return func(prm Params, e any) (Op, error) {
		env := e.(*walkEnv)
		m, err := newDaxMachine(&daxEnv{img: env.img})
		if err != nil {
			return Op{}, err
		}
		p := m.p
		ns := p.Namespace()
		if opt == "bcache=0" {
			ns.SetDentryCacheSize(0)
		} else {
			ns.CountDentryCacheHits(true)
		}
		var fs *ext4.FS
		data := opt
		if opt == "" && prm.Extra["bcache"] != "" {
			data = "bcache=" + prm.Extra["bcache"]
		}
		mount := func() error {
			f, err := ext4.Mount(vfs.MountRequest{Proc: p, Source: "/dev/loop0", Flags: unix.MS_RDONLY, Data: data})
			if err != nil {
				return err
			}
			fs = f.(*ext4.FS)
			return ns.MountFS("/mnt", fs, true)
		}
		walk := func() (int, error) { return WalkVFS(p, "/mnt") }
		name := map[string]string{"": "iovfs", "dax": "dax", "bcache=0": "nocache"}[opt] + map[bool]string{true: "-cold", false: "-warm"}[cold]
		// record describes the caches over the last Run: since the mount
		// for a cold walk, since the Run began for warm ones.
		var since walkCounters
		record := func() {
			if fs == nil {
				return
			}
			env.stats[name] = walkCacheStats(since, walkSnapshot(ns, fs), fs.DAX())
		}
		if cold {
			return Op{
				Run: func(n int) error {
					for range n {
						if err := mount(); err != nil {
							return err
						}
						since = walkCounters{d: ns.DentryCacheStats()}
						err := walkCheck(1, env.entries+1, walk)
						record()
						if uerr := p.Unmount("/mnt", 0); err == nil {
							err = uerr
						}
						if err != nil {
							return err
						}
					}
					return nil
				},
				Close: func() error { return p.Close(m.lfd) },
			}, nil
		}
		err = mount()
		p.Close(m.lfd) // the mount holds the device now
		if err != nil {
			return Op{}, err
		}
		return Op{
			Run: func(n int) error {
				since = walkSnapshot(ns, fs)
				err := walkCheck(n, env.entries+1, walk)
				record()
				return err
			},
			Close: func() error { return p.Unmount("/mnt", 0) },
		}, nil
	}
}

// walkCounters are the cache counters of a walk's namespace and mount
// at one moment.
type walkCounters struct {
	d   vfs.DentryCacheStats
	b   block.CacheStats
	bok bool
	l   ext4.ListingStats
}

func walkSnapshot(ns *vfs.Namespace, fs *ext4.FS) walkCounters {
	c := walkCounters{d: ns.DentryCacheStats(), l: fs.ListingStats()}
	c.b, c.bok = fs.Volume().CacheStats()
	return c
}

// walkCacheStats describes the caches of ns and fs after a walk: their
// sizes at the end (after), and the lookups and hit rates between before
// and after.
func walkCacheStats(before, after walkCounters, dax bool) string {
	var b strings.Builder
	rate := func(hits, all uint64) float64 { return 100 * float64(hits) / float64(max(all, 1)) }
	d, d0 := after.d, before.d
	if d.Limit > 1 {
		hits := d.Hits + d.NegHits - d0.Hits - d0.NegHits
		look := hits + d.Misses - d0.Misses
		fmt.Fprintf(&b, "dentry cache: %d entries (limit %d), %d lookups, hit rate %.1f%%, %d evictions",
			d.Entries, d.Limit, look, rate(hits, look), d.Evictions-d0.Evictions)
	} else {
		b.WriteString("dentry cache: off")
	}
	if st, st0 := after.b, before.b; after.bok {
		hits := st.Hits - st0.Hits
		look := hits + st.Misses - st0.Misses
		fmt.Fprintf(&b, "; buffer cache: %d blocks and %d listings, %.1f MiB (peak %.1f, limit %.1f MiB, one budget), %d gets, hit rate %.1f%%, %d evictions",
			st.Blocks, st.Charges, float64(st.Bytes)/(1<<20), float64(st.Peak)/(1<<20), float64(st.Limit)/(1<<20), look,
			rate(hits, look), st.Evictions-st0.Evictions)
	} else if dax {
		b.WriteString("; buffer cache: none (dax: metadata from device memory)")
	} else {
		b.WriteString("; buffer cache: off")
	}
	if l, l0 := after.l, before.l; l.Limit > 0 {
		hits := l.Hits - l0.Hits
		look := hits + l.Misses - l0.Misses
		fmt.Fprintf(&b, "; listings: %d directories, %.2f MiB (peak %.2f, in the limit of %.1f MiB), %d getdents, hit rate %.1f%%, %d dropped",
			l.Listings, float64(l.Bytes)/(1<<20), float64(l.Peak)/(1<<20), float64(l.Limit)/(1<<20), look, rate(hits, look), l.Dropped-l0.Dropped)
	} else {
		b.WriteString("; listings: off")
	}
	return b.String()
}

// walkReport prints the ratios by temperature and the cache figures.
func walkReport(w io.Writer, res *Result) {
	fmt.Fprintln(w)
	for _, temp := range []string{"warm", "cold"} {
		k := res.Variant("kernel-" + temp)
		if k == nil {
			continue
		}
		fmt.Fprintf(w, "%s, kernel time / variant time (above 1: faster than the kernel; median of per-round ratios):", temp)
		for _, name := range []string{"iovfs", "dax", "nocache"} {
			v := res.Variant(name + "-" + temp)
			if v == nil {
				continue
			}
			r, _ := PairedRatio(k.NsPerOpRounds(), v.NsPerOpRounds(), 0.95, 1000, 1)
			fmt.Fprintf(w, " %s %.2fx", name, r)
		}
		fmt.Fprintln(w)
	}
	env := lastWalkEnv
	if env == nil {
		return
	}
	for _, name := range []string{"iovfs-warm", "iovfs-cold", "dax-warm", "dax-cold", "nocache-warm"} {
		if s, ok := env.stats[name]; ok {
			fmt.Fprintf(w, "%s after its last walk: %s\n", name, s)
		}
	}
}
