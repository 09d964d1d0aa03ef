package disk

// Directories whose blocks need extent trees deeper than i_block: the
// Writer grows them through rwextent.go's tree code, and changes the
// trees the kernel made.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/testenv"
)

// dirTreeName is the i-th name of a growing directory: long, so that a
// 1 KiB block holds few of them and the directory takes many blocks.
func dirTreeName(i int) string {
	return fmt.Sprintf("%06d-%s", i, strings.Repeat("d", 180+i%60))
}

// extentDepth is the depth of ino's extent tree (eh_depth in i_block).
func extentDepth(t *testing.T, w *Writer, ino uint32) int {
	t.Helper()
	in := mustInode(t, w, ino)
	if in.Flags&FlagExtents == 0 {
		t.Fatalf("inode %d is not extent-mapped", ino)
	}
	return int(le16(in.raw[0x28:], 6))
}

// growFragmented adds names first..first+n-1 to directory d; each time d
// takes a new block, a one-block file is written in d, so that the next
// directory block cannot follow the last one and every block is an
// extent of its own. want gets the names made.
func growFragmented(t *testing.T, w *Writer, d uint32, first, n int, want map[string]bool) {
	t.Helper()
	size := mustInode(t, w, d).Size
	blk := bytes.Repeat([]byte{0xa5}, int(w.v.bs))
	for i := first; i < first+n; i++ {
		name := dirTreeName(i)
		if _, err := w.Create(d, name, 0o644, 0, 0); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		want[name] = true
		if s := mustInode(t, w, d).Size; s != size {
			size = s
			fname := fmt.Sprintf("data-%06d", i)
			f, err := w.Create(d, fname, 0o644, 0, 0)
			if err != nil {
				t.Fatalf("create %s: %v", fname, err)
			}
			if _, err := w.WriteAt(f, blk, 0); err != nil {
				t.Fatalf("write %s: %v", fname, err)
			}
			want[fname] = true
		}
	}
}

// newDirWriter makes a volume of sizeMiB with mke2fs features opts in a
// new test directory, opens a Writer on it and makes directory "d".
func newDirWriter(t *testing.T, sizeMiB int, opts string) (dir string, dev memWDev, w *Writer, d uint32) {
	t.Helper()
	dir = t.TempDir()
	base := filepath.Join(dir, "base.img")
	mkfsRW(t, base, sizeMiB, opts)
	dev = memWDev(mustRead(t, base))
	w, err := OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d, err = w.Mkdir(rootIno, "d", 0o755, 0, 0); err != nil {
		t.Fatal(err)
	}
	return dir, dev, w, d
}

// kernelSeesNames checks that a kernel ro,noload mount of img lists
// exactly want in dir, and finds each name by lookup.
func kernelSeesNames(t *testing.T, img, dir string, want map[string]bool) {
	t.Helper()
	mnt, um := kmount(t, img, "ro,noload")
	defer um()
	ents, err := os.ReadDir(filepath.Join(mnt, dir))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range ents {
		if !want[e.Name()] {
			t.Fatalf("kernel lists %q, not made", e.Name())
		}
		got[e.Name()] = true
	}
	if len(got) != len(want) {
		t.Fatalf("kernel lists %d names, want %d", len(got), len(want))
	}
	for name := range want {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(mnt, dir, name), &st); err != nil {
			t.Fatalf("kernel lookup %q: %v", name, err)
		}
	}
}

// shrinkAndRegrow removes every third name of want from d, then grows d
// again: the removed entries' space is reused and the tree takes new
// extents at its end.
func shrinkAndRegrow(t *testing.T, w *Writer, d uint32, first, n int, want map[string]bool) {
	t.Helper()
	i := 0
	for name := range want {
		if i%3 == 0 {
			if err := w.Unlink(d, name); err != nil {
				t.Fatalf("unlink %q: %v", name, err)
			}
			delete(want, name)
		}
		i++
	}
	growFragmented(t, w, d, first, n, want)
}

// TestWriterDirExtentTree grows directories on fragmented 1 KiB-block
// volumes (an htree with dir_index, a linear directory without) until
// their extent trees are two levels deep, then removes and adds names;
// e2fsck -fn must be clean and the kernel must list and find every name.
// At the end the directory is emptied and removed, which frees its tree.
func TestWriterDirExtentTree(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	for _, set := range []struct {
		name, opts string
		n          int // names: enough for a depth-2 tree
	}{
		{"htree", "-b 1024", 1100},
		{"htree-nocsum", "-b 1024 ^metadata_csum,uninit_bg", 1100},
		{"linear", "-b 1024 ^dir_index", 1600},
	} {
		t.Run(set.name, func(t *testing.T) {
			n := set.n
			if testenv.Quick() || rwRace {
				n = 500
			}
			dir, dev, w, d := newDirWriter(t, 64, set.opts)
			var err error
			want := map[string]bool{}
			growFragmented(t, w, d, 0, n, want)
			depth := extentDepth(t, w, d)
			minDepth := 2
			if testenv.Quick() || rwRace {
				minDepth = 1
			}
			if depth < minDepth {
				t.Fatalf("directory extent tree of depth %d after %d names, want %d", depth, n, minDepth)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			img := checkedImage(t, dir, dev)
			kernelSeesNames(t, img, "d", want)

			w, err = OpenWriter(dev, Options{})
			if err != nil {
				t.Fatal(err)
			}
			shrinkAndRegrow(t, w, d, n, n/2, want)
			t.Logf("depth %d after %d names, %d after removals and %d more; %d blocks",
				depth, n, extentDepth(t, w, d), n/2, mustInode(t, w, d).Size>>w.v.bsBits)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			img = checkedImage(t, dir, dev)
			kernelSeesNames(t, img, "d", want)

			w, err = OpenWriter(dev, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for name := range want {
				if err := w.Unlink(d, name); err != nil {
					t.Fatalf("unlink %q: %v", name, err)
				}
			}
			if err := w.Rmdir(rootIno, "d"); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			checkedImage(t, dir, dev)
		})
	}
}

// TestWriterKernelDeepDir: the kernel grows a directory on a volume whose
// free space it has cut into one-block pieces until the directory's
// extent tree has index blocks; the Writer then
// adds and removes names in it, deepening the tree. e2fsck -fn must be
// clean and a kernel mount must list and find every name.
func TestWriterKernelDeepDir(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	n := 700
	if testenv.Quick() || rwRace {
		n = 300
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "k.img")
	mkfsRW(t, img, 32, "-b 1024")
	mnt, um := kmount(t, img, "")
	kd := filepath.Join(mnt, "d")
	if err := os.Mkdir(kd, 0o755); err != nil {
		t.Fatal(err)
	}
	// Free space in one-block pieces: a file over most of it, every
	// other block punched out (mballoc finds the directory's next block
	// near its last one, never right after it).
	f, err := os.OpenFile(filepath.Join(mnt, "fill"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &sfs); err != nil {
		t.Fatal(err)
	}
	fill := int64(sfs.Bavail) - 2000
	if err := unix.Fallocate(int(f.Fd()), 0, 0, fill*1024); err != nil {
		t.Fatal(err)
	}
	for b := int64(0); b < fill; b += 2 {
		if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, b*1024, 1024); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	syncMount(t, mnt)
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		name := dirTreeName(i)
		if err := os.WriteFile(filepath.Join(kd, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		want[name] = true
	}
	syncMount(t, mnt)
	um()
	e2fsckClean(t, img)
	orig, _ := os.ReadFile(img)
	dev := memWDev(orig)
	w, err := OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := w.Volume().Lookup(mustInode(t, w, rootIno), "d")
	if err != nil {
		t.Fatal(err)
	}
	kdepth := extentDepth(t, w, d)
	if kdepth < 1 {
		t.Fatalf("the kernel's directory has an extent tree of depth %d, want index blocks", kdepth)
	}
	shrinkAndRegrow(t, w, d, n, n, want)
	depth := extentDepth(t, w, d)
	if depth < kdepth {
		t.Fatalf("depth %d after growth, the kernel's was %d", depth, kdepth)
	}
	t.Logf("kernel's directory: depth %d; after the Writer's changes: depth %d, %d blocks", kdepth, depth, mustInode(t, w, d).Size>>w.v.bsBits)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wimg := checkedImage(t, dir, dev)
	kernelSeesNames(t, wimg, "d", want)
}

// TestWriterDxFallback: an htree whose root names an unknown hash version
// (dx_probe's ERR_BAD_DX_DIR), on a volume without metadata_csum, gets
// creates and unlinks through a kernel read-write mount and through the
// Writer: both drop the index (dx_fallback: the index flag cleared, the
// entries added to the blocks), e2fsck -fn finds both clean, and a kernel
// mount lists the same names in both. With metadata_csum the Writer
// refuses the create (EUCLEAN), as the kernel's EFSCORRUPTED.
func TestWriterDxFallback(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	for _, csum := range []bool{false, true} {
		t.Run(fmt.Sprintf("metadata_csum=%v", csum), func(t *testing.T) {
			opts := "-b 1024 ^metadata_csum"
			if csum {
				opts = "-b 1024"
			}
			dir, dev, w, d := newDirWriter(t, 16, opts)
			var err error
			want := map[string]bool{}
			for i := 0; i < 300; i++ {
				n := fmt.Sprintf("entry-%04d-%s", i, strings.Repeat("x", i%40))
				if _, err := w.Create(d, n, 0o644, 0, 0); err != nil {
					t.Fatal(err)
				}
				want[n] = true
			}
			in := mustInode(t, w, d)
			if in.Flags&FlagIndex == 0 {
				t.Fatal("d is not an htree")
			}
			m, err := w.v.MapBlocks(in, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			dev[int64(m.Physical)<<w.v.bsBits+0x1C] = 9 // dx_root_info.hash_version
			if csum {
				// The root's checksum made right again, so the damage is
				// the index's alone.
				w, _ = OpenWriter(dev, Options{})
				raw, _ := w.getInode(d)
				root := dev[int64(m.Physical)<<w.v.bsBits:][:w.v.bs]
				w.setDxCsum(d, raw, root)
				w.Close()
				w, _ = OpenWriter(dev, Options{})
				if _, err := w.Create(d, "new", 0o644, 0, 0); !errors.Is(err, syscall.EUCLEAN) {
					t.Fatalf("create in a damaged index with metadata_csum: %v, want EUCLEAN", err)
				}
				w.Close()
				return
			}
			damaged := bytes.Clone(dev)
			// The same changes through the kernel and through the Writer.
			var adds, dels []string
			for i := 0; i < 40; i++ {
				adds = append(adds, fmt.Sprintf("added-%03d", i))
			}
			i := 0
			for n := range want {
				if i%9 == 0 {
					dels = append(dels, n)
				}
				i++
			}
			kimg := filepath.Join(dir, "k.img")
			os.WriteFile(kimg, damaged, 0o600)
			mnt, um := kmount(t, kimg, "")
			for _, n := range adds {
				if err := os.WriteFile(filepath.Join(mnt, "d", n), nil, 0o644); err != nil {
					t.Fatalf("kernel create %s: %v", n, err)
				}
			}
			for _, n := range dels {
				if err := os.Remove(filepath.Join(mnt, "d", n)); err != nil {
					t.Fatalf("kernel unlink %s: %v", n, err)
				}
			}
			syncMount(t, mnt)
			um()
			e2fsckClean(t, kimg)
			w, err = OpenWriter(dev, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range adds {
				if _, err := w.Create(d, n, 0o644, 0, 0); err != nil {
					t.Fatalf("create %s: %v", n, err)
				}
				want[n] = true
			}
			for _, n := range dels {
				if err := w.Unlink(d, n); err != nil {
					t.Fatalf("unlink %s: %v", n, err)
				}
				delete(want, n)
			}
			if mustInode(t, w, d).Flags&FlagIndex != 0 {
				t.Fatal("the Writer kept the damaged index")
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			kv, err := Open(BytesDevice(mustRead(t, kimg)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			kd, err := kv.Lookup(mustInodeOf(t, kv, rootIno), "d")
			if err != nil {
				t.Fatal(err)
			}
			if mustInodeOf(t, kv, kd).Flags&FlagIndex != 0 {
				t.Fatal("the kernel kept the damaged index: the test's damage is not ERR_BAD_DX_DIR")
			}
			wimg := checkedImage(t, dir, dev)
			kernelSeesNames(t, wimg, "d", want)
			kernelSeesNames(t, kimg, "d", want)
		})
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustInodeOf(t *testing.T, v *Volume, ino uint32) *Inode {
	in, err := v.Inode(ino)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestReadDirFromResume: on every kind of directory listing — by hash
// (an htree, a one-block directory, an inline one on a dir_index volume)
// and by offset (a multi-block and an inline directory without
// dir_index) — resuming ReadDirFrom at the position after each entry
// lists exactly the entries after it.
func TestReadDirFromResume(t *testing.T) {
	needMke2fs(t)
	for _, opts := range []string{"-b 1024 inline_data", "-b 1024 inline_data,^dir_index"} {
		t.Run(opts, func(t *testing.T) {
			dir := t.TempDir()
			img := filepath.Join(dir, "img")
			mkfsRW(t, img, 8, opts)
			cmds := "mkdir inl\ncd inl\nwrite /dev/null a\nwrite /dev/null bb\nmkdir ccc\ncd /\nmkdir one\ncd one\n"
			for i := range 5 {
				cmds += fmt.Sprintf("write /dev/null f%d\n", i)
			}
			cmds += "cd /\nmkdir big\ncd big\n"
			for i := range 120 {
				cmds += fmt.Sprintf("write /dev/null name-%03d\n", i)
			}
			cf := filepath.Join(dir, "cmds")
			os.WriteFile(cf, []byte(cmds), 0o644)
			if out, err := exec.Command("debugfs", "-w", "-f", cf, img).CombinedOutput(); err != nil {
				t.Fatalf("debugfs: %v\n%s", err, out)
			}
			v, err := Open(BytesDevice(mustRead(t, img)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			root := mustInodeOf(t, v, rootIno)
			for _, name := range []string{"inl", "one", "big"} {
				ino, err := v.Lookup(root, name)
				if err != nil {
					t.Fatal(err)
				}
				d := mustInodeOf(t, v, ino)
				type ent struct {
					name string
					next int64
				}
				list := func(pos int64) []ent {
					var out []ent
					if err := v.ReadDirFrom(d, pos, func(n []byte, _ uint32, _ uint8, next int64) bool {
						out = append(out, ent{string(n), next})
						return true
					}); err != nil {
						t.Fatal(err)
					}
					return out
				}
				all := list(0)
				if len(all) == 0 {
					t.Fatalf("%s: empty listing", name)
				}
				for i, e := range all {
					rest := list(e.next)
					if fmt.Sprint(rest) != fmt.Sprint(all[i+1:]) {
						t.Fatalf("%s (flags %#x): from %#x after %q: %v, want %v", name, d.Flags, e.next, e.name, rest, all[i+1:])
					}
				}
			}
		})
	}
}
