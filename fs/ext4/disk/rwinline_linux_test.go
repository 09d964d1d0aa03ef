package disk

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// inlineSource writes the tree the inline_data tests start from, under
// the names the rapid sequences use: files in i_block alone, spilling
// into system.data, empty, and one with a block; directories whose
// entries sit in i_block and in system.data; an inline symlink.
func inlineSource(t *testing.T, dir string) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"a", "a/b", "c", "c/s", "a/b/c"} {
		must(os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	for p, n := range map[string]int{"f1": 30, "a/f1": 100, "a/f2": 0, "c/f2": 59, "a/b/f1": 120,
		"c/s/a": 5000, "c/s/f1": 1, "c/s/f2": 60, "c/s/c": 80} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + (i+len(p))%26)
		}
		must(os.WriteFile(filepath.Join(dir, p), b, 0o644))
	}
	must(os.Symlink("/nonexistent/"+strings.Repeat("t", 70), filepath.Join(dir, "s")))
	must(os.Symlink("/nonexistent/t", filepath.Join(dir, "a/s")))
}

// TestWriterInline runs the rapid sequences on an inline_data volume made
// by mke2fs -d (so it holds inline files, directories and a symlink under
// the sequences' names) and, as the oracle, on a copy of the same tree in
// a tmpfs directory; TestWriterInlineSequences runs sequences made for
// inline data (see inlineStep) the same way. Oracles:
//
//   - semantics (counts, errnos, the tree's types, modes, owners, link
//     counts, sizes, bytes, symlink targets, xattr sets): tmpfs, run
//     beside the Writer;
//   - the image: e2fsck -fn clean after every sequence;
//   - what the kernel makes of the image: a ro,noload kernel loop mount
//     must show tmpfs's tree, and every path with the size, st_blocks and
//     link count iovfs showed before unmount (writerView); for the files
//     left inline, the SEEK_DATA/SEEK_HOLE map the kernel reports for
//     inline data, other files tmpfs's map;
//   - where the data lives (inline or in a block, and the bytes of i_block
//     and the xattr space): TestWriterInlineLayout, against mke2fs -d
//     images and the rules of fs/ext4/inline.c.
//
// The oracle is not a kernel read-write mount of the image: on this
// machine's kernel (6.18) a truncate of an inline_data file in such a
// mount leaked a jbd2 handle, leaving the journal unable to commit and
// every later sync(2) on the machine hung. Never mount an inline_data
// image read-write in the kernel.
func TestWriterInline(t *testing.T) {
	seqs, ops := rwSequenceCounts()
	inlineDifferential(t, "4096", seqs, ops, func(r *rand.Rand, k, x rwTarget, seen map[string]int) {
		runSequence(t, r, ops, k, x, seen)
	})
}

// TestWriterInlineSequences: inlineStep sequences, tmpfs as the oracle
// (see TestWriterInline), with 4 KiB and 1 KiB blocks.
func TestWriterInlineSequences(t *testing.T) {
	for _, bs := range []string{"4096", "1024"} {
		t.Run("bs="+bs, func(t *testing.T) { inlineSequences(t, bs) })
	}
}

func inlineSequences(t *testing.T, bs string) {
	seqs, ops := rwSequenceCounts()
	inlineDifferential(t, bs, seqs, ops, func(r *rand.Rand, k, x rwTarget, seen map[string]int) {
		for i := 0; i < ops; i++ {
			st := randomInlineStep(r)
			nk, ek := st.apply(k)
			nx, ex := st.apply(x)
			if errnoOf(ek) != errnoOf(ex) || nk != nx {
				t.Fatalf("op %d %s: tmpfs (%d, %v), iovfs (%d, %v)", i, st, nk, ek, nx, ex)
			}
			name := "ok"
			if ek != nil {
				name = unix.ErrnoName(errnoOf(ek))
			}
			seen[st.kindName()+":"+name]++
		}
	})
}

// inlineDifferential runs seqs sequences of run over copies of an
// mke2fs -b bs -d -O inline_data image of inlineSource and of its tree on tmpfs,
// and checks each result as TestWriterInline describes.
func inlineDifferential(t *testing.T, bs string, seqs, ops int, run func(r *rand.Rand, k, x rwTarget, seen map[string]int)) {
	needRoot(t)
	needMke2fs(t)
	umask := uint32(syscall.Umask(0))
	syscall.Umask(int(umask))
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	inlineSource(t, src)
	img := filepath.Join(dir, "base.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", bs, "-O", "inline_data", "-E", "lazy_itable_init=1", "-d", src, img, "32M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	orig, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	// The oracle is a private tmpfs mounted nodev, as the kernel
	// differential's ext4 mount is: a device node the sequences make opens
	// nothing (EACCES), as on the Writer's side.
	shm := t.TempDir()
	if err := unix.Mount("tmpfs", shm, "tmpfs", unix.MS_NODEV, "size=256m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(shm, unix.MNT_DETACH) })
	seen := map[string]int{}
	converted, created, kept, dirsInValue := 0, 0, 0, 0
	before := inlineInodes(t, orig)
	for s := 0; s < seqs; s++ {
		seed := int64(s*1000 + 77)
		oracle := filepath.Join(shm, fmt.Sprint(s))
		if out, err := exec.Command("cp", "-a", src, oracle).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		// The image's root has lost+found (a link of the root's).
		if err := os.Mkdir(filepath.Join(oracle, "lost+found"), 0o700); err != nil {
			t.Fatal(err)
		}
		dev := memWDev(bytes.Clone(orig))
		w, err := OpenWriter(dev, Options{})
		if err != nil {
			t.Fatal(err)
		}
		run(rand.New(rand.NewSource(seed)), tmpfsOracle{kernelTarget{oracle}}, writerTarget{w, umask}, seen)
		view := writerView(t, w.Volume())
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		after := inlineInodes(t, dev)
		for ino := range before {
			if !after[ino] {
				converted++
			}
		}
		for ino := range after {
			if !before[ino] {
				created++
			}
		}
		for _, e := range view {
			if e.inline {
				kept++
				if e.mode&S_IFMT == S_IFDIR && e.size > inlineMin {
					dirsInValue++
				}
			}
		}
		wimg := checkedImage(t, dir, dev)
		want := treeOf(t, oracle)
		os.RemoveAll(oracle)
		wm, wum := kmount(t, wimg, "ro,noload")
		got := treeOf(t, wm)
		sameSizes(t, wm, view)
		wum()
		// The SEEK_DATA/SEEK_HOLE maps are iovfs's, not tmpfs's: tmpfs has
		// no inline data, and a conversion gives block 0 even to an empty
		// inline file (ext4_convert_inline_data_nolock, and the delalloc
		// write path once the size covers it), where tmpfs has a hole.
		for p, e := range view {
			if line, ok := want[p]; ok && e.mode&S_IFMT == S_IFREG {
				want[p] = extentsField.ReplaceAllString(line, "extents="+e.dataMap)
			}
		}
		// tmpfs lists xattrs in its own order, ext4 in its: compare sets.
		diffTrees(t, sortedXattrs(want), sortedXattrs(got))
		if t.Failed() {
			t.Fatalf("sequence %d (seed %d) diverged", s, seed)
		}
	}
	if converted == 0 || created == 0 {
		t.Fatalf("inline inodes converted or freed %d, made %d: the sequences did not reach both", converted, created)
	}
	t.Logf("%d sequences of %d operations: 0 divergences, e2fsck clean, the kernel's ro,noload tree, sizes and st_blocks equal to iovfs's; inline inodes: %d converted or freed, %d made by the Writer, %d inline at the ends (%d directories with entries in system.data); results:%s", seqs, ops, converted, created, kept, dirsInValue, resultCounts(seen))
}

// inlineNames are the names inlineStep uses in each directory: 3 to 7
// bytes, so that i_block's part of an inline directory holds four entries
// or fewer and the value (68 bytes with 256-byte inodes) a few more.
var inlineNames = func() []string {
	var n []string
	for i := 0; i < 10; i++ {
		n = append(n, fmt.Sprintf("n%d%s", i, strings.Repeat("x", i%5)))
	}
	return n
}()

// inlineStep is one operation of an inline_data sequence: writes and
// truncates around the inline limits (60 and 128 bytes with 256-byte
// inodes), names added to and removed from a few directories until they
// outgrow the inode, renames and links between them, small xattrs (which
// take the inline room), and the fallocate modes tmpfs shares (mode 0,
// KEEP_SIZE, PUNCH_HOLE), which convert.
type inlineStep struct {
	kind   int
	p, q   string
	off, n int64
	data   []byte
	mode   uint32
}

const (
	isCreate = iota
	isWrite
	isTruncate
	isUnlink
	isMkdir
	isRmdir
	isRename
	isLink
	isSetxattr
	isFalloc
	isSymlink
)

var inlineKindNames = []string{"create", "write", "truncate", "unlink", "mkdir", "rmdir", "rename", "link", "setxattr", "fallocate", "symlink"}

func (s inlineStep) kindName() string { return inlineKindNames[s.kind] }

func (s inlineStep) String() string {
	return fmt.Sprintf("%s %s %s off=%d n=%d len=%d mode=%#x", s.kindName(), s.p, s.q, s.off, s.n, len(s.data), s.mode)
}

func randomInlinePath(r *rand.Rand) string {
	name := inlineNames[r.Intn(len(inlineNames))]
	switch r.Intn(5) {
	case 0:
		return name
	case 1:
		return "a/b/" + name
	default:
		return []string{"a", "c", "c", "d"}[r.Intn(4)] + "/" + name
	}
}

func randomInlineStep(r *rand.Rand) inlineStep {
	s := inlineStep{p: randomInlinePath(r), q: randomInlinePath(r)}
	switch op := r.Intn(32); {
	case op < 4:
		s.kind = isCreate
	case op < 13:
		s.kind = isWrite
		s.off, s.n = int64(r.Intn(130)), int64(1+r.Intn(70))
		if r.Intn(8) == 0 {
			s.off, s.n = int64(r.Intn(6000)), int64(1+r.Intn(5000))
		}
		s.data = make([]byte, s.n)
		for i := range s.data {
			s.data[i] = byte(r.Intn(255) + 1)
		}
	case op < 16:
		s.kind, s.n = isTruncate, int64(r.Intn(200))
		if r.Intn(4) == 0 {
			s.n = int64(r.Intn(20000))
		}
	case op < 19:
		s.kind = isUnlink
	case op < 22:
		s.kind = isMkdir
		if r.Intn(3) == 0 {
			s.p = []string{"a", "c", "d", "a/b"}[r.Intn(4)]
		}
	case op < 24:
		s.kind = isRmdir
	case op < 27:
		s.kind = isRename
	case op < 28:
		s.kind = isLink
	case op < 30:
		s.kind = isSetxattr
		s.data = make([]byte, r.Intn(41))
		for i := range s.data {
			s.data[i] = byte(r.Intn(256))
		}
		s.q = []string{"user.a", "user.bb", "trusted.x"}[r.Intn(3)]
	case op < 31:
		s.kind = isFalloc
		s.mode = []uint32{0, unix.FALLOC_FL_KEEP_SIZE, unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE}[r.Intn(3)]
		s.off, s.n = int64(r.Intn(300)), int64(1+r.Intn(5000))
	default:
		s.kind = isSymlink
		s.q = "/nonexistent/" + strings.Repeat("t", r.Intn(3)*40+1)
	}
	return s
}

// apply runs s on x.
func (s inlineStep) apply(x rwTarget) (int, error) {
	switch s.kind {
	case isCreate:
		return 0, x.create(s.p, 0o644)
	case isWrite:
		// open(O_CREAT) then pwrite: most writes reach a file.
		if err := x.create(s.p, 0o644); err != nil && errnoOf(err) != syscall.EEXIST {
			return 0, err
		}
		return x.write(s.p, s.off, s.data)
	case isTruncate:
		return 0, x.truncate(s.p, s.n)
	case isUnlink:
		return 0, x.unlink(s.p)
	case isMkdir:
		return 0, x.mkdir(s.p, 0o755)
	case isRmdir:
		return 0, x.rmdir(s.p)
	case isRename:
		return 0, x.rename(s.p, s.q)
	case isLink:
		return 0, x.link(s.p, s.q)
	case isSetxattr:
		return 0, x.setxattr(s.p, s.q, s.data, 0)
	case isFalloc:
		return 0, x.(fallocTarget).fallocate(s.p, s.mode, s.off, s.n)
	default:
		return 0, x.symlink(s.q, s.p)
	}
}

// randomInlineOp is randomOp for the inline_data crash trials: one
// Writer operation per call (a write does not create its file first), as
// the trials' snapshots need.
func randomInlineOp(r *rand.Rand, x rwTarget) {
	st := randomInlineStep(r)
	if st.kind == isWrite {
		x.write(st.p, st.off, st.data)
		return
	}
	st.apply(x)
}

// inlineInodes lists the in-use inodes of img with INLINE_DATA_FL.
func inlineInodes(t *testing.T, img []byte) map[uint32]bool {
	v, err := Open(BytesDevice(img), Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]bool{}
	for ino := uint32(1); ino <= v.inodes; ino++ {
		in, err := v.Inode(ino)
		if err != nil || in.Nlink == 0 || in.Mode == 0 {
			continue
		}
		if in.Flags&FlagInlineData != 0 {
			out[ino] = true
		}
	}
	return out
}

// viewEnt is what iovfs shows of one path: type, size, st_blocks, and for
// regular files the SEEK_DATA/SEEK_HOLE map the kernel must report.
type viewEnt struct {
	mode, nlink  uint32
	size, blocks uint64
	inline       bool
	dataMap      string // regular files: seekMapOf in dataMap's form
}

// extentsField is treeOf's SEEK_DATA/SEEK_HOLE field.
var extentsField = regexp.MustCompile(`extents=\[(?:\[-?\d+ -?\d+\] ?)*\]`)

// writerView walks v (the Writer's volume before unmount) from the root.
func writerView(t *testing.T, v *Volume) map[string]viewEnt {
	t.Helper()
	out := map[string]viewEnt{}
	var walk func(dir uint32, prefix string)
	walk = func(dir uint32, prefix string) {
		d, err := v.Inode(dir)
		if err != nil {
			t.Fatal(err)
		}
		type ent struct {
			name string
			ino  uint32
		}
		var ents []ent
		if err := v.ReadDir(d, func(name []byte, ino uint32, _ uint8) bool {
			ents = append(ents, ent{string(name), ino})
			return true
		}); err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			p := prefix + e.name
			if p == "lost+found" {
				continue
			}
			in, err := v.Inode(e.ino)
			if err != nil {
				t.Fatal(err)
			}
			x := viewEnt{mode: in.Mode, nlink: in.Nlink, size: in.Size, blocks: in.Blocks, inline: in.Flags&FlagInlineData != 0}
			if in.Mode&S_IFMT == S_IFREG {
				x.dataMap = fmt.Sprint(seekMapOf(t, v, in))
			}
			out[p] = x
			if in.IsDir() {
				walk(e.ino, p+"/")
			}
		}
	}
	walk(rootIno, "")
	return out
}

// seekMapOf is the SEEK_DATA/SEEK_HOLE map (dataMap's form) the kernel
// gives file in of v: for inline data ext4_inline_data_iomap's, data from
// 0 to min(inline size, i_size) and, when i_size is larger, ENOENT from
// ext4_iomap_begin_report past it ({0, -ENOENT}); otherwise the mapped
// blocks, cut at i_size. Unwritten blocks count as data: treeOf reads a
// file before seeking, and iomap_seek_data takes an unwritten range with
// cached pages for data (mapping_seek_hole_data).
func seekMapOf(t *testing.T, v *Volume, in *Inode) [][2]int64 {
	t.Helper()
	var out [][2]int64
	if in.Size == 0 {
		return out
	}
	if in.Flags&FlagInlineData != 0 {
		data, err := v.InlineData(in)
		if err != nil {
			t.Fatal(err)
		}
		if n := min(uint64(len(data)), in.Size); n < in.Size {
			return append(out, [2]int64{0, -int64(syscall.ENOENT)})
		}
		return append(out, [2]int64{0, int64(in.Size)})
	}
	bs := v.bs
	var c ExtentCache
	for lblk := uint64(0); lblk < (in.Size+bs-1)/bs; {
		m, err := v.MapBlocks(in, &c, lblk)
		if err != nil {
			t.Fatal(err)
		}
		end := m.Logical + m.Len
		if !m.Hole {
			lo, hi := int64(lblk*bs), int64(min(end*bs, in.Size))
			if k := len(out) - 1; k >= 0 && out[k][1] == lo {
				out[k][1] = hi
			} else {
				out = append(out, [2]int64{lo, hi})
			}
		}
		lblk = end
	}
	return out
}

// sameSizes checks that the kernel's mount at mnt shows every path of
// view with the size, st_blocks and link count iovfs showed.
func sameSizes(t *testing.T, mnt string, view map[string]viewEnt) {
	t.Helper()
	for p, e := range view {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(mnt, p), &st); err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if uint64(st.Size) != e.size || uint64(st.Blocks) != e.blocks || st.Nlink != uint64(e.nlink) || st.Mode != e.mode {
			t.Errorf("%s: kernel mode %o size %d blocks %d nlink %d, iovfs mode %o size %d blocks %d nlink %d (inline %v)", p, st.Mode, st.Size, st.Blocks, st.Nlink, e.mode, e.size, e.blocks, e.nlink, e.inline)
		}
	}
}

// tmpfsOracle is a kernelTarget on a tmpfs directory standing in for a
// kernel ext4 mount: the same namespace semantics, but no ext4 limits on
// the space xattrs take (metaOp keeps its values small for it).
type tmpfsOracle struct{ kernelTarget }

// sortedXattrs returns tree with each line's xattr fields (" name=len/hash",
// metaLine's) sorted, and without special files' st_blocks (ext4 counts
// their xattr block there).
func sortedXattrs(tree map[string]string) map[string]string {
	out := make(map[string]string, len(tree))
	for p, line := range tree {
		f := strings.Split(line, " ")
		var keep, xs []string
		special := false
		for _, w := range f {
			if m, ok := strings.CutPrefix(w, "mode="); ok {
				mode, _ := strconv.ParseUint(m, 8, 32)
				t := mode & syscall.S_IFMT
				special = t == syscall.S_IFIFO || t == syscall.S_IFSOCK || t == syscall.S_IFCHR || t == syscall.S_IFBLK
			}
		}
		for _, w := range f {
			if special && strings.HasPrefix(w, "blocks=") {
				continue // a special file's xattr block: tmpfs has none
			}
			if i := strings.IndexByte(w, '='); i > 0 && strings.Contains(w[:i], ".") {
				xs = append(xs, w)
			} else {
				keep = append(keep, w)
			}
		}
		sort.Strings(xs)
		out[p] = strings.Join(append(keep, xs...), " ")
	}
	return out
}
