package main

// Differential tests of the image tools: "iovfs cp -r/-a IMAGE:/ DIR" must
// give the tree a kernel loop mount of the same image shows: contents,
// modes, times, symlinks, hard-link structure and holes (and xattrs with
// -a).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/testenv"
)

// kernelMount shows img's committed state as the kernel reads it: a copy
// of img mounted read-only on a writable loop device, so that the kernel
// replays a journal that needs recovery into the copy (as iovfs replays
// it in memory); if the kernel refuses that, img itself read-only with
// noload. The cleanup unmounts it, which frees the device.
func kernelMount(t *testing.T, img string) (string, error) {
	t.Helper()
	b, err := os.ReadFile(img)
	if err != nil {
		return "", err
	}
	cp := filepath.Join(t.TempDir(), "replayed.img")
	if err := os.WriteFile(cp, b, 0o644); err != nil {
		return "", err
	}
	if dir, err := loopMount(t, cp, false, ""); err == nil {
		return dir, nil
	}
	return loopMount(t, img, true, "noload")
}

// loopMount attaches img to a free host loop device (AUTOCLEAR, read-only
// if ro) and mounts it read-only with data; the cleanup unmounts it,
// which frees the device.
func loopMount(t *testing.T, img string, ro bool, data string) (string, error) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer ctl.Close()
	mode := os.O_RDWR
	if ro {
		mode = os.O_RDONLY
	}
	f, err := os.OpenFile(img, mode, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var dev string
	for try := 0; ; try++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", err
		}
		dev = fmt.Sprintf("/dev/loop%d", n)
		l, err := os.OpenFile(dev, mode, 0) // LOOP_CONFIGURE makes a device opened read-only read-only
		if err != nil {
			return "", err
		}
		cfg := unix.LoopConfig{Fd: uint32(f.Fd())}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		if ro {
			cfg.Info.Flags |= unix.LO_FLAGS_READ_ONLY
		}
		err = unix.IoctlLoopConfigure(int(l.Fd()), &cfg)
		if err == nil {
			dir := t.TempDir()
			err = unix.Mount(dev, dir, "ext4", unix.MS_RDONLY, data)
			l.Close() // the mount holds the device; AUTOCLEAR frees it at unmount
			if err != nil {
				return "", err
			}
			t.Cleanup(func() {
				if err := unix.Unmount(dir, 0); err != nil {
					unix.Unmount(dir, unix.MNT_DETACH)
				}
			})
			return dir, nil
		}
		l.Close()
		if !errors.Is(err, unix.EBUSY) || try > 10 {
			return "", fmt.Errorf("LOOP_CONFIGURE %s: %w", dev, err)
		}
	}
}

// treeDiff compares the tree want (a kernel mount) with got (an
// extraction) and returns the differences.
func treeDiff(want, got string, xattrs bool) []string {
	var diffs []string
	groups := func(root string) map[string]string {
		byIno := map[uint64][]string{}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			var st unix.Stat_t
			if unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
				rel, _ := filepath.Rel(root, p)
				byIno[st.Ino] = append(byIno[st.Ino], rel)
			}
			return nil
		})
		out := map[string]string{}
		for _, ps := range byIno {
			sort.Strings(ps)
			for _, p := range ps {
				out[p] = strings.Join(ps, ",")
			}
		}
		return out
	}
	wg, gg := groups(want), groups(got)
	seen := map[string]bool{}
	filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(want, p)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: kernel walk: %v", rel, err))
			return nil
		}
		seen[rel] = true
		q := filepath.Join(got, rel)
		var ws, gs unix.Stat_t
		if err := unix.Lstat(p, &ws); err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: kernel lstat: %v", rel, err))
			return nil
		}
		if err := unix.Lstat(q, &gs); err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: missing: %v", rel, err))
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if ws.Mode != gs.Mode {
			diffs = append(diffs, fmt.Sprintf("%s: mode %o, want %o", rel, gs.Mode, ws.Mode))
		}
		if ws.Mtim != gs.Mtim {
			diffs = append(diffs, fmt.Sprintf("%s: mtime %v, want %v", rel, gs.Mtim, ws.Mtim))
		}
		if xattrs && (ws.Uid != gs.Uid || ws.Gid != gs.Gid) {
			diffs = append(diffs, fmt.Sprintf("%s: owner %d:%d, want %d:%d", rel, gs.Uid, gs.Gid, ws.Uid, ws.Gid))
		}
		switch ws.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			a, _ := os.Readlink(p)
			b, _ := os.Readlink(q)
			if a != b {
				diffs = append(diffs, fmt.Sprintf("%s: symlink %q, want %q", rel, b, a))
			}
		case unix.S_IFREG:
			if ws.Size != gs.Size {
				diffs = append(diffs, fmt.Sprintf("%s: size %d, want %d", rel, gs.Size, ws.Size))
			}
			a, aerr := os.ReadFile(p)
			b, _ := os.ReadFile(q)
			if aerr != nil {
				diffs = append(diffs, fmt.Sprintf("%s: kernel read: %v", rel, aerr))
			} else if !bytes.Equal(a, b) {
				diffs = append(diffs, fmt.Sprintf("%s: contents differ", rel))
			}
			if h := holesKept(p, q, ws.Size); h != "" {
				diffs = append(diffs, rel+": "+h)
			}
			if wg[rel] != gg[rel] {
				diffs = append(diffs, fmt.Sprintf("%s: hard links %q, want %q", rel, gg[rel], wg[rel]))
			}
		}
		if xattrs {
			if a, b := xattrList(p), xattrList(q); a != b {
				diffs = append(diffs, fmt.Sprintf("%s: xattrs %q, want %q", rel, b, a))
			}
		}
		return nil
	})
	filepath.WalkDir(got, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(got, p)
		if err == nil && !seen[rel] {
			diffs = append(diffs, rel+": extra")
		}
		return nil
	})
	return diffs
}

// holesKept checks that every 4 KiB block that is a hole in the source is
// a hole in the copy.
func holesKept(src, dst string, size int64) string {
	a, err := os.Open(src)
	if err != nil {
		return ""
	}
	defer a.Close()
	b, err := os.Open(dst)
	if err != nil {
		return ""
	}
	defer b.Close()
	for off := int64(0); off < size; {
		hole, err := unix.Seek(int(a.Fd()), off, unix.SEEK_HOLE)
		if err != nil || hole >= size {
			return ""
		}
		data, err := unix.Seek(int(a.Fd()), hole, unix.SEEK_DATA)
		if err != nil {
			data = size
		}
		// Whole 4 KiB blocks inside [hole, data) must be holes in dst.
		start, end := (hole+4095)&^4095, data&^4095
		if start < end {
			got, err := unix.Seek(int(b.Fd()), start, unix.SEEK_DATA)
			if err == nil && got < end {
				return fmt.Sprintf("hole [%d,%d) has data at %d in the copy", start, end, got)
			}
		}
		off = data
	}
	return ""
}

func xattrList(p string) string {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		return ""
	}
	var out []string
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(name, "user.") {
			continue
		}
		v := make([]byte, 64<<10)
		m, _ := unix.Lgetxattr(p, name, v)
		out = append(out, name+"="+string(v[:max(m, 0)]))
	}
	sort.Strings(out)
	return strings.Join(out, ";")
}

// makeSource fills dir with what the differential needs: hard links,
// sparse files, short and long symlinks, xattrs, special modes, old
// times, and a directory of n entries.
func makeSource(t *testing.T, dir string, n int) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "d/e/f"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "a"), []byte("hello\n"), 0o644))
	must(os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "d/hard")))
	must(os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "d/e/hard2")))
	sp, err := os.Create(filepath.Join(dir, "sparse"))
	must(err)
	sp.WriteAt([]byte("start"), 0)
	sp.WriteAt([]byte("middle"), 5<<20)
	sp.WriteAt([]byte("end"), 12<<20)
	sp.Truncate(16 << 20)
	sp.Close()
	hole, err := os.Create(filepath.Join(dir, "allhole"))
	must(err)
	hole.Truncate(3 << 20)
	hole.Close()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	must(os.WriteFile(filepath.Join(dir, "d/big"), big, 0o600))
	must(os.Symlink("a", filepath.Join(dir, "short")))
	must(os.Symlink(strings.Repeat("long/", 60)+"target", filepath.Join(dir, "d/longlink")))
	must(os.WriteFile(filepath.Join(dir, "x"), []byte("xattrs"), 0o640))
	must(unix.Setxattr(filepath.Join(dir, "x"), "user.one", []byte("1"), 0))
	must(unix.Setxattr(filepath.Join(dir, "x"), "user.two", bytes.Repeat([]byte("v"), 300), 0))
	must(os.WriteFile(filepath.Join(dir, "suid"), []byte("#!"), 0o4755))
	must(os.Chmod(filepath.Join(dir, "suid"), 0o4755))
	must(os.Chmod(filepath.Join(dir, "d/e"), 0o1777))
	must(os.Chown(filepath.Join(dir, "x"), 1000, 1001))
	many := filepath.Join(dir, "many")
	must(os.Mkdir(many, 0o755))
	for i := range n {
		f, err := os.Create(filepath.Join(many, "file-"+strconv.Itoa(i)))
		must(err)
		if i%7 == 0 {
			fmt.Fprintf(f, "entry %d\n", i)
		}
		f.Close()
	}
	old := filepath.Join(dir, "old")
	must(os.WriteFile(old, []byte("old"), 0o644))
	must(unix.UtimesNano(old, []unix.Timespec{{Sec: 1e9, Nsec: 123456789}, {Sec: 1e9, Nsec: 987654321}}))
}

func TestImageCpDifferential(t *testing.T) {
	testenv.RequireRoot(t, "mounts images on host loop devices")
	if _, err := exec.LookPath("mke2fs"); err != nil {
		testenv.SkipPrivileged(t, "no mke2fs")
	}
	n := 20000
	if raceEnabled || testenv.Quick() {
		n = 2000
	}
	for _, kind := range []string{"ext4", "ext2"} {
		t.Run(kind, func(t *testing.T) {
			// mke2fs -d takes about 1.4 ms per entry of a large directory
			// here, so only ext4 gets the full one.
			src := t.TempDir()
			makeSource(t, src, map[string]int{"ext4": n, "ext2": 500}[kind])
			img := filepath.Join(t.TempDir(), "img")
			out, err := exec.Command("mke2fs", "-q", "-t", kind, "-I", "256", "-d", src, img, "96M").CombinedOutput()
			if err != nil {
				t.Fatalf("mke2fs: %v\n%s", err, out)
			}
			kdir, err := kernelMount(t, img)
			if err != nil {
				t.Fatal(err)
			}
			for _, flag := range []string{"-r", "-a"} {
				dst := filepath.Join(t.TempDir(), "out")
				var stdout, stderr bytes.Buffer
				if st := run([]string{"cp", flag, img + ":/", dst}, &stdout, &stderr); st != 0 {
					t.Fatalf("iovfs cp %s: status %d\n%s", flag, st, stderr.String())
				}
				diffs := treeDiff(kdir, dst, flag == "-a")
				for _, d := range diffs {
					// GNU cp -r keeps neither owners, times nor hard
					// links, and applies the umask to modes (the GNU
					// table in cp_linux_test.go checks those rules).
					if flag == "-r" && (strings.Contains(d, "owner") || strings.Contains(d, "time") || strings.Contains(d, "hard links") || strings.Contains(d, "mode")) {
						continue
					}
					t.Errorf("cp %s: %s", flag, d)
				}
				t.Logf("cp %s: %d entries compared, %d differences", flag, countEntries(kdir), len(diffs))
			}
		})
	}
}

func countEntries(root string) int {
	n := 0
	filepath.WalkDir(root, func(string, fs.DirEntry, error) error { n++; return nil })
	return n
}

// TestImageCpCorpus extracts (cp -a) every e2fsprogs corpus image the ext4 driver
// mounts and compares it with the kernel's mount of the same image, where
// the kernel mounts it and reads it without error. Corrupt images must
// give an error status, never a panic.
func TestImageCpCorpus(t *testing.T) {
	testenv.RequireRoot(t, "mounts images on host loop devices")
	dir := os.Getenv("IOVFS_E2FS_CORPUS")
	if dir == "" {
		t.Skip("IOVFS_E2FS_CORPUS not set; it names shared/testdata/e2fsprogs")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var refused, extractedWithErrors, kernelRefused, kernelErrors, compared, identical, damagedDiffer int
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		img := filepath.Join(t.TempDir(), name+".img")
		size, err := decompress(filepath.Join(dir, name), img)
		if err != nil {
			continue
		}
		if raceEnabled && size > 8<<20 {
			continue
		}
		dst := filepath.Join(t.TempDir(), "out")
		var stdout, stderr bytes.Buffer
		// -a: the comparison with the kernel's mount covers modes, owners
		// and times, which cp keeps only when asked, as GNU cp does.
		st := run([]string{"cp", "-a", img + ":/", dst}, &stdout, &stderr)
		if st != 0 && strings.Contains(stderr.String(), "mount") {
			refused++
			if stderr.Len() == 0 {
				t.Errorf("%s: status %d without a message", name, st)
			}
			continue
		}
		if st != 0 {
			extractedWithErrors++
		}
		kdir, err := kernelMount(t, img)
		if err != nil {
			kernelRefused++
			continue
		}
		diffs := treeDiff(kdir, dst, false)
		kernelBad := false
		for _, d := range diffs {
			if strings.Contains(d, "kernel") {
				kernelBad = true
			}
		}
		if kernelBad {
			kernelErrors++
			continue
		}
		compared++
		if st == 0 && len(diffs) == 0 {
			identical++
			continue
		}
		// An image e2fsck finds damaged may be read differently by two
		// correct readers (the kernel reads a directory block in an
		// uninitialized extent, for one); only clean images must match.
		clean := exec.Command("e2fsck", "-fn", img).Run() == nil
		if !clean {
			damagedDiffer++
			t.Logf("%s (e2fsck: damaged): status %d, %d differences from the kernel, first: %s", name, st, len(diffs), firstOf(diffs, stderr.String()))
			continue
		}
		if st == 0 {
			for i, d := range diffs {
				if i == 5 {
					t.Errorf("%s: ... %d differences", name, len(diffs))
					break
				}
				t.Errorf("%s: %s", name, d)
			}
		} else {
			t.Logf("%s: extraction reported errors (status %d) and %d differences from the kernel: %s", name, st, len(diffs), firstLine(stderr.String()))
		}
	}
	t.Logf("corpus: %d refused by the driver (error, no panic), %d refused by the kernel, %d read with errors by the kernel, %d compared: %d identical, %d damaged (e2fsck) and different; %d extractions reported errors",
		refused, kernelRefused, kernelErrors, compared, identical, damagedDiffer, extractedWithErrors)
}

func firstOf(diffs []string, stderr string) string {
	if len(diffs) > 0 {
		return diffs[0]
	}
	return firstLine(stderr)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// decompress writes a corpus test's image (testenv.OpenCorpusImage) to dst,
// at most 256 MiB of it.
func decompress(dir, dst string) (int64, error) {
	r, err := testenv.OpenCorpusImage(dir)
	if err != nil {
		return 0, err
	}
	out, err := os.Create(dst)
	if err != nil {
		r.Close()
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(r, 256<<20))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if cerr := r.Close(); err == nil && n < 256<<20 {
		err = cerr
	}
	return n, err
}

// TestImageToolsDifferential compares iovfs ls -lR and cat on an image
// with GNU ls and cat on a kernel loop mount of it, and tree's counts.
func TestImageToolsDifferential(t *testing.T) {
	testenv.RequireRoot(t, "mounts the image on a host loop device")
	if _, err := exec.LookPath("mke2fs"); err != nil {
		testenv.SkipPrivileged(t, "no mke2fs")
	}
	src := t.TempDir()
	makeSource(t, src, 50)
	img := filepath.Join(t.TempDir(), "img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-d", src, img, "64M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	kdir, err := kernelMount(t, img)
	if err != nil {
		t.Fatal(err)
	}
	host := func(dir string, args ...string) string {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = []string{"LC_ALL=C", "TZ=UTC"}
		out, _ := cmd.Output()
		return string(out)
	}
	iovfs := func(args ...string) (string, string, int) {
		var o, e bytes.Buffer
		st := run(args, &o, &e)
		return o.String(), e.String(), st
	}
	t.Setenv("TZ", "UTC")
	for _, c := range []struct {
		ours []string
		gnu  []string
		dir  string
	}{
		{[]string{"ls", "-lR", img}, []string{"ls", "-lR"}, kdir},
		{[]string{"ls", "-la", img + ":/d"}, []string{"ls", "-la"}, filepath.Join(kdir, "d")},
		{[]string{"ls", img + ":/many"}, []string{"ls"}, filepath.Join(kdir, "many")},
		{[]string{"cat", img + ":/d/big"}, []string{"cat", "d/big"}, kdir},
		{[]string{"cat", img + ":/sparse"}, []string{"cat", "sparse"}, kdir},
	} {
		got, errs, st := iovfs(c.ours...)
		want := host(c.dir, c.gnu...)
		if st != 0 || got != want {
			t.Errorf("iovfs %v: status %d, stderr %q\n--- GNU %v\n%.2000s--- iovfs\n%.2000s", c.ours[:len(c.ours)-1], st, errs, c.gnu, want, got)
		}
	}
	out, _, st := iovfs("tree", img)
	files, dirs := 0, 0
	filepath.WalkDir(kdir, func(p string, d fs.DirEntry, err error) error {
		if p == kdir {
			return nil
		}
		if d.IsDir() {
			dirs++
		} else {
			files++
		}
		return nil
	})
	if want := fmt.Sprintf("\n%d directories, %d files\n", dirs, files); st != 0 || !strings.HasSuffix(out, want) {
		t.Errorf("tree: status %d, ends %q, want %q", st, out[max(0, len(out)-60):], want)
	}
	// stat: the name as given (GNU stat's File: line for the operand
	// x, with IMG:/x given), the size, blocks, type, mode and owner
	// lines, which do not depend on the device number.
	out, _, st = iovfs("stat", img+":/x")
	want := host(kdir, "stat", "x")
	wl, gl := strings.Split(want, "\n"), strings.Split(out, "\n")
	if st != 0 || len(wl) < 4 || len(gl) < 4 || strings.Replace(wl[0], " x", " "+img+":/x", 1) != gl[0] || wl[1] != gl[1] || wl[3] != gl[3] {
		t.Errorf("stat: status %d\n--- GNU\n%s--- iovfs\n%s", st, want, out)
	}
	// Errors: a missing path, a corrupt image, a missing image.
	if _, errs, st := iovfs("cat", img+":/nope"); st != 1 || errs != "iovfs cat: "+img+":/nope: No such file or directory\n" {
		t.Errorf("cat of a missing file: status %d, stderr %q", st, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, bytes.Repeat([]byte{0xa5}, 1<<20), 0o644)
	if _, errs, st := iovfs("ls", bad); st != 1 || !strings.Contains(errs, "no ext2/3/4 or FAT file system") {
		t.Errorf("corrupt image: status %d, stderr %q", st, errs)
	}
	if _, errs, st := iovfs("ls", filepath.Join(t.TempDir(), "none")); st != 1 || !strings.Contains(errs, "No such file") {
		t.Errorf("missing image: status %d, stderr %q", st, errs)
	}
}

// TestShOptions runs iovfs sh with --user, --mount and --image, and -c's
// and FILE's exit statuses.
func TestShOptions(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in"), []byte("host data\n"), 0o644)
	script := filepath.Join(dir, "s.sh")
	os.WriteFile(script, []byte("echo \"$1\"; exit 4\n"), 0o644)
	var o, e bytes.Buffer
	if st := run([]string{"sh", script, "arg"}, &o, &e); st != 4 || o.String() != "arg\n" {
		t.Errorf("sh FILE: status %d, stdout %q, stderr %q", st, o.String(), e.String())
	}
	o.Reset()
	e.Reset()
	st := run([]string{"sh", "--mount", "hostfs:" + dir + ":/mnt/h", "--mount", "tmpfs:none:/mnt/t:size=1m",
		"--user", "1000:1000", "-c", "id; cat /mnt/h/in; mount | tail -2; touch /x; exit 9"}, &o, &e)
	want := "uid=1000(1000) gid=1000(1000) groups=1000(1000)\nhost data\n" + dir + " /mnt/h hostfs rw 0 0\nnone /mnt/t tmpfs rw,size=1m 0 0\n"
	if st != 9 || o.String() != want || e.String() != "touch: cannot touch '/x': Permission denied\n" {
		t.Errorf("sh -c: status %d\nstdout %q\nwant   %q\nstderr %q", st, o.String(), want, e.String())
	}
	if _, err := exec.LookPath("mke2fs"); err != nil {
		return
	}
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "f"), []byte("in the image\n"), 0o644)
	img := filepath.Join(t.TempDir(), "img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-d", src, img, "8M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	o.Reset()
	e.Reset()
	if st := run([]string{"sh", "--image", img + ":/data", "-c", "cat /data/f; touch /data/g"}, &o, &e); st != 1 ||
		o.String() != "in the image\n" || e.String() != "touch: cannot touch '/data/g': Read-only file system\n" {
		t.Errorf("--image: status %d, stdout %q, stderr %q", st, o.String(), e.String())
	}
}
