package overlay_test

import (
	"testing"

	"github.com/iovfs/iovfs/fs/overlay"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/vfs"
)

// twoFS is a namespace whose overlay at /m has its lower directory /l on
// one tmpfs and its upper and work directories on another at /rw.
func twoFS(t *testing.T) *vfs.Proc {
	t.Helper()
	ns := vfs.NewNamespace(tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}))
	p := vfs.NewProc(ns)
	for _, d := range []string{"/l", "/rw", "/m", "/l/a", "/l/a/b"} {
		if err := p.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := ns.MountFS("/rw", tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}), false); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/rw/u", "/rw/w"} {
		if err := p.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := overlay.New(p, overlay.Options{Lower: []string{"/l"}, Upper: "/rw/u", Work: "/rw/w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.MountFS("/m", fs, false); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGetcwdTwoFileSystems checks getcwd in lower, merged and upper
// directories of an overlay whose layers are on two file systems, where a
// directory's st_ino is the overlay's own, not its layer's d_ino.
func TestGetcwdTwoFileSystems(t *testing.T) {
	p := twoFS(t)
	if err := p.Mkdir("/m/a/new", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/m/a/b", "/m/a", "/m/a/new", "/m"} {
		if err := p.Chdir(dir); err != nil {
			t.Fatal(err)
		}
		if got, err := p.Getcwd(); err != nil || got != dir {
			t.Errorf("getcwd in %s: %q, %v", dir, got, err)
		}
	}
}
