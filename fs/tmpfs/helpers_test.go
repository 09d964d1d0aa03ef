package tmpfs

import (
	"errors"
	"syscall"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

var root0 = vfs.Cred{}

// tb is what the helpers need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// errno returns the Errno in err, 0 for nil.
func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0xffff
}

func mustCreate(t tb, d *Dir, name string) *File {
	t.Helper()
	n, err := d.Create(name, 0o644, root0)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return n.(*File)
}

func mustMkdir(t tb, d *Dir, name string) *Dir {
	t.Helper()
	n, err := d.Mkdir(name, 0o755, root0)
	if err != nil {
		t.Fatalf("mkdir %s: %v", name, err)
	}
	return n.(*Dir)
}

func mustOpen(t tb, f *File, flags int) *OpenFile {
	t.Helper()
	h, err := f.Open(flags, root0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return h.(*OpenFile)
}

func mustStat(t tb, n vfs.Node) vfs.Stat {
	t.Helper()
	st, err := n.Stat()
	if err != nil {
		t.Fatalf("stat: %v", err)
	}
	return st
}

func mustWrite(t tb, h *OpenFile, p []byte, off int64) {
	t.Helper()
	if n, err := h.Write(p, off); n != len(p) || err != nil {
		t.Fatalf("write %d at %d: %d, %v", len(p), off, n, err)
	}
}

func lookup(t tb, d *Dir, name string) vfs.Node {
	t.Helper()
	n, err := d.Lookup(name)
	if err != nil {
		t.Fatalf("lookup %s: %v", name, err)
	}
	return n
}

// names lists d through ReadDir.
func names(t tb, d *Dir) []string {
	t.Helper()
	var out []string
	if err := d.ReadDir(0, func(e vfs.Dirent) bool { out = append(out, e.Name); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

// rw is a read-write flag set for Open.
const rw = unix.O_RDWR
