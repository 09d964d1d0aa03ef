package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestMountHelper is the child side of the mount tests: it runs
// "iovfs mount" with the arguments in IOVFS_MOUNT_ARGS.
func TestMountHelper(t *testing.T) {
	args := os.Getenv("IOVFS_MOUNT_ARGS")
	if args == "" {
		t.Skip("child of TestMountCommand only")
	}
	os.Exit(run(append([]string{"mount"}, strings.Split(args, "\x1f")...), os.Stdout, os.Stderr))
}

// startMount runs "iovfs mount args..." in a child process and returns
// it once it says the mount is ready, with a function that returns the
// rest of its output once it has exited (call it before Wait).
func startMount(t *testing.T, args ...string) (*exec.Cmd, func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMountHelper$")
	c.Env = append(os.Environ(), "IOVFS_MOUNT_ARGS="+strings.Join(args, "\x1f"))
	var errb bytes.Buffer
	c.Stderr = &errb
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	mnt := args[len(args)-1]
	t.Cleanup(func() {
		c.Process.Kill()
		syscall.Unmount(mnt, syscall.MNT_DETACH)
	})
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "mounted on") {
		t.Fatalf("iovfs mount %v: %q, %v\n%s", args, line, err, errb.String())
	}
	var rest bytes.Buffer
	done := make(chan struct{})
	go func() { rest.ReadFrom(br); close(done) }()
	return c, func() string { <-done; return rest.String() }
}

func mounted(dir string) bool {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	return bytes.Contains(b, []byte(" "+dir+" "))
}

// TestMountSIGTERM mounts a tmpfs with iovfs mount, keeps files open on
// it (one by a process sleeping with it as stdin), sends SIGTERM, and
// checks that the command says so, exits 0 and leaves the mountpoint
// free.
func TestMountSIGTERM(t *testing.T) {
	testenv.RequireRoot(t, "FUSE mounts need root")
	mnt := t.TempDir()
	c, out := startMount(t, "-t", "tmpfs", "-o", "size=16m", "none", mnt)
	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("sleep", "60")
	f, err := os.Open(filepath.Join(mnt, "f"))
	if err != nil {
		t.Fatal(err)
	}
	holder.Stdin = f
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	c.Process.Signal(syscall.SIGTERM)
	output := out()
	err = c.Wait()
	f.Close()
	if err != nil {
		t.Errorf("iovfs mount after SIGTERM: %v", err)
	}
	if !strings.Contains(output, "unmounted on terminated") {
		t.Errorf("no unmount message: %q", output)
	}
	if mounted(mnt) {
		t.Errorf("%s still mounted", mnt)
	}
}

// TestMountErrors checks the clear failures: unknown type, a mountpoint
// that is not a directory or is busy, an image that is no file system.
func TestMountErrors(t *testing.T) {
	testenv.RequireRoot(t, "FUSE mounts need root")
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, make([]byte, 1<<20), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-t", "tmpfs", "none", file}, "is not a directory"},
		{[]string{"-t", "tmpfs", "none", filepath.Join(dir, "missing")}, "No such file"},
		{[]string{"-t", "ext4", "-o", "ro", file, dir}, "cannot mount it as ext4"},
		{[]string{"-t", "ext4", "-o", "data=bogus", file, dir}, `bad data= mode "bogus"`},
		{[]string{"-t", "tmpfs", "none", "/proc"}, "busy"},
	}
	for _, c := range cases {
		code, _, errOut := runArgs(append([]string{"mount"}, c.args...)...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("iovfs mount %v: status %d, %q; want 1 and %q", c.args, code, errOut, c.want)
		}
	}
	if code, _, _ := runArgs("mount", "-t", "tmpfs"); code != 2 {
		t.Errorf("iovfs mount with no mountpoint: status %d, want 2", code)
	}
	if code, _, errOut := runArgs("mount", "-t", "nfs", "none", dir); code != 2 || !strings.Contains(errOut, "unknown file system type") {
		t.Errorf("iovfs mount -t nfs: status %d, %q; want 2 and the unknown type", code, errOut)
	}
}

// TestMountExt4ReadWrite exports a fresh mke2fs image read-write, copies
// files into it through the host kernel with cp, unmounts with SIGTERM,
// and checks the image with e2fsck and a kernel loop mount: the files are
// there with their bytes, and the file system is clean.
func TestMountExt4ReadWrite(t *testing.T) {
	testenv.RequireRoot(t, "FUSE and kernel loop mounts need root")
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	mkfsExt4(t, img, "16M")
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	want := map[string][]byte{"a.txt": []byte("hello\n"), "sub/b.bin": bytes.Repeat([]byte{7, 8, 9}, 50000)}
	for name, data := range want {
		if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	c, out := startMount(t, "-t", "ext4", img, mnt)
	if b, err := exec.Command("cp", "-r", src+"/.", mnt).CombinedOutput(); err != nil {
		t.Fatalf("cp into the export: %v\n%s", err, b)
	}
	c.Process.Signal(syscall.SIGTERM)
	out()
	if err := c.Wait(); err != nil {
		t.Fatalf("iovfs mount after SIGTERM: %v", err)
	}
	if b, err := exec.Command("e2fsck", "-fn", img).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck -fn after a read-write export: %v\n%s", err, b)
	}
	kmnt := filepath.Join(dir, "kernel")
	os.Mkdir(kmnt, 0o755)
	if b, err := testenv.Mount("-o", "loop,ro", img, kmnt); err != nil {
		t.Fatalf("kernel mount: %v\n%s", err, b)
	}
	defer exec.Command("umount", kmnt).Run()
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(kmnt, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s in the kernel's view: %d bytes, %v; want %d bytes", name, len(got), err, len(data))
		}
	}
}

// TestMountAgainAfterUmount: umount(8) returns as soon as the kernel lets
// go of the mount, while iovfs mount still writes the image back and
// holds it; a mount of the same image right after (as scripts and
// xfstests do) waits for it instead of refusing the image as in use, and
// sees everything the first mount wrote.
func TestMountAgainAfterUmount(t *testing.T) {
	testenv.RequireRoot(t, "FUSE mounts need root")
	testenv.RequireTool(t, "mke2fs", "e2fsck")
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	mkfsExt4(t, img, "64M")
	mnt1, mnt2 := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.Mkdir(mnt1, 0o755)
	os.Mkdir(mnt2, 0o755)
	c1, out1 := startMount(t, "-t", "ext4", img, mnt1)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB to write back
	if err := os.WriteFile(filepath.Join(mnt1, "big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(mnt1, fmt.Sprint("f", i)), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Unmount(mnt1, 0); err != nil {
		t.Fatal(err)
	}
	c2, out2 := startMount(t, "-t", "ext4", img, mnt2)
	if got, err := os.ReadFile(filepath.Join(mnt2, "big")); err != nil || !bytes.Equal(got, big) {
		t.Errorf("big through the second mount: %d bytes, %v; want %d bytes", len(got), err, len(big))
	}
	if got, err := os.ReadFile(filepath.Join(mnt2, "f199")); err != nil || string(got) != "199" {
		t.Errorf("f199 through the second mount: %q, %v", got, err)
	}
	if o := out1(); !strings.Contains(o, "was unmounted") {
		t.Errorf("the first iovfs mount: %q", o)
	}
	if err := c1.Wait(); err != nil {
		t.Errorf("the first iovfs mount: %v", err)
	}
	c2.Process.Signal(syscall.SIGTERM)
	out2()
	if err := c2.Wait(); err != nil {
		t.Errorf("the second iovfs mount: %v", err)
	}
	if b, err := exec.Command("e2fsck", "-fn", img).CombinedOutput(); err != nil {
		t.Errorf("e2fsck -fn: %v\n%s", err, b)
	}
}

// TestMountFlockListed takes a flock(2) lock on a file of an iovfs mount:
// the kernel keeps it, so /proc/locks lists it with this process's pid and
// the file's device and inode number, as xfstests' generic/504 expects.
func TestMountFlockListed(t *testing.T) {
	testenv.RequireRoot(t, "FUSE mounts need root")
	mnt := t.TempDir()
	c, out := startMount(t, "-t", "tmpfs", "none", mnt)
	f, err := os.Create(filepath.Join(mnt, "f"))
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	locks, err := testenv.ProcLocks()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range locks {
		if l.Class == "FLOCK" && l.Type == "WRITE" && l.Pid == os.Getpid() &&
			l.Major == unix.Major(st.Dev) && l.Minor == unix.Minor(st.Dev) && l.Ino == st.Ino {
			found = true
		}
	}
	if !found {
		t.Errorf("no FLOCK WRITE of pid %d on %x:%x:%d in /proc/locks: %+v", os.Getpid(), unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino, locks)
	}
	f.Close()
	c.Process.Signal(syscall.SIGTERM)
	out()
	if err := c.Wait(); err != nil {
		t.Errorf("iovfs mount after SIGTERM: %v", err)
	}
}

// TestMountClosingAtLazyUnmount: an iovfs mount unmounted lazily while a
// request is still running in it (a lock wait) marks itself closing as
// soon as the mount leaves the table, so that a mount of the same image
// waits for it instead of refusing the image; it exits, the image clean,
// once the last user lets go.
func TestMountClosingAtLazyUnmount(t *testing.T) {
	testenv.RequireRoot(t, "FUSE mounts need root")
	testenv.RequireTool(t, "mke2fs", "e2fsck")
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	mkfsExt4(t, img, "16M")
	mnt := filepath.Join(dir, "m")
	os.Mkdir(mnt, 0o755)
	c, out := startMount(t, "-t", "ext4", img, mnt)
	comm := func() string {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c.Process.Pid))
		return strings.TrimSpace(string(b))
	}
	f1, err := os.Create(filepath.Join(mnt, "f"))
	if err != nil {
		t.Fatal(err)
	}
	f2, err := os.OpenFile(filepath.Join(mnt, "f"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f1.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		lk := unix.Flock_t{Type: unix.F_WRLCK}
		waited <- unix.FcntlFlock(f2.Fd(), unix.F_OFD_SETLKW, &lk)
	}()
	time.Sleep(200 * time.Millisecond) // the wait reaches the server
	if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for comm() != "iovfs-closing" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := comm(); got != "iovfs-closing" {
		t.Errorf("iovfs mount, unmounted with a request still running: comm %q; want iovfs-closing", got)
	}
	f1.Close() // the waiting lock is granted
	if err := <-waited; err != nil {
		t.Errorf("the lock wait: %v", err)
	}
	f2.Close()
	if o := out(); !strings.Contains(o, "was unmounted") {
		t.Errorf("iovfs mount: %q", o)
	}
	if err := c.Wait(); err != nil {
		t.Errorf("iovfs mount: %v", err)
	}
	if b, err := exec.Command("e2fsck", "-fn", img).CombinedOutput(); err != nil {
		t.Errorf("e2fsck -fn: %v\n%s", err, b)
	}
}
