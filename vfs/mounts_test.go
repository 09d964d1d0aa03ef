package vfs_test

import (
	"reflect"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func TestMounts(t *testing.T) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/mnt/a", "/mnt/b"} {
		if err := p.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Mount("tmpfs", "/mnt/a", "tmpfs", unix.MS_RDONLY, "size=1m"); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("/tmp", "/mnt/b", "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	want := []vfs.MountInfo{
		{"none", "/", "none", "rw"},
		{"none", "/dev", "none", "rw"},
		{"tmpfs", "/tmp", "tmpfs", "rw,mode=1777"},
		{"tmpfs", "/mnt/a", "tmpfs", "ro,size=1m"},
		{"none", "/mnt/b", "none", "rw"},
	}
	if got := p.Namespace().Mounts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Mounts:\n%+v\nwant\n%+v", got, want)
	}
	if err := p.Unmount("/mnt/a", unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if got := p.Namespace().Mounts(); len(got) != 4 || got[3].Target != "/mnt/b" {
		t.Fatalf("after unmount: %+v", got)
	}
}
