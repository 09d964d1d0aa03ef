package main

// Copies into FAT images: what lands is what mtools reads back, byte for
// byte, and fsck.fat finds the image clean; a copy killed midway leaves
// an image whose only fault is the dirty bit.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
)

// fatTree writes a tree of files of the given sizes into dir: d%03d/f%03d,
// per directories of per files, each file a repeated byte (0 for the
// first of a directory: all zeros, which cp writes as a hole it then
// fills by truncation).
func fatTree(t *testing.T, dir string, dirs, per int, sizes []int) {
	t.Helper()
	for d := range dirs {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range per {
			b := bytes.Repeat([]byte{byte(f)}, sizes[(d*per+f)%len(sizes)])
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d with a long name", f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func mkfsFAT(t *testing.T, img string, kib int) {
	t.Helper()
	os.Remove(img)
	if out, err := exec.Command("mkfs.fat", "-C", "-F", "32", img, fmt.Sprint(kib)).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.fat: %v\n%s", err, out)
	}
}

func fsckFAT(t *testing.T, img string) string {
	t.Helper()
	out, err := exec.Command("fsck.fat", "-n", img).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("fsck.fat -n: %v\n%s", err, out)
	}
	return ""
}

// TestCpIntoVFAT: files of sizes around sectors, clusters and the
// volume's gathering of writes (1 MiB), in directories that grow while
// they fill, read back by mcopy as they were.
func TestCpIntoVFAT(t *testing.T) {
	testenv.RequireTool(t, "mkfs.fat", "fsck.fat", "mcopy")
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	fatTree(t, src, 3, 70, []int{0, 1, 100, 511, 512, 513, 4096, 40000, 1<<20 - 1, 1 << 20, 1<<20 + 1, 2<<20 + 700, 28000})
	img := filepath.Join(t.TempDir(), "v.img")
	mkfsFAT(t, img, 262144)
	var errb bytes.Buffer
	if st := run([]string{"cp", "-r", src, img + ":/"}, io.Discard, &errb); st != 0 {
		t.Fatalf("cp: status %d: %s", st, errb.String())
	}
	if msg := fsckFAT(t, img); msg != "" {
		t.Fatal(msg)
	}
	back := t.TempDir()
	if out, err := exec.Command("mcopy", "-s", "-n", "-i", img, "::/src", back).CombinedOutput(); err != nil {
		t.Fatalf("mcopy: %v\n%s", err, out)
	}
	if out, err := exec.Command("diff", "-r", src, filepath.Join(back, "src")).CombinedOutput(); err != nil {
		t.Fatalf("the image's tree differs from the source: %v\n%s", err, out)
	}
}

// TestCpIntoVFATKilled kills a copy of 2,000 files while it runs (it
// blocks on its -v output, which the test stops reading) and checks
// that fsck.fat finds nothing wrong in the image but the dirty bit: file
// data gathered in memory reaches the device before any metadata that
// points at it.
func TestCpIntoVFATKilled(t *testing.T) {
	testenv.RequireTool(t, "mkfs.fat", "fsck.fat")
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	fatTree(t, src, 4, 500, []int{100, 3000, 20000, 70000})
	img := filepath.Join(t.TempDir(), "v.img")
	mkfsFAT(t, img, 262144)
	child := exec.Command(os.Args[0], "cp", "-v", "-r", src, img+":/")
	child.Env = append(os.Environ(), "IOVFS_TEST_AS_COMMAND=1")
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var childErr bytes.Buffer
	child.Stderr = &childErr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	for range 300 {
		if _, err := r.ReadString('\n'); err != nil {
			child.Process.Kill()
			child.Wait()
			t.Fatalf("the copy's output ended early: %v\n%s", err, childErr.String())
		}
	}
	child.Process.Kill()
	child.Wait()
	out, _ := exec.Command("fsck.fat", "-n", img).CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "", strings.HasPrefix(l, "fsck.fat "), strings.HasPrefix(l, "Dirty bit is set"),
			l == "Automatically removing dirty bit.", l == "Leaving filesystem unchanged.",
			strings.HasPrefix(l, "There are differences between boot sector and its backup"),
			strings.HasPrefix(l, "This is mostly harmless"), l == "65:01/00", l == "Not automatically fixing this.",
			strings.HasPrefix(l, filepath.Base(img)+":"), strings.HasPrefix(l, img+":"):
		default:
			t.Errorf("fsck.fat -n after the copy was killed:\n%s", out)
			return
		}
	}
	if !strings.Contains(string(out), "Dirty bit is set") {
		t.Errorf("the copy was not killed midway (no dirty bit):\n%s", out)
	}
}

// rchar returns the bytes this process has read by system calls so far.
func rchar(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no rchar in /proc/self/io")
	return 0
}

// TestLargeFATReadLazily: listing and copying into a 16 GiB FAT32 image
// (an 8 MiB FAT) reads a small part of its FAT, as Linux's vfat does.
func TestLargeFATReadLazily(t *testing.T) {
	testenv.RequireTool(t, "mkfs.fat", "fsck.fat")
	img := filepath.Join(t.TempDir(), "big.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 16<<30); err != nil {
		t.Skipf("no sparse 16 GiB file here: %v", err)
	}
	if out, err := exec.Command("mkfs.fat", "-F", "32", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.fat: %v\n%s", err, out)
	}
	src := filepath.Join(t.TempDir(), "f")
	os.WriteFile(src, []byte("hello\n"), 0o644)
	before := rchar(t)
	var o, e strings.Builder
	if st := run([]string{"cp", src, img + ":/f"}, &o, &e); st != 0 {
		t.Fatalf("cp: %d %s", st, e.String())
	}
	if st := run([]string{"ls", "-l", img + ":/"}, &o, &e); st != 0 || !strings.Contains(o.String(), " f\n") {
		t.Fatalf("ls: %d %s%s", st, o.String(), e.String())
	}
	if n := rchar(t) - before; n > 1<<20 {
		t.Errorf("a copy of one file and an ls -l read %d bytes of a 16 GiB image with an 8 MiB FAT", n)
	}
	if out, err := exec.Command("fsck.fat", "-n", img).CombinedOutput(); err != nil {
		t.Errorf("fsck.fat -n: %v\n%s", err, out)
	}
}
