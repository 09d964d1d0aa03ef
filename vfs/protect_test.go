package vfs_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestLinkProtectionSettings checks the settings' range, the function
// source, and that a private mount namespace shares its origin's.
func TestLinkProtectionSettings(t *testing.T) {
	p := newPipeProc(t)
	ns := p.Namespace()
	if got := ns.LinkProtection(); got != (vfs.LinkProtection{}) {
		t.Errorf("a new namespace's settings: %+v, want the kernel's defaults (all 0)", got)
	}
	for _, bad := range []vfs.LinkProtection{{Symlinks: 2}, {Hardlinks: -1}, {FIFOs: 3}, {Regular: 3}} {
		if err := ns.SetLinkProtection(bad); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("SetLinkProtection(%+v): %v, want EINVAL", bad, err)
		}
	}
	if got := ns.LinkProtection(); got != (vfs.LinkProtection{}) {
		t.Errorf("after refused settings: %+v", got)
	}
	// uid 1000 links root's 0600 file only with Hardlinks 0; the function
	// source is read at the link.
	if err := p.Chmod("/tmp", 0o1777); err != nil {
		t.Fatal(err)
	}
	fd, err := p.Open("/tmp/secret", unix.O_CREAT|unix.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p.Close(fd)
	u := vfs.NewProcCred(ns, 1000, 1000)
	hard := 1
	calls := 0
	ns.SetLinkProtectionFunc(func() vfs.LinkProtection { calls++; return vfs.LinkProtection{Hardlinks: hard} })
	if err := u.Link("/tmp/secret", "/tmp/a"); !errors.Is(err, syscall.EPERM) {
		t.Errorf("link with Hardlinks 1: %v, want EPERM", err)
	}
	hard = 0
	if err := u.Link("/tmp/secret", "/tmp/b"); err != nil {
		t.Errorf("link with Hardlinks 0: %v", err)
	}
	if calls != 2 {
		t.Errorf("the source was called %d times, want 2", calls)
	}
	if err := ns.SetLinkProtection(vfs.LinkProtection{Hardlinks: 1, Symlinks: 1}); err != nil {
		t.Fatal(err)
	}
	rfd, err := p.Open("/tmp", unix.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.PrivateMount(rfd)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Namespace().LinkProtection(); got != (vfs.LinkProtection{Hardlinks: 1, Symlinks: 1}) {
		t.Errorf("a private namespace's settings: %+v, want its origin's", got)
	}
}
