package ext4_test

// getdents64 and lseek on directories against the kernel: the same calls
// (small buffers, so that listings resume; seeks to returned d_off values)
// on a kernel loop mount and on iovfs's mount of the same image must give
// the same bytes, linux_dirent64 record by record (names, d_ino, d_type,
// d_off, order), and the same positions and errnos.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
)

// loopMount mounts img with the kernel (mount -o loop,OPTS, through
// testenv.Mount) and unmounts it at cleanup, which frees the loop device.
func loopMount(t *testing.T, img, opts string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := testenv.Mount("-t", "ext4", "-o", "loop,"+opts, img, dir); err != nil {
		t.Fatalf("mount %s: %v\n%s", img, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}

// memWDev is an disk.WriteDevice in memory (memDev, rwrecover_linux_test.go,
// with writes).
type memWDev struct{ memDev }

func (d memWDev) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(d.memDev)) {
		return 0, unix.EIO
	}
	return copy(d.memDev[off:], p), nil
}

const rootIno = 2

// hashDirNames are n names for a test directory: 1 to 200 bytes, some
// with bytes above 0x7f (where the signed and unsigned hashes differ).
func hashDirNames(r *rand.Rand, n int) []string {
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789\xc3\xa9\xe2\x82\xac_-"
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		l := 1 + r.Intn(200)
		if r.Intn(3) > 0 {
			l = 1 + r.Intn(24)
		}
		b := make([]byte, l)
		for i := range b {
			b[i] = alpha[r.Intn(len(alpha))]
		}
		s := string(b)
		if s == "." || s == ".." || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// hashDir is a directory each image has: name and entry count.
type hashDir struct {
	name string
	n    int
}

// hashDirs returns the directories each image has. In the quick run
// "big" has 1,000 entries, still an htree of many leaves. (A function:
// testenv.Quick asks the test flags, which a package-level value would
// read before they are parsed.)
func hashDirs() []hashDir {
	big := 3000
	if testenv.Quick() {
		big = 1000
	}
	return []hashDir{{"big", big}, {"mid", 150}, {"one", 5}, {"empty", 0}}
}

// direntOffs appends the d_off values of the records in b.
func direntOffs(offs []int64, b []byte) []int64 {
	for o := 0; o+19 <= len(b); {
		offs = append(offs, int64(binary.LittleEndian.Uint64(b[o+8:])))
		rl := int(binary.LittleEndian.Uint16(b[o+16:]))
		if rl == 0 {
			break
		}
		o += rl
	}
	return offs
}

// direntNames returns the names of the records in b.
func direntNames(b []byte) []string {
	var out []string
	for o := 0; o+19 <= len(b); {
		rl := int(binary.LittleEndian.Uint16(b[o+16:]))
		if rl == 0 {
			break
		}
		name := b[o+19 : o+rl]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		out = append(out, string(name))
		o += rl
	}
	return out
}

// getdentsStats counts what a differential did.
type getdentsStats struct {
	calls, seeks, entries, listings int
}

// getdentsDiff runs the same random getdents64/lseek sequence on the
// kernel's directory kdir and iovfs's vdir, failing at the first
// difference. A full listing from the start is compared first.
func getdentsDiff(t *testing.T, r *rand.Rand, kdir string, p *vfs.Proc, vdir string, st *getdentsStats) {
	t.Helper()
	kfd, err := unix.Open(kdir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(kfd)
	vfd, err := p.Open(vdir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(vfd)
	kb, vb := make([]byte, 1<<16), make([]byte, 1<<16)
	var offs []int64
	step := func(size int) int {
		// The kernel leaves a record's padding after the name's NUL as
		// the buffer had it: both start zeroed.
		clear(kb[:size])
		clear(vb[:size])
		kn, kerr := testenv.KernelGetdents(kfd, kb[:size])
		vn, verr := p.Getdents64(vfd, vb[:size])
		kn, vn = max(kn, 0), max(vn, 0)
		st.calls++
		if kn != vn || errnoOf(kerr) != errnoOf(verr) {
			t.Fatalf("%s: getdents64(%d bytes): kernel (%d, %v), iovfs (%d, %v)", vdir, size, kn, kerr, vn, verr)
		}
		if kn > 0 && !bytes.Equal(kb[:kn], vb[:vn]) {
			t.Fatalf("%s: getdents64(%d bytes) records differ:\nkernel %q %x\niovfs  %q %x", vdir, size,
				direntNames(kb[:kn]), direntOffs(nil, kb[:kn]), direntNames(vb[:vn]), direntOffs(nil, vb[:vn]))
		}
		if kn > 0 {
			offs = direntOffs(offs, kb[:kn])
			st.entries += len(direntNames(kb[:kn]))
		}
		return kn
	}
	seek := func(off int64, whence int) {
		kp, kerr := unix.Seek(kfd, off, whence)
		vp, verr := p.Seek(vfd, off, whence)
		st.seeks++
		if errnoOf(kerr) != errnoOf(verr) || (kerr == nil && kp != vp) {
			t.Fatalf("%s: lseek(%#x, %d): kernel (%#x, %v), iovfs (%#x, %v)", vdir, off, whence, kp, kerr, vp, verr)
		}
	}
	// A whole listing in large calls, then again in small ones.
	for step(1<<15) > 0 {
	}
	st.listings++
	seek(0, unix.SEEK_SET)
	for step(24+r.Intn(300)) > 0 {
	}
	st.listings++
	for i := 0; i < 200; i++ {
		switch k := r.Intn(12); {
		case k == 0 && len(offs) > 0:
			seek(offs[r.Intn(len(offs))], unix.SEEK_SET)
		case k == 1:
			seek(0, unix.SEEK_SET)
		case k == 2:
			seek(0, unix.SEEK_CUR)
		case k == 3:
			whence := []int{unix.SEEK_END, unix.SEEK_DATA, unix.SEEK_HOLE, unix.SEEK_CUR}[r.Intn(4)]
			seek([]int64{0, 5, -1, 1 << 40}[r.Intn(4)], whence)
			seek(0, unix.SEEK_SET)
		default:
			sizes := []int{8, 24, 32, 64, 100, 280, 512, 1000, 4096}
			step(sizes[r.Intn(len(sizes))])
		}
	}
}

// hashImage makes an image with the hashDirs directories: populated by
// mke2fs -d and indexed by e2fsck -fD, or made by the Writer; hash and
// unsigned set s_def_hash_version and the unsigned-hash flag first.
func hashImage(t *testing.T, r *rand.Rand, bs, features, hash string, unsigned, writer bool) string {
	t.Helper()
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	src := filepath.Join(dir, "src")
	names := map[string][]string{}
	for _, d := range hashDirs() {
		names[d.name] = hashDirNames(r, d.n)
	}
	opts := "^inline_data" + features
	if strings.Contains(features, ",inline_data") {
		opts = features[1:]
	}
	args := []string{"-q", "-F", "-t", "ext4", "-b", bs, "-O", opts}
	if !writer {
		for _, d := range hashDirs() {
			os.MkdirAll(filepath.Join(src, d.name), 0o755)
			for i, n := range names[d.name] {
				p := filepath.Join(src, d.name, n)
				if i%7 == 3 {
					os.Mkdir(p, 0o755)
				} else if i%11 == 5 {
					os.Symlink("target", p)
				} else if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		args = append(args, "-d", src)
	}
	args = append(args, img, "32M")
	if out, err := exec.Command("mke2fs", args...).CombinedOutput(); err != nil {
		t.Fatalf("mke2fs %v: %v\n%s", args, err, out)
	}
	testenv.SetDirHash(t, img, hash, unsigned)
	if writer {
		b, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		dev := memWDev{b}
		w, err := disk.OpenWriter(dev, disk.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range hashDirs() {
			di, err := w.Mkdir(rootIno, d.name, 0o755, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range names[d.name] {
				if i%7 == 3 {
					_, err = w.Mkdir(di, n, 0o755, 0, 0)
				} else {
					_, err = w.Create(di, n, 0o644, 0, 0)
				}
				if err != nil {
					t.Fatalf("create %q: %v", n, err)
				}
			}
			// Some removed, so leaves have gaps and merged entries.
			for i, n := range names[d.name] {
				if i%5 == 1 {
					if i%7 == 3 {
						err = w.Rmdir(di, n)
					} else {
						err = w.Unlink(di, n)
					}
					if err != nil {
						t.Fatalf("remove %q: %v", n, err)
					}
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(img, dev.memDev, 0o600); err != nil {
			t.Fatal(err)
		}
	} else if out, err := exec.Command("e2fsck", "-fyD", img).CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 { // 1: directories optimised
			t.Fatalf("e2fsck -fyD: %v\n%s", err, out)
		}
	}
	if strings.Contains(features, ",inline_data") {
		// mke2fs -d and e2fsck -D give directories blocks; debugfs's
		// mkdir makes an inline one (libext2fs moves it to a block once
		// i_block is full, so it stays small).
		cmds := "mkdir inl\ncd inl\nwrite /dev/null a\nwrite /dev/null bb\nmkdir ccc\n"
		cf := filepath.Join(dir, "cmds")
		os.WriteFile(cf, []byte(cmds), 0o644)
		if out, err := exec.Command("debugfs", "-w", "-f", cf, img).CombinedOutput(); err != nil {
			t.Fatalf("debugfs: %v\n%s", err, out)
		}
		for _, d := range []string{"/inl"} {
			out, _ := exec.Command("debugfs", "-R", "stat "+d, img).CombinedOutput()
			if !bytes.Contains(out, []byte("Size of inline data")) {
				t.Fatalf("%s is not inline:\n%s", d, out)
			}
		}
	}
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	e2fsckN(t, b)
	return img
}

// TestGetdentsKernelDifferential lists directories of images indexed by
// e2fsck -D and by the Writer, over hash versions, block sizes and
// without dir_index, through the read-only and read-write mounts, with
// the kernel's getdents64 and lseek as the oracle: one sequence of
// listings per directory and mount by default, IOVFS_GETDENTS_SEQS
// sequences when that is set (the closing figures used 2).
func TestGetdentsKernelDifferential(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	seqs := 1
	if s := os.Getenv("IOVFS_GETDENTS_SEQS"); s != "" {
		seqs, _ = strconv.Atoi(s)
	}
	sets := []struct {
		name, bs, features, hash string
		unsigned, writer         bool
	}{
		{"4k-halfmd4", "4096", "", "half_md4", false, false},
		{"1k-halfmd4-unsigned", "1024", "", "half_md4", true, false},
		{"1k-tea", "1024", ",^metadata_csum", "tea", false, false},
		{"1k-tea-unsigned", "1024", "", "tea", true, false},
		{"1k-legacy", "1024", "", "legacy", false, false},
		{"1k-legacy-unsigned", "1024", ",^metadata_csum", "legacy", true, false},
		{"1k-no-dir_index", "1024", ",^dir_index", "", false, false},
		// Small directories inline: listed by hash too (ext4_inlinedir_to_tree).
		// Only read-only kernel mounts of inline_data images.
		{"4k-inline_data", "4096", ",inline_data", "half_md4", false, false},
		{"writer-1k-halfmd4", "1024", "", "half_md4", false, true},
		{"writer-4k-tea-unsigned", "4096", "", "tea", true, true},
		{"writer-1k-legacy", "1024", ",^metadata_csum", "legacy", false, true},
		{"writer-1k-blockmap", "1024", ",^extent,^64bit", "half_md4", false, true},
	}
	var total getdentsStats
	for si, set := range sets {
		if raceEnabled && si%3 != 0 {
			// Under -race, one set in three (4k-halfmd4, 1k-tea-unsigned,
			// 4k-inline_data, writer-1k-legacy): the lists are
			// compared in one goroutine, and the run without the race
			// detector compares every set.
			continue
		}
		t.Run(set.name, func(t *testing.T) {
			testenv.Sampled(t, "4k-halfmd4", "writer-1k-halfmd4", "writer-1k-blockmap")
			r := rand.New(rand.NewSource(int64(si) + 1))
			img := hashImage(t, r, set.bs, set.features, set.hash, set.unsigned, set.writer)
			kmnt := loopMount(t, img, "ro,noload")
			for _, rw := range []bool{false, true} {
				var p *vfs.Proc
				if rw {
					// The read-write mount lists through the Writer (on
					// a copy: the kernel's mount holds the image).
					cp := filepath.Join(t.TempDir(), "rw.img")
					b, _ := os.ReadFile(img)
					os.WriteFile(cp, b, 0o600)
					var dev string
					var done func()
					p, dev, done = newProc(t, cp, viaRAM)
					if err := p.Mount(dev, "/mnt", "ext4", 0, ""); err != nil {
						t.Fatal(err)
					}
					done()
					t.Cleanup(func() { p.Unmount("/mnt", 0) })
				} else {
					p = mountImage(t, img, viaRAM, "")
				}
				var st getdentsStats
				for seq := 0; seq < seqs; seq++ {
					dirs := []string{"", "big", "mid", "one", "empty"}
					if strings.Contains(set.features, "inline_data") {
						dirs = append(dirs, "inl")
					}
					for _, d := range dirs {
						getdentsDiff(t, r, filepath.Join(kmnt, d), p, "/mnt/"+d, &st)
					}
				}
				t.Logf("rw=%v: %d getdents64 calls, %d lseeks, %d records, %d whole listings: all equal", rw, st.calls, st.seeks, st.entries, st.listings)
				total.calls += st.calls
				total.seeks += st.seeks
				total.entries += st.entries
				total.listings += st.listings
			}
		})
	}
	t.Logf("all sets: %d getdents64 calls, %d lseeks, %d records, %d whole listings; 0 differences", total.calls, total.seeks, total.entries, total.listings)
}

// TestGetdentsIndexFlagWithoutDirIndex: a directory keeps its index flag
// on a volume whose dir_index feature was turned off; the kernel then
// lists it by offset (is_dx_dir), and so must iovfs.
func TestGetdentsIndexFlagWithoutDirIndex(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	r := rand.New(rand.NewSource(7))
	// Without metadata_csum: with it, the kernel and iovfs both refuse
	// the index blocks as leaves failing their checksum.
	img := hashImage(t, r, "1024", ",^metadata_csum", "half_md4", false, false)
	if out, err := exec.Command("debugfs", "-w", "-R", "feature -dir_index", img).CombinedOutput(); err != nil {
		t.Fatalf("debugfs: %v\n%s", err, out)
	}
	kmnt := loopMount(t, img, "ro,noload")
	p := mountImage(t, img, viaRAM, "")
	var st getdentsStats
	for _, d := range []string{"big", "mid", "one"} {
		getdentsDiff(t, r, filepath.Join(kmnt, d), p, "/mnt/"+d, &st)
	}
	t.Logf("%d getdents64 calls, %d lseeks, %d records: all equal", st.calls, st.seeks, st.entries)
}

// TestGetdentsDuringChanges: a listing of an htree directory resumed
// after creates and unlinks in it, on a kernel read-write mount and on
// iovfs's read-write mount of copies of one image: the same names, d_off
// and d_type in the same order (d_ino too for the entries the image had;
// new inodes may be numbered differently), as ext4_dx_readdir refills from
// where it is after a change (and reports an entry a full buffer left
// over from the old fill).
func TestGetdentsDuringChanges(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	rounds := 4
	if testenv.Quick() || raceEnabled {
		rounds = 1
	}
	for _, set := range []struct{ name, bs, features, hash string }{
		{"1k-halfmd4", "1024", "", "half_md4"},
		{"4k-tea", "4096", ",^metadata_csum", "tea"},
	} {
		t.Run(set.name, func(t *testing.T) {
			testenv.Sampled(t, "1k-halfmd4")
			r := rand.New(rand.NewSource(11))
			img := hashImage(t, r, set.bs, set.features, set.hash, false, false)
			orig, _ := os.ReadFile(img)
			known := map[uint64]bool{}
			// The kernel's side: a read-write mount of a copy.
			kimg := filepath.Join(t.TempDir(), "k.img")
			os.WriteFile(kimg, orig, 0o600)
			kmnt := loopMount(t, kimg, "")
			// iovfs's: a read-write mount of another.
			vimg := filepath.Join(t.TempDir(), "v.img")
			os.WriteFile(vimg, orig, 0o600)
			p, dev, done := newProc(t, vimg, viaRAM)
			if err := p.Mount(dev, "/mnt", "ext4", 0, ""); err != nil {
				t.Fatal(err)
			}
			done()
			t.Cleanup(func() { p.Unmount("/mnt", 0) })
			ents, err := os.ReadDir(filepath.Join(kmnt, "big"))
			if err != nil {
				t.Fatal(err)
			}
			var live []string
			liveSet := map[string]bool{}
			for _, e := range ents {
				live = append(live, e.Name())
				liveSet[e.Name()] = true
				var st unix.Stat_t
				if unix.Lstat(filepath.Join(kmnt, "big", e.Name()), &st) == nil {
					known[st.Ino] = true
				}
			}
			for _, d := range []string{"big", ""} { // "." and ".."
				var st unix.Stat_t
				if unix.Stat(filepath.Join(kmnt, d), &st) == nil {
					known[st.Ino] = true
				}
			}
			added := hashDirNames(rand.New(rand.NewSource(99)), 2000)
			next := 0
			var calls, changes, records int
			for round := 0; round < rounds; round++ {
				kfd, err := unix.Open(filepath.Join(kmnt, "big"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
				if err != nil {
					t.Fatal(err)
				}
				closed := false
				t.Cleanup(func() { // before the unmounts, on a failure
					if !closed {
						unix.Close(kfd)
					}
				})
				vfd, err := p.Open("/mnt/big", unix.O_RDONLY|unix.O_DIRECTORY, 0)
				if err != nil {
					t.Fatal(err)
				}
				kb, vb := make([]byte, 4096), make([]byte, 4096)
				for {
					size := []int{40, 100, 300, 1000, 4096}[r.Intn(5)]
					clear(kb)
					clear(vb)
					kn, kerr := testenv.KernelGetdents(kfd, kb[:size])
					vn, verr := p.Getdents64(vfd, vb[:size])
					kn, vn = max(kn, 0), max(vn, 0)
					calls++
					if errnoOf(kerr) != errnoOf(verr) {
						t.Fatalf("round %d: getdents64: kernel %v, iovfs %v", round, kerr, verr)
					}
					if d := direntDiff(kb[:kn], vb[:vn], known); d != "" {
						t.Fatalf("round %d, call %d (%d bytes): %s", round, calls, size, d)
					}
					records += len(direntNames(kb[:kn]))
					if kn == 0 && kerr == nil {
						break
					}
					// Changes between the calls, the same on both sides.
					for k := r.Intn(4); k > 0; k-- {
						changes++
						for next < len(added) && liveSet[added[next]] {
							next++
						}
						if r.Intn(2) == 0 && next < len(added) {
							n := added[next]
							next++
							liveSet[n] = true
							if err := os.WriteFile(filepath.Join(kmnt, "big", n), nil, 0o644); err != nil {
								t.Fatal(err)
							}
							fd, err := p.Open("/mnt/big/"+n, unix.O_CREAT|unix.O_WRONLY, 0o644)
							if err != nil {
								t.Fatal(err)
							}
							p.Close(fd)
							live = append(live, n)
						} else if len(live) > 0 {
							i := r.Intn(len(live))
							n := live[i]
							live[i] = live[len(live)-1]
							live = live[:len(live)-1]
							delete(liveSet, n)
							kerr := unix.Unlink(filepath.Join(kmnt, "big", n))
							if errnoOf(kerr) == unix.EISDIR {
								kerr = unix.Rmdir(filepath.Join(kmnt, "big", n))
								verr = p.Rmdir("/mnt/big/" + n)
							} else {
								verr = p.Unlink("/mnt/big/" + n)
							}
							if errnoOf(kerr) != errnoOf(verr) {
								t.Fatalf("remove %q: kernel %v, iovfs %v", n, kerr, verr)
							}
						}
					}
				}
				unix.Close(kfd)
				closed = true
				p.Close(vfd)
			}
			// A directory removed while open lists nothing: ENOENT
			// (iterate_dir's IS_DEADDIR) on both.
			if err := os.Mkdir(filepath.Join(kmnt, "gone"), 0o755); err != nil {
				t.Fatal(err)
			}
			must(t, p.Mkdir("/mnt/gone", 0o755))
			kfd, err := unix.Open(filepath.Join(kmnt, "gone"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			vfd, err := p.Open("/mnt/gone", unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			must(t, unix.Rmdir(filepath.Join(kmnt, "gone")))
			must(t, p.Rmdir("/mnt/gone"))
			b := make([]byte, 1024)
			_, kerr := testenv.KernelGetdents(kfd, b)
			_, verr := p.Getdents64(vfd, b)
			unix.Close(kfd)
			p.Close(vfd)
			if errnoOf(kerr) != errnoOf(verr) {
				t.Fatalf("getdents64 of a removed directory: kernel %v, iovfs %v", kerr, verr)
			}
			if err := p.Unmount("/mnt", 0); err != nil {
				t.Fatal(err)
			}
			e2fsckN(t, ramBytes(t, p, len(orig))) // what the Writer left
			t.Logf("%d rounds: %d getdents64 calls with %d changes between them, %d records: all equal; e2fsck clean", rounds, calls, changes, records)
		})
	}
}

// direntDiff compares two getdents64 results record by record: names,
// d_off, d_type and d_reclen, and d_ino for inodes in known.
func direntDiff(k, v []byte, known map[uint64]bool) string {
	if len(k) != len(v) {
		return fmt.Sprintf("kernel %d bytes %q, iovfs %d bytes %q", len(k), direntNames(k), len(v), direntNames(v))
	}
	for o := 0; o+19 <= len(k); {
		kino, vino := binary.LittleEndian.Uint64(k[o:]), binary.LittleEndian.Uint64(v[o:])
		rl := int(binary.LittleEndian.Uint16(k[o+16:]))
		if !bytes.Equal(k[o+8:o+rl], v[o+8:o+rl]) || (known[kino] && kino != vino) || rl == 0 {
			return fmt.Sprintf("record at %d: kernel %q %x, iovfs %q %x", o, direntNames(k[o:o+rl]), k[o:o+rl], direntNames(v[o:o+rl]), v[o:o+rl])
		}
		o += rl
	}
	return ""
}
