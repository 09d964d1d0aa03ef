package overlay_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestUnmountLetsGo mounts overlays of host directories (through hostfs,
// whose nodes hold host descriptors), looks up, copies up, removes and
// renames, unmounts, and checks that the process's host descriptors are
// back to what they were once the garbage collector has run: nothing
// the overlay made (nodes copied up in the mount, which it keeps for
// their inode numbers, included) outlives it.
func TestUnmountLetsGo(t *testing.T) {
	count := func() int {
		d, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(d)
	}
	settle := func() {
		for range 3 {
			runtime.GC()
			time.Sleep(20 * time.Millisecond)
		}
	}
	round := func(i int) {
		dir := t.TempDir()
		for _, d := range []string{"l", "l/a", "u", "w"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for j := range 20 {
			os.WriteFile(filepath.Join(dir, "l", "a", fmt.Sprint(j)), []byte("x"), 0o644)
		}
		ns := vfs.NewNamespace(tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}))
		p := vfs.NewProc(ns)
		for _, d := range []string{"/h", "/m"} {
			if err := p.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Mount(dir, "/h", "hostfs", 0, ""); err != nil {
			t.Fatal(err)
		}
		if err := p.Mount("overlay", "/m", "overlay", 0, "lowerdir=/h/l,upperdir=/h/u,workdir=/h/w"); err != nil {
			t.Fatal(err)
		}
		for j := range 20 {
			path := fmt.Sprintf("/m/a/%d", j)
			switch j % 4 {
			case 0:
				p.Chmod(path, 0o600)
			case 1:
				p.Unlink(path)
			case 2:
				p.Rename(path, path+"r")
			default:
				p.Lstat(path)
			}
		}
		fd, err := p.Open("/m/a/3", unix.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		p.Close(fd)
		if err := p.Unmount("/m", 0); err != nil {
			t.Fatal(err)
		}
		if err := p.Unmount("/h", 0); err != nil {
			t.Fatal(err)
		}
	}
	round(0)
	settle()
	before := count()
	for i := 1; i <= 5; i++ {
		round(i)
	}
	settle()
	if after := count(); after > before+2 {
		t.Errorf("%d host descriptors after 5 mounts and unmounts, %d before", after, before)
	}
}
