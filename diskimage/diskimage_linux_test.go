package diskimage_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/diskimage"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
)

// confinedImage is an ext4 image with links that point out of it.
func confinedImage(t *testing.T) string {
	testenv.RequireTool(t, "mke2fs")
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "etc"), 0o755)
	os.MkdirAll(filepath.Join(src, "deep/dir"), 0o755)
	os.WriteFile(filepath.Join(src, "etc/passwd"), []byte("IMAGE PASSWD\n"), 0o644)
	os.Symlink("/etc", filepath.Join(src, "abs"))
	os.Symlink("/etc/passwd", filepath.Join(src, "abspw"))
	os.Symlink("../../..", filepath.Join(src, "up"))
	os.Symlink("../../../../etc/passwd", filepath.Join(src, "deep/dir/uppw"))
	os.Symlink("loop", filepath.Join(src, "loop"))
	img := filepath.Join(t.TempDir(), "disk.img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-d", src, img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	return img
}

func attach(t *testing.T, img string, write bool) (*vfs.Proc, *diskimage.Image) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	// A canary outside the image, in the tool's own namespace.
	p.Mkdir("/etc", 0o755)
	f, _ := p.OpenFile("/etc/passwd", unix.O_WRONLY|unix.O_CREAT, 0o644)
	f.Write([]byte("NAMESPACE PASSWD\n"))
	f.Close()
	im, err := diskimage.Attach(p, diskimage.Spec{Path: img}, diskimage.Options{Write: write})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	return p, im
}

func TestConfinedPaths(t *testing.T) {
	img := confinedImage(t)
	p, im := attach(t, img, false)
	root := im.Target
	for _, c := range []struct {
		path   string
		follow bool
		want   string
	}{
		{"", true, root},
		{"/", true, root},
		{"//", true, root},
		{"..", true, root},
		{"/../..", true, root},
		{"/../../etc/passwd", true, root + "/etc/passwd"},
		{"deep/dir/../../..", true, root},
		{"abs/passwd", true, root + "/etc/passwd"},
		{"abspw", true, root + "/etc/passwd"},
		{"abspw", false, root + "/abspw"},
		{"up/etc/passwd", true, root + "/etc/passwd"},
		{"deep/dir/uppw", true, root + "/etc/passwd"},
		{"up/up/up/etc", true, root + "/etc"},
		{"etc/new", false, root + "/etc/new"},
	} {
		got, err := im.Path(c.path, c.follow)
		if err != nil || got != c.want {
			t.Errorf("Path(%q, %v) = %q, %v; want %q", c.path, c.follow, got, err, c.want)
		}
	}
	if _, err := im.Path("loop", true); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Path(loop): %v, want ELOOP", err)
	}
	for _, path := range []string{"/../../etc/passwd", "abspw", "abs/passwd", "up/etc/passwd", "deep/dir/uppw", "//etc//passwd"} {
		fd, err := im.Open(path, unix.O_RDONLY, 0, 0)
		if err != nil {
			t.Errorf("Open(%q): %v", path, err)
			continue
		}
		b := make([]byte, 64)
		n, _ := p.Read(fd, b)
		p.Close(fd)
		if string(b[:n]) != "IMAGE PASSWD\n" {
			t.Errorf("Open(%q) read %q, want the image's passwd", path, b[:n])
		}
	}
}

// TestConfinedPathsRace resolves ".."-heavy paths while directories of
// the image are renamed in and out of each other: every answer must lie
// inside the image, and the canary outside must never be reached.
func TestConfinedPathsRace(t *testing.T) {
	img := confinedImage(t)
	p, im := attach(t, img, true)
	root := im.Target
	for _, d := range []string{"a", "a/b", "a/b/c", "x"} {
		if err := p.Mkdir(root+"/"+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			if i%2 == 0 {
				p.Rename(root+"/a/b", root+"/x/b")
			} else {
				p.Rename(root+"/x/b", root+"/a/b")
			}
		}
	})
	var escapes, answers atomic.Int64
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				for _, path := range []string{"a/b/c/../../../../etc/passwd", "x/b/c/../../../..", "a/b/../../up/up", "x/b/c/../../../abs/passwd"} {
					got, err := im.Path(path, true)
					if err != nil {
						continue
					}
					answers.Add(1)
					if got != root && !strings.HasPrefix(got, root+"/") {
						escapes.Add(1)
					}
				}
			}
		})
	}
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	if escapes.Load() != 0 {
		t.Errorf("%d of %d answers left the image", escapes.Load(), answers.Load())
	}
	if answers.Load() == 0 {
		t.Errorf("no walk completed")
	}
	t.Logf("%d walks beside renames, none outside the image", answers.Load())
}
