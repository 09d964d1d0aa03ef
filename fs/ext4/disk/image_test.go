package disk

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// fileDevice is a Device over an image file.
type fileDevice struct {
	f    *os.File
	size int64
}

func (d *fileDevice) ReadAt(p []byte, off int64) (int, error) { return d.f.ReadAt(p, off) }
func (d *fileDevice) Size() int64                             { return d.size }

func needMke2fs(t testing.TB) {
	t.Helper()
	testenv.RequireTool(t, "mke2fs")
}

// mkfs builds an image of size from src with mke2fs -d and the given args.
func mkfs(t testing.TB, src, size string, args ...string) string {
	t.Helper()
	needMke2fs(t)
	img := filepath.Join(t.TempDir(), "img")
	a := append([]string{"-q", "-F"}, args...)
	if src != "" {
		a = append(a, "-d", src)
	}
	a = append(a, img, size)
	conf := "/etc/mke2fs.conf"
	for i, a2 := range a {
		if strings.HasPrefix(a2, "hash_alg=") {
			// mke2fs takes the hash only from its profile.
			base, err := os.ReadFile(conf)
			if err != nil {
				t.Fatal(err)
			}
			conf = filepath.Join(t.TempDir(), "mke2fs.conf")
			prof := strings.Replace(string(base), "[defaults]", "[defaults]\n\t"+strings.Replace(a2, "=", " = ", 1), 1)
			if err := os.WriteFile(conf, []byte(prof), 0o644); err != nil {
				t.Fatal(err)
			}
			a = append(a[:i-1:i-1], a[i+1:]...)
			break
		}
	}
	cmd := exec.Command("mke2fs", a...)
	cmd.Env = append(os.Environ(), "MKE2FS_CONFIG="+conf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mke2fs %v: %v\n%s", a, err, out)
	}
	return img
}

// reindex runs e2fsck -D, which builds htree indexes for large
// directories (mke2fs -d writes them linear), with the image's default hash.
func reindex(t testing.TB, img string) {
	t.Helper()
	out, err := exec.Command("e2fsck", "-fyD", img).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() > 1) {
		t.Fatalf("e2fsck -fyD: %v\n%s", err, out)
	}
}

func openImage(t testing.TB, img string, opt Options) *Volume {
	t.Helper()
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if opt.Logf == nil {
		// A clean image gives no warnings (group descriptor checksums
		// included).
		opt.Logf = func(f string, a ...any) { t.Errorf("unexpected warning: "+f, a...) }
	}
	v, err := Open(&fileDevice{f, st.Size()}, opt)
	if err != nil {
		t.Fatalf("Open %s: %v", img, err)
	}
	return v
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	r.Read(b)
	return b
}

type treeOpts struct {
	bigDir  int  // entries in big/ (0: none)
	xattrs  bool // set user.* xattrs (if the host fs allows)
	huge    bool // a sparse file over 4 GiB
	chowned bool // uid/gid with high bits
	// noTailHole avoids a hole at the end of a file: mke2fs -d with
	// inline_data drops it from i_size (e2fsprogs 1.47 bug).
	noTailHole bool
}

// makeTree fills dir with the cases the kernel's format has special paths
// for. It reports whether xattrs could be set.
func makeTree(t testing.TB, dir string, o treeOpts) (xattrsOK bool) {
	t.Helper()
	r := rand.New(rand.NewSource(1))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write := func(name string, data []byte) {
		t.Helper()
		must(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		must(os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	for _, n := range []int{0, 1, 59, 60, 61, 100, 4095, 4096, 4097, 100000, 1<<20 + 7, 3 << 20} {
		write(fmt.Sprintf("files/f%d", n), randBytes(r, n))
	}
	// Sparse: data, a hole, data, and a hole to EOF.
	sp, err := os.Create(filepath.Join(dir, "files/sparse"))
	must(err)
	_, err = sp.WriteAt(randBytes(r, 5000), 0)
	must(err)
	_, err = sp.WriteAt(randBytes(r, 9000), 10<<20)
	must(err)
	if !o.noTailHole {
		must(sp.Truncate(20 << 20))
	}
	must(sp.Close())
	if o.huge {
		hf, err := os.Create(filepath.Join(dir, "files/huge"))
		must(err)
		_, err = hf.WriteAt(randBytes(r, 4096), 0)
		must(err)
		_, err = hf.WriteAt(randBytes(r, 12345), 5<<30+777)
		must(err)
		must(hf.Truncate(6 << 30))
		must(hf.Close())
	}
	must(os.Chmod(filepath.Join(dir, "files/f100"), 0o4741))
	must(os.Symlink("f1", filepath.Join(dir, "files/short")))
	must(os.Symlink(strings.Repeat("x", 59), filepath.Join(dir, "files/link59")))
	must(os.Symlink(strings.Repeat("y", 60), filepath.Join(dir, "files/link60")))
	must(os.Symlink(strings.Repeat("d/", 150)+"z", filepath.Join(dir, "files/long")))
	must(os.Link(filepath.Join(dir, "files/f4096"), filepath.Join(dir, "files/hard")))
	write("a/b/c/d/e/deep", []byte("deep file\n"))
	must(os.MkdirAll(filepath.Join(dir, "emptydir"), 0o700))
	must(unix.Mkfifo(filepath.Join(dir, "fifo"), 0o640))
	if o.chowned {
		must(os.Lchown(filepath.Join(dir, "files/f1"), 70000, 80001))
		must(os.Lchown(filepath.Join(dir, "files/short"), 123, 456))
	}
	if o.bigDir > 0 {
		big := filepath.Join(dir, "big")
		must(os.Mkdir(big, 0o755))
		for i := 0; i < o.bigDir; i++ {
			// Names with bytes >= 0x80 tell signed from unsigned hashes.
			// Some names exceed the 16- and 32-byte hash input chunks.
			name := fmt.Sprintf("entry-%05d%s%s", i, strings.Repeat("\xc3\xa9", i%7), strings.Repeat("long", i%13*3))
			f, err := os.Create(filepath.Join(big, name))
			must(err)
			f.Close()
		}
	}
	if o.xattrs {
		p := filepath.Join(dir, "files/f100")
		if err := unix.Setxattr(p, "user.small", []byte("v"), 0); err == nil {
			xattrsOK = true
			must(unix.Setxattr(p, "user.second", []byte("second value"), 0))
			must(unix.Setxattr(filepath.Join(dir, "files/f4096"), "user.big", randBytes(r, 900), 0))
			must(unix.Setxattr(filepath.Join(dir, "emptydir"), "user.dir", []byte("on a dir"), 0))
		} else {
			t.Logf("host fs refuses user xattrs (%v); xattrs untested here", err)
		}
	}
	return xattrsOK
}

// resolve walks path from the root with Lookup.
func resolve(v *Volume, path string) (*Inode, error) {
	in, err := v.Inode(v.Root())
	if err != nil {
		return nil, err
	}
	for _, c := range strings.Split(path, "/") {
		if c == "" {
			continue
		}
		ino, err := v.Lookup(in, c)
		if err != nil {
			return nil, fmt.Errorf("lookup %q in %s: %w", c, path, err)
		}
		if in, err = v.Inode(ino); err != nil {
			return nil, err
		}
	}
	return in, nil
}

func readAll(t testing.TB, v *Volume, in *Inode) []byte {
	t.Helper()
	out := make([]byte, 0, min(in.Size, 64<<20))
	var c ExtentCache
	buf := make([]byte, 77777) // odd size: crosses blocks and extents
	for off := int64(0); ; {
		n, err := v.ReadAt(in, &c, buf, off)
		if err != nil {
			t.Fatalf("ino %d read at %d: %v", in.Ino, off, err)
		}
		if n == 0 {
			return out
		}
		out = append(out, buf[:n]...)
		off += int64(n)
	}
}

// compareTree checks every object under src against the image.
func compareTree(t *testing.T, v *Volume, src string, xattrs bool) {
	inodes := map[uint64]uint32{} // host ino -> ext4 ino, for hard links
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			rel = ""
		}
		in, err := resolve(v, rel)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if rel != "" {
			checkStat(t, rel, in, &st)
		}
		if prev, ok := inodes[st.Ino]; ok && prev != in.Ino {
			t.Errorf("%s: hard link maps to ino %d, earlier %d", rel, in.Ino, prev)
		}
		inodes[st.Ino] = in.Ino
		switch {
		case d.Type().IsRegular():
			if st.Size > 64<<20 {
				checkHuge(t, v, in, p)
				break
			}
			want, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if got := readAll(t, v, in); !bytes.Equal(got, want) {
				t.Errorf("%s: content differs (got %d bytes, want %d)", rel, len(got), len(want))
			}
		case d.Type()&fs.ModeSymlink != 0:
			want, _ := os.Readlink(p)
			got, err := v.Readlink(in)
			if err != nil || got != want {
				t.Errorf("%s: readlink %q, %v; want %q", rel, got, err, want)
			}
		case d.IsDir():
			ents, _ := os.ReadDir(p)
			var want, got []string
			for _, e := range ents {
				want = append(want, e.Name())
			}
			if rel == "" {
				want = append(want, "lost+found")
			}
			err := v.ReadDir(in, func(name []byte, ino uint32, ft uint8) bool {
				got = append(got, string(name))
				return true
			})
			if err != nil {
				t.Errorf("%s: ReadDir: %v", rel, err)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: listing differs: %d entries, want %d", rel, len(got), len(want))
			}
			// Listing in pieces of 7, resuming at each piece's last next
			// offset, gives the same sequence.
			var pieces []string
			for pos := int64(0); ; {
				n := 0
				err := v.ReadDirFrom(in, pos, func(name []byte, _ uint32, _ uint8, next int64) bool {
					pieces = append(pieces, string(name))
					pos = next
					n++
					return n < 7
				})
				if err != nil {
					t.Errorf("%s: ReadDirFrom: %v", rel, err)
				}
				if n == 0 || err != nil {
					break
				}
			}
			slices.Sort(pieces)
			if !slices.Equal(pieces, got) {
				t.Errorf("%s: listing in pieces: %d names, whole: %d", rel, len(pieces), len(got))
			}
			if len(want) > 1000 && !v.isDx(in) {
				t.Errorf("%s: %d entries but no htree index (test set-up)", rel, len(want))
			}
			if v.isDx(in) {
				// Every name must be found through the index alone.
				for _, n := range want {
					if _, err := v.dxLookup(in, []byte(n)); err != nil {
						t.Errorf("%s: htree lookup of %q: %v", rel, n, err)
						break
					}
				}
			}
		}
		if xattrs {
			checkXattrs(t, v, in, p, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkStat(t *testing.T, rel string, in *Inode, st *unix.Stat_t) {
	t.Helper()
	if in.Mode != st.Mode || in.Nlink != uint32(st.Nlink) || in.Uid != st.Uid || in.Gid != st.Gid {
		t.Errorf("%s: mode %o nlink %d uid %d gid %d; want %o %d %d %d", rel, in.Mode, in.Nlink, in.Uid, in.Gid,
			st.Mode, st.Nlink, st.Uid, st.Gid)
	}
	if !in.IsDir() && in.Size != uint64(st.Size) {
		t.Errorf("%s: size %d, want %d", rel, in.Size, st.Size)
	}
	if in.Mtime.Sec != st.Mtim.Sec {
		t.Errorf("%s: mtime %d, want %d", rel, in.Mtime.Sec, st.Mtim.Sec)
	}
	if in.Mtime.Nsec != 0 && in.Mtime.Nsec != st.Mtim.Nsec {
		t.Errorf("%s: mtime nsec %d, want %d", rel, in.Mtime.Nsec, st.Mtim.Nsec)
	}
}

func checkHuge(t *testing.T, v *Volume, in *Inode, p string) {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var c ExtentCache
	for _, off := range []int64{0, 4090, 1 << 30, 4<<30 - 10, 5<<30 + 700, 5<<30 + 777 + 12000, 6<<30 - 100} {
		want := make([]byte, 8192)
		n, _ := f.ReadAt(want, off)
		got := make([]byte, 8192)
		m, err := v.ReadAt(in, &c, got, off)
		if err != nil || m != n || !bytes.Equal(got[:m], want[:n]) {
			t.Errorf("huge file at %d: n=%d err=%v, want n=%d; equal=%v", off, m, err, n, bytes.Equal(got[:m], want[:n]))
		}
	}
}

func checkXattrs(t *testing.T, v *Volume, in *Inode, p, rel string) {
	t.Helper()
	sz, err := unix.Llistxattr(p, nil)
	if err != nil {
		return
	}
	buf := make([]byte, sz)
	sz, _ = unix.Llistxattr(p, buf)
	var want []string
	for _, n := range strings.Split(string(buf[:sz]), "\x00") {
		if strings.HasPrefix(n, "user.") {
			want = append(want, n)
		}
	}
	names, err := v.ListXattr(in)
	if err != nil {
		t.Errorf("%s: ListXattr: %v", rel, err)
		return
	}
	var got []string
	for _, n := range names {
		if strings.HasPrefix(n, "user.") {
			got = append(got, n)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s: xattr names %q, want %q", rel, got, want)
	}
	for _, n := range want {
		wv := make([]byte, 65536)
		k, _ := unix.Lgetxattr(p, n, wv)
		gv, err := v.GetXattr(in, n)
		if err != nil || !bytes.Equal(gv, wv[:k]) {
			t.Errorf("%s: xattr %s: %q, %v; want %q", rel, n, gv, err, wv[:k])
		}
	}
	if _, err := v.GetXattr(in, "user.absent"); !errors.Is(err, syscall.ENODATA) {
		t.Errorf("%s: absent xattr: %v, want ENODATA", rel, err)
	}
}

var imageCases = []struct {
	name string
	size string
	args []string
	tree treeOpts
}{
	{"ext4-4k", "64M", []string{"-t", "ext4", "-b", "4096", "-N", "8192"}, treeOpts{bigDir: 5000, xattrs: true, huge: true, chowned: true}},
	{"ext4-1k", "64M", []string{"-t", "ext4", "-b", "1024", "-N", "8192"}, treeOpts{bigDir: 5000, xattrs: true, chowned: true}},
	{"ext4-2k-tea", "64M", []string{"-t", "ext4", "-b", "2048", "-N", "8192", "-E", "hash_alg=tea"}, treeOpts{bigDir: 5000}},
	{"ext4-legacy-hash", "64M", []string{"-t", "ext4", "-N", "8192", "-E", "hash_alg=legacy"}, treeOpts{bigDir: 5000}},
	{"ext4-64k", "128M", []string{"-t", "ext4", "-b", "65536"}, treeOpts{xattrs: true}},
	{"ext2", "64M", []string{"-t", "ext2", "-N", "8192"}, treeOpts{bigDir: 5000, xattrs: true, huge: true, chowned: true}},
	{"ext2-1k", "64M", []string{"-t", "ext2", "-b", "1024"}, treeOpts{huge: true}},
	{"ext3", "64M", []string{"-t", "ext3", "-N", "8192"}, treeOpts{bigDir: 5000, xattrs: true, chowned: true}},
	{"inline_data", "64M", []string{"-t", "ext4", "-O", "inline_data", "-N", "8192"}, treeOpts{bigDir: 300, xattrs: true, chowned: true, noTailHole: true}},
	{"no-csum-32bit", "64M", []string{"-t", "ext4", "-O", "^metadata_csum,^64bit", "-N", "8192"}, treeOpts{bigDir: 5000, xattrs: true, huge: true}},
	{"inode128", "64M", []string{"-t", "ext4", "-I", "128", "-N", "8192"}, treeOpts{bigDir: 5000, xattrs: true}},
	{"meta_bg", "64M", []string{"-t", "ext4", "-O", "meta_bg,^resize_inode", "-b", "1024"}, treeOpts{xattrs: true}},
	{"meta_bg-sparse_super2", "300M", []string{"-t", "ext4", "-O", "meta_bg,^resize_inode,sparse_super2", "-b", "1024", "-g", "1024"}, treeOpts{}},
	{"bigalloc", "64M", []string{"-t", "ext4", "-O", "bigalloc", "-C", "16384"}, treeOpts{xattrs: true}},
}

func TestImages(t *testing.T) {
	needMke2fs(t)
	for _, tc := range imageCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := t.TempDir()
			if testenv.Quick() && tc.tree.bigDir > 1500 {
				tc.tree.bigDir = 1500 // still several blocks: indexed by e2fsck -D
			}
			xok := makeTree(t, src, tc.tree)
			img := mkfs(t, src, tc.size, tc.args...)
			if tc.tree.bigDir > 0 {
				reindex(t, img)
			}
			v := openImage(t, img, Options{})
			compareTree(t, v, src, xok)
		})
	}
}
