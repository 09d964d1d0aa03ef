package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
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
		{[]string{"-t", "nfs", "none", dir}, "unknown file system type"},
		{[]string{"-t", "tmpfs", "none", file}, "is not a directory"},
		{[]string{"-t", "tmpfs", "none", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"-t", "ext4", "-o", "ro", file, dir}, "not a file system iovfs knows"},
		{[]string{"-t", "ext4", file, dir}, "read-only"},
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
}
