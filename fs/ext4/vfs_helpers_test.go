package ext4_test

// Helpers of the VFS-level tests: images built with mke2fs -d from a
// generated tree, and iovfs processes that mount them from a loop device
// over the imported image or from a RAM disk filled with it.

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
)

// needMke2fs skips a test on a machine without e2fsprogs.
func needMke2fs(t testing.TB) {
	t.Helper()
	testenv.RequireTool(t, "mke2fs")
}

// populate writes the test tree under dir: files of assorted sizes (one
// spans several extents' worth of blocks at 1 KiB), a sparse file, fast
// and slow symlinks, a hard link, a fifo, nested directories, a directory
// of 120 entries and user xattrs.
func populate(t testing.TB, dir string) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	data := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	write := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("empty", nil)
	write("tiny.txt", []byte("hello, ext4\n"))
	write("small", data(100))
	write("page", data(4096))
	write("odd", data(12345))
	write("big", data(1<<20+777))
	write("a/b/c/deep.txt", data(3000))
	for i := range 120 {
		write(fmt.Sprintf("many/f%03d", i), data(i%7*10))
	}
	// sparse: data, a 1 MiB hole, data, and a hole at the end
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(data(5000), 0)
	f.WriteAt(data(3000), 1<<20+100)
	f.WriteAt(data(10), 3<<20-10)
	f.Close()
	// tailhole ends in a hole (mke2fs -O inline_data cuts such a file
	// short at its last block, an e2fsprogs 1.47.0 bug: withoutTailHole).
	f, err = os.Create(filepath.Join(dir, "tailhole"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(data(100), 8192)
	f.Truncate(1 << 20)
	f.Close()
	os.Chmod(filepath.Join(dir, "odd"), 0o600)
	os.Symlink("tiny.txt", filepath.Join(dir, "fastlink"))
	os.Symlink(strings.Repeat("x/", 70)+"target", filepath.Join(dir, "slowlink"))
	os.Symlink("a/b", filepath.Join(dir, "dirlink"))
	os.Link(filepath.Join(dir, "page"), filepath.Join(dir, "page.link"))
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o640); err != nil {
		t.Fatal(err)
	}
	unix.Setxattr(filepath.Join(dir, "tiny.txt"), "user.greeting", []byte("hi"), 0)
	unix.Setxattr(filepath.Join(dir, "a"), "user.dir", []byte("attr on a dir"), 0)
	unix.Setxattr(filepath.Join(dir, "big"), "user.big", bytes.Repeat([]byte("v"), 600), 0)
}

// withoutTailHole is populate without the file that ends in a hole.
func withoutTailHole(t testing.TB, dir string) {
	populate(t, dir)
	os.Remove(filepath.Join(dir, "tailhole"))
}

// forFSTest is a small tree for fstest.TestFS, which reads every file
// many ways (and would block on a fifo): a few files of one and several
// blocks, one with a hole, nested directories and symlinks.
func forFSTest(t testing.TB, dir string) {
	t.Helper()
	for name, n := range map[string]int{"tiny.txt": 12, "page": 4096, "odd": 12345, "a/b/c/deep.txt": 3000, "many/f1": 10, "many/f2": 0} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, bytes.Repeat([]byte(name[:1]), n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("head"), 0)
	f.WriteAt([]byte("tail"), 20000)
	f.Close()
	os.Symlink("tiny.txt", filepath.Join(dir, "fastlink"))
	os.Symlink("a/b", filepath.Join(dir, "dirlink"))
}

// mkImage builds an image of the tree made by fill with mke2fs args (for
// example "-t", "ext4", "-b", "1024") and returns its host path.
func mkImage(t testing.TB, sizeKiB int, fill func(testing.TB, string), args ...string) string {
	t.Helper()
	needMke2fs(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.Mkdir(src, 0o755)
	fill(t, src)
	img := filepath.Join(dir, "img")
	cmd := exec.Command("mke2fs", append(append([]string{"-q", "-F", "-E", "lazy_itable_init=0", "-d", src}, args...), img, fmt.Sprintf("%dk", sizeKiB))...)
	cmd.Env = append(os.Environ(), "MKE2FS_DEVICE_SECTSIZE=512", "E2FSPROGS_FAKE_TIME=1700000000")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mke2fs %v: %v\n%s", args, err, out)
	}
	return img
}

// source says how a test process sees the image.
type source int

const (
	viaLoop      source = iota // /dev/loop0 over the imported host file (offers direct access)
	viaRAM                     // /dev/ram0 filled with the image
	viaTmpfsLoop               // /dev/loop0 over a copy in iovfs's tmpfs (no direct access)
)

func (s source) String() string { return [...]string{"loop", "ram", "tmpfs-loop"}[s] }

// newProc returns a process with img attached as /dev/loop0 or /dev/ram0,
// the device's path and a function that drops the set-up's hold on the
// device: call it once the device is mounted (or the test is done with
// it), since an AUTOCLEAR loop device clears at its last close.
func newProc(t testing.TB, img string, src source) (*vfs.Proc, string, func()) {
	t.Helper()
	st, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	size := (st.Size() + 4095) &^ 4095
	p, err := iovfs.New(iovfs.WithRAMDisks(1, size))
	if err != nil {
		t.Fatal(err)
	}
	switch src {
	case viaRAM:
		b, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := p.Open("/dev/ram0", unix.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := p.Pwrite(fd, b, 0); n != len(b) {
			t.Fatalf("fill /dev/ram0: %d, %v", n, err)
		}
		p.Close(fd)
		return p, "/dev/ram0", func() {}
	case viaTmpfsLoop:
		b, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := p.Open("/tmp/img", unix.O_RDWR|unix.O_CREAT, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := p.Pwrite(fd, b, 0); n != len(b) {
			t.Fatalf("write /tmp/img: %d, %v", n, err)
		}
		lfd := attachLoop(t, p, fd)
		p.Close(fd)
		return p, "/dev/loop0", func() { p.Close(lfd) }
	}
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := p.ImportFile(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	lfd := attachLoop(t, p, fd)
	p.Close(fd)
	return p, "/dev/loop0", func() { p.Close(lfd) }
}

// attachLoop binds /dev/loop0 to the file open as fd, read-only and set to
// clear itself at the last close (AUTOCLEAR), so that once the returned
// descriptor is closed the mount's hold is what keeps it bound.
func attachLoop(t testing.TB, p *vfs.Proc, fd int) int {
	t.Helper()
	lfd, err := p.Open("/dev/loop0", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := unix.LoopConfig{Fd: uint32(fd)}
	cfg.Info.Flags = unix.LO_FLAGS_READ_ONLY | unix.LO_FLAGS_AUTOCLEAR
	if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		t.Fatalf("LOOP_CONFIGURE: %v", err)
	}
	return lfd
}

// mountImage returns a process with img mounted read-only at /mnt,
// unmounted at the end of the test.
func mountImage(t testing.TB, img string, src source, opts string) *vfs.Proc {
	t.Helper()
	p, dev, done := newProc(t, img, src)
	err := p.Mount(dev, "/mnt", "ext4", unix.MS_RDONLY, opts)
	done()
	if err != nil {
		t.Fatalf("mount %s (%v, %q): %v", dev, src, opts, err)
	}
	t.Cleanup(func() {
		if err := p.Unmount("/mnt", 0); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return p
}

// compareTree walks the host tree at host and the iovfs tree at mnt side
// by side and compares listings (as sets), types, modes, sizes, uid/gid,
// symlink targets, user xattrs and every regular file's bytes, read whole
// with pread and through preadv with odd segment sizes. strict adds the
// fields only a kernel mount of the same image can match: ino, nlink,
// blocks and nanosecond mtime/ctime.
func compareTree(t *testing.T, p *vfs.Proc, mnt, host string, strict bool) (files int) {
	t.Helper()
	var walk func(rel string)
	walk = func(rel string) {
		hp, vp := filepath.Join(host, rel), mnt+"/"+rel
		if rel == "" {
			vp = mnt
		}
		var hs unix.Stat_t
		if err := unix.Lstat(hp, &hs); err != nil {
			t.Fatalf("host lstat %s: %v", hp, err)
		}
		vs, err := p.Lstat(vp)
		if err != nil {
			t.Errorf("lstat %s: %v", vp, err)
			return
		}
		if vs.Mode != hs.Mode || vs.Uid != hs.Uid || vs.Gid != hs.Gid || (hs.Mode&unix.S_IFMT != unix.S_IFDIR && vs.Size != hs.Size) {
			t.Errorf("%s: mode %o uid %d gid %d size %d, host %o %d %d %d", vp, vs.Mode, vs.Uid, vs.Gid, vs.Size, hs.Mode, hs.Uid, hs.Gid, hs.Size)
		}
		if strict {
			if vs.Ino != hs.Ino || vs.Nlink != hs.Nlink || vs.Blocks != hs.Blocks || vs.Size != hs.Size || vs.Blksize != int64(hs.Blksize) {
				t.Errorf("%s: ino %d nlink %d blocks %d size %d blksize %d, kernel %d %d %d %d %d", vp, vs.Ino, vs.Nlink, vs.Blocks, vs.Size, vs.Blksize, hs.Ino, hs.Nlink, hs.Blocks, hs.Size, hs.Blksize)
			}
			if vs.Mtime.UnixNano() != hs.Mtim.Nano() || vs.Ctime.UnixNano() != hs.Ctim.Nano() {
				t.Errorf("%s: mtime %v ctime %v, kernel %v %v", vp, vs.Mtime.UnixNano(), vs.Ctime.UnixNano(), hs.Mtim.Nano(), hs.Ctim.Nano())
			}
		}
		if hs.Mode&unix.S_IFMT != unix.S_IFLNK { // Proc.Listxattr follows links
			compareXattrs(t, p, vp, hp)
		}
		switch hs.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			want, _ := os.Readlink(hp)
			if got, err := p.Readlink(vp); got != want || err != nil {
				t.Errorf("readlink %s: %q, %v; want %q", vp, got, err, want)
			}
		case unix.S_IFREG:
			files++
			if hs.Size > 64<<20 {
				compareSampled(t, p, vp, hp, hs.Size)
				break
			}
			want, err := os.ReadFile(hp)
			if err != nil {
				t.Fatal(err)
			}
			compareFile(t, p, vp, want)
		case unix.S_IFDIR:
			ents, err := os.ReadDir(hp)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			for _, e := range ents {
				want[e.Name()] = true
			}
			got := listDir(t, p, vp)
			if !strict && rel == "" && !want["lost+found"] {
				delete(got, "lost+found") // mke2fs made it; the source tree has none
			}
			if len(got) != len(want) {
				t.Errorf("%s: %d entries, host %d", vp, len(got), len(want))
			}
			names := slices.Sorted(maps.Keys(want))
			for i, name := range names {
				if !got[name] {
					t.Errorf("%s: %q missing", vp, name)
					continue
				}
				// In a huge directory, the listing is compared whole and
				// every 50th entry looked up and compared: enough for the
				// htree, affordable under -race.
				if len(names) <= 1000 || i%50 == 0 {
					walk(filepath.Join(rel, name))
				}
			}
		}
	}
	walk("")
	return files
}

// listDir lists a directory with getdents, as a set without "." and "..".
func listDir(t *testing.T, p *vfs.Proc, path string) map[string]bool {
	t.Helper()
	fd, err := p.Open(path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer p.Close(fd)
	got := map[string]bool{}
	for {
		ds, err := p.Getdents(fd)
		if err != nil {
			t.Fatalf("getdents %s: %v", path, err)
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			if d.Name == "." || d.Name == ".." {
				continue
			}
			if got[d.Name] {
				t.Errorf("%s: %q listed twice", path, d.Name)
			}
			got[d.Name] = true
		}
	}
	return got
}

// compareFile reads path whole with pread and through preadv with odd
// segment sizes from odd offsets, and compares with want.
func compareFile(t *testing.T, p *vfs.Proc, path string, want []byte) {
	t.Helper()
	fd, err := p.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		t.Errorf("open %s: %v", path, err)
		return
	}
	defer p.Close(fd)
	got := make([]byte, len(want)+10)
	if n, err := p.Pread(fd, got, 0); n != len(want) || err != nil || !bytes.Equal(got[:n], want) {
		t.Errorf("pread %s: %d, %v (want %d bytes, equal %v)", path, n, err, len(want), bytes.Equal(got[:min(n, len(want))], want[:min(n, len(want))]))
	}
	sizes := []int{1, 7, 513, 4093, 0, 1 << 16}
	segs := make([][]byte, len(sizes))
	total := 0
	for i, s := range sizes {
		segs[i] = make([]byte, s)
		total += s
	}
	for i, off := range []int{0, 1, 511, 4095, len(want) / 3} {
		if off > len(want) || (i > 1 && len(want) < 512) {
			continue // small files: offsets 0 and 1 suffice
		}
		n, err := p.Preadv(fd, segs, int64(off))
		exp := min(total, len(want)-off)
		if n != exp || (err != nil && exp > 0) {
			t.Errorf("preadv %s at %d: %d, %v; want %d", path, off, n, err, exp)
			continue
		}
		flat := bytes.Join(segs, nil)[:n]
		if !bytes.Equal(flat, want[off:off+n]) {
			t.Errorf("preadv %s at %d: bytes differ", path, off)
		}
	}
}

// compareXattrs compares the user.* attributes of a host path and an
// iovfs path (mke2fs -d and the kernel both keep them).
func compareXattrs(t *testing.T, p *vfs.Proc, vp, hp string) {
	t.Helper()
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(hp, buf)
	if err != nil {
		return
	}
	var want []string
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if strings.HasPrefix(name, "user.") {
			want = append(want, name)
		}
	}
	gotAll, err := p.Listxattr(vp)
	if err != nil {
		t.Errorf("listxattr %s: %v", vp, err)
		return
	}
	var got []string
	for _, name := range gotAll {
		if strings.HasPrefix(name, "user.") {
			got = append(got, name)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("listxattr %s: %q, host %q", vp, got, want)
	}
	for _, name := range want {
		m, _ := unix.Lgetxattr(hp, name, buf)
		v, err := p.Getxattr(vp, name)
		if err != nil || !bytes.Equal(v, buf[:m]) {
			t.Errorf("getxattr %s %s: %q, %v; host %q", vp, name, v, err, buf[:m])
		}
	}
}

// compareSampled compares a large (sparse) file at a few places: its
// ends, its middle and around 4 GiB, by pread and by two-segment preadv.
func compareSampled(t *testing.T, p *vfs.Proc, vp, hp string, size int64) {
	t.Helper()
	hf, err := os.Open(hp)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	fd, err := p.Open(vp, unix.O_RDONLY, 0)
	if err != nil {
		t.Errorf("open %s: %v", vp, err)
		return
	}
	defer p.Close(fd)
	want, got := make([]byte, 9000), make([]byte, 9000)
	for _, off := range []int64{0, 4095, size/2 - 100, 1<<32 - 4000, 1<<32 + 1, size - 5000, size - 1} {
		if off < 0 || off >= size {
			continue
		}
		m, _ := hf.ReadAt(want, off)
		clear(got)
		if n, err := p.Pread(fd, got, off); n != m || !bytes.Equal(got[:n], want[:m]) {
			t.Errorf("pread %s at %d: %d, %v; host %d (equal %v)", vp, off, n, err, m, bytes.Equal(got[:min(n, m)], want[:min(n, m)]))
		}
		clear(got)
		if n, err := p.Preadv(fd, [][]byte{got[:777], got[777:]}, off); n != m || !bytes.Equal(got[:n], want[:m]) {
			t.Errorf("preadv %s at %d: %d, %v; host %d", vp, off, n, err, m)
		}
	}
}

// withBigDirAndHugeFile is populate plus a directory of 5000 entries
// (htree-indexed) and a sparse 5 GiB file with data at its start, around
// 4 GiB and at its end.
func withBigDirAndHugeFile(t testing.TB, dir string) {
	populate(t, dir)
	for i := range 5000 {
		name := filepath.Join(dir, "huge-dir", fmt.Sprintf("entry-with-a-longish-name-%05d", i))
		if i == 0 {
			os.MkdirAll(filepath.Dir(name), 0o755)
		}
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(dir, "huge-sparse"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, off := range []int64{0, 1<<32 - 3000, 5<<30 - 4000} {
		f.WriteAt(bytes.Repeat([]byte{byte(off >> 20), 0xa5}, 3000), off)
	}
}
