package fuse

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestDevfsExport reads /dev/zero, /dev/urandom and /dev/full and writes
// /dev/null and /dev/full through a devfs export, with the semantics of
// Linux's drivers/char/mem.c.
func TestDevfsExport(t *testing.T) {
	p := newProc(t)
	mnt, _ := export(t, p, "/dev", Options{DevicesAsFiles: true})

	// zero: far past any size the kernel knows, every byte is 0.
	f, err := os.Open(filepath.Join(mnt, "zero"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	total := 0
	for total < 64<<20 {
		n, err := f.Read(buf)
		if err != nil || n == 0 {
			t.Fatalf("read zero after %d bytes: %d, %v", total, n, err)
		}
		if bytes.ContainsFunc(buf[:n], func(r rune) bool { return r != 0 }) {
			t.Fatalf("non-zero byte in /dev/zero at %d", total)
		}
		total += n
	}
	f.Close()

	// urandom: reads fill the buffer, and two reads differ.
	u, err := os.Open(filepath.Join(mnt, "urandom"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := make([]byte, 4096), make([]byte, 4096)
	if _, err := io.ReadFull(u, a); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(u, b); err != nil {
		t.Fatal(err)
	}
	u.Close()
	if bytes.Equal(a, b) || bytes.Equal(a, make([]byte, 4096)) {
		t.Errorf("/dev/urandom gave the same block twice, or zeros")
	}

	// null: writes are swallowed whole, reads give end of file.
	n, err := os.OpenFile(filepath.Join(mnt, "null"), os.O_RDWR|os.O_TRUNC, 0)
	if err != nil {
		t.Fatalf("open null O_TRUNC: %v", err)
	}
	if w, err := n.Write(make([]byte, 3<<20)); w != 3<<20 || err != nil {
		t.Errorf("write null: %d, %v", w, err)
	}
	if r, err := n.Read(buf); r != 0 || err != io.EOF {
		t.Errorf("read null: %d, %v, want 0, EOF", r, err)
	}
	n.Close()

	// full: reads give zeros, writes ENOSPC.
	fu, err := os.OpenFile(filepath.Join(mnt, "full"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fu.Write([]byte("x")); !errorIs(err, unix.ENOSPC) {
		t.Errorf("write full: %v, want ENOSPC", err)
	}
	if r, err := fu.Read(buf[:100]); r != 100 || err != nil || !bytes.Equal(buf[:100], make([]byte, 100)) {
		t.Errorf("read full: %d, %v", r, err)
	}
	fu.Close()

	// dd as a host program sees the same.
	out, err := exec.Command("sh", "-c", "dd if="+mnt+"/zero bs=64k count=100 status=none | cmp - /dev/zero 2>&1; true").CombinedOutput()
	if !bytes.Contains(out, []byte("EOF on -")) {
		t.Errorf("dd|cmp of exported zero: %s (%v)", out, err)
	}
}

// blockDev is a device whose reads block until release is closed: a
// stand-in for a reader blocked in the server.
type blockDev struct{ entered, release chan struct{} }

func (d *blockDev) DevInfo() (uint32, uint64)              { return unix.S_IFCHR | 0o666, vfs.Mkdev(240, 0) }
func (d *blockDev) Open(int, vfs.Cred) (vfs.Handle, error) { return d, nil }
func (d *blockDev) Stat() (vfs.Stat, error) {
	return vfs.Stat{Mode: unix.S_IFCHR | 0o666, Rdev: vfs.Mkdev(240, 0)}, nil
}
func (d *blockDev) Read(p []byte, off int64) (int, error) {
	select {
	case d.entered <- struct{}{}:
	default:
	}
	<-d.release
	return 0, nil
}

// TestUnmountBlockedRead unmounts an export while a host reader is
// blocked in READ inside the server and another file is open: Unmount
// returns, the reader gets an error, and the mountpoint is free.
func TestUnmountBlockedRead(t *testing.T) {
	dev := &blockDev{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(dev.release)
	p, err := iovfs.New(iovfs.WithDevice("block", dev))
	if err != nil {
		t.Fatal(err)
	}
	requireFUSE(t)
	mnt := t.TempDir()
	s, err := Mount(p, "/dev", mnt, Options{DevicesAsFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Unmount() })
	open, err := os.Open(filepath.Join(mnt, "zero"))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reader := exec.CommandContext(ctx, "cat", filepath.Join(mnt, "block"))
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the READ is in the server.
	select {
	case <-dev.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the reader's READ never reached the device")
	}
	done := make(chan error, 1)
	go func() { done <- s.Unmount() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Unmount: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Unmount hung with a blocked reader")
	}
	if err := reader.Wait(); err == nil {
		t.Errorf("blocked reader exited 0 after the export went away")
	}
	if _, err := open.Read(make([]byte, 1)); err == nil {
		t.Errorf("read of an open file after unmount succeeded")
	}
	if isMounted(t, mnt) {
		t.Errorf("%s still mounted", mnt)
	}
}

// isMounted reports whether dir is a mount point now.
func isMounted(t *testing.T, dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(" "+dir+" "))
}
