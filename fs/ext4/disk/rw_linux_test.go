package disk

// Differential tests of the Writer against the host kernel's ext4: the
// same random operation sequence goes to a kernel read-write loop mount of
// an image and to the Writer on an identical copy; every result and errno
// must match, then e2fsck -fn must find the Writer's image clean and a
// kernel mount of it must show the same tree (types, modes, owners, link
// counts, sizes, st_blocks, contents, symlink targets).

import (
	"bytes"
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

// memWDev is a WriteDevice in memory.
type memWDev []byte

func (d memWDev) Size() int64 { return int64(len(d)) }
func (d memWDev) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(d)) {
		return 0, syscall.EIO
	}
	return copy(p, d[off:]), nil
}
func (d memWDev) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(d)) {
		return 0, syscall.EIO
	}
	return copy(d[off:], p), nil
}

// rwFeatureSets are the mke2fs feature sets the Writer is verified on.
var rwFeatureSets = []struct{ name, opts string }{
	{"ext4", ""}, // mke2fs.conf's ext4: has_journal,extent,huge_file,flex_bg,metadata_csum,64bit,dir_nlink,extra_isize,dir_index...
	{"ext4-nocsum", "^metadata_csum,uninit_bg"},
	// e2fsprogs' upstream default (mke2fs.conf.in since 1.47.0), which
	// Debian's configuration here leaves out: the orphan file.
	{"ext4-upstream", "orphan_file,metadata_csum_seed"},
	{"ext4-nojournal-32bit", "^has_journal,^64bit"},
	{"ext4-128inode", "^metadata_csum,^flex_bg"},
	// Block-mapped (rwblockmap.go): 1 KiB blocks, so sequences reach the
	// double indirect level; the kernel mounts them with its ext4 driver.
	{"ext2", "-t ext2 -b 1024"},
	{"ext3", "-t ext3 -b 1024"},
	{"ext4-noextent", "-b 1024 ^extent,^64bit"},
}

// mkfsRWBlock is mkfsRW with a block size of bs bytes.
func mkfsRWBlock(t testing.TB, img string, sizeMiB int, features string, bs int) {
	t.Helper()
	mkfsRW(t, img, sizeMiB, fmt.Sprintf("-b %d %s", bs, features))
}

func mkfsRW(t testing.TB, img string, sizeMiB int, features string) {
	t.Helper()
	typ, bsize := "ext4", "4096"
	// A feature set may start with "-t TYPE" and "-b SIZE".
	for f := strings.Fields(features); len(f) >= 2 && (f[0] == "-t" || f[0] == "-b"); f = f[2:] {
		if f[0] == "-t" {
			typ = f[1]
		} else {
			bsize = f[1]
		}
		features = strings.Join(f[2:], " ")
	}
	args := []string{"-q", "-F", "-t", typ, "-b", bsize, "-E", "lazy_itable_init=1"}
	if features != "" {
		args = append(args, "-O", features)
	}
	if strings.Contains(features, "^flex_bg") {
		args = append(args, "-I", "128")
	}
	args = append(args, img, fmt.Sprintf("%dM", sizeMiB))
	if out, err := exec.Command("mke2fs", args...).CombinedOutput(); err != nil {
		t.Fatalf("mke2fs %v: %v\n%s", args, err, out)
	}
}

func e2fsckClean(t testing.TB, img string) {
	t.Helper()
	out, err := exec.Command("e2fsck", "-fn", img).CombinedOutput()
	if err != nil {
		t.Fatalf("e2fsck -fn: %v\n%s", err, out)
	}
}

// rwTarget runs the operations on one side; errno 0 is success.
type rwTarget interface {
	create(p string, mode uint32) error
	write(p string, off int64, data []byte) (int, error)
	truncate(p string, size int64) error
	unlink(p string) error
	mkdir(p string, mode uint32) error
	rmdir(p string) error
	rename(a, b string) error
	link(a, b string) error
	symlink(target, p string) error
	exchange(a, b string) error
	metaTarget // rwmeta_linux_test.go
}

func (k kernelTarget) exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, k.abs(a), unix.AT_FDCWD, k.abs(b), unix.RENAME_EXCHANGE)
}

func (x writerTarget) exchange(a, b string) error {
	da, na, err := x.parent(a)
	if err != nil {
		return err
	}
	db, nb, err := x.parent(b)
	if err != nil {
		return err
	}
	return x.w.Exchange(da, na, db, nb)
}

type kernelTarget struct{ root string }

func (k kernelTarget) abs(p string) string { return filepath.Join(k.root, p) }
func (k kernelTarget) create(p string, mode uint32) error {
	fd, err := unix.Open(k.abs(p), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, mode)
	if err == nil {
		unix.Close(fd)
	}
	return err
}
func (k kernelTarget) write(p string, off int64, data []byte) (int, error) {
	fd, err := unix.Open(k.abs(p), unix.O_WRONLY|unix.O_NONBLOCK, 0) // a FIFO gives ENXIO, not a wait
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.Pwrite(fd, data, off)
}
func (k kernelTarget) truncate(p string, size int64) error { return unix.Truncate(k.abs(p), size) }
func (k kernelTarget) unlink(p string) error               { return unix.Unlink(k.abs(p)) }
func (k kernelTarget) mkdir(p string, mode uint32) error   { return unix.Mkdir(k.abs(p), mode) }
func (k kernelTarget) rmdir(p string) error                { return unix.Rmdir(k.abs(p)) }
func (k kernelTarget) rename(a, b string) error            { return unix.Rename(k.abs(a), k.abs(b)) }
func (k kernelTarget) link(a, b string) error              { return unix.Link(k.abs(a), k.abs(b)) }
func (k kernelTarget) symlink(target, p string) error      { return unix.Symlink(target, k.abs(p)) }

// writerTarget resolves paths with the volume's lookups, as the kernel's
// path walk would (no symlink is ever followed to an existing file: the
// sequences' targets dangle).
type writerTarget struct {
	w     *Writer
	umask uint32
}

func (x writerTarget) resolve(p string) (uint32, error) {
	v := x.w.Volume()
	ino := uint32(rootIno)
	for _, c := range strings.Split(p, "/") {
		if c == "" {
			continue
		}
		in, err := v.Inode(ino)
		if err != nil {
			return 0, err
		}
		if in.IsSymlink() {
			return 0, syscall.ENOENT // the sequences' symlinks dangle
		}
		if !in.IsDir() {
			return 0, syscall.ENOTDIR
		}
		n, err := v.Lookup(in, c)
		if err != nil {
			return 0, err
		}
		ino = n
	}
	return ino, nil
}

func (x writerTarget) parent(p string) (uint32, string, error) {
	d, name := path.Split(p)
	ino, err := x.resolve(d)
	if err != nil {
		return 0, "", err
	}
	in, err := x.w.Volume().Inode(ino)
	if err != nil {
		return 0, "", err
	}
	if in.IsSymlink() {
		return 0, "", syscall.ENOENT
	}
	if !in.IsDir() {
		return 0, "", syscall.ENOTDIR
	}
	return ino, name, nil
}

// final resolves p for an open without O_CREAT: a dangling symlink is ENOENT.
func (x writerTarget) final(p string) (uint32, error) {
	ino, err := x.resolve(p)
	if err != nil {
		return 0, err
	}
	in, err := x.w.Volume().Inode(ino)
	if err != nil {
		return 0, err
	}
	if in.IsSymlink() {
		return 0, syscall.ENOENT
	}
	return ino, nil
}

func (x writerTarget) create(p string, mode uint32) error {
	d, n, err := x.parent(p)
	if err != nil {
		return err
	}
	_, err = x.w.Create(d, n, mode&^x.umask, 0, 0)
	return err
}
func (x writerTarget) write(p string, off int64, data []byte) (int, error) {
	ino, err := x.final(p)
	if err != nil {
		return 0, err
	}
	if err := openSpecialErr(x.w, ino); err != nil {
		return 0, err
	}
	return x.w.WriteAt(ino, data, off)
}
func (x writerTarget) truncate(p string, size int64) error {
	ino, err := x.final(p)
	if err != nil {
		return err
	}
	return x.w.Truncate(ino, size)
}
func (x writerTarget) unlink(p string) error {
	d, n, err := x.parent(p)
	if err != nil {
		return err
	}
	return x.w.Unlink(d, n)
}
func (x writerTarget) mkdir(p string, mode uint32) error {
	d, n, err := x.parent(p)
	if err != nil {
		return err
	}
	_, err = x.w.Mkdir(d, n, mode&^x.umask, 0, 0)
	return err
}
func (x writerTarget) rmdir(p string) error {
	d, n, err := x.parent(p)
	if err != nil {
		return err
	}
	return x.w.Rmdir(d, n)
}
func (x writerTarget) rename(a, b string) error {
	// do_renameat2 resolves both parents before the old name.
	da, na, err := x.parent(a)
	if err != nil {
		return err
	}
	db, nb, err := x.parent(b)
	if err != nil {
		return err
	}
	if _, err := x.resolve(a); err != nil {
		return err
	}
	return x.w.Rename(da, na, db, nb)
}
func (x writerTarget) link(a, b string) error {
	ino, err := x.resolve(a)
	if err != nil {
		return err
	}
	d, n, err := x.parent(b)
	if err != nil {
		return err
	}
	return x.w.Link(d, n, ino)
}
func (x writerTarget) symlink(target, p string) error {
	d, n, err := x.parent(p)
	if err != nil {
		return err
	}
	_, err = x.w.Symlink(d, n, target, 0, 0)
	return err
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.Errno(0xFFFF)
}

var rwNames = []string{"a", "b", "c", "f1", "f2", "s"}

func randPath(r *rand.Rand) string {
	n := 1 + r.Intn(3)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = rwNames[r.Intn(len(rwNames))]
	}
	return strings.Join(parts, "/")
}

// runSequence applies ops random operations to both targets and reports
// the first divergence.
func runSequence(t *testing.T, r *rand.Rand, ops int, k, x rwTarget, seen map[string]int) {
	t.Helper()
	for i := 0; i < ops; i++ {
		p, q := randPath(r), randPath(r)
		var desc string
		var ek, ex error
		var nk, nx int
		switch op := r.Intn(23 + metaOps); {
		case op >= 23:
			desc, nk, ek, nx, ex = metaOp(r, op-23, p, q, k, x)
		case op >= 21:
			if _, ok := k.(tmpfsOracle); ok {
				// tmpfs allocates pages, not ext4 blocks: no fallocate
				// against it (the kernel ext4 tests cover fallocate).
				desc = "fallocate skipped (tmpfs oracle)"
				break
			}
			desc, ek, ex = fallocOp(r, p, k, x, 300<<10, -1)
		case op < 3:
			desc = "create " + p
			ek, ex = k.create(p, 0644), x.create(p, 0644)
		case op < 8:
			off := int64(r.Intn(256 << 10))
			if r.Intn(4) == 0 {
				off = int64(r.Intn(8)) << 12
			}
			data := make([]byte, r.Intn(40<<10)+1)
			for j := range data {
				data[j] = byte(r.Intn(255) + 1)
			}
			desc = fmt.Sprintf("write %s %d+%d", p, off, len(data))
			nk, ek = k.write(p, off, data)
			nx, ex = x.write(p, off, data)
		case op < 10:
			size := int64(r.Intn(300 << 10))
			desc = fmt.Sprintf("truncate %s %d", p, size)
			ek, ex = k.truncate(p, size), x.truncate(p, size)
		case op < 12:
			desc = "unlink " + p
			ek, ex = k.unlink(p), x.unlink(p)
		case op < 14:
			desc = "mkdir " + p
			ek, ex = k.mkdir(p, 0755), x.mkdir(p, 0755)
		case op < 15:
			desc = "rmdir " + p
			ek, ex = k.rmdir(p), x.rmdir(p)
		case op < 17:
			desc = "rename " + p + " " + q
			ek, ex = k.rename(p, q), x.rename(p, q)
		case op < 18:
			desc = "link " + p + " " + q
			ek, ex = k.link(p, q), x.link(p, q)
		case op < 19:
			desc = "exchange " + p + " " + q
			ek, ex = k.exchange(p, q), x.exchange(p, q)
		default:
			tgt := "/nonexistent/" + strings.Repeat("t", r.Intn(3)*40+1)
			desc = "symlink " + p
			ek, ex = k.symlink(tgt, p), x.symlink(tgt, p)
		}
		if errnoOf(ek) != errnoOf(ex) || nk != nx {
			t.Fatalf("op %d %s: kernel (%d, %v), iovfs (%d, %v)", i, desc, nk, ek, nx, ex)
		}
		if seen != nil {
			name := "ok"
			if ek != nil {
				name = unix.ErrnoName(errnoOf(ek))
			}
			seen[strings.Fields(desc)[0]+":"+name]++
		}
	}
}

// treeOf lists a mounted tree: one line per entry with the attributes
// both sides must agree on.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "lost+found" {
			return filepath.SkipDir
		}
		st := fi.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("mode=%o uid=%d gid=%d nlink=%d", st.Mode, st.Uid, st.Gid, st.Nlink)
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" size=%d data=%x extents=%v", st.Size, sha(b), dataMap(t, p))
		case syscall.S_IFLNK:
			tgt, _ := os.Readlink(p)
			line += " -> " + tgt
		case syscall.S_IFDIR:
		}
		line += metaLine(t, p, st)
		out[rel] = line
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dataMap lists a file's data ranges by SEEK_DATA and SEEK_HOLE: its
// sparseness, independent of how the blocks were laid out (a leaf block of
// a longer extent list is charged to st_blocks too). A SEEK_HOLE error
// ends the list as {data, -errno}.
func dataMap(t *testing.T, p string) [][2]int64 {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]int64
	for off := int64(0); ; {
		d, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if err != nil {
			break // ENXIO: no data after off
		}
		h, err := unix.Seek(int(f.Fd()), d, unix.SEEK_HOLE)
		if err != nil {
			// ext4 reports ENOENT past an inline file's data when its
			// size is larger (ext4_iomap_begin_report): kept as -errno.
			out = append(out, [2]int64{d, -int64(errnoOf(err))})
			break
		}
		out = append(out, [2]int64{d, h})
		off = h
	}
	return out
}

func sha(b []byte) uint64 {
	var h uint64 = 14695981039346656037
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h ^ uint64(len(b))
}

func diffTrees(t *testing.T, want, got map[string]string) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	bad := 0
	for _, k := range keys {
		if want[k] != got[k] {
			t.Errorf("%s:\n kernel %s\n iovfs  %s", k, want[k], got[k])
			if bad++; bad > 10 {
				t.FailNow()
			}
		}
	}
}

// sequenceCounts is how many sequences of how many operations a rapid
// differential runs: seqs x ops by default, shortSeqs x shortOps under
// -short or -race, and IOVFS_EXT4RW_SEQS x 500 when that is set (the full
// runs the closing notes report).
func sequenceCounts(seqs, ops, shortSeqs, shortOps int) (int, int) {
	if testenv.Quick() || rwRace {
		seqs, ops = shortSeqs, shortOps
	}
	if s := os.Getenv("IOVFS_EXT4RW_SEQS"); s != "" {
		seqs, _ = strconv.Atoi(s)
		ops = 500
	}
	return seqs, ops
}

// kernelTwin sets up a differential's two sides on copies of image orig:
// the kernel's, a loop mount (options opts, unmounted at cleanup or by
// um) of dir/k.img, and the Writer's, on an in-memory device.
func kernelTwin(t *testing.T, dir string, orig []byte, opts string) (kimg, mnt string, um func(), dev memWDev, w *Writer) {
	t.Helper()
	// A new file each time: a loop device of an earlier twin that is
	// still being torn down may be reused by mount(8) for the same path,
	// with its cache of the file's earlier contents.
	kimg = uniqueImage(t, dir, "k", orig)
	mnt, um = kmount(t, kimg, opts)
	dev = memWDev(bytes.Clone(orig))
	w, err := OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return kimg, mnt, um, dev, w
}

// checkedImage writes the Writer's device to dir/w.img, checks it with
// e2fsck -fn and returns its path.
func checkedImage(t *testing.T, dir string, dev memWDev) string {
	t.Helper()
	wimg := uniqueImage(t, dir, "w", dev)
	e2fsckClean(t, wimg)
	return wimg
}

// uniqueImage writes b to a new file in dir named after prefix and
// returns its path; the earlier ones of that prefix, unmounted by now,
// are removed.
func uniqueImage(t *testing.T, dir, prefix string, b []byte) string {
	t.Helper()
	old, _ := filepath.Glob(filepath.Join(dir, prefix+"-*.img"))
	for _, o := range old {
		os.Remove(o)
	}
	f, err := os.CreateTemp(dir, prefix+"-*.img")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

func rwSequenceCounts() (seqs, ops int) { return sequenceCounts(12, 300, 3, 150) }

// TestWriterKernelDifferential: the oracle test of the Writer (see the
// file comment). IOVFS_EXT4RW_SEQS=200 runs the full 200 x 500.
func TestWriterKernelDifferential(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	seqs, ops := rwSequenceCounts()
	umask := uint32(syscall.Umask(0))
	syscall.Umask(int(umask))
	for _, fsets := range append(rwFeatureSets[:len(rwFeatureSets):len(rwFeatureSets)], rwModeSets...) {
		t.Run(fsets.name, func(t *testing.T) {
			testenv.Sampled(t, "ext4", "ext3", "ext2")
			dir := t.TempDir()
			base := filepath.Join(dir, "base.img")
			mkfsRW(t, base, 32, fsets.opts)
			orig, err := os.ReadFile(base)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for s := 0; s < seqs; s++ {
				seed := int64(s*1000 + len(fsets.name))
				_, mnt, um, dev, w := kernelTwin(t, dir, orig, "rw,nodev"+rwModeOpts(fsets.name)) // nodev: the sequences' device nodes open nothing
				w.Data = rwModeData(fsets.name)
				runSequence(t, rand.New(rand.NewSource(seed)), ops, kernelTarget{mnt}, writerTarget{w, umask}, seen)
				// SEEK_DATA on a block-mapped file of a live kernel mount
				// misses data not yet written back: sync first.
				syncMount(t, mnt)
				want := treeOf(t, mnt)
				um()
				w.Close()
				wimg := checkedImage(t, dir, dev)
				wm, wum := kmount(t, wimg, "ro,noload")
				got := treeOf(t, wm)
				wum()
				diffTrees(t, want, got)
				if t.Failed() {
					t.Fatalf("sequence %d (seed %d) diverged", s, seed)
				}
			}
			t.Logf("%d sequences of %d operations: 0 divergences, e2fsck clean; results:%s", seqs, ops, resultCounts(seen))
		})
	}
}

var _ = time.Now

// resultCounts lists runSequence's result counts, sorted: " op:result=n".
func resultCounts(seen map[string]int) string {
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, " %s=%d", k, seen[k])
	}
	return sb.String()
}

// syncMount is syncfs(2) on the file system mounted at dir.
func syncMount(t *testing.T, dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		t.Fatal(err)
	}
}

// cutDev drops every write after the first limit ones, as a device that
// lost power; count is the number of writes asked for.
type cutDev struct {
	memWDev
	limit, count int
}

func (d *cutDev) WriteAt(p []byte, off int64) (int, error) {
	d.count++
	if d.limit >= 0 && d.count > d.limit {
		return len(p), nil
	}
	return d.memWDev.WriteAt(p, off)
}

// randomOp applies one random operation of runSequence's mix to x.
func randomOp(r *rand.Rand, x rwTarget) {
	p, q := randPath(r), randPath(r)
	switch op := r.Intn(16); {
	case op < 3:
		x.create(p, 0644)
	case op < 7:
		data := make([]byte, r.Intn(20<<10)+1)
		for j := range data {
			data[j] = byte(r.Intn(255) + 1)
		}
		x.write(p, int64(r.Intn(128<<10)), data)
	case op < 9:
		x.truncate(p, int64(r.Intn(150<<10)))
	case op < 11:
		x.unlink(p)
	case op < 13:
		x.mkdir(p, 0755)
	case op < 14:
		x.rmdir(p)
	case op < 15:
		x.rename(p, q)
	default:
		x.link(p, q)
	}
}

// snapshot lists the tree the Writer's volume holds.
func snapshot(t *testing.T, w *Writer) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir uint32, prefix string)
	walk = func(dir uint32, prefix string) {
		w.View(func(v *Volume) error {
			in, err := v.Inode(dir)
			if err != nil {
				t.Fatalf("%s: %v", prefix, err)
			}
			type ent struct {
				name string
				ino  uint32
			}
			var ents []ent
			if err := v.ReadDir(in, func(name []byte, ino uint32, _ uint8) bool {
				ents = append(ents, ent{string(name), ino})
				return true
			}); err != nil {
				t.Fatalf("%s: %v", prefix, err)
			}
			for _, e := range ents {
				c, err := v.Inode(e.ino)
				if err != nil {
					t.Fatalf("%s/%s: %v", prefix, e.name, err)
				}
				out[prefix+"/"+e.name] = fmt.Sprintf("ino=%d mode=%o nlink=%d size=%d", e.ino, c.Mode, c.Nlink, c.Size)
				if c.Flags&FlagInlineData != 0 {
					out[prefix+"/"+e.name] += " inline" // its data is journalled metadata
				}
			}
			return nil
		})
		// The entries of this directory: keys prefix+"/"+name.
		in := func(k string) bool { return k[:strings.LastIndexByte(k, '/')] == prefix }
		var subdirs []string
		for k, line := range out {
			if !in(k) || !strings.Contains(line, "mode=4") {
				continue
			}
			if b := path.Base(k); b != "." && b != ".." && b != "lost+found" {
				subdirs = append(subdirs, k)
			}
		}
		for _, k := range subdirs {
			var ino uint32
			fmt.Sscanf(out[k], "ino=%d", &ino)
			walk(ino, k)
		}
		for k, line := range out {
			if !in(k) || !strings.Contains(line, "mode=100") {
				continue
			}
			if w.Data != DataJournal && !strings.HasSuffix(line, " inline") {
				// Under data=ordered an overwrite of allocated blocks goes
				// to them in place before its transaction commits (as on
				// Linux), so a cut can show new bytes under old metadata:
				// only the metadata is atomic, and only it is compared
				// (inline data lives in the inode: it is compared).
				continue
			}
			var ino uint32
			var size int64
			fmt.Sscanf(line, "ino=%d", &ino)
			fmt.Sscanf(line[strings.Index(line, "size="):], "size=%d", &size)
			b := make([]byte, size)
			if n, err := w.ReadAt(ino, b, 0); int64(n) != size {
				t.Fatalf("read %s: %d, %v", k, n, err)
			}
			out[k] = line + fmt.Sprintf(" data=%x", sha(b))
		}
	}
	walk(rootIno, "")
	return out
}

func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestWriterCrash cuts the device off after a random number of writes
// during a random sequence, recovers the journal (OpenWriter), and checks
// that the volume is e2fsck-clean and holds exactly the tree after the
// last operation that finished before the cut, or after the one under way
// (each operation is one transaction: all or nothing). Every operation
// commits before it returns, so this is also Fsync's guarantee. The
// ext4-inline sets run inlineStep sequences (data written into inodes,
// directories growing into system.data and out into blocks).
// IOVFS_EXT4RW_CRASH=500 runs 500 trials per feature set.
func TestWriterCrash(t *testing.T) {
	needMke2fs(t)
	trials, ops := 40, 60
	if testenv.Quick() || rwRace {
		trials = 4
	}
	if s := os.Getenv("IOVFS_EXT4RW_CRASH"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	fixed := time.Unix(1750000000, 5)
	for _, fsets := range []struct {
		name, opts string
		batch      bool
		data       DataMode
	}{{"ext4-csumv3", "", false, DataOrdered}, {"ext4-nocsum", "^metadata_csum,uninit_bg", false, DataOrdered}, {"ext4-csumv3-batch", "", true, DataOrdered},
		{"ext4-csumv3-batch-datajournal", "", true, DataJournal}, {"ext4-nocsum-batch-datajournal", "^metadata_csum,uninit_bg", true, DataJournal},
		{"ext3", "-t ext3 -b 1024", false, DataOrdered}, {"ext3-batch", "-t ext3 -b 1024", true, DataOrdered},
		{"ext4-1k-deep", "", false, DataOrdered},
		{"ext4-inline", "inline_data", false, DataOrdered}, {"ext4-inline-batch", "inline_data", true, DataOrdered},
		{"ext4-upstream-batch", "orphan_file,metadata_csum_seed", true, DataOrdered}} {
		t.Run(fsets.name, func(t *testing.T) {
			testenv.Sampled(t, "ext4-csumv3-batch-datajournal", "ext3-batch", "ext4-inline-batch")
			dir := t.TempDir()
			base := filepath.Join(dir, "base.img")
			op, mkfs := randomOp, mkfsRW
			if strings.HasSuffix(fsets.name, "-deep") {
				op, mkfs = randomDeepOp, mkfsDeep // extent trees of depth 2 (rwextent_linux_test.go)
			}
			if strings.HasPrefix(fsets.name, "ext4-inline") {
				op = randomInlineOp // rwinline_linux_test.go
			}
			mkfs(t, base, 16, fsets.opts)
			orig, err := os.ReadFile(base)
			if err != nil {
				t.Fatal(err)
			}
			replayed := 0
			for trial := 0; trial < trials; trial++ {
				seed := int64(trial)
				// The reference run: the tree after each operation, and the
				// write count at which each ended.
				ref := &cutDev{memWDev: memWDev(bytes.Clone(orig)), limit: -1}
				w, err := OpenWriter(ref, Options{})
				if err != nil {
					t.Fatal(err)
				}
				w.Now = func() time.Time { return fixed }
				w.Batch, w.CommitInterval = fsets.batch, time.Hour
				w.Data = fsets.data
				snaps := []map[string]string{snapshot(t, w)}
				ends := []int{ref.count}
				committed := []bool{true}
				r, rs := rand.New(rand.NewSource(seed)), rand.New(rand.NewSource(seed+7))
				for i := 0; i < ops; i++ {
					op(r, writerTarget{w, 0})
					if fsets.batch && rs.Intn(8) == 0 {
						w.Sync() // fsync
					}
					snaps = append(snaps, snapshot(t, w))
					ends = append(ends, ref.count)
					committed = append(committed, w.Pending() == 0)
				}
				w.Close()
				cut := ends[0] + rand.New(rand.NewSource(seed+1e6)).Intn(ref.count-ends[0]+1)
				cd := &cutDev{memWDev: memWDev(bytes.Clone(orig)), limit: cut}
				w, err = OpenWriter(cd, Options{})
				if err != nil {
					t.Fatal(err)
				}
				w.Now = func() time.Time { return fixed }
				w.Batch, w.CommitInterval = fsets.batch, time.Hour
				w.Data = fsets.data
				r, rs = rand.New(rand.NewSource(seed)), rand.New(rand.NewSource(seed+7))
				for i := 0; i < ops && cd.count <= cut; i++ {
					op(r, writerTarget{w, 0})
					if fsets.batch && rs.Intn(8) == 0 {
						w.Sync()
					}
				}
				// Power is back: recover from what reached the device.
				img := memWDev(cd.memWDev)
				var logs []string
				w2, err := OpenWriter(img, Options{Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
				if err != nil {
					t.Fatalf("trial %d (cut at write %d): recovery: %v", trial, cut, err)
				}
				w2.Data = fsets.data // snapshot compares data under data=journal
				for _, l := range logs {
					if strings.Contains(l, "recovered") && !strings.Contains(l, "recovered 0") {
						replayed++
					}
				}
				got := snapshot(t, w2)
				// The last state committed before the cut, or the next
				// committed one (its commit may have been under way).
				k := 0
				for i := 1; i < len(ends) && ends[i] <= cut; i++ {
					if committed[i] {
						k = i
					}
				}
				next := k + 1
				for next < len(ends) && !committed[next] {
					next++
				}
				if !sameTree(got, snaps[k]) && (next >= len(snaps) || !sameTree(got, snaps[next])) {
					t.Fatalf("trial %d (cut at write %d): recovered tree matches neither op %d nor %d:\n%v\nwant\n%v", trial, cut, k, next, got, snaps[k])
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
			t.Logf("%d crash trials: e2fsck clean and atomic in every one; %d needed a journal replay", trials, replayed)
		})
	}
}

// replayDiff replays img's journal twice, by OpenWriter and by the kernel
// (a read-write loop mount with noinit_itable, then unmount), and returns
// the blocks whose bytes differ, leaving out the superblock's block (mount
// times and counts differ by design) and the journal's own blocks. Both
// results must be e2fsck-clean.
func replayDiff(t *testing.T, img []byte) (diff []uint64, recovered int) {
	t.Helper()
	dir := t.TempDir()
	ours := memWDev(bytes.Clone(img))
	var logs []string
	w, err := OpenWriter(ours, Options{Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatalf("iovfs replay: %v", err)
	}
	for _, l := range logs {
		fmt.Sscanf(l, "ext4: recovered %d", &recovered)
	}
	jblocks := map[uint64]bool{}
	for _, e := range w.j.Extents() {
		for b := e.Physical; b < e.Physical+e.Len; b++ {
			jblocks[b] = true
		}
	}
	bs := int(w.v.bs)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	kimg := filepath.Join(dir, "k.img")
	if err := os.WriteFile(kimg, img, 0o600); err != nil {
		t.Fatal(err)
	}
	_, um := kmount(t, kimg, "rw,noinit_itable")
	um()
	theirs, err := os.ReadFile(kimg)
	if err != nil {
		t.Fatal(err)
	}
	oimg := filepath.Join(dir, "o.img")
	if err := os.WriteFile(oimg, ours, 0o600); err != nil {
		t.Fatal(err)
	}
	e2fsckClean(t, oimg)
	e2fsckClean(t, kimg)
	for b := 1; b*bs < len(img); b++ {
		if jblocks[uint64(b)] || b == sbOffset/bs { // block 1 holds the superblock with 1 KiB blocks
			continue
		}
		if !bytes.Equal(ours[b*bs:(b+1)*bs], theirs[b*bs:(b+1)*bs]) {
			diff = append(diff, uint64(b))
		}
	}
	return diff, recovered
}

// TestWriterKernelReplay compares journal replay with the kernel's, both
// ways: a journal the Writer left committed but not checkpointed (a cut
// device), and a journal the kernel left dirty (the backing file of a live
// kernel mount copied after sync).
func TestWriterKernelReplay(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	for _, fsets := range []struct{ name, opts string }{{"ext4-csumv3", ""}, {"ext4-nocsum", "^metadata_csum,uninit_bg"}, {"ext3", "-t ext3 -b 1024"}} {
		t.Run(fsets.name+"/iovfs-journal", func(t *testing.T) {
			if !testenv.Sample(fsets.name, "ext4-csumv3", "ext3") {
				t.Skip("not in the quick sample; IOVFS_LONG=1 runs every case")
			}
			dir := t.TempDir()
			base := filepath.Join(dir, "base.img")
			mkfsRW(t, base, 16, fsets.opts)
			orig, _ := os.ReadFile(base)
			found := 0
			for seed := int64(0); seed < 200 && found < 5; seed++ {
				cd := &cutDev{memWDev: memWDev(bytes.Clone(orig)), limit: -1}
				w, err := OpenWriter(cd, Options{})
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewSource(seed))
				for i := 0; i < 30; i++ {
					randomOp(r, writerTarget{w, 0})
				}
				total := cd.count
				cd = &cutDev{memWDev: memWDev(bytes.Clone(orig)), limit: rand.New(rand.NewSource(seed)).Intn(total)}
				w, _ = OpenWriter(cd, Options{})
				r = rand.New(rand.NewSource(seed))
				for i := 0; i < 30 && cd.count <= cd.limit; i++ {
					randomOp(r, writerTarget{w, 0})
				}
				// Only images with a committed transaction to replay.
				probe := memWDev(bytes.Clone(cd.memWDev))
				n := 0
				pw, err := OpenWriter(probe, Options{Logf: func(f string, a ...any) { fmt.Sscanf(fmt.Sprintf(f, a...), "ext4: recovered %d", &n) }})
				if err != nil || n == 0 {
					continue
				}
				pw.Close()
				found++
				diff, rec := replayDiff(t, cd.memWDev)
				if len(diff) != 0 {
					t.Errorf("seed %d: %d transactions replayed; blocks differing from the kernel's replay: %v", seed, rec, diff)
				}
			}
			if found == 0 {
				t.Fatal("no crash left a committed transaction")
			}
			t.Logf("%d images with a committed iovfs transaction: the kernel's replay gives the same blocks", found)
		})
		t.Run(fsets.name+"/kernel-journal", func(t *testing.T) {
			if !testenv.Sample(fsets.name, "ext4-csumv3", "ext3") {
				t.Skip("not in the quick sample; IOVFS_LONG=1 runs every case")
			}
			dir := t.TempDir()
			base := filepath.Join(dir, "base.img")
			mkfsRW(t, base, 16, fsets.opts)
			mnt, um := kmount(t, base, "rw,noinit_itable,commit=600")
			r := rand.New(rand.NewSource(7))
			for i := 0; i < 200; i++ {
				randomOp(r, kernelTarget{mnt})
			}
			// syncfs of this mount only (commits the journal and writes
			// the block device's buffers to the loop's backing file): a
			// global sync(2) would wait on every other mount of the
			// machine, hung ones included.
			mfd, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			err = unix.Syncfs(mfd)
			unix.Close(mfd)
			if err != nil {
				t.Fatal(err)
			}
			img, err := os.ReadFile(base)
			um()
			if err != nil {
				t.Fatal(err)
			}
			if le32(img[sbOffset:], 0x60)&incompatRecover == 0 {
				t.Fatal("the copy of a live mount does not need recovery")
			}
			diff, rec := replayDiff(t, img)
			if rec == 0 {
				t.Fatal("nothing replayed")
			}
			if len(diff) != 0 {
				t.Errorf("%d kernel transactions replayed; blocks differing from the kernel's replay: %v", rec, diff)
			}
			t.Logf("%d kernel transactions replayed by iovfs: same blocks as the kernel's replay", rec)
		})
	}
}

// TestWriterLargeDir grows one directory far past the blocks that are
// scanned for room (the name index and the hinted block), removes and
// renames a share of its entries, and checks the result with e2fsck -fn
// and a kernel listing.
func TestWriterLargeDir(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	n := 12000 // the 64 MiB image has 16384 inodes
	if testenv.Quick() || rwRace {
		n = 3000
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "base.img")
	mkfsRW(t, base, 64, "")
	orig, _ := os.ReadFile(base)
	dev := memWDev(orig)
	w, err := OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := w.Mkdir(rootIno, "big", 0o755, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("file-with-a-longish-name-%06d", i)
		if _, err := w.Create(d, name, 0o644, 0, 0); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		want[name] = true
	}
	if _, err := w.Create(d, "file-with-a-longish-name-000007", 0o644, 0, 0); !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("duplicate create: %v, want EEXIST", err)
	}
	for i := 0; i < n; i += 3 {
		name := fmt.Sprintf("file-with-a-longish-name-%06d", i)
		if err := w.Unlink(d, name); err != nil {
			t.Fatalf("unlink %s: %v", name, err)
		}
		delete(want, name)
	}
	for i := 1; i < n; i += 7 {
		name := fmt.Sprintf("file-with-a-longish-name-%06d", i)
		if !want[name] {
			continue
		}
		if err := w.Rename(d, name, d, "r"+name); err != nil {
			t.Fatalf("rename %s: %v", name, err)
		}
		delete(want, name)
		want["r"+name] = true
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "w.img")
	os.WriteFile(img, dev, 0o600)
	e2fsckClean(t, img)
	mnt, _ := kmount(t, img, "ro,noload")
	ents, err := os.ReadDir(filepath.Join(mnt, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(want) {
		t.Fatalf("kernel lists %d entries, want %d", len(ents), len(want))
	}
	for _, e := range ents {
		if !want[e.Name()] {
			t.Fatalf("kernel lists %q, not made", e.Name())
		}
	}
	t.Logf("%d creates, %d entries left: e2fsck clean, kernel listing equal", n, len(want))
}

// TestWriterManyGroups fills a 1 KiB-block volume of many groups (most of
// them BLOCK_UNINIT and INODE_UNINIT at mkfs time), then frees half of it:
// e2fsck -fn must stay clean, and the kernel must read the files back.
func TestWriterManyGroups(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	for _, fsets := range []struct{ name, opts string }{{"ext4-1k", ""}, {"ext4-1k-nocsum", "^metadata_csum,uninit_bg"}} {
		t.Run(fsets.name, func(t *testing.T) {
			dir := t.TempDir()
			base := filepath.Join(dir, "base.img")
			args := []string{"-q", "-F", "-t", "ext4", "-b", "1024"}
			if fsets.opts != "" {
				args = append(args, "-O", fsets.opts)
			}
			if out, err := exec.Command("mke2fs", append(args, base, "48M")...).CombinedOutput(); err != nil {
				t.Fatalf("mke2fs: %v\n%s", err, out)
			}
			orig, _ := os.ReadFile(base)
			dev := memWDev(orig)
			w, err := OpenWriter(dev, Options{})
			if err != nil {
				t.Fatal(err)
			}
			data := make([]byte, 300<<10)
			rand.New(rand.NewSource(1)).Read(data)
			want := map[string][]byte{}
			for d := 0; d < 12; d++ {
				di, err := w.Mkdir(rootIno, fmt.Sprintf("d%d", d), 0o755, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				for f := 0; f < 10; f++ {
					name := fmt.Sprintf("f%d", f)
					fi, err := w.Create(di, name, 0o644, 0, 0)
					if err != nil {
						t.Fatal(err)
					}
					chunk := data[(d*10+f)%7*1000:][:200<<10]
					if n, err := w.WriteAt(fi, chunk, 0); n != len(chunk) {
						t.Fatalf("write d%d/%s: %d, %v", d, name, n, err)
					}
					want[fmt.Sprintf("d%d/%s", d, name)] = chunk
				}
			}
			for d := 0; d < 12; d += 2 {
				di, _ := w.Volume().Lookup(mustInode(t, w, rootIno), fmt.Sprintf("d%d", d))
				for f := 0; f < 10; f++ {
					if err := w.Unlink(di, fmt.Sprintf("f%d", f)); err != nil {
						t.Fatal(err)
					}
					delete(want, fmt.Sprintf("d%d/f%d", d, f))
				}
				if err := w.Rmdir(rootIno, fmt.Sprintf("d%d", d)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			img := filepath.Join(dir, "w.img")
			os.WriteFile(img, dev, 0o600)
			e2fsckClean(t, img)
			mnt, _ := kmount(t, img, "ro,noload")
			for name, b := range want {
				got, err := os.ReadFile(filepath.Join(mnt, name))
				if err != nil || !bytes.Equal(got, b) {
					t.Fatalf("kernel read of %s: %d bytes, %v", name, len(got), err)
				}
			}
			t.Logf("%d files over %d groups: e2fsck clean, kernel reads them", len(want), w.v.groups)
		})
	}
}

func mustInode(t *testing.T, w *Writer, ino uint32) *Inode {
	in, err := w.Volume().Inode(ino)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
