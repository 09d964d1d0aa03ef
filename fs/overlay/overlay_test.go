package overlay_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/iovfs/iovfs/fs/overlay"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/notice"
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

// TestInUse: an overlay whose upper directory or workdir is another
// overlay's, or lies inside one, or whose lower directory is or lies
// inside one, mounts with the kernel's warning (without the index
// feature, ovl_report_in_use only warns); once the other is unmounted,
// it mounts without.
func TestInUse(t *testing.T) {
	ns := vfs.NewNamespace(tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}))
	p := vfs.NewProc(ns)
	for _, d := range []string{"/l", "/u", "/w", "/u2", "/w2", "/m", "/u/x", "/u/y"} {
		if err := p.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var got []string
	old := notice.SetHandler(func(n notice.Notice) {
		mu.Lock()
		got = append(got, n.String())
		mu.Unlock()
	})
	defer func() { notice.SetHandler(old) }()
	a, err := overlay.New(p, overlay.Options{Lower: []string{"/l"}, Upper: "/u", Work: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.MountFS("/m", a, false); err != nil {
		t.Fatal(err)
	}
	warning := func(what string) string {
		return "overlay: " + what + " is in-use as upperdir/workdir of another mount, accessing files from both mounts will result in undefined behavior"
	}
	check := func(o overlay.Options, want ...string) {
		t.Helper()
		mu.Lock()
		got = nil
		mu.Unlock()
		b, err := overlay.New(p, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		b.Shutdown()
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(got, want) {
			t.Errorf("%+v: notices %q, want %q", o, got, want)
		}
	}
	check(overlay.Options{Lower: []string{"/l"}, Upper: "/u", Work: "/w2"}, warning("upperdir"))
	check(overlay.Options{Lower: []string{"/l"}, Upper: "/u2", Work: "/w"}, warning("workdir"))
	check(overlay.Options{Lower: []string{"/u", "/l"}}, warning("lowerdir"))
	check(overlay.Options{Lower: []string{"/l"}, Upper: "/u/x", Work: "/u/y"}, warning("upperdir"), warning("workdir"))
	check(overlay.Options{Lower: []string{"/u/x", "/l"}}, warning("lowerdir"))
	check(overlay.Options{Lower: []string{"/l"}, Upper: "/u2", Work: "/w2"})
	check(overlay.Options{Lower: []string{"/l"}, Upper: "/u2", Work: "/w2"}) // the last one let them go
	if err := p.Unmount("/m", 0); err != nil {
		t.Fatal(err)
	}
	check(overlay.Options{Lower: []string{"/l"}, Upper: "/u", Work: "/w"})
}
