package hostfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestHostChangesSeen changes the host tree behind iovfs's back after each
// name has been looked up (so the dentry cache holds it) and checks that
// the next lookup sees the host's new state: a name created, removed,
// replaced by another inode, and a directory swapped for a file.
func TestHostChangesSeen(t *testing.T) {
	dir := t.TempDir()
	p := mountHost(t, dir, 0, "")
	host := func(name string) string { return filepath.Join(dir, name) }
	ours := func(name string) string { return "/mnt/h/" + name }
	ino := func(name string) uint64 {
		t.Helper()
		st, err := p.Lstat(ours(name))
		if err != nil {
			t.Fatalf("lstat %s: %v", name, err)
		}
		return st.Ino
	}
	for range 2 { // twice: the second lookup would be a cache hit
		if _, err := p.Lstat(ours("new")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("lstat of a missing name: %v", err)
		}
	}
	if err := os.WriteFile(host("new"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := ino("new")
	ino("new")
	// Replace it with another inode under the same name.
	if err := os.WriteFile(host("other"), []byte("yy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(host("other"), host("new")); err != nil {
		t.Fatal(err)
	}
	if got := ino("new"); got == first {
		t.Errorf("after a host rename over the name, iovfs still shows inode %d", got)
	}
	if st, err := p.Lstat(ours("new")); err != nil || st.Size != 2 {
		t.Errorf("lstat after replace: size %d, %v; want 2", st.Size, err)
	}
	if err := os.Remove(host("new")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Lstat(ours("new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after a host unlink: %v, want ENOENT", err)
	}
	// A directory replaced by a file: a walk through it must fail.
	if err := os.MkdirAll(host("d/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	ino("d/sub")
	if err := os.RemoveAll(host("d")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(host("d"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Lstat(ours("d/sub")); err == nil {
		t.Errorf("walk through a directory the host replaced by a file succeeded")
	}
}
