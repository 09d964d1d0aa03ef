package ext4_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestTmpfileFsck makes unnamed files on a read-write mount of an image
// (one named with linkat(AT_EMPTY_PATH), one closed unnamed, one made
// with O_EXCL and refused a name, one still open at unmount), unmounts,
// and checks the image with e2fsck -fn and a kernel mount: the named file
// with its bytes, nothing else, no inode or block leaked.
func TestTmpfileFsck(t *testing.T) {
	testenv.RequireRoot(t, "a kernel loop mount")
	testenv.RequireTool(t, "e2fsck")
	for _, feat := range []string{"", "orphan_file"} {
		t.Run("features="+feat, func(t *testing.T) {
			args := []string{"-t", "ext4"}
			if feat != "" {
				args = append(args, "-O", feat)
			}
			img := mkImage(t, 8192, func(testing.TB, string) {}, args...)
			p, err := iovfs.New()
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(img, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			fd, _ := p.ImportFile(f)
			f.Close()
			lfd, err := p.Open("/dev/loop0", unix.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			cfg := unix.LoopConfig{Fd: uint32(fd)}
			cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
			if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
				t.Fatal(err)
			}
			p.Close(fd)
			err = p.Mount("/dev/loop0", "/mnt", "ext4", 0, "")
			p.Close(lfd)
			if err != nil {
				t.Fatal(err)
			}
			tmp := func(fl int) int {
				fd, err := p.Open("/mnt", unix.O_TMPFILE|unix.O_RDWR|fl, 0o644)
				if err != nil {
					t.Fatalf("O_TMPFILE: %v", err)
				}
				if _, err := p.Write(fd, []byte("named later")); err != nil {
					t.Fatal(err)
				}
				return fd
			}
			a := tmp(0)
			if err := p.Linkat(a, "", unix.AT_FDCWD, "/mnt/a", unix.AT_EMPTY_PATH); err != nil {
				t.Fatalf("linkat: %v", err)
			}
			p.Close(a)
			p.Close(tmp(0))
			x := tmp(unix.O_EXCL)
			if err := p.Linkat(x, "", unix.AT_FDCWD, "/mnt/x", unix.AT_EMPTY_PATH); err == nil {
				t.Error("linkat of an O_EXCL tmpfile succeeded")
			}
			p.Close(x)
			tmp(0) // open at unmount: the mount waits for it, MNT_DETACH
			if err := p.Unmount("/mnt", unix.MNT_DETACH); err != nil {
				t.Fatal(err)
			}
			closeAll(p)
			if b, err := exec.Command("e2fsck", "-fn", img).CombinedOutput(); err != nil {
				t.Fatalf("e2fsck -fn: %v\n%s", err, b)
			}
			kmnt := t.TempDir()
			if out, err := testenv.Mount("-o", "loop,ro", img, kmnt); err != nil {
				t.Fatalf("mount: %v\n%s", err, out)
			}
			defer exec.Command("umount", kmnt).Run()
			ents, _ := os.ReadDir(kmnt)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if b, err := os.ReadFile(filepath.Join(kmnt, "a")); string(b) != "named later" || len(names) != 2 {
				t.Errorf("kernel view: a = %q, %v; entries %v (want a and lost+found)", b, err, names)
			}
		})
	}
}

// closeAll closes every descriptor of p.
func closeAll(p interface{ Close(int) error }) {
	for fd := 0; fd < 64; fd++ {
		p.Close(fd)
	}
}
