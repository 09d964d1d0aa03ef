package disk

// Extent trees of any depth, unwritten extents and fallocate, against the
// host kernel's ext4: scattered small writes, punches and fallocates on a
// few files (1 KiB blocks: a leaf holds 84 extents, so trees grow to depth
// 2 within a sequence) applied to a kernel read-write loop mount and to the
// Writer; every result must match; then e2fsck -fn on the Writer's image,
// and the tree, contents and FIEMAP logical maps (with unwritten flags) of
// a kernel mount of each image must be equal.

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/testenv"
)

func (k kernelTarget) fallocate(p string, mode uint32, off, n int64) error {
	// O_NONBLOCK: a FIFO the sequence made gives ENXIO instead of
	// waiting for a reader.
	fd, err := unix.Open(k.abs(p), unix.O_WRONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fallocate(fd, mode, off, n)
}

func (x writerTarget) fallocate(p string, mode uint32, off, n int64) error {
	ino, err := x.final(p)
	if err != nil {
		return err
	}
	if err := openSpecialErr(x.w, ino); err != nil { // the kernel side's open
		return err
	}
	return x.w.Fallocate(ino, mode, off, n)
}

type fallocTarget interface {
	fallocate(p string, mode uint32, off, n int64) error
}

var fallocModes = []uint32{
	0,
	unix.FALLOC_FL_KEEP_SIZE,
	unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE,
	unix.FALLOC_FL_ZERO_RANGE,
	unix.FALLOC_FL_ZERO_RANGE | unix.FALLOC_FL_KEEP_SIZE,
	unix.FALLOC_FL_COLLAPSE_RANGE,
	unix.FALLOC_FL_INSERT_RANGE,
}

var fallocName = map[uint32]string{
	0:                        "falloc",
	unix.FALLOC_FL_KEEP_SIZE: "falloc-keep",
	unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE: "punch",
	unix.FALLOC_FL_ZERO_RANGE:                            "zero",
	unix.FALLOC_FL_ZERO_RANGE | unix.FALLOC_FL_KEEP_SIZE: "zero-keep",
	unix.FALLOC_FL_COLLAPSE_RANGE:                        "collapse",
	unix.FALLOC_FL_INSERT_RANGE:                          "insert",
}

// fallocOp is runSequence's fallocate operation: a random mode over a
// random range (block-aligned a third of the time) within span bytes.
// KEEP_SIZE allocations end by keepEnd when it is not negative.
func fallocOp(r *rand.Rand, p string, k, x rwTarget, span, keepEnd int64) (string, error, error) {
	mode := fallocModes[r.Intn(len(fallocModes))]
	off, n := r.Int63n(span), 1+r.Int63n(span/4)
	if keepEnd >= 0 && mode&unix.FALLOC_FL_KEEP_SIZE != 0 && mode&unix.FALLOC_FL_PUNCH_HOLE == 0 {
		// e2fsck 1.47 flags an index entry past the end of the file,
		// which a leaf split among many extents preallocated there makes
		// (on the kernel's images too): the deep sequences keep them in.
		off, n = off%(keepEnd+1), 1+r.Int63n(span/4)
		n = max(1, min(n, keepEnd-off))
	}
	shift := mode&(unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE) != 0
	if r.Intn(3) == 0 || (shift && r.Intn(3) != 0) {
		off, n = off&^4095, (n+4095)&^4095
	}
	desc := fmt.Sprintf("%s %s %d+%d", fallocName[mode], p, off, n)
	return desc, k.(fallocTarget).fallocate(p, mode, off, n), x.(fallocTarget).fallocate(p, mode, off, n)
}

// fiemap lists p's mapped logical ranges with FIEMAP, adjacent ranges of
// the same state joined (the physical layout is the allocator's), as
// "start+len" with a "u" suffix for unwritten ones.
func fiemap(t *testing.T, p string) []string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const count = 256
	type extent struct {
		logical, physical, length uint64
		_                         [2]uint64
		flags                     uint32
		_                         [3]uint32
	}
	type req struct {
		start, length                uint64
		flags, mapped, count, unused uint32
		ext                          [count]extent
	}
	var out []string
	var curStart, curEnd uint64
	curU, have := false, false
	flush := func() {
		if have {
			s := fmt.Sprintf("%d+%d", curStart, curEnd-curStart)
			if curU {
				s += "u"
			}
			out = append(out, s)
		}
	}
	for start := uint64(0); ; {
		q := &req{start: start, length: ^uint64(0) - start, flags: 1, count: count} // FIEMAP_FLAG_SYNC
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), 0xC020660B, uintptr(unsafe.Pointer(q))); e != 0 {
			t.Fatalf("FIEMAP %s: %v", p, e)
		}
		if q.mapped == 0 {
			break
		}
		last := false
		for _, e := range q.ext[:q.mapped] {
			u := e.flags&0x800 != 0
			if have && e.logical == curEnd && u == curU {
				curEnd += e.length
			} else {
				flush()
				curStart, curEnd, curU, have = e.logical, e.logical+e.length, u, true
			}
			start = e.logical + e.length
			last = last || e.flags&1 != 0
		}
		if last {
			break
		}
	}
	flush()
	return out
}

// fileSize is p's size on the Writer side, -1 if it has none.
func fileSize(x rwTarget, p string) int64 {
	wt, ok := x.(writerTarget)
	if !ok {
		return -1
	}
	ino, err := wt.final(p)
	if err != nil {
		return -1
	}
	var size int64 = -1
	wt.w.View(func(v *Volume) error {
		if in, err := v.Inode(ino); err == nil {
			size = int64(in.Size)
		}
		return nil
	})
	return size
}

// extentTree lists the regular files under root with their FIEMAP maps.
func extentMaps(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			out[rel] = strings.Join(fiemap(t, p), " ")
		}
		return nil
	})
	return out
}

// maxDepth is the deepest extent tree among the files of names.
func maxDepth(t testing.TB, x writerTarget, names []string) (depth int) {
	for _, p := range names {
		ino, err := x.final(p)
		if err != nil {
			continue
		}
		x.w.mu.Lock()
		raw, err := x.w.getInode(ino)
		x.w.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		depth = max(depth, int(le16(raw, 0x28+6)))
	}
	return depth
}

var deepNames = []string{"f1", "f2", "d/f3", "k1"}

// kernelDeepFile adds k1 to img through a kernel mount: a file of 600
// one-block extents written in random order with fsyncs (so the kernel
// allocates each at once) and a fallocated range, a tree the kernel
// shaped for the Writer to change.
func kernelDeepFile(t *testing.T, img string, bs int) {
	t.Helper()
	mnt, um := kmount(t, img, "rw")
	defer um()
	fd, err := unix.Open(filepath.Join(mnt, "k1"), unix.O_CREAT|unix.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for j, i := range rand.New(rand.NewSource(2)).Perm(600) {
		if _, err := unix.Pwrite(fd, bytes.Repeat([]byte{byte(i%255 + 1)}, bs), int64(2*i*bs)); err != nil {
			t.Fatal(err)
		}
		if j%8 == 7 {
			unix.Fdatasync(fd)
		}
	}
	if err := unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, int64(1300*bs), int64(300*bs)); err != nil {
		t.Fatal(err)
	}
}

// runDeepSequence applies ops operations of a mix made to grow deep
// extent trees: bursts of one-block writes at scattered even blocks,
// punches, fallocates, zero ranges, some long writes, truncates and
// recreations, over the files of deepNames.
func runDeepSequence(t *testing.T, r *rand.Rand, ops int, bs int64, k, x rwTarget, seen map[string]int) {
	t.Helper()
	span := 4096 * bs // bytes each file's operations spread over
	check := func(i int, desc string, nk, nx int, ek, ex error) {
		t.Helper()
		if errnoOf(ek) != errnoOf(ex) || nk != nx {
			t.Fatalf("op %d %s: kernel (%d, %v), iovfs (%d, %v)", i, desc, nk, ek, nx, ex)
		}
		name := "ok"
		if ek != nil {
			name = unix.ErrnoName(errnoOf(ek))
		}
		seen[strings.Fields(desc)[0]+":"+name]++
	}
	for i := 0; i < ops; i++ {
		p := deepNames[r.Intn(len(deepNames))]
		switch op := r.Intn(20); {
		case op < 9:
			for j := 0; j < 16; j++ {
				off := r.Int63n(span/bs/2)*2*bs + r.Int63n(bs/2)
				data := bytes.Repeat([]byte{byte(1 + r.Intn(255))}, 1+r.Intn(int(bs)))
				nk, ek := k.write(p, off, data)
				nx, ex := x.write(p, off, data)
				check(i, fmt.Sprintf("write %s %d+%d", p, off, len(data)), nk, nx, ek, ex)
			}
		case op < 11:
			off, n := r.Int63n(span), 1+r.Int63n(8*bs)
			desc := fmt.Sprintf("punch %s %d+%d", p, off, n)
			mode := uint32(unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE)
			check(i, desc, 0, 0, k.(fallocTarget).fallocate(p, mode, off, n), x.(fallocTarget).fallocate(p, mode, off, n))
		case op < 15:
			desc, ek, ex := fallocOp(r, p, k, x, span, fileSize(x, p))
			check(i, desc, 0, 0, ek, ex)
		case op < 16:
			off := r.Int63n(span)
			data := bytes.Repeat([]byte{byte(1 + r.Intn(255))}, 1+r.Intn(int(40*bs)))
			nk, ek := k.write(p, off, data)
			nx, ex := x.write(p, off, data)
			check(i, fmt.Sprintf("write %s %d+%d", p, off, len(data)), nk, nx, ek, ex)
		case op < 18:
			size := span/2 + r.Int63n(span/2+span/4)
			check(i, fmt.Sprintf("truncate %s %d", p, size), 0, 0, k.truncate(p, size), x.truncate(p, size))
		case op < 19:
			if r.Intn(4) == 0 {
				check(i, "unlink "+p, 0, 0, k.unlink(p), x.unlink(p))
			}
		default:
			if r.Intn(2) == 0 {
				check(i, "mkdir d", 0, 0, k.mkdir("d", 0o755), x.mkdir("d", 0o755))
			}
			check(i, "create "+p, 0, 0, k.create(p, 0o644), x.create(p, 0o644))
			check(i, fmt.Sprintf("truncate %s %d", p, span), 0, 0, k.truncate(p, span), x.truncate(p, span))
		}
	}
}

// deepFeatureSets are the images the deep-tree sequences run on.
var deepFeatureSets = []struct {
	name, opts string
	bs         int
}{
	{"ext4-1k", "", 1024},
	{"ext4-1k-nocsum-32bit", "^metadata_csum,^64bit,uninit_bg", 1024},
	{"ext4-4k", "", 4096},
}

// TestWriterExtentDifferential: see the file comment.
// IOVFS_EXT4RW_SEQS=200 runs 200 sequences of 500 operations per set.
func TestWriterExtentDifferential(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	seqs, ops := sequenceCounts(4, 300, 1, 200)
	umask := uint32(syscall.Umask(0))
	syscall.Umask(int(umask))
	for _, fs := range deepFeatureSets {
		t.Run(fs.name, func(t *testing.T) {
			testenv.Sampled(t, "ext4-1k")
			dir := t.TempDir()
			base := filepath.Join(dir, "base.img")
			mkfsRWBlock(t, base, 64, fs.opts, fs.bs)
			kernelDeepFile(t, base, fs.bs)
			orig, err := os.ReadFile(base)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			depths := map[int]int{}
			for s := 0; s < seqs; s++ {
				seed := int64(s*7919 + fs.bs + len(fs.name))
				kimg, mnt, um, dev, w := kernelTwin(t, dir, orig, "rw")
				w.Batch = true
				k, x := kernelTarget{mnt}, writerTarget{w, umask}
				k.mkdir("d", 0o755)
				x.mkdir("d", 0o755)
				for _, p := range deepNames {
					k.create(p, 0o644)
					x.create(p, 0o644)
				}
				runDeepSequence(t, rand.New(rand.NewSource(seed)), ops, int64(fs.bs), k, x, seen)
				depths[maxDepth(t, x, deepNames[:3])]++ // the Writer's own files
				um()
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				// The kernel's side is read from a fresh mount too, so
				// neither has page-cache state (unwritten blocks with
				// cached pages count as data for SEEK_DATA).
				km, kum := kmount(t, kimg, "ro,noload")
				want, wantMaps := treeOf(t, km), extentMaps(t, km)
				kum()
				wimg := checkedImage(t, dir, dev)
				wm, wum := kmount(t, wimg, "ro,noload")
				got, gotMaps := treeOf(t, wm), extentMaps(t, wm)
				wum()
				diffTrees(t, want, got)
				diffTrees(t, wantMaps, gotMaps)
				if t.Failed() {
					t.Fatalf("sequence %d (seed %d) diverged", s, seed)
				}
			}
			if fs.bs == 1024 && depths[0]+depths[1] == seqs {
				t.Errorf("no sequence grew a tree of depth 2: %v", depths)
			}
			t.Logf("%d sequences of %d operations: 0 divergences, e2fsck clean; deepest tree per sequence (depth: count) %v; results:%s", seqs, ops, depths, resultCounts(seen))
		})
	}
}

// TestWriterHugeExtentTree writes a file of 100,000 one-block extents
// (1 KiB blocks: a tree of depth 3), which the kernel must read back with
// the same contents and FIEMAP map, e2fsck -fn must find clean; then a
// punch through thousands of leaves and a truncate, checked the same way.
// 30,000 extents (still depth 3) under -short and -race.
func TestWriterHugeExtentTree(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	n := 100_000
	if testenv.Quick() || rwRace {
		n = 30_000
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "huge.img")
	mkfsRWBlock(t, img, 256, "", 1024)
	orig, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	dev := memWDev(orig)
	w, err := OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Batch, w.CommitInterval = true, time.Hour
	ino, err := w.Create(rootIno, "big", 0o644, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	blk := make([]byte, 1024)
	pattern := func(i int) byte { return byte(i%251 + 1) }
	for i := 0; i < n; i++ {
		for j := range blk {
			blk[j] = pattern(i)
		}
		if k, err := w.WriteAt(ino, blk, int64(2*i)<<10); k != len(blk) || err != nil {
			t.Fatalf("write %d: %d, %v", i, k, err)
		}
	}
	if d := maxDepth(t, writerTarget{w, 0}, []string{"big"}); d != 3 {
		t.Errorf("tree depth %d, want 3", d)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(stage string, size int64, mapped func(i int) bool) {
		t.Helper()
		if err := os.WriteFile(img, dev, 0o600); err != nil {
			t.Fatal(err)
		}
		e2fsckClean(t, img)
		mnt, um := kmount(t, img, "ro,noload")
		defer um()
		got, err := os.ReadFile(filepath.Join(mnt, "big"))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(got)) != size {
			t.Fatalf("%s: kernel reads %d bytes, want %d", stage, len(got), size)
		}
		want := 0
		for i := 0; int64(2*i)<<10 < size; i++ {
			b := got[int64(2*i)<<10 : min(size, int64(2*i+1)<<10)]
			c := byte(0)
			if mapped(i) {
				c, want = pattern(i), want+1
			}
			if b[0] != c || b[len(b)-1] != c {
				t.Fatalf("%s: block %d reads %d, want %d", stage, 2*i, b[0], c)
			}
		}
		if m := fiemap(t, filepath.Join(mnt, "big")); len(m) != want {
			t.Fatalf("%s: the kernel maps %d extents, want %d", stage, len(m), want)
		}
		t.Logf("%s: kernel read %d bytes and %d extents, e2fsck clean", stage, size, want)
	}
	check("written", int64(2*n-1)<<10, func(int) bool { return true })

	w, err = OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := n/5, n/2 // punched: extents [lo, hi)
	if err := w.Fallocate(ino, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(2*lo)<<10, int64(2*(hi-lo))<<10); err != nil {
		t.Fatal(err)
	}
	cut := 3 * n / 4
	if err := w.Truncate(ino, int64(2*cut)<<10); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check("punched and truncated", int64(2*cut)<<10, func(i int) bool { return i < lo || i >= hi })
}

// mkfsDeep makes a 1 KiB-block image holding f1, a file of 700 one-block
// extents written in random order (a tree of depth 2), and d/.
func mkfsDeep(t testing.TB, img string, sizeMiB int, features string) {
	t.Helper()
	mkfsRWBlock(t, img, sizeMiB, features, 1024)
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	w, err := OpenWriter(memWDev(b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := writerTarget{w, 0}
	x.mkdir("d", 0o755)
	x.create("f1", 0o644)
	for _, i := range rand.New(rand.NewSource(1)).Perm(700) {
		if _, err := x.write("f1", int64(2*i)<<10, bytes.Repeat([]byte{byte(i%255 + 1)}, 1024)); err != nil {
			t.Fatal(err)
		}
	}
	if d := maxDepth(t, x, []string{"f1"}); d != 2 {
		t.Fatalf("f1's tree has depth %d, want 2", d)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// randomDeepOp is randomOp's mix for deep extent trees (TestWriterCrash's
// -deep set, on mkfsDeep's image), each operation one transaction: a
// one-block write at a scattered block (splitting leaves), punches
// (emptying leaves), fallocates, longer writes, rare truncates and
// removals, mostly on f1.
func randomDeepOp(r *rand.Rand, x rwTarget) {
	const bs, span = 1024, 1600 * 1024
	p := deepNames[r.Intn(len(deepNames))]
	if r.Intn(4) != 0 {
		p = "f1"
	}
	f := x.(fallocTarget)
	switch op := r.Intn(40); {
	case op < 16:
		x.write(p, r.Int63n(span/bs)*bs+r.Int63n(bs/2), bytes.Repeat([]byte{byte(1 + r.Intn(255))}, 1+r.Intn(bs)))
	case op < 24:
		f.fallocate(p, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, r.Int63n(span), 1+r.Int63n(span/8))
	case op < 32:
		f.fallocate(p, fallocModes[r.Intn(len(fallocModes))], r.Int63n(span), 1+r.Int63n(span/8))
	case op < 36:
		x.write(p, r.Int63n(span), bytes.Repeat([]byte{byte(1 + r.Intn(255))}, 1+r.Intn(40*bs)))
	case op < 37:
		x.truncate(p, r.Int63n(span+span/4))
	case op < 38:
		x.unlink(p)
	default:
		x.create(p, 0o644)
	}
}

// TestWriterLongExtents: a 40 MiB write and a 40 MiB KEEP_SIZE fallocate
// at 1 KiB blocks merge their per-group allocations into extents of at
// most 32768 initialised and 32767 unwritten blocks (the on-disk length
// limits), which e2fsck and the kernel accept. The image has no superblock backups (sparse_super2,
// num_backup_sb=0), so free space runs across groups for longer than that.
func TestWriterLongExtents(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	img := filepath.Join(t.TempDir(), "long.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024", "-O", "sparse_super2", "-E", "num_backup_sb=0", img, "128M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	dev, w := openMemWriter(t, img)
	ino, err := w.Create(rootIno, "long", 0o644, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 40<<16) // 40 MiB
	if n, err := w.WriteAt(ino, data, 0); n != len(data) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if err := w.Fallocate(ino, unix.FALLOC_FL_KEEP_SIZE, 40<<20, 40<<20); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	raw, err := w.getInode(ino)
	var longest [2]uint32 // initialised, unwritten
	if err == nil {
		var x *xpath
		for lblk := uint64(0); lblk < 80<<10 && err == nil; {
			if x, err = w.xfind(ino, raw, uint32(lblk)); err == nil {
				e, ok, _ := x.at(uint32(lblk))
				if !ok {
					t.Errorf("block %d unmapped", lblk)
					break
				}
				longest[b2u(e.u)] = max(longest[b2u(e.u)], e.n)
				lblk = e.end()
			}
		}
	}
	w.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	// Blocks come a group (8192) at a time and merge while the sum fits,
	// as ext4_can_extents_be_merged: past 3 groups, within the limits.
	if longest[0] > maxInitExtent || longest[1] > maxUnwrittenExtent || longest[0] <= 3*8192 || longest[1] <= 3*8192 {
		t.Errorf("longest extents %v: want (24576, 32768] initialised and (24576, 32767] unwritten", longest)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, dev, 0o600); err != nil {
		t.Fatal(err)
	}
	e2fsckClean(t, img)
	mnt, um := kmount(t, img, "ro,noload")
	defer um()
	got, err := os.ReadFile(filepath.Join(mnt, "long"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("kernel read: %d bytes, %v; equal %v", len(got), err, bytes.Equal(got, data))
	}
	if m := fiemap(t, filepath.Join(mnt, "long")); len(m) != 2 || m[0] != "0+41943040" || m[1] != "41943040+41943040u" {
		t.Errorf("kernel FIEMAP %v", m)
	}
}
