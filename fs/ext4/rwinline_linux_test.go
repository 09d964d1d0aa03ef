package ext4

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
// a tmpfs directory: every count and errno must match; then e2fsck -fn is
// clean and a read-only kernel mount of the Writer's image shows the
// oracle's tree (types, modes, owners, link counts, sizes, bytes,
// SEEK_DATA/SEEK_HOLE maps, symlink targets).
//
// The oracle is tmpfs, not a kernel read-write mount of the image: on this
// machine's kernel (6.18) a truncate of an inline_data file in such a
// mount leaked a jbd2 handle, leaving the journal unable to commit and
// every later sync(2) on the machine hung.
func TestWriterInline(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	seqs, ops := rwSequenceCounts()
	umask := uint32(syscall.Umask(0))
	syscall.Umask(int(umask))
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	inlineSource(t, src)
	img := filepath.Join(dir, "base.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-O", "inline_data", "-E", "lazy_itable_init=1", "-d", src, img, "32M").CombinedOutput(); err != nil {
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
	converted, created, kept := 0, 0, 0
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
		runSequence(t, rand.New(rand.NewSource(seed)), ops, tmpfsOracle{kernelTarget{oracle}}, writerTarget{w, umask}, seen)
		view := writerView(t, w.Volume())
		w.Close()
		before := inlineInodes(t, orig)
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
			}
		}
		wimg := checkedImage(t, dir, dev)
		want := treeOf(t, oracle)
		os.RemoveAll(oracle)
		wm, wum := kmount(t, wimg, "ro,noload")
		got := treeOf(t, wm)
		sameSizes(t, wm, view)
		wum()
		// tmpfs has no inline data: for the Writer's inline files the
		// kernel's SEEK_DATA/SEEK_HOLE map is the one ext4_iomap_begin_report
		// gives inline data.
		for p, e := range view {
			if e.inline && e.mode&S_IFMT == S_IFREG {
				if line, ok := want[p]; ok {
					want[p] = extentsField.ReplaceAllString(line, "extents="+e.inlineMap)
				}
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
	t.Logf("%d sequences of %d operations: 0 divergences, e2fsck clean, the kernel's ro,noload tree, sizes and st_blocks equal to iovfs's; inline inodes: %d converted or freed, %d made by the Writer, %d inline at the ends; results:%s", seqs, ops, converted, created, kept, resultCounts(seen))
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
// inline inodes the data map the kernel reports for inline data.
type viewEnt struct {
	mode, nlink  uint32
	size, blocks uint64
	inline       bool
	inlineMap    string
}

// extentsField is treeOf's SEEK_DATA/SEEK_HOLE field.
var extentsField = regexp.MustCompile(`extents=\[(?:\[-?\d+ -?\d+\] ?)*\]`)

// writerView walks v (the Writer's volume before unmount) from the root.
// An inline file's map is ext4_inline_data_iomap's: data from 0 to
// min(inline size, i_size), and past it, when i_size is larger, ENOENT
// from ext4_iomap_begin_report (dataMap's {0, -ENOENT}).
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
			if x.inline && in.Mode&S_IFMT == S_IFREG {
				data, err := v.inlineData(in)
				if err != nil {
					t.Fatal(err)
				}
				switch n := min(uint64(len(data)), in.Size); {
				case in.Size == 0:
					x.inlineMap = "[]"
				case n < in.Size:
					x.inlineMap = fmt.Sprint([][2]int64{{0, -int64(syscall.ENOENT)}})
				default:
					x.inlineMap = fmt.Sprint([][2]int64{{0, int64(n)}})
				}
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
