package ext4_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestSetgidDirKernel makes a file, a directory, a FIFO and a symlink in
// a set-group-ID directory of another group, as root and as a caller of
// another group, on a kernel loop mount and on iovfs's read-write ext4,
// and compares each one's group and mode (inode_init_owner).
func TestSetgidDirKernel(t *testing.T) {
	testenv.RequireRoot(t, "a kernel loop mount")
	img := mkImage(t, 4096, func(testing.TB, string) {})
	kimg := filepath.Join(t.TempDir(), "k.img")
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(kimg, b, 0o644)
	kmnt := t.TempDir()
	if out, err := testenv.Mount("-o", "loop", kimg, kmnt); err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", kmnt).Run() })
	p, dev, done := newProc(t, img, viaRAM)
	err = p.Mount(dev, "/mnt", "ext4", 0, "")
	done()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Unmount("/mnt", 0); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	// The kernel side as root; the iovfs side as root and as uid 1000
	// gid 1000 (in the directory's group 1234 or not).
	var want []string
	kd := filepath.Join(kmnt, "sg")
	os.Mkdir(kd, 0o777)
	os.Chown(kd, 0, 1234)
	unix.Chmod(kd, 0o2777)
	stat := func(path string) string {
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("gid %d mode %o", st.Gid, st.Mode)
	}
	os.WriteFile(filepath.Join(kd, "f"), nil, 0o644)
	unix.Chmod(filepath.Join(kd, "f"), 0o2755)
	unix.Mkdir(filepath.Join(kd, "d"), 0o755)
	unix.Mkfifo(filepath.Join(kd, "p"), 0o644)
	unix.Symlink("f", filepath.Join(kd, "l"))
	unix.Mkdir(filepath.Join(kd, "d", "sub"), 0o755)
	for _, n := range []string{"f", "d", "p", "l", "d/sub"} {
		want = append(want, n+": "+stat(filepath.Join(kd, n)))
	}
	var got []string
	if err := p.Mkdir("/mnt/sg", 0o777); err != nil {
		t.Fatal(err)
	}
	p.Chown("/mnt/sg", 0, 1234)
	p.Chmod("/mnt/sg", 0o2777)
	fd, err := p.Open("/mnt/sg/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.Close(fd)
	p.Chmod("/mnt/sg/f", 0o2755)
	p.Mkdir("/mnt/sg/d", 0o755)
	p.Mknod("/mnt/sg/p", unix.S_IFIFO|0o644, 0)
	p.Symlink("f", "/mnt/sg/l")
	p.Mkdir("/mnt/sg/d/sub", 0o755)
	for _, n := range []string{"f", "d", "p", "l", "d/sub"} {
		st, err := p.Lstat("/mnt/sg/" + n)
		if err != nil {
			got = append(got, n+": "+err.Error())
			continue
		}
		got = append(got, fmt.Sprintf("%s: gid %d mode %o", n, st.Gid, st.Mode))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("iovfs  %s\nkernel %s", got[i], want[i])
		}
	}
	// A caller outside the group: the file still gets the group; a
	// group-executable set-group-ID bit it asks for is dropped
	// (mode_strip_sgid; the umask is 022).
	th := p.NewThread()
	th.Setgroups(nil)
	th.Setresgid(1000, 1000, 1000)
	th.Setresuid(1000, 1000, 1000)
	fd, err = th.Open("/mnt/sg/u", unix.O_CREAT|unix.O_WRONLY, 0o2775)
	if err != nil {
		t.Fatal(err)
	}
	th.Close(fd)
	if err := th.Mkdir("/mnt/sg/ud", 0o755); err != nil {
		t.Fatal(err)
	}
	for n, w := range map[string]string{"u": "gid 1234 mode 100755", "ud": "gid 1234 mode 42755"} {
		st, _ := p.Lstat("/mnt/sg/" + n)
		if g := fmt.Sprintf("gid %d mode %o", st.Gid, st.Mode); g != w {
			t.Errorf("%s made by uid 1000 outside the group: %s, want %s", n, g, w)
		}
	}
}
