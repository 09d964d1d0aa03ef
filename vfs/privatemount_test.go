package vfs_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestPrivateMount checks Linux's clone_private_mount: the copy shows the
// mount's file system from its root, with its device number, without the
// mounts below it; its calls change the shared file system; descriptors
// on two mounts give EXDEV, a bad one EBADF.
func TestPrivateMount(t *testing.T) {
	ns := vfs.NewNamespace(tmpfs.New(tmpfs.Options{}))
	p := vfs.NewProc(ns)
	for _, d := range []string{"/m", "/other"} {
		if err := p.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := ns.MountFS("/m", tmpfs.New(tmpfs.Options{}), false); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/m/a", "/m/a/b", "/m/sub"} {
		if err := p.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := ns.MountFS("/m/sub", tmpfs.New(tmpfs.Options{}), false); err != nil {
		t.Fatal(err)
	}
	if err := p.Mkdir("/m/sub/hidden", 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := p.Open("/m/a", unix.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Open("/m/a/b", unix.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	o, err := p.Open("/other", unix.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PrivateMount(a, o); !errors.Is(err, syscall.EXDEV) {
		t.Errorf("descriptors on two mounts: %v, want EXDEV", err)
	}
	if _, err := p.PrivateMount(a, 99); !errors.Is(err, syscall.EBADF) {
		t.Errorf("a bad descriptor: %v, want EBADF", err)
	}
	q, err := p.PrivateMount(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := p.Stat("/m/a/b")
	got, err := q.Fstat(1)
	if err != nil || got.Ino != want.Ino || got.Dev != want.Dev {
		t.Errorf("descriptor 1: %+v, %v; want /m/a/b (ino %d dev %d)", got, err, want.Ino, want.Dev)
	}
	if _, err := q.Stat("/sub/hidden"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("a mount below the copied one shows: %v", err)
	}
	if err := q.Renameat2(0, "b", 0, "c", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stat("/m/a/c"); err != nil {
		t.Errorf("a rename through the copy is not in the original: %v", err)
	}
	// One dentry cache: a name the original namespace has cached as
	// missing shows once the copy makes it, and the other way round.
	if _, err := p.Stat("/m/a/new"); !errors.Is(err, syscall.ENOENT) {
		t.Fatal(err)
	}
	if _, err := q.Stat("/a/new2"); !errors.Is(err, syscall.ENOENT) {
		t.Fatal(err)
	}
	if err := q.Mkdirat(0, "new", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mkdir("/m/a/new2", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stat("/m/a/new"); err != nil {
		t.Errorf("made through the copy, cached as missing in the original: %v", err)
	}
	if _, err := q.Stat("/a/new2"); err != nil {
		t.Errorf("made in the original, cached as missing in the copy: %v", err)
	}
	root, _ := p.Stat("/m")
	if up, err := q.Fstatat(0, "../../..", 0); err != nil || up.Ino != root.Ino || up.Dev != root.Dev {
		t.Errorf(".. past the copy's root: %+v, %v; want /m (ino %d)", up, err, root.Ino)
	}
}
