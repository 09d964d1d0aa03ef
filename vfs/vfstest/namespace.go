package vfstest

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// The namespace cases: lookups, directories and renames, with Linux's
// errno rules.

func init() {
	add(
		testCase{name: "root", run: func(e *env) {
			st := e.lstat(e.root, "/")
			if !st.IsDir() {
				e.t.Errorf("/ is not a directory: mode %o", st.Mode)
			}
			if up := e.lstat(e.root, "/.."); up.Ino != st.Ino {
				e.t.Errorf("/.. is inode %d, / is %d: the root's parent is itself", up.Ino, st.Ino)
			}
			_, err := e.root.Lstat("/no-such-name")
			e.want("lstat of a missing name", err, unix.ENOENT)
			_, err = e.root.Lstat("/no-such-dir/x")
			e.want("lstat below a missing directory", err, unix.ENOENT)
			_, err = e.root.Lstat("/" + string(make([]byte, 256)))
			e.want("a 256-byte name", err, unix.ENAMETOOLONG)
		}},
		testCase{name: "listing matches lookups", run: func(e *env) {
			// Every entry listed can be looked up, as the type listed.
			for name := range e.names(e.root, "/") {
				if _, err := e.root.Lstat("/" + name); err != nil {
					e.t.Errorf("/%s is listed, but lstat gives %v", name, err)
				}
			}
		}},
		testCase{name: "unclaimed operations", run: func(e *env) {
			c := e.caps
			if !c.Dirs {
				e.want("mkdir without Mkdirer", e.root.Mkdir("/x", 0o755), unix.EPERM)
			}
			if !c.Files {
				_, err := e.root.Open("/x", unix.O_CREAT|unix.O_WRONLY, 0o644)
				e.want("O_CREAT without Creator", err, unix.EPERM)
			}
			if !c.Symlinks {
				e.want("symlink without Symlinker", e.root.Symlink("t", "/x"), unix.EPERM)
			}
		}},
		testCase{name: "mkdir and rmdir", needs: func(c Caps) bool { return c.Dirs }, run: func(e *env) {
			e.must("mkdir /d", e.root.Mkdir("/d", 0o755))
			e.want("mkdir of an existing name", e.root.Mkdir("/d", 0o755), unix.EEXIST)
			e.want("mkdir /d/. ", e.root.Mkdir("/d/.", 0o755), unix.EEXIST)
			e.must("mkdir with a trailing slash", e.root.Mkdir("/d/s/", 0o755))
			e.want("mkdir below a missing directory", e.root.Mkdir("/nope/s", 0o755), unix.ENOENT)
			e.want("rmdir of a non-empty directory", e.root.Rmdir("/d"), unix.ENOTEMPTY)
			e.want("rmdir /d/s/.", e.root.Rmdir("/d/s/."), unix.EINVAL)
			e.want("rmdir /d/s/..", e.root.Rmdir("/d/s/.."), unix.ENOTEMPTY)
			e.want("rmdir of a missing name", e.root.Rmdir("/d/nope"), unix.ENOENT)
			e.want("unlink of a directory", e.root.Unlink("/d/s"), unix.EISDIR)
			_, err := e.root.Open("/d", unix.O_WRONLY, 0)
			e.want("open a directory for writing", err, unix.EISDIR)
			if e.caps.DirNlink {
				if st := e.lstat(e.root, "/d"); st.Nlink != 3 {
					e.t.Errorf("nlink of a directory with one subdirectory: %d, want 3", st.Nlink)
				}
			}
			e.must("rmdir /d/s", e.root.Rmdir("/d/s"))
			e.must("rmdir /d", e.root.Rmdir("/d"))
			if _, err := e.root.Lstat("/d"); e.errno(err) != unix.ENOENT {
				e.t.Errorf("lstat of a removed directory: %v, want ENOENT", err)
			}
		}},
		testCase{name: "getcwd", needs: func(c Caps) bool { return c.Dirs }, run: func(e *env) {
			// getcwd names each directory by listing its parent and
			// looking the candidates up (which must not run inside the
			// file system's listing).
			for _, d := range []string{"/a", "/a/b", "/a/b/c"} {
				e.must("mkdir "+d, e.root.Mkdir(d, 0o755))
			}
			e.must("chdir", e.root.Chdir("/a/b/c"))
			if got, err := e.root.Getcwd(); got != "/a/b/c" || err != nil {
				e.t.Errorf("getcwd in /a/b/c: %q, %v", got, err)
			}
			if e.caps.Rename {
				e.must("rename", e.root.Rename("/a/b", "/b"))
				if got, err := e.root.Getcwd(); got != "/b/c" || err != nil {
					e.t.Errorf("getcwd after its parent moved to /b: %q, %v; want /b/c", got, err)
				}
			}
		}},
		testCase{name: "removed directory is dead", needs: func(c Caps) bool { return c.Dirs && c.Files }, run: func(e *env) {
			e.must("mkdir /d", e.root.Mkdir("/d", 0o755))
			fd, err := e.root.Open("/d", unix.O_PATH|unix.O_DIRECTORY, 0)
			e.must("open /d", err)
			defer e.root.Close(fd)
			e.must("rmdir /d", e.root.Rmdir("/d"))
			_, err = e.root.Openat(fd, "x", unix.O_CREAT|unix.O_WRONLY, 0o644)
			e.want("create in a removed directory (IS_DEADDIR)", err, unix.ENOENT)
			e.want("mkdir in a removed directory", e.root.Mkdirat(fd, "x", 0o755), unix.ENOENT)
			if st, err := e.root.Fstat(fd); err != nil || st.Nlink != 0 {
				e.t.Errorf("fstat of a removed directory: nlink %d, %v; want 0", st.Nlink, err)
			}
			e.must("mkdir /e", e.root.Mkdir("/e", 0o755))
			dfd, err := e.root.Open("/e", unix.O_RDONLY|unix.O_DIRECTORY, 0)
			e.must("open /e", err)
			defer e.root.Close(dfd)
			e.must("rmdir /e", e.root.Rmdir("/e"))
			_, err = e.root.Getdents(dfd)
			e.want("getdents of a removed directory (iterate_dir)", err, unix.ENOENT)
			if st, err := e.root.Fstat(dfd); err != nil || st.Nlink != 0 {
				e.t.Errorf("fstat of a removed directory open for reading: nlink %d, %v; want 0", st.Nlink, err)
			}
		}},
		testCase{name: "paths through files", needs: func(c Caps) bool { return c.Files }, run: func(e *env) {
			e.create(e.root, "/f", "x", 0o644)
			_, err := e.root.Lstat("/f/x")
			e.want("a path through a file", err, unix.ENOTDIR)
			_, err = e.root.Lstat("/f/")
			e.want("a file with a trailing slash", err, unix.ENOTDIR)
			_, err = e.root.Open("/f", unix.O_RDONLY|unix.O_DIRECTORY, 0)
			e.want("O_DIRECTORY on a file", err, unix.ENOTDIR)
			_, err = e.root.Open("/f", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
			e.want("O_CREAT|O_EXCL on an existing file", err, unix.EEXIST)
			_, err = e.root.Open("/g/", unix.O_CREAT|unix.O_WRONLY, 0o644)
			e.want("O_CREAT with a trailing slash", err, unix.EISDIR)
			e.want("rmdir of a file", e.root.Rmdir("/f"), unix.ENOTDIR)
			e.want("unlink with a trailing slash", e.root.Unlink("/f/"), unix.ENOTDIR)
		}},
	)
	add(renameCases...)
}

var renameCases = []testCase{
	{name: "rename rules", needs: func(c Caps) bool { return c.Rename && c.Dirs && c.Files }, run: func(e *env) {
		r := e.root
		for _, d := range []string{"/a", "/a/b", "/a/b/c", "/e", "/n", "/n/x"} {
			e.must("mkdir "+d, r.Mkdir(d, 0o755))
		}
		e.create(r, "/f", "f", 0o644)
		e.create(r, "/g", "g", 0o644)
		e.want("a directory into itself", r.Rename("/a", "/a/b/a"), unix.EINVAL)
		e.want("a directory onto its own child", r.Rename("/a", "/a/b"), unix.EINVAL)
		e.want("onto an ancestor of the source", r.Rename("/a/b/c", "/a"), unix.ENOTEMPTY)
		e.want("a directory onto a file", r.Rename("/e", "/f"), unix.ENOTDIR)
		e.want("a file onto a directory", r.Rename("/f", "/e"), unix.EISDIR)
		e.want("a directory onto a non-empty one", r.Rename("/e", "/n"), unix.ENOTEMPTY)
		e.want("a missing source", r.Rename("/nope", "/x"), unix.ENOENT)
		e.want("a last component of .", r.Rename("/a/.", "/x"), unix.EBUSY)
		e.want("onto ..", r.Rename("/f", "/a/.."), unix.EBUSY)
		e.want("a file with a trailing slash", r.Rename("/f/", "/x"), unix.ENOTDIR)
		e.want("a file to a name with a trailing slash", r.Rename("/f", "/x/"), unix.ENOTDIR)
		e.must("a file onto itself", r.Rename("/f", "/f"))
		fino := e.lstat(r, "/f").Ino
		e.must("a file over a file", r.Rename("/f", "/g"))
		if st := e.lstat(r, "/g"); st.Ino != fino {
			e.t.Errorf("after rename /f /g: /g is inode %d, want %d", st.Ino, fino)
		}
		if got := e.read(r, "/g"); got != "f" {
			e.t.Errorf("after rename /f /g: /g holds %q, want %q", got, "f")
		}
		if _, err := r.Lstat("/f"); e.errno(err) != unix.ENOENT {
			e.t.Errorf("after rename /f /g: lstat /f gives %v, want ENOENT", err)
		}
		e.must("a directory over an empty one", r.Rename("/e", "/n/x"))
		e.must("a directory with a trailing slash", r.Rename("/n/x/", "/n/y/"))
		// A directory moved to another parent: its ".." follows it, and
		// the parents' link counts move with it.
		e.must("a directory to another parent", r.Rename("/a/b", "/n/b"))
		if up, n := e.lstat(r, "/n/b/.."), e.lstat(r, "/n"); up.Ino != n.Ino {
			e.t.Errorf("/n/b/.. is inode %d after the move, want /n's %d", up.Ino, n.Ino)
		}
		if e.caps.DirNlink {
			if a, n := e.lstat(r, "/a"), e.lstat(r, "/n"); a.Nlink != 2 || n.Nlink != 4 {
				e.t.Errorf("after moving /a/b to /n/b: nlink /a %d, /n %d; want 2 and 4", a.Nlink, n.Nlink)
			}
		}
		want := map[string]bool{"b": true, "y": true}
		for name := range e.names(r, "/n") {
			if !want[name] {
				e.t.Errorf("/n lists %q after the renames", name)
			}
			delete(want, name)
		}
		for name := range want {
			e.t.Errorf("/n does not list %q after the renames", name)
		}
	}},
	{name: "rename hard links", needs: func(c Caps) bool { return c.Rename && c.HardLinks && c.Files }, run: func(e *env) {
		r := e.root
		e.create(r, "/f", "x", 0o644)
		e.must("link", r.Link("/f", "/g"))
		e.must("rename one link onto its twin", r.Rename("/f", "/g"))
		// rename(2): "If oldpath and newpath are existing hard links
		// referring to the same file, then rename() does nothing".
		for _, p := range []string{"/f", "/g"} {
			if st := e.lstat(r, p); st.Nlink != 2 {
				e.t.Errorf("%s: nlink %d after renaming onto the twin, want 2", p, st.Nlink)
			}
		}
	}},
	{name: "renameat2 RENAME_NOREPLACE", needs: func(c Caps) bool { return c.RenameFlags&unix.RENAME_NOREPLACE != 0 && c.Files }, run: func(e *env) {
		r := e.root
		e.create(r, "/f", "f", 0o644)
		e.create(r, "/g", "g", 0o644)
		e.want("onto an existing name", r.Renameat2(unix.AT_FDCWD, "/f", unix.AT_FDCWD, "/g", unix.RENAME_NOREPLACE), unix.EEXIST)
		e.must("to a free name", r.Renameat2(unix.AT_FDCWD, "/f", unix.AT_FDCWD, "/h", unix.RENAME_NOREPLACE))
		if got := e.read(r, "/h"); got != "f" {
			e.t.Errorf("/h holds %q, want %q", got, "f")
		}
	}},
	{name: "renameat2 RENAME_EXCHANGE", needs: func(c Caps) bool { return c.RenameFlags&unix.RENAME_EXCHANGE != 0 && c.Files && c.Dirs }, run: func(e *env) {
		r := e.root
		e.create(r, "/f", "f", 0o644)
		e.must("mkdir", r.Mkdir("/d", 0o755))
		e.must("mkdir", r.Mkdir("/d/s", 0o755))
		e.want("with a missing name", r.Renameat2(unix.AT_FDCWD, "/f", unix.AT_FDCWD, "/nope", unix.RENAME_EXCHANGE), unix.ENOENT)
		e.want("a directory with its own child", r.Renameat2(unix.AT_FDCWD, "/d", unix.AT_FDCWD, "/d/s", unix.RENAME_EXCHANGE), unix.EINVAL)
		e.want("with RENAME_NOREPLACE", r.Renameat2(unix.AT_FDCWD, "/f", unix.AT_FDCWD, "/d", unix.RENAME_EXCHANGE|unix.RENAME_NOREPLACE), unix.EINVAL)
		fino, dino := e.lstat(r, "/f").Ino, e.lstat(r, "/d").Ino
		e.must("a file with a directory", r.Renameat2(unix.AT_FDCWD, "/f", unix.AT_FDCWD, "/d", unix.RENAME_EXCHANGE))
		if f, d := e.lstat(r, "/f"), e.lstat(r, "/d"); f.Ino != dino || d.Ino != fino || !f.IsDir() {
			e.t.Errorf("after the exchange /f is inode %d (dir %v), /d %d; want %d and %d", f.Ino, f.IsDir(), d.Ino, dino, fino)
		}
		if up := e.lstat(r, "/f/s/.."); up.Ino != dino {
			e.t.Errorf("/f/s/.. is inode %d after the exchange, want %d", up.Ino, dino)
		}
	}},
	{name: "renameat2 RENAME_WHITEOUT", needs: func(c Caps) bool { return c.RenameFlags&unix.RENAME_WHITEOUT != 0 && c.Files }, run: func(e *env) {
		r := e.root
		e.create(r, "/f", "f", 0o644)
		e.must("whiteout", r.Renameat2(unix.AT_FDCWD, "/f", unix.AT_FDCWD, "/g", unix.RENAME_WHITEOUT))
		st := e.lstat(r, "/f")
		if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
			e.t.Errorf("the whiteout at /f: mode %o rdev %d, want a character device 0:0", st.Mode, st.Rdev)
		}
		e.want("whiteout of a missing name", r.Renameat2(unix.AT_FDCWD, "/nope", unix.AT_FDCWD, "/x", unix.RENAME_WHITEOUT), unix.ENOENT)
	}},
	{name: "renameat2 flags unclaimed", needs: func(c Caps) bool { return c.Rename && c.Files }, run: func(e *env) {
		e.create(e.root, "/f", "f", 0o644)
		for _, fl := range []uint{unix.RENAME_NOREPLACE, unix.RENAME_EXCHANGE, unix.RENAME_WHITEOUT} {
			if e.caps.RenameFlags&fl != 0 {
				continue
			}
			err := e.root.Renameat2(unix.AT_FDCWD, "/f", unix.AT_FDCWD, "/f2", fl)
			if fl == unix.RENAME_EXCHANGE {
				e.errno(err) // ENOENT or EINVAL: /f2 is missing
				continue
			}
			e.want("a renameat2 flag the file system lacks", err, syscall.EINVAL)
		}
	}},
}
