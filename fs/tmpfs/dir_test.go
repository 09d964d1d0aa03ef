package tmpfs

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// tree builds, in a fresh tmpfs:
//
//	f        file, with a second link f2
//	d/       directory holding x (file) and s/ (empty directory)
//	e/       empty directory
//	l        symlink to f
func tree(t *testing.T) (*FS, *Dir) {
	t.Helper()
	fs := New(Options{})
	r := fs.root
	f := mustCreate(t, r, "f")
	if err := r.Link("f2", f, root0); err != nil {
		t.Fatal(err)
	}
	d := mustMkdir(t, r, "d")
	mustCreate(t, d, "x")
	mustMkdir(t, d, "s")
	mustMkdir(t, r, "e")
	if _, err := r.Symlink("l", "f", root0); err != nil {
		t.Fatal(err)
	}
	return fs, r
}

func sub(t *testing.T, r *Dir, name string) *Dir {
	t.Helper()
	return lookup(t, r, name).(*Dir)
}

// TestDirOps lists each directory operation's cases with the errno Linux
// returns for the same call on tmpfs.
func TestDirOps(t *testing.T) {
	other := New(Options{})
	otherFile := mustCreate(t, other.root, "o")
	cases := []struct {
		name  string
		op    func(t *testing.T, r *Dir) error
		want  syscall.Errno
		check func(t *testing.T, r *Dir)
	}{
		{name: "create over file: EEXIST", want: unix.EEXIST,
			op: func(t *testing.T, r *Dir) error { _, err := r.Create("f", 0o644, root0); return err }},
		{name: "create over dir: EEXIST", want: unix.EEXIST,
			op: func(t *testing.T, r *Dir) error { _, err := r.Create("d", 0o644, root0); return err }},
		{name: "create over symlink: EEXIST", want: unix.EEXIST,
			op: func(t *testing.T, r *Dir) error { _, err := r.Create("l", 0o644, root0); return err }},
		{name: "mkdir over file: EEXIST", want: unix.EEXIST,
			op: func(t *testing.T, r *Dir) error { _, err := r.Mkdir("f", 0o755, root0); return err }},
		{name: "symlink over dir: EEXIST", want: unix.EEXIST,
			op: func(t *testing.T, r *Dir) error { _, err := r.Symlink("d", "x", root0); return err }},
		{name: "symlink to empty target: ENOENT", want: unix.ENOENT,
			op: func(t *testing.T, r *Dir) error { _, err := r.Symlink("n", "", root0); return err }},
		{name: "symlink to 4096-byte target: ENAMETOOLONG", want: unix.ENAMETOOLONG,
			op: func(t *testing.T, r *Dir) error {
				_, err := r.Symlink("n", strings.Repeat("a", 4096), root0)
				return err
			}},
		{name: "symlink to 4095-byte target", op: func(t *testing.T, r *Dir) error {
			_, err := r.Symlink("n", strings.Repeat("a", 4095), root0)
			return err
		}},
		{name: "lookup missing: ENOENT", want: unix.ENOENT,
			op: func(t *testing.T, r *Dir) error { _, err := r.Lookup("nope"); return err }},
		{name: "lookup .. of root is root", op: func(t *testing.T, r *Dir) error {
			if n, _ := r.Lookup(".."); n != r {
				t.Errorf("root/.. = %v", n)
			}
			if n, _ := sub(t, r, "d").Lookup(".."); n != r {
				t.Errorf("d/.. = %v", n)
			}
			return nil
		}},
		{name: "unlink missing: ENOENT", want: unix.ENOENT,
			op: func(t *testing.T, r *Dir) error { return r.Unlink("nope", root0) }},
		{name: "unlink dir: EISDIR", want: unix.EISDIR,
			op: func(t *testing.T, r *Dir) error { return r.Unlink("e", root0) }},
		{name: "unlink symlink removes the link only", op: func(t *testing.T, r *Dir) error { return r.Unlink("l", root0) },
			check: func(t *testing.T, r *Dir) {
				lookup(t, r, "f")
				if _, err := r.Lookup("l"); errno(err) != unix.ENOENT {
					t.Errorf("l after unlink: %v", err)
				}
			}},
		{name: "rmdir missing: ENOENT", want: unix.ENOENT,
			op: func(t *testing.T, r *Dir) error { return r.Rmdir("nope", root0) }},
		{name: "rmdir file: ENOTDIR", want: unix.ENOTDIR,
			op: func(t *testing.T, r *Dir) error { return r.Rmdir("f", root0) }},
		{name: "rmdir symlink: ENOTDIR", want: unix.ENOTDIR,
			op: func(t *testing.T, r *Dir) error { return r.Rmdir("l", root0) }},
		{name: "rmdir non-empty: ENOTEMPTY", want: unix.ENOTEMPTY,
			op: func(t *testing.T, r *Dir) error { return r.Rmdir("d", root0) }},
		{name: "rmdir empty", op: func(t *testing.T, r *Dir) error { return r.Rmdir("e", root0) }},
		{name: "create in removed dir: ENOENT", want: unix.ENOENT,
			op: func(t *testing.T, r *Dir) error {
				e := sub(t, r, "e")
				if err := r.Rmdir("e", root0); err != nil {
					t.Fatal(err)
				}
				_, err := e.Create("n", 0o644, root0)
				return err
			}},
		{name: "mkdir in removed dir: ENOENT", want: unix.ENOENT,
			op: func(t *testing.T, r *Dir) error {
				e := sub(t, r, "e")
				if err := r.Rmdir("e", root0); err != nil {
					t.Fatal(err)
				}
				_, err := e.Mkdir("n", 0o755, root0)
				return err
			}},
		{name: "link to dir: EPERM", want: unix.EPERM,
			op: func(t *testing.T, r *Dir) error { return r.Link("n", lookup(t, r, "d"), root0) }},
		{name: "link over existing: EEXIST", want: unix.EEXIST,
			op: func(t *testing.T, r *Dir) error { return r.Link("d", lookup(t, r, "f"), root0) }},
		{name: "link to another file system's node: EXDEV", want: unix.EXDEV,
			op: func(t *testing.T, r *Dir) error { return r.Link("n", otherFile, root0) }},
		{name: "link to symlink", op: func(t *testing.T, r *Dir) error { return r.Link("n", lookup(t, r, "l"), root0) },
			check: func(t *testing.T, r *Dir) {
				if st := mustStat(t, lookup(t, r, "l")); st.Nlink != 2 {
					t.Errorf("symlink nlink %d, want 2", st.Nlink)
				}
			}},
		{name: "link to unlinked open file: ENOENT", want: unix.ENOENT,
			op: func(t *testing.T, r *Dir) error {
				f := lookup(t, r, "f")
				r.Unlink("f", root0)
				r.Unlink("f2", root0)
				return r.Link("n", f, root0)
			}},
		{name: "rename missing: ENOENT", want: unix.ENOENT,
			op: func(t *testing.T, r *Dir) error { return r.Rename("nope", r, "x", 0, root0) }},
		{name: "rename file over file", op: func(t *testing.T, r *Dir) error { return sub(t, r, "d").Rename("x", r, "f", 0, root0) },
			check: func(t *testing.T, r *Dir) {
				if st := mustStat(t, lookup(t, r, "f2")); st.Nlink != 1 {
					t.Errorf("replaced file nlink %d, want 1", st.Nlink)
				}
				if st := mustStat(t, lookup(t, r, "f")); st.Nlink != 1 {
					t.Errorf("moved file nlink %d, want 1", st.Nlink)
				}
			}},
		{name: "rename file over dir: EISDIR", want: unix.EISDIR,
			op: func(t *testing.T, r *Dir) error { return r.Rename("f", r, "e", 0, root0) }},
		{name: "rename dir over file: ENOTDIR", want: unix.ENOTDIR,
			op: func(t *testing.T, r *Dir) error { return r.Rename("e", r, "f", 0, root0) }},
		{name: "rename dir over non-empty dir: ENOTEMPTY", want: unix.ENOTEMPTY,
			op: func(t *testing.T, r *Dir) error { return r.Rename("e", r, "d", 0, root0) }},
		{name: "rename dir over empty dir", op: func(t *testing.T, r *Dir) error { return r.Rename("d", r, "e", 0, root0) },
			check: func(t *testing.T, r *Dir) {
				// d took e's offset and moved to the head (newest first).
				if got := names(t, r); !slices.Equal(got, []string{"e", "l", "f2", "f"}) {
					t.Errorf("root lists %v", got)
				}
				if st := mustStat(t, r); st.Nlink != 3 {
					t.Errorf("root nlink %d, want 3", st.Nlink)
				}
				lookup(t, sub(t, r, "e"), "x")
			}},
		{name: "rename symlink over dir: EISDIR", want: unix.EISDIR,
			op: func(t *testing.T, r *Dir) error { return r.Rename("l", r, "e", 0, root0) }},
		{name: "rename onto itself does nothing", op: func(t *testing.T, r *Dir) error { return r.Rename("f", r, "f", 0, root0) },
			check: func(t *testing.T, r *Dir) {
				if got := names(t, r); !slices.Equal(got, []string{"l", "e", "d", "f2", "f"}) {
					t.Errorf("root lists %v", got)
				}
			}},
		{name: "rename a link onto its twin does nothing", op: func(t *testing.T, r *Dir) error { return r.Rename("f", r, "f2", 0, root0) },
			check: func(t *testing.T, r *Dir) {
				lookup(t, r, "f")
				if st := mustStat(t, lookup(t, r, "f2")); st.Nlink != 2 {
					t.Errorf("nlink %d, want 2", st.Nlink)
				}
			}},
		// Moving a directory below itself and replacing an ancestor of the
		// source are refused by the VFS (vfs/vfstest checks them on tmpfs).
		{name: "rename to another file system: EXDEV", want: unix.EXDEV,
			op: func(t *testing.T, r *Dir) error { return r.Rename("f", other.root, "f", 0, root0) }},
		{name: "rename into removed dir: ENOENT", want: unix.ENOENT,
			op: func(t *testing.T, r *Dir) error {
				e := sub(t, r, "e")
				r.Rmdir("e", root0)
				return r.Rename("f", e, "f", 0, root0)
			}},
		{name: "rename dir across directories moves ..", op: func(t *testing.T, r *Dir) error { return r.Rename("e", sub(t, r, "d"), "e", 0, root0) },
			check: func(t *testing.T, r *Dir) {
				d := sub(t, r, "d")
				if up, _ := sub(t, d, "e").Lookup(".."); up != d {
					t.Errorf("e/.. is not d")
				}
				if st := mustStat(t, r); st.Nlink != 3 {
					t.Errorf("root nlink %d, want 3", st.Nlink)
				}
				if st := mustStat(t, d); st.Nlink != 4 {
					t.Errorf("d nlink %d, want 4", st.Nlink)
				}
			}},
		{name: "setattr size on dir: EISDIR", want: unix.EISDIR,
			op: func(t *testing.T, r *Dir) error { return r.Setattr(vfs.SetAttr{Valid: vfs.SetSize}, root0) }},
		{name: "setattr size on symlink: EINVAL", want: unix.EINVAL,
			op: func(t *testing.T, r *Dir) error {
				return lookup(t, r, "l").(vfs.Setattrer).Setattr(vfs.SetAttr{Valid: vfs.SetSize}, root0)
			}},
		{name: "setattr negative size: EINVAL", want: unix.EINVAL,
			op: func(t *testing.T, r *Dir) error {
				return lookup(t, r, "f").(vfs.Setattrer).Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: -1}, root0)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, r := tree(t)
			if got := errno(c.op(t, r)); got != c.want {
				t.Fatalf("got %v (%d), want %v (%d)", got, got, c.want, c.want)
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

func TestNlink(t *testing.T) {
	fs := New(Options{})
	r := fs.root
	nlink := func(n vfs.Node) uint64 { return mustStat(t, n).Nlink }
	if got := nlink(r); got != 2 {
		t.Fatalf("empty root nlink %d", got)
	}
	a := mustMkdir(t, r, "a")
	b := mustMkdir(t, a, "b")
	mustCreate(t, a, "file")
	if nlink(r) != 3 || nlink(a) != 3 || nlink(b) != 2 {
		t.Fatalf("nlink root %d a %d b %d, want 3 3 2", nlink(r), nlink(a), nlink(b))
	}
	if err := a.Rename("b", r, "b", 0, root0); err != nil {
		t.Fatal(err)
	}
	if nlink(r) != 4 || nlink(a) != 2 {
		t.Fatalf("after rename: root %d a %d, want 4 2", nlink(r), nlink(a))
	}
	if err := r.Rmdir("b", root0); err != nil {
		t.Fatal(err)
	}
	if nlink(r) != 3 || nlink(b) != 0 {
		t.Fatalf("after rmdir: root %d b %d, want 3 0", nlink(r), nlink(b))
	}

	f := mustCreate(t, r, "f")
	h := mustOpen(t, f, rw)
	mustWrite(t, h, make([]byte, 3*pageSize), 0)
	for i, name := range []string{"g", "h"} {
		if err := r.Link(name, f, root0); err != nil {
			t.Fatal(err)
		}
		if got := nlink(f); got != uint64(i+2) {
			t.Fatalf("nlink %d after %d links", got, i+2)
		}
	}
	for _, name := range []string{"f", "g", "h"} {
		if err := r.Unlink(name, root0); err != nil {
			t.Fatal(err)
		}
	}
	if nlink(f) != 0 {
		t.Fatalf("unlinked open file nlink %d", nlink(f))
	}
	// Linux frees an unlinked file's pages at its last close.
	if pages, _ := fs.Usage(); pages != 3 {
		t.Fatalf("pages %d while open, want 3", pages)
	}
	h.Release()
	if pages, inodes := fs.Usage(); pages != 0 || inodes != 3 {
		t.Fatalf("after close: pages %d inodes %d, want 0 3", pages, inodes)
	}
}

func TestDirSize(t *testing.T) {
	_, r := tree(t)
	// Linux tmpfs: 20 bytes per entry, plus two for . and ..
	if st := mustStat(t, r); st.Size != 7*20 || st.Blocks != 0 {
		t.Fatalf("root size %d blocks %d, want 140 0", st.Size, st.Blocks)
	}
	if st := mustStat(t, sub(t, r, "e")); st.Size != 40 || st.Mode != unix.S_IFDIR|0o755 {
		t.Fatalf("empty dir size %d mode %o", st.Size, st.Mode)
	}
	if st := mustStat(t, r); st.Mode != unix.S_IFDIR|0o1777 || st.Ino != 1 {
		t.Fatalf("root mode %o ino %d, want 41777 1", st.Mode, st.Ino)
	}
}

func TestSymlink(t *testing.T) {
	fs := New(Options{SizeLimit: pageSize})
	r := fs.root
	n, err := r.Symlink("s", "some/where", root0)
	if err != nil {
		t.Fatal(err)
	}
	st := mustStat(t, n)
	if st.Mode != unix.S_IFLNK|0o777 || st.Size != 10 || st.Blocks != 0 || st.Nlink != 1 {
		t.Fatalf("stat %+v", st)
	}
	if target, _ := n.(vfs.Readlinker).Readlink(); target != "some/where" {
		t.Fatalf("readlink %q", target)
	}
	// A long target takes a page, as shmem_symlink does.
	long := strings.Repeat("x", 200)
	n, err = r.Symlink("long", long, root0)
	if err != nil {
		t.Fatal(err)
	}
	if st := mustStat(t, n); st.Blocks != 8 || st.Size != 200 {
		t.Fatalf("long symlink blocks %d size %d", st.Blocks, st.Size)
	}
	if _, err := r.Symlink("long2", long, root0); errno(err) != unix.ENOSPC {
		t.Fatalf("second long symlink over the limit: %v, want ENOSPC", err)
	}
	if err := r.Unlink("long", root0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Symlink("long2", long, root0); err != nil {
		t.Fatalf("after unlink: %v", err)
	}
}

func TestNrInodes(t *testing.T) {
	fs := New(Options{NrInodes: 3})
	r := fs.root
	mustCreate(t, r, "a")
	mustMkdir(t, r, "b")
	if _, err := r.Create("c", 0o644, root0); errno(err) != unix.ENOSPC {
		t.Fatalf("fourth inode: %v, want ENOSPC", err)
	}
	if err := r.Rmdir("b", root0); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, r, "c")
}

func TestSetgidDir(t *testing.T) {
	r := New(Options{}).root
	d := mustMkdir(t, r, "d")
	if err := d.Setattr(vfs.SetAttr{Valid: vfs.SetMode | vfs.SetGid, Mode: 0o2775, Gid: 50}, root0); err != nil {
		t.Fatal(err)
	}
	sub, _ := d.Mkdir("s", 0o6777, vfs.Cred{Uid: 1, Gid: 2})
	f, _ := d.Create("f", 0o644, vfs.Cred{Uid: 1, Gid: 2})
	// Linux: mkdir drops S_ISUID; both inherit the group, the dir the bit.
	if st := mustStat(t, sub); st.Gid != 50 || st.Mode != unix.S_IFDIR|0o2777 {
		t.Fatalf("subdir gid %d mode %o", st.Gid, st.Mode)
	}
	if st := mustStat(t, f); st.Gid != 50 || st.Uid != 1 || st.Mode != unix.S_IFREG|0o644 {
		t.Fatalf("file uid %d gid %d mode %o", st.Uid, st.Gid, st.Mode)
	}
}

// pause waits until the clock has moved, so the next timestamp differs.
func pause() { time.Sleep(2 * time.Millisecond) }

func TestTimestamps(t *testing.T) {
	r := New(Options{}).root
	d := mustMkdir(t, r, "d")
	st0 := mustStat(t, d)
	pause()
	f := mustCreate(t, d, "f")
	fst := mustStat(t, f)
	st1 := mustStat(t, d)
	if !st1.Mtime.After(st0.Mtime) || !st1.Ctime.After(st0.Ctime) || !st1.Mtime.Equal(fst.Mtime) {
		t.Fatalf("create: dir mtime %v -> %v, file %v", st0.Mtime, st1.Mtime, fst.Mtime)
	}
	if !fst.Atime.Equal(fst.Mtime) || !fst.Ctime.Equal(fst.Mtime) {
		t.Fatalf("new file times differ: %+v", fst)
	}

	h := mustOpen(t, f, rw)
	pause()
	mustWrite(t, h, []byte("hello"), 0)
	w := mustStat(t, f)
	if !w.Mtime.After(fst.Mtime) || !w.Ctime.Equal(w.Mtime) || !w.Atime.Equal(fst.Atime) {
		t.Fatalf("write: %+v", w)
	}
	// relatime: the first read after a write moves atime, the next does not.
	pause()
	h.Read(make([]byte, 5), 0)
	r1 := mustStat(t, f)
	if !r1.Atime.After(w.Mtime) {
		t.Fatalf("read after write left atime %v (mtime %v)", r1.Atime, w.Mtime)
	}
	pause()
	h.Read(make([]byte, 5), 0)
	if r2 := mustStat(t, f); !r2.Atime.Equal(r1.Atime) {
		t.Fatalf("second read moved atime %v -> %v", r1.Atime, r2.Atime)
	}
	// ... unless atime is a day old. (Set the times directly: Setattr
	// would move ctime past atime.)
	for _, age := range []time.Duration{time.Hour, 25 * time.Hour} {
		now := clockNow()
		at := now.wall - int64(age)
		f.mtime.Store(at - int64(time.Hour))
		f.ctime.Store(at - int64(time.Hour))
		f.setAtime(at, now)
		h.Read(make([]byte, 5), 0)
		moved := mustStat(t, f).Atime.UnixNano() != at
		if moved != (age > 24*time.Hour) {
			t.Fatalf("atime %v old: moved %v", age, moved)
		}
	}
	recent := time.Now().Add(-time.Hour)
	f.Setattr(vfs.SetAttr{Valid: vfs.SetAtime | vfs.SetMtime, Atime: recent, Mtime: recent.Add(-time.Hour)}, root0)
	// Setattr moved ctime past atime, so this read moves atime.
	h.Read(make([]byte, 5), 0)
	r4 := mustStat(t, f)
	if !r4.Atime.After(recent) {
		t.Fatalf("read after utimes left atime at %v", r4.Atime)
	}
	if !r4.Mtime.Equal(recent.Add(-time.Hour)) {
		t.Fatalf("utimes mtime %v", r4.Mtime)
	}

	// link: target ctime and the directory's mtime and ctime.
	pause()
	before := mustStat(t, f)
	if err := r.Link("g", f, root0); err != nil {
		t.Fatal(err)
	}
	a := mustStat(t, f)
	if !a.Ctime.After(before.Ctime) || !a.Mtime.Equal(before.Mtime) {
		t.Fatalf("link: ctime %v -> %v, mtime %v -> %v", before.Ctime, a.Ctime, before.Mtime, a.Mtime)
	}
	rs := mustStat(t, r)
	if !rs.Mtime.Equal(a.Ctime) {
		t.Fatalf("link: dir mtime %v, inode ctime %v", rs.Mtime, a.Ctime)
	}

	// rename between directories: both directories and the inode's ctime.
	pause()
	if err := d.Rename("f", r, "moved", 0, root0); err != nil {
		t.Fatal(err)
	}
	m, ds, rs2 := mustStat(t, f), mustStat(t, d), mustStat(t, r)
	if !m.Ctime.After(a.Ctime) || !ds.Mtime.Equal(m.Ctime) || !rs2.Ctime.Equal(m.Ctime) || !m.Mtime.Equal(a.Mtime) {
		t.Fatalf("rename: inode %+v, old dir %v, new dir %v", m, ds.Mtime, rs2.Ctime)
	}

	// unlink: directory mtime/ctime, inode ctime.
	pause()
	if err := r.Unlink("g", root0); err != nil {
		t.Fatal(err)
	}
	u, rs3 := mustStat(t, f), mustStat(t, r)
	if !u.Ctime.After(m.Ctime) || !rs3.Mtime.Equal(u.Ctime) {
		t.Fatalf("unlink: inode ctime %v, dir mtime %v", u.Ctime, rs3.Mtime)
	}

	// chmod moves only ctime; a truncate, even to the same size, mtime
	// and ctime (Linux 6.x).
	pause()
	f.Setattr(vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o600}, root0)
	c := mustStat(t, f)
	if !c.Ctime.After(u.Ctime) || !c.Mtime.Equal(u.Mtime) || c.Mode != unix.S_IFREG|0o600 {
		t.Fatalf("chmod: %+v", c)
	}
	pause()
	f.Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: c.Size}, root0)
	if s := mustStat(t, f); !s.Ctime.After(c.Ctime) || !s.Mtime.Equal(s.Ctime) {
		t.Fatalf("same-size truncate: %+v", s)
	}
}

// TestReadDirResume checks cookies: a listing resumed from each entry's
// cookie goes on with the next entry (newest first, cookies going down),
// and . and .. are not listed.
func TestReadDirResume(t *testing.T) {
	r := New(Options{}).root
	var want []string
	for i := range 100 {
		name := fmt.Sprintf("n%03d", i)
		mustCreate(t, r, name)
		want = append(want, name)
	}
	for i := 0; i < 100; i += 2 {
		r.Unlink(want[i], root0)
	}
	want = slices.DeleteFunc(want, func(s string) bool { return s[3]%2 == 0 })
	slices.Reverse(want)
	var got []string
	off := int64(0)
	for {
		n := 0
		r.ReadDir(off, func(e vfs.Dirent) bool {
			if n == 7 {
				return false
			}
			if e.Type != unix.DT_REG || e.Ino == 0 || off > 0 && e.Off >= off && e.Off != dirOffsetEOD-2 {
				t.Fatalf("bad entry %+v after %d", e, off)
			}
			got = append(got, e.Name)
			off = e.Off
			n++
			return true
		})
		if n == 0 {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// TestReadDirConcurrent lists a directory in small pieces while other
// goroutines create, remove and rename entries: every entry present
// throughout is listed in each listing, and no listing runs on (Linux's
// tmpfs may list an entry twice when the entry a listing would resume at
// is renamed meanwhile).
func TestReadDirConcurrent(t *testing.T) {
	r := New(Options{}).root
	stable := map[string]bool{}
	for i := range 300 {
		name := fmt.Sprintf("stable%03d", i)
		mustCreate(t, r, name)
		stable[name] = true
		// interleave churn entries between the stable ones
		mustCreate(t, r, fmt.Sprintf("churn%03d", i))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("churn%03d", (i*7+w)%300)
				if r.Unlink(name, root0) != nil {
					r.Create(name, 0o644, root0)
				}
				tmp := fmt.Sprintf("tmp%d-%d", w, i%50)
				if err := r.Rename(name, r, tmp, 0, root0); err == nil {
					r.Rename(tmp, r, name, 0, root0)
				}
			}
		}()
	}
	for range 200 {
		seen := map[string]int{}
		off := int64(0)
		for {
			n := 0
			r.ReadDir(off, func(e vfs.Dirent) bool {
				if n == 13 {
					return false
				}
				seen[e.Name]++
				off = e.Off
				n++
				return true
			})
			if n == 0 {
				break
			}
		}
		total := 0
		for _, n := range seen {
			total += n
		}
		for name := range stable {
			if seen[name] < 1 {
				t.Fatalf("%s not listed", name)
			}
		}
		if total > 3*700 {
			t.Fatalf("a listing of about 700 entries gave %d", total)
		}
	}
	close(stop)
	wg.Wait()
}
