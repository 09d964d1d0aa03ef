package diskimage_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/diskimage"
)

// TestLockHolder is the child of TestLockWaitsForClosing: it locks the
// file IOVFS_LOCK_FILE for writing, marks itself closing if
// IOVFS_LOCK_CLOSING is set, says "locked", and lets go (exits) once its
// standard input ends. With IOVFS_LOCK_CLOSING=late it marks itself
// closing only after reading a first line.
func TestLockHolder(t *testing.T) {
	name := os.Getenv("IOVFS_LOCK_FILE")
	if name == "" {
		t.Skip("child of TestLockWaitsForClosing only")
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := diskimage.Lock(f, true, name); err != nil {
		t.Fatal(err)
	}
	closing := os.Getenv("IOVFS_LOCK_CLOSING")
	if closing == "1" {
		if err := diskimage.MarkClosing(); err != nil {
			t.Fatal(err)
		}
	}
	os.Stdout.WriteString("locked\n")
	in := bufio.NewReader(os.Stdin)
	if closing == "late" {
		in.ReadString('\n')
		if err := diskimage.MarkClosing(); err != nil {
			t.Fatal(err)
		}
	}
	in.ReadString('\n')
	os.Exit(0)
}

// TestLockWaitsForClosing: a writer's Lock of an image another process
// holds is refused at once, naming the holder, unless that process is
// closing the image (past MarkClosing, as iovfs mount is after the
// kernel's unmount): then Lock waits for it and succeeds once it lets go.
func TestLockWaitsForClosing(t *testing.T) {
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	holder := func(closing string) (*exec.Cmd, io.WriteCloser) {
		c := exec.Command(os.Args[0], "-test.run=^TestLockHolder$", "-test.count=1")
		c.Env = append(os.Environ(), "IOVFS_LOCK_FILE="+img, "IOVFS_LOCK_CLOSING="+closing)
		stdin, err := c.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "locked\n" {
			t.Fatalf("holder: %q, %v", line, err)
		}
		return c, stdin
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	// A holder that is not closing: refused at once, naming it.
	c, stdin := holder("")
	start := time.Now()
	err = diskimage.Lock(f, true, img)
	if !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), img) || !strings.Contains(err.Error(), "pid ") {
		t.Errorf("Lock while another process writes: %v; want EBUSY naming %s and the holder", err, img)
	}
	if d := time.Since(start); d >= diskimage.UnseenWait {
		t.Errorf("the refusal took %v: it waited for a holder that is not closing", d)
	}
	stdin.Close()
	c.Wait()

	// A holder closing the image: Lock waits and then holds it. The
	// holder lets go only after Lock has seen it hold the lock.
	c, stdin = holder("1")
	done := make(chan error, 1)
	go func() { done <- diskimage.Lock(f, true, img) }()
	select {
	case err := <-done:
		t.Fatalf("Lock returned %v while the closing holder still held the image", err)
	case <-time.After(200 * time.Millisecond):
	}
	stdin.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Lock after the closing holder let go: %v", err)
		}
	case <-time.After(diskimage.ClosingWait):
		t.Fatal("Lock did not return after the closing holder exited")
	}
	c.Wait()
	f.Close() // lets go of the lock just taken

	// A holder that marks itself closing a moment after Lock first looks
	// (an iovfs mount learning of the kernel's unmount after umount(8)
	// has returned): Lock waits for it too.
	c, stdin = holder("late")
	if f, err = os.OpenFile(img, os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	go func() { done <- diskimage.Lock(f, true, img) }()
	time.Sleep(diskimage.SettleWait / 10) // Lock has looked once; the holder has the rest to mark itself
	io.WriteString(stdin, "closing\n")
	select {
	case err := <-done:
		t.Fatalf("Lock returned %v while the holder, now closing, still held the image", err)
	case <-time.After(diskimage.SettleWait * 2):
	}
	stdin.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Lock after the late-closing holder let go: %v", err)
		}
	case <-time.After(diskimage.ClosingWait):
		t.Fatal("Lock did not return after the late-closing holder exited")
	}
	c.Wait()
}
