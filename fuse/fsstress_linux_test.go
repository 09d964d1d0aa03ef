package fuse

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// fsstressOps are the fsstress operations turned off, and why: the ioctls
// of inode flags and fsxattr (getattr, setattr, setxattr), which iovfs's
// file systems do not have; and for ext4, insert and collapse ranges,
// which iovfs's ext4 writer does not do, and FIEMAP, which FUSE cannot
// carry. Each would give an errno the kernel does not, and the sizes
// that follow would send the two runs down different paths.
var fsstressOps = map[string][]string{
	"tmpfs": {"getattr", "setattr", "setxattr"},
	"ext4":  {"getattr", "setattr", "setxattr", "collapse", "insert", "fiemap"},
}

// fsstressNorm drops what differs between file systems and is not a
// result (inode and device numbers in brackets, bulkstat counts), and
// orders the lines by process, keeping each process's own order: each
// fsstress process works in a directory of its own, so its operations
// and their results are a function of the seed alone.
func fsstressNorm(out []byte) []string {
	br := regexp.MustCompile(`\[[^]]*\]`)
	ino := regexp.MustCompile(`real ino [0-9]+`)
	nent := regexp.MustCompile(`bulkstat nent [0-9]+ total [0-9]+`)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		l = br.ReplaceAllString(l, "[]")
		l = ino.ReplaceAllString(l, "real ino N")
		lines = append(lines, nent.ReplaceAllString(l, "bulkstat"))
	}
	proc := func(l string) string { p, _, _ := strings.Cut(l, "/"); return fmt.Sprintf("%8s", p) }
	sort.SliceStable(lines, func(i, j int) bool { return proc(lines[i]) < proc(lines[j]) })
	return lines
}

func runFsstress(t *testing.T, bin, dir, typ string, procs int) []string {
	t.Helper()
	args := []string{"-d", filepath.Join(dir, fmt.Sprintf("w%d", procs)), "-n", "2000", "-p", fmt.Sprint(procs), "-s", "7", "-v"}
	for _, op := range fsstressOps[typ] {
		args = append(args, "-f", op+"=0")
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("fsstress %v in %s: %v\n%s", args, dir, err, tail(out, 20))
	}
	return fsstressNorm(out)
}

func tail(b []byte, n int) string {
	l := strings.Split(string(b), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// TestFsstress runs xfstests' fsstress, 2,000 operations in each of 4 and
// then 8 processes, with one seed, on a tmpfs export and a kernel tmpfs,
// and on a read-write ext4 export and a kernel ext4 loop mount, and
// compares every operation's result (fsstress -v). fsstress is not
// packaged: IOVFS_FSSTRESS names a binary built from xfstests (make -C
// ltp fsstress, under /tmp); without it the test skips. docs/conformance.md
// has the last run.
func TestFsstress(t *testing.T) {
	bin := os.Getenv("IOVFS_FSSTRESS")
	if bin == "" {
		t.Skip("set IOVFS_FSSTRESS to an fsstress binary (xfstests' ltp/fsstress, built under /tmp)")
	}
	requireFUSE(t)
	testenv.RequireTool(t, "mke2fs", "e2fsck")
	p := newProc(t)
	if err := p.Mount("tmpfs", "/mnt", "tmpfs", 0, "size=1g"); err != nil {
		t.Fatal(err)
	}
	tm, _ := export(t, p, "/mnt", Options{})
	ep, img := ext4RWProc(t, "1G")
	t.Cleanup(func() {
		if err := ep.Unmount("/mnt", 0); err != nil {
			t.Errorf("in-process unmount of the ext4 image: %v", err)
			return
		}
		if b, err := exec.Command("e2fsck", "-fn", img).CombinedOutput(); err != nil {
			t.Errorf("e2fsck -fn after fsstress: %v\n%s", err, b)
		}
	})
	em, _ := export(t, ep, "/mnt", Options{})
	kt := t.TempDir()
	if err := unix.Mount("tmpfs", kt, "tmpfs", 0, "size=1g"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(kt, unix.MNT_DETACH) })
	kimg := filepath.Join(t.TempDir(), "kernel.img")
	if b, err := exec.Command("mke2fs", "-q", "-t", "ext4", kimg, "1G").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, b)
	}
	ke := t.TempDir()
	if b, err := testenv.Mount("-o", "loop", kimg, ke); err != nil {
		t.Fatalf("kernel mount: %v\n%s", err, b)
	}
	t.Cleanup(func() { exec.Command("umount", ke).Run() })
	for _, c := range []struct{ typ, export, kernel string }{{"tmpfs", tm, kt}, {"ext4", em, ke}} {
		for _, procs := range []int{4, 8} {
			t.Run(fmt.Sprintf("%s/p%d", c.typ, procs), func(t *testing.T) {
				want := runFsstress(t, bin, c.kernel, c.typ, procs)
				got := runFsstress(t, bin, c.export, c.typ, procs)
				if len(got) != len(want) {
					t.Errorf("%d lines on the export, %d on the kernel", len(got), len(want))
				}
				diffs := 0
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						if diffs++; diffs <= 20 {
							t.Errorf("export %s\nkernel %s", got[i], want[i])
						}
					}
				}
				enoent := 0
				for _, l := range got {
					if strings.HasSuffix(l, " 2") || strings.Contains(l, "error 2") {
						enoent++
					}
				}
				t.Logf("%d operations compared, %d differ; %d results ENOENT on the export", len(want), diffs, enoent)
			})
		}
	}
}
