package disk

// Htree directories written by the Writer (rwhtree.go) against the host
// kernel: random sequences over directories big enough to need htrees,
// the index filled to its last level, a 100,000-entry directory, and
// crash trials across splits.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/testenv"
)

// htreeSets are the feature sets of the htree tests: 1 KiB blocks make
// trees deep quickly; the hash algorithms and the unsigned-hash flag
// change which leaf a name goes to.
var htreeSets = []struct {
	name     string
	mkfs     []string
	hash     string // s_def_hash_version, set by debugfs
	unsigned bool   // EXT2_FLAGS_UNSIGNED_HASH instead of mke2fs's signed
	long     bool   // names of 200 bytes or more (htreeSeq.name)
}{
	{"4k-halfmd4", []string{"-b", "4096"}, "", false, false},
	{"1k-halfmd4", []string{"-b", "1024"}, "", false, false},
	{"1k-nocsum-tea", []string{"-b", "1024", "-O", "^metadata_csum,uninit_bg"}, "tea", false, false},
	{"1k-legacy-unsigned", []string{"-b", "1024"}, "legacy", true, false},
	{"1k-largedir-tea-unsigned", []string{"-b", "1024", "-O", "large_dir"}, "tea", true, false},
	{"1k-halfmd4-long", []string{"-b", "1024"}, "", false, true},
	// Block-mapped directories (no extents): htrees over block maps.
	{"1k-blockmap-halfmd4", []string{"-b", "1024", "-O", "^extent,^64bit"}, "", false, false},
}

func mkfsHtree(t testing.TB, img string, sizeMiB int, args []string, hash string, unsigned bool) {
	t.Helper()
	a := append([]string{"-q", "-F", "-t", "ext4"}, args...)
	a = append(a, img, fmt.Sprintf("%dM", sizeMiB))
	if out, err := exec.Command("mke2fs", a...).CombinedOutput(); err != nil {
		t.Fatalf("mke2fs %v: %v\n%s", a, err, out)
	}
	testenv.SetDirHash(t, img, hash, unsigned)
}

// htreeName is name i of the sequences' pool: 1 to 255 bytes, some with
// bytes above 0x7f (where the signed and unsigned hashes differ).
func htreeName(i int) string {
	const alpha = "abcdefghijklmnopqrstuvwxyz\xc3\xa9_"
	l := 1 + (i*131)%255
	b := []byte(strconv.Itoa(i) + "-")
	for len(b) < l {
		b = append(b, alpha[(len(b)*7+i)%len(alpha)])
	}
	return string(b)
}

// htreeSeq is the state of one random sequence: the files and
// directories the kernel side holds.
type htreeSeq struct {
	r    *rand.Rand
	k    kernelTarget
	x    writerTarget
	live map[string]bool // files and symlinks
	dirs map[string]bool // directories made by the sequence
	seen map[string]int
	n    int // operations applied (a burst is one)
	long bool
}

// name is name i of the sequence's pool: htreeName, padded to at least
// 200 bytes in a long sequence (four entries to a 1 KiB leaf, so that
// the index gets a second level within 500 operations).
func (s *htreeSeq) name(i int) string {
	n := htreeName(i)
	if s.long && len(n) < 200 {
		n += strings.Repeat("L", 200-len(n))
	}
	return n
}

var htreeSubdirs = []string{"h/s", "g/s", "h/t", "g/t"}

func (s *htreeSeq) pickLive() string {
	if len(s.live) == 0 {
		return "h/" + s.name(s.r.Intn(2000))
	}
	keys := make([]string, 0, len(s.live))
	for k := range s.live {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[s.r.Intn(len(keys))]
}

func (s *htreeSeq) pickDir() string {
	c := []string{"h", "g"}
	for _, d := range htreeSubdirs {
		if s.dirs[d] {
			c = append(c, d)
		}
	}
	return c[s.r.Intn(len(c))]
}

// refresh sets what the kernel holds at paths ps in the live and dirs
// sets; a directory that moved takes its entries along.
func (s *htreeSeq) refresh(ps ...string) {
	for _, p := range ps {
		var st unix.Stat_t
		err := unix.Lstat(s.k.abs(p), &st)
		isDir := err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
		if err == nil && !isDir {
			s.live[p] = true
		} else {
			delete(s.live, p)
		}
		if p != "h" && p != "g" {
			if isDir {
				s.dirs[p] = true
			} else {
				delete(s.dirs, p)
			}
		}
	}
}

// do applies one operation to both sides and fails at a divergence.
func (s *htreeSeq) do(t *testing.T, desc string, fk, fx func() error, after ...string) {
	t.Helper()
	ek, ex := fk(), fx()
	if errnoOf(ek) != errnoOf(ex) {
		t.Fatalf("op %d: %s: kernel %v, iovfs %v", s.n, desc, ek, ex)
	}
	name := "ok"
	if ek != nil {
		name = unix.ErrnoName(errnoOf(ek))
	}
	s.seen[strings.Fields(desc)[0]+":"+name]++
	s.refresh(after...)
}

func (s *htreeSeq) create(t *testing.T, p string) {
	s.do(t, "create "+p, func() error { return s.k.create(p, 0o644) }, func() error { return s.x.create(p, 0o644) }, p)
}

func (s *htreeSeq) unlink(t *testing.T, p string) {
	s.do(t, "unlink "+p, func() error { return s.k.unlink(p) }, func() error { return s.x.unlink(p) }, p)
}

// step applies one random operation; bursts of creates and unlinks in
// one directory (one operation each) make and empty leaves quickly.
func (s *htreeSeq) step(t *testing.T) {
	r := s.r
	s.n++
	switch op := r.Intn(100); {
	case op < 40:
		s.create(t, s.pickDir()+"/"+s.name(r.Intn(2000)))
	case op < 50:
		d, i := s.pickDir(), r.Intn(2000)
		for j := 0; j < 32; j++ {
			s.create(t, d+"/"+s.name((i+j)%2000))
		}
	case op < 62:
		p := s.pickLive()
		if r.Intn(5) == 0 {
			p = s.pickDir() + "/" + s.name(r.Intn(2000))
		}
		s.unlink(t, p)
	case op < 67:
		d := s.pickDir() + "/"
		var ps []string
		for p := range s.live {
			if strings.HasPrefix(p, d) && !strings.Contains(p[len(d):], "/") {
				ps = append(ps, p)
			}
		}
		sort.Strings(ps)
		r.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		for _, p := range ps[:min(len(ps), 24)] {
			s.unlink(t, p)
		}
	case op < 78:
		a, b := s.pickLive(), s.pickDir()+"/"+s.name(r.Intn(2000))
		if r.Intn(4) == 0 {
			b = s.pickLive()
		}
		s.do(t, "rename "+a+" "+b, func() error { return s.k.rename(a, b) }, func() error { return s.x.rename(a, b) }, a, b)
	case op < 83:
		a, b := s.pickLive(), s.pickDir()+"/"+s.name(r.Intn(2000))
		s.do(t, "link "+a+" "+b, func() error { return s.k.link(a, b) }, func() error { return s.x.link(a, b) }, a, b)
	case op < 87:
		d := htreeSubdirs[r.Intn(len(htreeSubdirs))]
		s.do(t, "mkdir "+d, func() error { return s.k.mkdir(d, 0o755) }, func() error { return s.x.mkdir(d, 0o755) }, d)
	case op < 91:
		d := htreeSubdirs[r.Intn(len(htreeSubdirs))]
		s.do(t, "rmdir "+d, func() error { return s.k.rmdir(d) }, func() error { return s.x.rmdir(d) }, d)
	case op < 94:
		// A directory (an htree one, often) moves: its ".." in the dx
		// root changes, and the entries under it move along.
		a, b := htreeSubdirs[r.Intn(len(htreeSubdirs))], htreeSubdirs[r.Intn(len(htreeSubdirs))]
		var under []string
		for p := range s.live {
			if strings.HasPrefix(p, a+"/") {
				under = append(under, p)
			}
		}
		s.do(t, "rename "+a+" "+b, func() error { return s.k.rename(a, b) }, func() error { return s.x.rename(a, b) }, a, b)
		if s.dirs[b] && !s.dirs[a] && a != b {
			for _, p := range under {
				delete(s.live, p)
				s.live[b+p[len(a):]] = true
			}
		}
	case op < 97:
		a, b := s.pickLive(), s.pickLive()
		s.do(t, "exchange "+a+" "+b, func() error { return s.k.exchange(a, b) }, func() error { return s.x.exchange(a, b) }, a, b)
	default:
		p := s.pickDir() + "/" + s.name(r.Intn(2000))
		tgt := "/nonexistent/" + strings.Repeat("t", r.Intn(3)*40+1)
		s.do(t, "symlink "+p, func() error { return s.k.symlink(tgt, p) }, func() error { return s.x.symlink(tgt, p) }, p)
	}
}

// diskOrder lists directory p of image img in on-disk order, leaf by
// leaf, as the reader walks it: equal lists mean equal leaf layouts.
func diskOrder(t *testing.T, img []byte, p string) []string {
	t.Helper()
	if binary.LittleEndian.Uint32(img[1024+0x60:])&0x4 != 0 {
		// The journal needs recovery (INCOMPAT_RECOVER), which Open
		// does not replay: replay it on a copy first, as a mount would.
		t.Logf("%s: the image's journal needs recovery; replaying it on a copy", p)
		img = bytes.Clone(img)
		w, err := OpenWriter(memWDev(img), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	v, err := Open(memWDev(img), Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := v.Inode(mustLookup(t, v, p))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := v.ReadDir(in, func(name []byte, _ uint32, _ uint8) bool {
		out = append(out, string(name))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func htreeSeqCounts() (seqs, ops int) { return sequenceCounts(4, 300, 1, 150) }

// TestWriterHtreeKernelDifferential: random sequences over directories
// that grow into htrees (long names, bursts of creates and unlinks,
// renames and links between them, subdirectories made, moved and
// removed), applied to a kernel loop mount and to the Writer on
// identical images: every errno must match, e2fsck -fn must be clean, a
// kernel mount of the Writer's image must show the kernel's tree, and the
// two big directories must have the same leaves in the same order (the
// Writer splits as Linux does). IOVFS_EXT4RW_SEQS=200 runs 200 x 500.
func TestWriterHtreeKernelDifferential(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	seqs, ops := htreeSeqCounts()
	umask := uint32(syscall.Umask(0))
	syscall.Umask(int(umask))
	for _, fs := range htreeSets {
		t.Run(fs.name, func(t *testing.T) {
			testenv.Sampled(t, "1k-halfmd4")
			dir := t.TempDir()
			base := filepath.Join(dir, "base.img")
			mkfsHtree(t, base, 32, fs.mkfs, fs.hash, fs.unsigned)
			orig, err := os.ReadFile(base)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			sameLayout, indexed, deep := 0, 0, 0
			hashes := map[string]int{}
			for q := 0; q < seqs; q++ {
				seed := int64(q*1000 + len(fs.name))
				kimg, mnt, um, dev, w := kernelTwin(t, dir, orig, "rw")
				s := &htreeSeq{r: rand.New(rand.NewSource(seed)), k: kernelTarget{mnt}, x: writerTarget{w, umask}, live: map[string]bool{}, dirs: map[string]bool{}, seen: seen, long: fs.long}
				s.do(t, "mkdir h", func() error { return s.k.mkdir("h", 0o755) }, func() error { return s.x.mkdir("h", 0o755) })
				s.do(t, "mkdir g", func() error { return s.k.mkdir("g", 0o755) }, func() error { return s.x.mkdir("g", 0o755) })
				for s.n < ops {
					s.step(t)
				}
				want := treeOf(t, mnt)
				um()
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				wimg := checkedImage(t, dir, dev)
				wm, wum := kmount(t, wimg, "ro,noload")
				got := treeOf(t, wm)
				wum()
				diffTrees(t, want, got)
				if t.Failed() {
					t.Fatalf("sequence %d (seed %d) diverged", q, seed)
				}
				kb, err := os.ReadFile(kimg)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range []string{"h", "g"} {
					ko, wo := diskOrder(t, kb, d), diskOrder(t, dev, d)
					if strings.Join(ko, "/") != strings.Join(wo, "/") {
						t.Fatalf("sequence %d (seed %d): %s: on-disk order differs from the kernel's:\nkernel %q\niovfs  %q", q, seed, d, ko, wo)
					}
					sameLayout++
					v, _ := Open(dev, Options{})
					hin, _ := v.Inode(mustLookup(t, v, d))
					if hin.Flags&FlagIndex != 0 {
						indexed++
						b := make([]byte, v.bs)
						v.dirBlock(hin, &ExtentCache{}, 0, b)
						hashes[fmt.Sprintf("v%d-unsigned=%v", b[0x1C], v.hashUnsigned)]++
						if lv := htreeLevels(t, v, hin); lv > 0 {
							deep++
						}
					}
				}
			}
			keys := make([]string, 0, len(seen))
			for k := range seen {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var sb strings.Builder
			for _, k := range keys {
				fmt.Fprintf(&sb, " %s=%d", k, seen[k])
			}
			t.Logf("%d sequences of %d operations: 0 divergences, e2fsck clean, %d/%d big directories with the kernel's leaf layout, %d indexed (hash %v), %d with 2+ index levels; results:%s", seqs, ops, sameLayout, 2*seqs, indexed, hashes, deep, sb.String())
		})
	}
}

func mustLookup(t *testing.T, v *Volume, p string) uint32 {
	t.Helper()
	ino := uint32(rootIno)
	for _, c := range strings.Split(p, "/") {
		in, err := v.Inode(ino)
		if err != nil {
			t.Fatal(err)
		}
		if ino, err = v.Lookup(in, c); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	return ino
}

// htreeLevels is the root's indirect_levels of htree directory in.
func htreeLevels(t *testing.T, v *Volume, in *Inode) int {
	t.Helper()
	b := make([]byte, v.bs)
	if _, _, err := v.dirBlock(in, &ExtentCache{}, 0, b); err != nil {
		t.Fatal(err)
	}
	return int(b[0x1E])
}

// TestWriterHtreeIndexFull fills one directory of a 1 KiB-block volume
// with 255-byte names, through the kernel and through the Writer, until
// the index is full (ENOSPC at the last level without large_dir: both
// sides must fail at the same create) or, with large_dir, past a third
// level; the leaves must be the kernel's, in its order, e2fsck -fn clean,
// and the kernel must find every name in the Writer's image.
func TestWriterHtreeIndexFull(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	if testenv.Quick() || rwRace {
		t.Skip("fills a directory to ~30,000 entries on each side")
	}
	for _, c := range []struct {
		name  string
		mkfs  []string
		limit int // creates at most; 0: until ENOSPC
	}{
		{"1k", []string{"-b", "1024", "-N", "60000"}, 0},
		{"1k-largedir", []string{"-b", "1024", "-N", "60000", "-O", "large_dir"}, 40000},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			base := filepath.Join(dir, "base.img")
			mkfsHtree(t, base, 96, c.mkfs, "", false)
			orig, _ := os.ReadFile(base)
			kimg, mnt, um, dev, w := kernelTwin(t, dir, orig, "rw")
			w.Batch = true
			if err := unix.Mkdir(filepath.Join(mnt, "d"), 0o755); err != nil {
				t.Fatal(err)
			}
			d, err := w.Mkdir(rootIno, "d", 0o755, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			name := func(i int) string {
				s := fmt.Sprintf("%06d-", i)
				return s + strings.Repeat(string(rune('a'+i%26)), 255-len(s))
			}
			n := 0
			for ; c.limit == 0 || n < c.limit; n++ {
				fd, ek := unix.Open(filepath.Join(mnt, "d", name(n)), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
				if ek == nil {
					unix.Close(fd)
				}
				_, ex := w.Create(d, name(n), 0o644, 0, 0)
				if errnoOf(ek) != errnoOf(ex) {
					t.Fatalf("create %d: kernel %v, iovfs %v", n, ek, ex)
				}
				if ek != nil {
					if !errors.Is(ek, syscall.ENOSPC) {
						t.Fatalf("create %d: %v", n, ek)
					}
					break
				}
			}
			um()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			wimg := filepath.Join(dir, "w.img")
			os.WriteFile(wimg, dev, 0o600)
			e2fsckClean(t, wimg)
			e2fsckClean(t, kimg)
			kb, _ := os.ReadFile(kimg)
			ko, wo := diskOrder(t, kb, "d"), diskOrder(t, dev, "d")
			if len(ko) != n || strings.Join(ko, "/") != strings.Join(wo, "/") {
				t.Fatalf("on-disk order differs from the kernel's (%d and %d entries, %d made)", len(ko), len(wo), n)
			}
			v, _ := Open(dev, Options{})
			in, _ := v.Inode(d)
			lv := htreeLevels(t, v, in)
			wm, wum := kmount(t, wimg, "ro,noload")
			defer wum()
			for i := 0; i < n; i++ {
				var st unix.Stat_t
				if err := unix.Lstat(filepath.Join(wm, "d", name(i)), &st); err != nil {
					t.Fatalf("kernel lstat of entry %d: %v", i, err)
				}
			}
			t.Logf("%d entries (then %s), indirect_levels %d: same leaves as the kernel's, e2fsck clean, every name found by the kernel", n, map[bool]string{true: "ENOSPC on both sides", false: "stopped"}[c.limit == 0], lv)
		})
	}
}

// TestWriterHtree100k: a directory of 100,000 entries made by the Writer
// stays an htree (debugfs htree_dump reads it), e2fsck -fn is clean, the
// kernel finds every name, and the reader's htree lookup too.
func TestWriterHtree100k(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	n := 100000
	if testenv.Quick() || rwRace {
		n = 10000
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "base.img")
	mkfsHtree(t, base, 160, []string{"-b", "4096", "-N", strconv.Itoa(n + 1000)}, "", false)
	orig, _ := os.ReadFile(base)
	dev := memWDev(orig)
	w, err := OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Batch = true
	d, err := w.Mkdir(rootIno, "big", 0o755, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := func(i int) string { return fmt.Sprintf("file-%07d", i) }
	for i := 0; i < n; i++ {
		if _, err := w.Create(d, name(i), 0o644, 0, 0); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	v := w.Volume()
	in, err := v.Inode(d)
	if err != nil {
		t.Fatal(err)
	}
	if in.Flags&FlagIndex == 0 {
		t.Fatal("the directory is not indexed")
	}
	for i := 0; i < n; i += 7 {
		if _, err := v.Lookup(in, name(i)); err != nil {
			t.Fatalf("reader lookup %d: %v", i, err)
		}
	}
	img := filepath.Join(dir, "w.img")
	os.WriteFile(img, dev, 0o600)
	e2fsckClean(t, img)
	out, err := exec.Command("debugfs", "-R", "htree_dump /big", img).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("Root node dump:")) || !bytes.Contains(out, []byte("Number of entries (count):")) {
		t.Fatalf("debugfs htree_dump: %v\n%.2000s", err, out)
	}
	mnt, um := kmount(t, img, "ro,noload")
	defer um()
	for i := 0; i < n; i++ {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(mnt, "big", name(i)), &st); err != nil {
			t.Fatalf("kernel lstat %s: %v", name(i), err)
		}
	}
	ents, err := os.ReadDir(filepath.Join(mnt, "big"))
	if err != nil || len(ents) != n {
		t.Fatalf("kernel lists %d entries (%v), want %d", len(ents), err, n)
	}
	t.Logf("%d entries: indexed, indirect_levels %d, %d blocks; htree_dump reads it, e2fsck clean, the kernel finds every name", n, htreeLevels(t, v, in), in.Size/uint64(v.bs))
}

// TestWriterHtreeCrash cuts the device off at a random write during a
// sequence of single operations (creates, unlinks, renames) on 1 KiB-block
// directories already holding hundreds of long names, so that most
// creates split a leaf and some an index node; recovery must give an
// e2fsck-clean volume holding the tree after the last committed operation
// or the one under way. IOVFS_EXT4RW_CRASH=500 runs 500 trials.
func TestWriterHtreeCrash(t *testing.T) {
	needMke2fs(t)
	trials, ops := 30, 40
	if testenv.Quick() || rwRace {
		trials = 6
	}
	if s := os.Getenv("IOVFS_EXT4RW_CRASH"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	fixed := time.Unix(1750000000, 5)
	levels := 0
	dir := t.TempDir()
	base := filepath.Join(dir, "base.img")
	mkfsHtree(t, base, 16, []string{"-b", "1024"}, "", false)
	orig, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	// The starting image: h with 500 names of 180 bytes or more (a
	// two-level index, whose nodes the trials' creates split), g with 40.
	{
		dev := memWDev(orig)
		w, err := OpenWriter(dev, Options{})
		if err != nil {
			t.Fatal(err)
		}
		w.Now = func() time.Time { return fixed }
		x := writerTarget{w, 0}
		x.mkdir("h", 0o755)
		x.mkdir("g", 0o755)
		for i, made := 0, 0; made < 500; i++ {
			if len(htreeName(i)) < 180 {
				continue
			}
			if err := x.create("h/"+htreeName(i), 0o644); err != nil {
				t.Fatal(err)
			}
			made++
		}
		v := w.Volume()
		in, _ := v.Inode(mustLookup(t, v, "h"))
		levels = htreeLevels(t, v, in)
		for i := 0; i < 40; i++ {
			x.create("g/"+htreeName(3*i+1), 0o644)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	op := func(r *rand.Rand, x writerTarget) {
		d := []string{"h", "g"}[r.Intn(2)]
		p := d + "/" + htreeName(r.Intn(2000))
		switch k := r.Intn(10); {
		case k < 6:
			x.create(p, 0o644)
		case k < 8:
			x.unlink(p)
		case k < 9:
			x.rename(p, []string{"h", "g"}[r.Intn(2)]+"/"+htreeName(r.Intn(2000)))
		default:
			// h (an htree) moves under g and back: ".." in its root.
			if x.rename("h", "g/h") != nil {
				x.rename("g/h", "h")
			}
		}
	}
	replayed := 0
	for trial := 0; trial < trials; trial++ {
		seed := int64(trial)
		ref := &cutDev{memWDev: memWDev(bytes.Clone(orig)), limit: -1}
		w, err := OpenWriter(ref, Options{})
		if err != nil {
			t.Fatal(err)
		}
		w.Now = func() time.Time { return fixed }
		snaps := []map[string]string{snapshot(t, w)}
		ends := []int{ref.count}
		r := rand.New(rand.NewSource(seed))
		for i := 0; i < ops; i++ {
			op(r, writerTarget{w, 0})
			snaps = append(snaps, snapshot(t, w))
			ends = append(ends, ref.count)
		}
		w.Close()
		cut := ends[0] + rand.New(rand.NewSource(seed+1e6)).Intn(ref.count-ends[0]+1)
		cd := &cutDev{memWDev: memWDev(bytes.Clone(orig)), limit: cut}
		if w, err = OpenWriter(cd, Options{}); err != nil {
			t.Fatal(err)
		}
		w.Now = func() time.Time { return fixed }
		r = rand.New(rand.NewSource(seed))
		for i := 0; i < ops && cd.count <= cut; i++ {
			op(r, writerTarget{w, 0})
		}
		img := memWDev(cd.memWDev)
		var logs []string
		w2, err := OpenWriter(img, Options{Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
		if err != nil {
			t.Fatalf("trial %d (cut at write %d): recovery: %v", trial, cut, err)
		}
		for _, l := range logs {
			if strings.Contains(l, "recovered") && !strings.Contains(l, "recovered 0") {
				replayed++
			}
		}
		got := snapshot(t, w2)
		k := 0
		for i := 1; i < len(ends) && ends[i] <= cut; i++ {
			k = i
		}
		if !sameTree(got, snaps[k]) && (k+1 >= len(snaps) || !sameTree(got, snaps[k+1])) {
			t.Fatalf("trial %d (cut at write %d): recovered tree is neither the one after op %d nor %d", trial, cut, k, k+1)
		}
		if err := w2.Close(); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "crash.img")
		if err := os.WriteFile(out, img, 0o600); err != nil {
			t.Fatal(err)
		}
		e2fsckClean(t, out)
	}
	t.Logf("%d crash trials over htree splits (h starts with indirect_levels %d): e2fsck clean and atomic in every one; %d needed a journal replay", trials, levels, replayed)
}

var _ = path.Join

// TestWriterHtreeConvertENOSPC: a one-block directory is full and the
// volume has one free block: the conversion to an htree gets block 1 but
// the split finds no block for its second leaf (the rest are
// s_resv_clusters), so the create fails with
// ENOSPC and, as make_indexed_dir's out_frames, the directory is left an
// htree of one leaf holding every earlier name; e2fsck -fn is clean.
func TestWriterHtreeConvertENOSPC(t *testing.T) {
	needMke2fs(t)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.img")
	mkfsHtree(t, base, 2, []string{"-b", "1024", "-O", "^has_journal"}, "", false)
	orig, _ := os.ReadFile(base)
	dev := memWDev(orig)
	w, err := OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := w.Mkdir(rootIno, "d", 0o755, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := func(i int) string { return fmt.Sprintf("%d", i) + strings.Repeat("n", 254) }
	for i := 0; i < 3; i++ { // 3 x 264 bytes: a fourth needs a second block
		if _, err := w.Create(d, name(i), 0o644, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	big, err := w.Create(rootIno, "big", 0o644, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1024)
	var off int64
	for ; ; off += 1024 {
		if _, err := w.WriteAt(big, chunk, off); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// Free exactly one block (the last one, no extent change elsewhere):
	// one block above s_resv_clusters, the last an ordinary allocation
	// may take (rwspace.go).
	if err := w.Truncate(big, off-1024); err != nil {
		t.Fatal(err)
	}
	if n := w.sbFreeBlocks(); n != w.resvClusters()+1 {
		t.Fatalf("%d free blocks, want %d", n, w.resvClusters()+1)
	}
	if _, err := w.Create(d, name(3), 0o644, 0, 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("create needing a conversion and a split with one free block: %v, want ENOSPC", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "w.img")
	os.WriteFile(img, dev, 0o600)
	e2fsckClean(t, img)
	v, err := Open(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := v.Inode(d)
	if err != nil {
		t.Fatal(err)
	}
	if in.Flags&FlagIndex == 0 || in.Size != 2048 {
		t.Fatalf("directory flags %#x size %d: want an htree of two blocks", in.Flags, in.Size)
	}
	for i := 0; i < 3; i++ {
		if _, err := v.Lookup(in, name(i)); err != nil {
			t.Fatalf("lookup %d through the htree: %v", i, err)
		}
	}
	if _, err := v.Lookup(in, name(3)); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("lookup of the failed name: %v", err)
	}
}
