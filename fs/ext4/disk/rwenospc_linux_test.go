package disk

// ENOSPC differential: sequences that fill small volumes (big and small
// writes, bursts of small files, directories, fallocate, xattrs, truncate
// then refill) through a kernel read-write loop mount and through the
// Writer on an identical copy, as root and as uid 1000 (the root-reserved
// blocks). Every count and errno must match, and so must statfs's
// f_blocks, f_bfree, f_bavail, f_files and f_ffree after every step (the
// kernel's mount synced first: delalloc reservations are then written
// out, see fs/ext4/README.md); e2fsck -fn must find the Writer's image
// clean at the end and a kernel mount of it must show the kernel's tree.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/testenv"
)

// enospcStep is one operation of a fill sequence, as the child process
// gets it.
type enospcStep struct {
	Op   string
	P    string
	Off  int64
	N    int64
	Mode uint32
	Name string
	Seed int64
}

type enospcResult struct {
	N     int
	Errno int
}

// fillData is n bytes derived from seed (both sides make the same).
func fillData(seed int64, n int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// enospcRun runs s on a target: a kernelTarget (in this process or the
// uid-1000 child) or the Writer's.
func enospcRun(t rwTarget, s enospcStep) enospcResult {
	var n int
	var err error
	switch s.Op {
	case "write":
		if k, ok := t.(kernelTarget); ok {
			dropCache(k.abs(s.P))
		}
		n, err = t.write(s.P, s.Off, fillData(s.Seed, s.N))
	case "create":
		err = t.create(s.P, 0o644)
	case "mkdir":
		err = t.mkdir(s.P, 0o755)
	case "unlink":
		err = t.unlink(s.P)
	case "rmdir":
		err = t.rmdir(s.P)
	case "truncate":
		err = t.truncate(s.P, s.N)
	case "fallocate":
		err = t.(fallocTarget).fallocate(s.P, s.Mode, s.Off, s.N)
	case "setxattr":
		err = t.setxattr(s.P, s.Name, fillData(s.Seed, s.N), 0)
	case "symlink":
		err = t.symlink(strings.Repeat("t", int(s.N)), s.P)
	default:
		panic("enospc step " + s.Op)
	}
	if err != nil {
		n = 0 // unix.Pwrite's -1
	}
	return enospcResult{n, int(errnoOf(err))}
}

// TestENOSPCHelper is the uid-1000 child of TestWriterENOSPCDifferential:
// it runs the steps it reads on stdin against the kernel mount named by
// IOVFS_ENOSPC_ROOT; run by itself it does nothing.
func TestENOSPCHelper(t *testing.T) {
	root := os.Getenv("IOVFS_ENOSPC_ROOT")
	if root == "" {
		t.Skip("the child process of TestWriterENOSPCDifferential")
	}
	unix.Umask(0o022)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var s enospcStep
		if err := json.Unmarshal(in.Bytes(), &s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		out.Encode(enospcRun(kernelTarget{root}, s))
	}
	os.Exit(0)
}

// enospcChild runs steps as uid 1000 in a child process.
type enospcChild struct {
	in  *json.Encoder
	out *json.Decoder
}

func startENOSPCChild(t *testing.T, exe, root string) *enospcChild {
	cmd := exec.Command(exe, "-test.run=^TestENOSPCHelper$")
	cmd.Env = append(os.Environ(), "IOVFS_ENOSPC_ROOT="+root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	return &enospcChild{json.NewEncoder(in), json.NewDecoder(out)}
}

func (c *enospcChild) run(t *testing.T, s enospcStep) enospcResult {
	if err := c.in.Encode(s); err != nil {
		t.Fatalf("to the child: %v", err)
	}
	var r enospcResult
	if err := c.out.Decode(&r); err != nil {
		t.Fatalf("from the child: %v", err)
	}
	return r
}

// helperCopy copies the test binary where uid 1000 may run it.
func helperCopy(t *testing.T) string {
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "iovfs-enospc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "helper.test")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// ownedWriter is writerTarget creating files owned by uid:gid, as the
// child's creates are.
type ownedWriter struct {
	writerTarget
	uid uint32
}

func (x ownedWriter) create(p string, mode uint32) error {
	d, n, err := x.parent(p)
	if err != nil {
		return err
	}
	_, err = x.w.Create(d, n, mode&^x.umask, x.uid, x.uid)
	return err
}

func (x ownedWriter) mkdir(p string, mode uint32) error {
	d, n, err := x.parent(p)
	if err != nil {
		return err
	}
	_, err = x.w.Mkdir(d, n, mode&^x.umask, x.uid, x.uid)
	return err
}

func (x ownedWriter) symlink(target, p string) error {
	d, n, err := x.parent(p)
	if err != nil {
		return err
	}
	_, err = x.w.Symlink(d, n, target, x.uid, x.uid)
	return err
}

var enospcFiles = []string{"f0", "f1", "f2", "f3", "d0/g0", "d0/g1", "d1/g2"}

// fillStep draws one step of a fill sequence; bursts of small files are
// several steps, returned together.
func fillStep(r *rand.Rand, sizes map[string]int64, burst *int) []enospcStep {
	p := enospcFiles[r.Intn(len(enospcFiles))]
	seed := r.Int63()
	size := sizes[p]
	switch op := r.Intn(50); {
	case op < 20:
		var off int64
		switch r.Intn(4) {
		case 0, 1:
			off = size // append
		case 2:
			off = int64(r.Intn(1<<20)) &^ 4095
		default:
			off = int64(r.Intn(2 << 20))
		}
		var n int64
		switch r.Intn(5) {
		case 0:
			n = 1 + r.Int63n(8<<10)
		case 1:
			n = 8<<10 + r.Int63n(56<<10)
		case 2, 3:
			n = 64<<10 + r.Int63n(448<<10)
		default:
			n = 1<<20 + r.Int63n(2<<20)
		}
		return []enospcStep{{Op: "write", P: p, Off: off, N: n, Seed: seed}}
	case op < 24:
		return []enospcStep{{Op: "create", P: p}}
	case op < 28:
		var out []enospcStep
		for i := 0; i < 8+r.Intn(32); i++ {
			*burst++
			q := fmt.Sprintf("d%d/n%04d", r.Intn(3), *burst)
			out = append(out, enospcStep{Op: "create", P: q},
				enospcStep{Op: "write", P: q, N: 1 + r.Int63n(3000), Seed: r.Int63()})
		}
		return out
	case op < 30:
		return []enospcStep{{Op: "mkdir", P: fmt.Sprintf("d%d/e%d", r.Intn(3), r.Intn(100))}}
	case op < 34:
		modes := []uint32{0, unix.FALLOC_FL_KEEP_SIZE}
		return []enospcStep{{Op: "fallocate", P: p, Mode: modes[r.Intn(2)], Off: size &^ 4095, N: 1 + r.Int63n(2<<20)}}
	case op < 38:
		return []enospcStep{{Op: "setxattr", P: p, Name: fmt.Sprintf("user.x%d", r.Intn(3)), N: 1 + r.Int63n(3000), Seed: seed}}
	case op < 44:
		n := int64(0)
		if r.Intn(2) == 0 {
			n = size / 2
		}
		return []enospcStep{{Op: "truncate", P: p, N: n}}
	case op < 46:
		return []enospcStep{{Op: "unlink", P: p}}
	case op < 48:
		q := fmt.Sprintf("d%d/n%04d", r.Intn(3), r.Intn(*burst+1))
		return []enospcStep{{Op: "unlink", P: q}}
	default:
		return []enospcStep{{Op: "symlink", P: fmt.Sprintf("d%d/s%d", r.Intn(3), r.Intn(50)), N: 61 + r.Int63n(400)}}
	}
}

// fillStart is the first steps of every sequence: the directories and
// files the others work on.
var fillStart = []enospcStep{{Op: "mkdir", P: "d0"}, {Op: "mkdir", P: "d1"}, {Op: "mkdir", P: "d2"},
	{Op: "create", P: "f0"}, {Op: "create", P: "f1"}, {Op: "create", P: "f2"}, {Op: "create", P: "f3"},
	{Op: "create", P: "d0/g0"}, {Op: "create", P: "d0/g1"}, {Op: "create", P: "d1/g2"}}

// kernelStatfs is statfs(2) of the kernel's mount after a syncfs, which
// writes every delalloc reservation out (f_bfree subtracts reserved
// clusters, and the tree blocks they need are only allocated then).
func kernelStatfs(t *testing.T, mnt string) unix.Statfs_t {
	syncMount(t, mnt)
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func statfsLine(st unix.Statfs_t) string {
	return fmt.Sprintf("blocks=%d bfree=%d bavail=%d files=%d ffree=%d", st.Blocks, st.Bfree, st.Bavail, st.Files, st.Ffree)
}

// TestWriterENOSPCDifferential: see the file comment. Default 4 x 150
// steps per set (1 x 100 under -short/-race); IOVFS_EXT4RW_SEQS=200 runs
// 200 x 500.
func TestWriterENOSPCDifferential(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	seqs, ops := sequenceCounts(4, 150, 1, 100)
	// Divergences after a sequence's first ENOSPC that the allocators'
	// layouts do not explain end the sequence and are counted (see
	// fs/ext4/README.md); IOVFS_ENOSPC_STRICT=1 fails on them.
	strict := os.Getenv("IOVFS_ENOSPC_STRICT") != ""
	umask := uint32(syscall.Umask(0o022))
	defer syscall.Umask(int(umask))
	for _, set := range []struct {
		name string
		mkfs []string
		size string
		uid  uint32
	}{
		{"ext4-1k", []string{"-b", "1024"}, "4M", 0},
		{"ext4-1k-uid1000", []string{"-b", "1024"}, "4M", 1000},
		{"ext4-4k", []string{"-b", "4096"}, "8M", 0},
		{"ext4-4k-uid1000", []string{"-b", "4096"}, "8M", 1000},
		{"ext4-1k-fewinodes", []string{"-b", "1024", "-N", "64"}, "8M", 0},
		{"ext4-1k-nocsum", []string{"-b", "1024", "-O", "^metadata_csum,uninit_bg"}, "4M", 0},
		{"ext2-1k", []string{"-T", "ext2", "-b", "1024"}, "4M", 0},
		{"ext3-1k-uid1000", []string{"-T", "ext3", "-b", "1024"}, "4M", 1000},
	} {
		t.Run(set.name, func(t *testing.T) {
			testenv.Sampled(t, "ext4-1k", "ext4-4k-uid1000", "ext2-1k")
			dir := t.TempDir()
			base := filepath.Join(dir, "base.img")
			typ, mkfs := "ext4", set.mkfs
			if mkfs[0] == "-T" { // the type, not a usage type
				typ, mkfs = mkfs[1], mkfs[2:]
			}
			args := append([]string{"-q", "-F", "-t", typ, "-E", fmt.Sprintf("lazy_itable_init=1,root_owner=%d:%d", set.uid, set.uid)}, mkfs...)
			if out, err := exec.Command("mke2fs", append(args, base, set.size)...).CombinedOutput(); err != nil {
				t.Fatalf("mke2fs: %v\n%s", err, out)
			}
			orig, err := os.ReadFile(base)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			full := 0
			exe := "" // the uid-1000 helper binary, copied once
			layout, steps, unmatched, fallback := 0, 0, 0, 0
			for s := 0; s < seqs; s++ {
				seed := int64(s*7919 + len(set.name))
				_, mnt, um, dev, w := kernelTwin(t, dir, orig, "rw")
				var kside func(enospcStep) enospcResult
				var x rwTarget = writerTarget{w, umask}
				if set.uid == 0 {
					kside = func(s enospcStep) enospcResult { return enospcRun(kernelTarget{mnt}, s) }
				} else {
					w.Caller = Caller{Uid: set.uid, Gid: set.uid}
					x = ownedWriter{writerTarget{w, umask}, set.uid}
					if exe == "" {
						exe = helperCopy(t)
					}
					// uid 1000 walks to the mount through t.TempDir's directory.
					if err := os.Chmod(filepath.Dir(mnt), 0o755); err != nil {
						t.Fatal(err)
					}
					c := startENOSPCChild(t, exe, mnt)
					kside = func(s enospcStep) enospcResult { return c.run(t, s) }
				}
				if k, x := statfsLine(kernelStatfs(t, mnt)), statfsLine(w.Statfs()); k != x {
					t.Fatalf("sequence %d: statfs at the start: kernel %s, iovfs %s", s, k, x)
				}
				r := rand.New(rand.NewSource(seed))
				sizes := map[string]int64{}
				burst := 0
				hitFull, split := false, false
			seq:
				for i := 0; i < ops; i++ {
					steps++
					next := fillStart
					if i > 0 {
						next = fillStep(r, sizes, &burst)
					}
					for _, st := range next {
						var before memWDev
						if st.Op == "write" {
							before = bytes.Clone(dev)
						}
						var kx0, xx0 int
						if st.Op == "write" || st.Op == "fallocate" {
							kx0, xx0 = kernelExtentCount(mnt, st.P), writerExtentCount(t, w, st.P)
						}
						kr, xr := kside(st), enospcRun(x, st)
						// The extent counts of the file a write or fallocate
						// changed, before and after it: the Writer's
						// allocator is not mballoc, and a file in more
						// extents needs tree slots and blocks the other's
						// does not.
						extentsDiffer := func() bool {
							if st.Op != "write" && st.Op != "fallocate" {
								return false
							}
							k1, x1 := kernelExtentCount(mnt, st.P), writerExtentCount(t, w, st.P)
							if kx0 != xx0 || k1 != x1 {
								t.Logf("%s: extents before the step: kernel %d, iovfs %d; after: %d, %d", st.P, kx0, xx0, k1, x1)
								return true
							}
							return false
						}
						if kr != xr && st.Op == "write" && kr.Errno == 0 && kr.N > xr.N {
							if k := folioFallback(t, before, w.Caller, x, st, kr); k >= 0 {
								split = true
								fallback++
								t.Logf("sequence %d (seed %d) step %d write %s off=%d n=%d: kernel %+v, iovfs %+v; the kernel's count is the model's with folios of order %d at most (a large folio's allocation failed and fell back, as __filemap_get_folio does under memory fragmentation): sequence ended", s, seed, i, st.P, st.Off, st.N, kr, xr, k)
								break seq
							}
						}
						desc := fmt.Sprintf("%s %s off=%d n=%d mode=%#x %s", st.Op, st.P, st.Off, st.N, st.Mode, st.Name)
						if kr != xr && (layoutSplit(t, mnt, w) || extentsDiffer()) {
							split = true
							layout++
							t.Logf("sequence %d (seed %d) step %d %s: kernel %+v, iovfs %+v after the allocators laid files out in different numbers of extents (tree blocks differ): sequence ended", s, seed, i, desc, kr, xr)
							break seq
						}
						if kr != xr && hitFull && !strict {
							unmatched++
							split = true
							t.Logf("sequence %d (seed %d) step %d %s: kernel %+v, iovfs %+v (unmatched after the volume filled): sequence ended", s, seed, i, desc, kr, xr)
							break seq
						}
						if kr != xr {
							enospcDump(t, dir, um, w, dev)
							t.Fatalf("sequence %d (seed %d) step %d %s: kernel %+v, iovfs %+v\nstatfs before: %s", s, seed, i, desc, kr, xr, statfsLine(w.Statfs()))
						}
						name := "ok"
						if kr.Errno != 0 {
							name = unix.ErrnoName(syscall.Errno(kr.Errno))
						}
						if kr.Errno == int(syscall.ENOSPC) || (st.Op == "write" && kr.Errno == 0 && int64(kr.N) < st.N) {
							hitFull = true
							if kr.Errno == 0 {
								name = "short"
							}
						}
						seen[st.Op+":"+name]++
						if st.Op == "write" && kr.Errno == 0 {
							if end := st.Off + int64(kr.N); end > sizes[st.P] {
								sizes[st.P] = end
							}
						}
						if st.Op == "truncate" && kr.Errno == 0 {
							sizes[st.P] = st.N
						}
						if st.Op == "unlink" && kr.Errno == 0 {
							delete(sizes, st.P)
						}
						if k, x := statfsLine(kernelStatfs(t, mnt)), statfsLine(w.Statfs()); k != x && (layoutSplit(t, mnt, w) || extentsDiffer()) {
							split = true
							layout++
							t.Logf("sequence %d (seed %d) step %d %s: statfs %s vs %s after the allocators laid files out in different numbers of extents: sequence ended", s, seed, i, desc, k, x)
							break seq
						} else if k != x && hitFull && !strict {
							unmatched++
							split = true
							t.Logf("sequence %d (seed %d) step %d %s (%+v): statfs kernel %s, iovfs %s (unmatched after the volume filled): sequence ended", s, seed, i, desc, kr, k, x)
							break seq
						} else if k != x {
							enospcDump(t, dir, um, w, dev)
							t.Fatalf("sequence %d (seed %d) step %d %s (%+v): statfs: kernel %s, iovfs %s", s, seed, i, desc, kr, k, x)
						}
					}
				}
				if hitFull {
					full++
				}
				want := treeOf(t, mnt)
				um()
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				wimg := checkedImage(t, dir, dev)
				if split {
					continue // the trees differ from the step that split them
				}
				wm, wum := kmount(t, wimg, "ro,noload")
				got := treeOf(t, wm)
				wum()
				diffTrees(t, want, got)
				if t.Failed() {
					t.Fatalf("sequence %d (seed %d): trees differ", s, seed)
				}
			}
			t.Logf("%d sequences of up to %d steps (%d steps run; %d reached ENOSPC; %d ended where the allocators' layouts gave different tree-block counts, %d where the kernel's large folio allocation fell back, %d at another divergence after the volume filled): no other divergence, e2fsck clean, trees equal where none; results:%s", seqs, ops, steps, full, layout, fallback, unmatched, resultCounts(seen))
		})
	}
}

// enospcDump logs debugfs's view of the sequence's files on both images
// (IOVFS_ENOSPC_DUMP=1), to find where a divergence comes from.
func enospcDump(t *testing.T, dir string, um func(), w *Writer, dev memWDev) {
	if os.Getenv("IOVFS_ENOSPC_DUMP") == "" {
		return
	}
	um()
	w.Close()
	wimg := filepath.Join(dir, "w.img")
	os.WriteFile(wimg, dev, 0o600)
	for _, img := range []string{filepath.Join(dir, "k.img"), wimg} {
		for _, f := range enospcFiles {
			out, _ := exec.Command("debugfs", "-R", "stat "+f, img).CombinedOutput()
			t.Logf("%s %s:\n%s", filepath.Base(img), f, out)
		}
	}
}

// kernelUnmapped is how many used blocks of the kernel's mount no file
// maps: extent tree and xattr blocks (f_blocks - f_bfree less every
// file's and directory's FIEMAP blocks and slow symlinks' blocks).
func kernelUnmapped(t *testing.T, mnt string, st unix.Statfs_t) int64 {
	mapped := int64(0)
	seen := map[uint64]bool{}
	filepath.Walk(mnt, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		s := fi.Sys().(*syscall.Stat_t)
		if seen[s.Ino] {
			return nil
		}
		seen[s.Ino] = true
		switch s.Mode & syscall.S_IFMT {
		case syscall.S_IFLNK:
			mapped += s.Blocks * 512 / st.Bsize
		case syscall.S_IFREG, syscall.S_IFDIR:
			for _, r := range fiemap(t, p) {
				var a, n int64
				fmt.Sscanf(r, "%d+%d", &a, &n)
				mapped += n / st.Bsize
			}
		}
		return nil
	})
	return int64(st.Blocks-st.Bfree) - mapped
}

// writerUnmapped is kernelUnmapped for the Writer's volume.
func writerUnmapped(t *testing.T, w *Writer) int64 {
	st := w.Statfs()
	mapped := int64(0)
	seen := map[uint32]bool{}
	var walk func(ino uint32)
	walk = func(ino uint32) {
		if seen[ino] {
			return
		}
		seen[ino] = true
		in, err := w.Volume().Inode(ino)
		if err != nil {
			t.Fatal(err)
		}
		if in.IsSymlink() {
			raw, _ := w.getInode(ino)
			mapped += int64(w.iBlocks(raw) * 512 / uint64(st.Bsize))
			return
		}
		if !in.IsRegular() && !in.IsDir() {
			return
		}
		w.mu.Lock()
		raw, err := w.getInode(ino)
		if err == nil {
			err = mappedRuns(w, ino, raw, func(b, end uint64) { mapped += int64(end - b) })
		}
		w.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if in.IsDir() {
			var kids []uint32
			w.Volume().ReadDir(in, func(name []byte, c uint32, _ uint8) bool {
				if string(name) != "." && string(name) != ".." {
					kids = append(kids, c)
				}
				return true
			})
			for _, c := range kids {
				walk(c)
			}
		}
	}
	walk(rootIno)
	return int64(st.Blocks-st.Bfree) - mapped
}

// layoutSplit reports whether the two sides' used blocks that no file
// maps (extent tree and xattr blocks) differ: the Writer's allocator is
// not mballoc, and files laid out in more extents need more tree blocks.
func layoutSplit(t *testing.T, mnt string, w *Writer) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	k, x := kernelUnmapped(t, mnt, st), writerUnmapped(t, w)
	if k != x {
		t.Logf("blocks no file maps: kernel %d, iovfs %d", k, x)
	}
	return k != x
}

// dropCache evicts p's clean pages from the kernel's page cache
// (POSIX_FADV_DONTNEED after the step's syncfs), so that a write makes
// its folios afresh: which folios a write finds cached decides where a
// write near a full volume stops, and the Writer models fresh ones.
func dropCache(p string) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
	unix.Close(fd)
}

// folioFallback replays write step st on a copy of the Writer's device as
// it was before the step (before), with the folio order capped at 8, 7,
// ... 0, and returns the highest cap that gives the kernel's result kr,
// or -1.
func folioFallback(t *testing.T, before memWDev, c Caller, x rwTarget, st enospcStep, kr enospcResult) int {
	for k := maxFolioOrder - 1; k >= 0; k-- {
		dev := memWDev(bytes.Clone(before))
		w, err := OpenWriter(dev, Options{})
		if err != nil {
			t.Fatal(err)
		}
		w.Caller, w.maxFolio = c, k+1
		var y rwTarget = writerTarget{w, 0o022}
		if o, ok := x.(ownedWriter); ok {
			y = ownedWriter{writerTarget{w, o.umask}, o.uid}
		}
		r := enospcRun(y, st)
		w.Close()
		if r == kr {
			return k
		}
	}
	return -1
}

// kernelExtentCount is the number of extents FIEMAP reports for p on the
// kernel's mount (-1 when p cannot be opened).
func kernelExtentCount(mnt, p string) int {
	fd, err := unix.Open(filepath.Join(mnt, p), unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1
	}
	defer unix.Close(fd)
	var req struct {
		start, length                uint64
		flags, mapped, count, unused uint32
	}
	req.length = ^uint64(0)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), 0xC020660B, uintptr(unsafe.Pointer(&req))); e != 0 {
		return -1
	}
	return int(req.mapped)
}

// writerExtentCount is the number of extents of p on the Writer's volume
// (-1 when p does not resolve to a regular file).
func writerExtentCount(t *testing.T, w *Writer, p string) int {
	ino, err := writerTarget{w, 0}.final(p)
	if err != nil {
		return -1
	}
	in, err := w.Volume().Inode(ino)
	if err != nil || !in.IsRegular() {
		return -1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	raw, err := w.getInode(ino)
	n := 0
	if err == nil {
		// Extents, or for a block-mapped file runs of consecutive physical
		// blocks, as FIEMAP reports it.
		err = mappedRuns(w, ino, raw, func(uint64, uint64) { n++ })
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// mappedRuns calls f with each mapped run [b, end) of the file ino (raw
// its inode), in order, as the Writer's own walk finds them (mappedAt: an
// extent, or a run of a block map); w.mu is held.
func mappedRuns(w *Writer, ino uint32, raw []byte, f func(b, end uint64)) error {
	for b := uint64(0); b < 1<<32; {
		ok, end, err := w.mappedAt(ino, raw, b)
		if err != nil {
			return err
		}
		if ok {
			f(b, end)
		}
		b = end
	}
	return nil
}
