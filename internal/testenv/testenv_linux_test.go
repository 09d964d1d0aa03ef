package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestMountNoStaleLoopReuse: an image rewritten in place and loop-mounted
// again while the loop device of its earlier mount is still bound (here
// held open, as udev's probe or an asynchronous autoclear leaves it) must
// show its new contents. Without Mount's wait, mount(8) reuses the bound
// device and reads the first image's blocks from its cache.
func TestMountNoStaleLoopReuse(t *testing.T) {
	RequireRoot(t, "loop mounts")
	RequireTool(t, "mke2fs", "mount", "umount")
	dir := t.TempDir()
	imgs := map[string][]byte{}
	for _, name := range []string{"a", "b"} {
		src := filepath.Join(dir, "src-"+name)
		if err := os.MkdirAll(filepath.Join(src, "only-"+name), 0o755); err != nil {
			t.Fatal(err)
		}
		img := filepath.Join(dir, name+".img")
		if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-d", src, img, "4M").CombinedOutput(); err != nil {
			t.Fatalf("mke2fs: %v\n%s", err, out)
		}
		b, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		imgs[name] = b
	}
	img := filepath.Join(dir, "w.img")
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, imgs["a"], 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := Mount("-t", "ext4", "-o", "loop,ro", img, mnt); err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	src, err := exec.Command("findmnt", "-n", "-o", "SOURCE", mnt).Output()
	if err != nil {
		exec.Command("umount", mnt).Run()
		t.Fatalf("findmnt: %v", err)
	}
	loopdev := string(bytes.TrimSpace(src))
	if _, err := os.Stat(filepath.Join(mnt, "only-a")); err != nil {
		t.Errorf("first mount: %v", err)
	}
	// Read every block of the device into its cache, and hold it open.
	hold, err := os.Open(loopdev)
	if err != nil {
		exec.Command("umount", mnt).Run()
		t.Fatal(err)
	}
	if _, err := hold.ReadAt(make([]byte, len(imgs["a"])), 0); err != nil {
		t.Errorf("read %s: %v", loopdev, err)
	}
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		hold.Close()
		t.Fatalf("umount: %v\n%s", err, out)
	}
	if bound := loopBound(img); len(bound) != 1 || "/dev/"+bound[0] != loopdev {
		t.Errorf("loopBound(%s) = %v, want [%s] while it is held open", img, bound, loopdev)
	}
	if err := os.WriteFile(img, imgs["b"], 0o600); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		hold.Close()
		close(released)
	}()
	out, err := Mount("-t", "ext4", "-o", "loop,ro", img, mnt)
	select {
	case <-released:
	default:
		t.Errorf("Mount returned while %s was still bound to %s", loopdev, img)
	}
	if err != nil {
		<-released
		t.Fatalf("second mount: %v\n%s", err, out)
	}
	defer exec.Command("umount", mnt).Run()
	if _, err := os.Stat(filepath.Join(mnt, "only-b")); err != nil {
		t.Errorf("second mount does not show the rewritten image: %v", err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "only-a")); err == nil {
		t.Errorf("second mount shows the first image's only-a")
	}
}

func TestLoopSource(t *testing.T) {
	for _, tc := range []struct {
		args []string
		src  string
		ok   bool
	}{
		{[]string{"-t", "ext4", "-o", "loop,ro", "x.img", "/mnt"}, "x.img", true},
		{[]string{"-o", "ro,loop=/dev/loop3", "y.img", "/mnt"}, "y.img", true},
		{[]string{"-t", "ext4", "-o", "ro", "/dev/sda1", "/mnt"}, "", false},
		{[]string{"-t", "loop", "/dev/sda1", "/mnt"}, "", false},
	} {
		src, ok := loopSource(tc.args)
		if src != tc.src || ok != tc.ok {
			t.Errorf("loopSource(%q) = %q, %v; want %q, %v", tc.args, src, ok, tc.src, tc.ok)
		}
	}
}
