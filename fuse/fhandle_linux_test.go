package fuse

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// forgetAll makes the kernel forget every node of export s but the root,
// as a drop of the dentry and inode caches does: each name under root (of
// p's namespace) is invalidated until FORGET has come for all.
func forgetAll(t *testing.T, p *vfs.Proc, s *Server, root string) {
	t.Helper()
	type entry struct{ dir, name string }
	var names []entry
	var walk func(dir string)
	walk = func(dir string) {
		fd, err := p.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(fd)
		for {
			ds, err := p.Getdents(fd)
			if err != nil || len(ds) == 0 {
				break
			}
			for _, d := range ds {
				if d.Name == "." || d.Name == ".." {
					continue
				}
				if d.Type == unix.DT_DIR {
					walk(dir + "/" + d.Name)
				}
				names = append(names, entry{dir, d.Name})
			}
		}
	}
	walk(root)
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, e := range names {
			x, err := p.Statx(unix.AT_FDCWD, e.dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS)
			if err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			n := s.byKey[nodeKey{x.Mnt_id, x.Ino}]
			s.mu.Unlock()
			if n != nil {
				s.srv.EntryNotify(n.id, e.name)
			}
		}
		s.mu.Lock()
		left := len(s.nodes)
		s.mu.Unlock()
		if left == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d nodes left after invalidating every name, want only the root", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFileHandleExport is the file-handle round trip through the export,
// compared with a host tmpfs: handles taken on the FUSE mount open their
// files after the kernel has forgotten every node (it then asks the
// server to LOOKUP "." and ".."), through renames made inside iovfs, and
// are stale once the file is gone.
func TestFileHandleExport(t *testing.T) {
	p := newProc(t)
	mnt, s := export(t, p, "/tmp", Options{})
	host := t.TempDir()
	if err := unix.Mount("tmpfs", host, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(host, unix.MNT_DETACH)
	fileHandleExport(t, p, s, "/tmp", mnt, host)
}

// TestFileHandleExportExt4 is TestFileHandleExport on an export of a
// read-write ext4 mount, compared with a kernel loop mount of the same
// image.
func TestFileHandleExportExt4(t *testing.T) {
	p, host := ext4RW(t)
	mnt, s := export(t, p, "/mnt", Options{})
	fileHandleExport(t, p, s, "/mnt", mnt, host)
}

// fileHandleExport runs the round trip on mnt, an export of root in p,
// and on host, a host directory of the same kind of file system.
func fileHandleExport(t *testing.T, p *vfs.Proc, s *Server, root, mnt, host string) {
	if !s.numbered {
		t.Fatalf("the export of %s, a mount's root, does not number its nodes", root)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	type side struct {
		root    string
		rename  func(a, b string) error
		remove  func(a string) error
		forget  func()
		handles map[string]unix.FileHandle
		fd      int
	}
	ours := &side{root: mnt, handles: map[string]unix.FileHandle{},
		rename: func(a, b string) error { return p.Rename(root+"/"+a, root+"/"+b) },
		remove: func(a string) error { return p.Unlink(root + "/" + a) },
		forget: func() { forgetAll(t, p, s, root) }}
	theirs := &side{root: host, handles: map[string]unix.FileHandle{},
		rename: func(a, b string) error { return os.Rename(filepath.Join(host, a), filepath.Join(host, b)) },
		remove: func(a string) error { return os.Remove(filepath.Join(host, a)) },
		forget: func() {}}
	sides := []*side{theirs, ours}
	for _, sd := range sides {
		must(os.MkdirAll(filepath.Join(sd.root, "d/sub"), 0o755))
		must(os.WriteFile(filepath.Join(sd.root, "a"), []byte("alpha"), 0o644))
		must(os.WriteFile(filepath.Join(sd.root, "d/sub/b"), []byte("beta"), 0o600))
		must(os.Symlink("a", filepath.Join(sd.root, "s")))
		fd, err := unix.Open(sd.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		must(err)
		sd.fd = fd
		defer unix.Close(fd)
	}
	compared := 0
	cmp := func(what string, f func(sd *side) string) {
		t.Helper()
		h, o := f(theirs), f(ours)
		compared++
		if h != o {
			t.Errorf("%s:\n host tmpfs %s\n export    %s", what, h, o)
		}
	}
	get := func(name string, flags int) {
		t.Helper()
		cmp(fmt.Sprintf("name_to_handle_at(%s, %#x)", name, flags), func(sd *side) string {
			h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, filepath.Join(sd.root, name), flags)
			if err == nil {
				sd.handles[name] = h
			}
			return fmt.Sprint(err)
		})
	}
	open := func(what, name string, flags int) {
		t.Helper()
		cmp(fmt.Sprintf("%s: open_by_handle_at(%s, %#x)", what, name, flags), func(sd *side) string {
			fd, err := unix.OpenByHandleAt(sd.fd, sd.handles[name], flags|unix.O_CLOEXEC)
			if err != nil {
				return fmt.Sprint(err)
			}
			defer unix.Close(fd)
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return fmt.Sprint(err)
			}
			out := fmt.Sprintf("mode %o nlink %d size %d", st.Mode, st.Nlink, st.Size)
			if st.Mode&unix.S_IFMT == unix.S_IFDIR && flags&unix.O_PATH == 0 {
				b := make([]byte, 4096)
				n, err := testenv.KernelGetdents(fd, b)
				var names []string
				_, _, names = unix.ParseDirent(b[:max(n, 0)], -1, names)
				slices.Sort(names)
				out += fmt.Sprint(" ", names, err)
			} else if flags&unix.O_PATH == 0 {
				b := make([]byte, 64)
				n, err := unix.Pread(fd, b, 0)
				out += fmt.Sprintf(" %q %v", b[:max(n, 0)], err)
			}
			// The kernel reconnects a directory to its parents (LOOKUP
			// ".."): the open file's path names it again.
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				if dir, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil {
					rel, _ := filepath.Rel(sd.root, dir)
					out += " at " + rel
				}
			}
			return out
		})
	}
	do := func(what string, f func(sd *side) error) {
		t.Helper()
		cmp(what, func(sd *side) string { return fmt.Sprint(f(sd)) })
	}
	forget := func() {
		for _, sd := range sides {
			sd.forget()
		}
	}

	for _, n := range []string{"a", "d", "d/sub", "d/sub/b", "s", "."} {
		get(n, 0)
	}
	forget()
	for _, n := range []string{"a", "d", "d/sub", "d/sub/b", "."} {
		open("forgotten", n, unix.O_RDONLY)
	}
	open("forgotten", "s", unix.O_PATH)
	open("forgotten", "s", unix.O_RDONLY)
	forget()
	open("forgotten, O_PATH", "d/sub/b", unix.O_PATH)
	open("forgotten, O_RDWR", "a", unix.O_RDWR)
	// Renamed behind the kernel's back: handles still name the files.
	do("rename d/sub e", func(sd *side) error { return sd.rename("d/sub", "e") })
	forget()
	open("renamed", "d/sub", unix.O_RDONLY|unix.O_DIRECTORY)
	open("renamed", "d/sub/b", unix.O_RDONLY)
	// Gone: stale, whether the kernel still has the node or not.
	get("a", 0)
	do("unlink a, through the mount", func(sd *side) error { return os.Remove(filepath.Join(sd.root, "a")) })
	open("removed", "a", unix.O_RDONLY)
	do("unlink e/b", func(sd *side) error { return sd.remove("e/b") })
	forget()
	open("removed, forgotten", "d/sub/b", unix.O_RDONLY)
	do("rmdir e", func(sd *side) error { return unix.Rmdir(filepath.Join(sd.root, "e")) })
	open("removed directory", "d/sub", unix.O_RDONLY|unix.O_DIRECTORY)
	// A handle made on a host tmpfs means nothing to the export.
	ours.handles["foreign"], theirs.handles["foreign"] = theirs.handles["a"], theirs.handles["a"]
	cmp("a host tmpfs's handle on the export", func(sd *side) string {
		_, err := unix.OpenByHandleAt(ours.fd, sd.handles["foreign"], unix.O_RDONLY|unix.O_CLOEXEC)
		return fmt.Sprint(err)
	})
	t.Logf("%d results compared", compared)
}
