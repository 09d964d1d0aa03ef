package main

import (
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// overlayTestImage makes a 16 MiB ext4 image holding /inside, an empty /work
// and /d/x, and returns its path and its sha256.
func overlayTestImage(t *testing.T) (string, [32]byte) {
	t.Helper()
	testenv.RequireTool(t, "mke2fs")
	src := t.TempDir()
	for _, d := range []string{"work", "d"} {
		if err := os.Mkdir(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "inside"), []byte("from the image\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "d", "x"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "base.img")
	if b, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-d", src, img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, b)
	}
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	return img, sha256.Sum256(b)
}

// TestRunOverlay runs programs on a writable root made of an ext4 image
// and an overlay: fsops's file calls in a directory of the image give
// what they give on a tmpfs, the image is not changed, the changes go
// with the process (--overlay) or stay in the kernel's format
// (--overlay-dir), which the kernel's overlayfs then shows. The options'
// misuses are in TestBadInputs.
func TestRunOverlay(t *testing.T) {
	img, sum := overlayTestImage(t)
	fsops := buildWasm(t, "testdata/fsops/main.go", false)
	cat := buildWasm(t, "testdata/cat/main.go", false)

	code, want, stderr := iovfsRun(t, "--tmpfs", "/work", fsops, "/work")
	if code != 0 {
		t.Fatalf("fsops on a tmpfs: status %d, %s", code, stderr)
	}
	code, got, stderr := iovfsRun(t, "--image", img+":/", "--overlay", fsops, "/work")
	if code != 0 || got != want {
		t.Fatalf("fsops on an overlay root: status %d, stderr %q; output differs from a tmpfs's:\n%s\nvs\n%s", code, stderr, got, want)
	}
	if code, out, stderr := iovfsRun(t, "--image", img+":/", "--overlay", cat, "/inside", "/d/x"); code != 0 || out != "from the image\nx\n" {
		t.Fatalf("cat through the overlay: status %d, %q, %q", code, out, stderr)
	}

	keep := filepath.Join(t.TempDir(), "changes")
	if code, out, stderr := iovfsRun(t, "--image", img+":/", "--overlay-dir", keep, fsops, "/work"); code != 0 || out != want {
		t.Fatalf("fsops with --overlay-dir: status %d, stderr %q", code, stderr)
	}
	if b, _ := os.ReadFile(img); sha256.Sum256(b) != sum {
		t.Fatal("the image changed")
	}
	ents, err := os.ReadDir(filepath.Join(keep, "upper", "work"))
	if err != nil || len(ents) == 0 {
		t.Fatalf("no changes kept in %s/upper/work: %v %v", keep, ents, err)
	}
	// A second run sees the first one's changes.
	if code, out, stderr := iovfsRun(t, "--image", img+":/", "--overlay-dir", keep, cat, "/work/log"); code != 0 || out == "" {
		t.Fatalf("a second run does not see the kept changes: status %d, %q, %q", code, out, stderr)
	}

	// The kernel's overlayfs shows the kept upper layer over the image.
	testenv.RequireRoot(t, "mounts the image and an overlay")
	lower, mnt := t.TempDir(), t.TempDir()
	if out, err := testenv.Mount("-o", "loop,ro", img, lower); err != nil {
		t.Fatalf("mount %s: %v\n%s", img, err, out)
	}
	defer unix.Unmount(lower, 0)
	opts := "lowerdir=" + lower + ",upperdir=" + filepath.Join(keep, "upper") + ",workdir=" + filepath.Join(keep, "work")
	if err := unix.Mount("overlay", mnt, "overlay", 0, opts); err != nil {
		t.Fatalf("mount overlay %s: %v", opts, err)
	}
	defer unix.Unmount(mnt, 0)
	b, err := os.ReadFile(filepath.Join(mnt, "work", "log"))
	if err != nil || len(b) == 0 {
		t.Errorf("the kernel's overlay shows no work/log: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "inside")); err != nil || string(b) != "from the image\n" {
		t.Errorf("the kernel's overlay: inside %q, %v", b, err)
	}
}

// TestMountOverlay exports an overlay of host directories (and of an
// image as a lower layer) with iovfs mount and works in it from the host:
// a copy-up, a whiteout, a new directory; after SIGTERM the kernel's
// overlayfs mounts the same upper directory and shows the same tree.
func TestMountOverlay(t *testing.T) {
	testenv.RequireRoot(t, "FUSE mounts and the kernel's overlayfs need root")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.SkipPrivileged(t, "needs /dev/fuse")
	}
	img, _ := overlayTestImage(t)
	base := t.TempDir()
	for _, d := range []string{"l", "l/d", "u", "w", "m", "k"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "l", "f"), []byte("lower\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "l", "d", "g"), []byte("g\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(s string) string { return filepath.Join(base, s) }
	opts := "lowerdir=" + at("l") + ":" + img + ",upperdir=" + at("u") + ",workdir=" + at("w")
	c, rest := startMount(t, "-t", "overlay", "-o", opts, "none", at("m"))
	m := at("m")
	f, err := os.OpenFile(filepath.Join(m, "f"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("upper\n")
	f.Close()
	if err := os.Remove(filepath.Join(m, "d", "g")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(m, "n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(m, "inside")); err != nil || string(b) != "from the image\n" {
		t.Errorf("the image's file through the overlay: %q, %v", b, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(at("u"), "d", "g"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("upper d/g: %+v, %v; want a whiteout", st, err)
	}
	c.Process.Signal(unix.SIGTERM)
	rest()
	if err := c.Wait(); err != nil {
		t.Fatalf("iovfs mount: %v", err)
	}
	lower := t.TempDir()
	if out, err := testenv.Mount("-o", "loop,ro", img, lower); err != nil {
		t.Fatalf("mount %s: %v\n%s", img, err, out)
	}
	defer unix.Unmount(lower, 0)
	kopts := "lowerdir=" + at("l") + ":" + lower + ",upperdir=" + at("u") + ",workdir=" + at("w")
	if err := unix.Mount("overlay", at("k"), "overlay", 0, kopts); err != nil {
		t.Fatalf("kernel overlay %s: %v", kopts, err)
	}
	defer unix.Unmount(at("k"), 0)
	if b, err := os.ReadFile(filepath.Join(at("k"), "f")); err != nil || string(b) != "lower\nupper\n" {
		t.Errorf("the kernel's f: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(at("k"), "d", "g")); !os.IsNotExist(err) {
		t.Errorf("the kernel shows the removed d/g: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(at("k"), "n")); err != nil || !fi.IsDir() {
		t.Errorf("the kernel's n: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(at("k"), "inside")); err != nil || string(b) != "from the image\n" {
		t.Errorf("the kernel's inside: %q, %v", b, err)
	}
}

// TestShOverlay runs iovfs sh with an image under an overlay, as its root
// and at a directory: the image's files show, changes are made, the
// image is not changed, and with --overlay-dir a second shell sees the
// first one's changes. The options' misuses are in TestBadInputs.
func TestShOverlay(t *testing.T) {
	img, sum := overlayTestImage(t)
	sh := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		code := run(append([]string{"sh"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := sh("--image", img+":/", "--overlay", "-c", "cat /inside /d/x; echo new > /d/y; rm /inside; ls /; cd /d; pwd")
	if code != 0 || out != "from the image\nx\nd\ndev\nlost+found\nmnt\ntmp\nwork\n/d\n" {
		t.Errorf("an overlay root: status %d, out %q, err %q", code, out, errs)
	}
	keep := filepath.Join(t.TempDir(), "keep")
	if code, out, errs := sh("--image", img+":/mnt/base", "--overlay-dir", keep, "-c", "echo kept > /mnt/base/work/k; cat /mnt/base/inside"); code != 0 || out != "from the image\n" {
		t.Fatalf("--overlay-dir: status %d, out %q, err %q", code, out, errs)
	}
	if code, out, errs := sh("--image", img+":/mnt/base", "--overlay-dir", keep, "-c", "cat /mnt/base/work/k"); code != 0 || out != "kept\n" {
		t.Errorf("a second shell: status %d, out %q, err %q", code, out, errs)
	}
	if b, _ := os.ReadFile(img); sha256.Sum256(b) != sum {
		t.Error("the image changed")
	}
}
