package vfstest

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// The data cases: what a regular file holds after writes, truncates,
// appends and holes, and after its name goes.

func init() {
	add(
		testCase{name: "write and read", needs: func(c Caps) bool { return c.Files }, run: func(e *env) {
			r := e.root
			fd, err := r.Open("/f", unix.O_CREAT|unix.O_RDWR, 0o644)
			e.must("create", err)
			defer r.Close(fd)
			n, err := r.Write(fd, []byte("hello, world"))
			if n != 12 || err != nil {
				e.t.Fatalf("write: %d, %v", n, err)
			}
			n, err = r.Pwrite(fd, []byte("W"), 7)
			if n != 1 || err != nil {
				e.t.Fatalf("pwrite: %d, %v", n, err)
			}
			buf := make([]byte, 64)
			n, err = r.Pread(fd, buf, 0)
			if err != nil || string(buf[:n]) != "hello, World" {
				e.t.Errorf("pread: %q, %v; want %q", buf[:n], err, "hello, World")
			}
			n, err = r.Pread(fd, buf, 100)
			if n != 0 || err != nil {
				e.t.Errorf("pread past the end: %d, %v; want 0, nil", n, err)
			}
			// A write past the end leaves a hole that reads as zeros.
			if _, err := r.Pwrite(fd, []byte("z"), 8191); err != nil {
				e.t.Fatal(err)
			}
			if st, _ := r.Fstat(fd); st.Size != 8192 {
				e.t.Errorf("size after a write at 8191: %d, want 8192", st.Size)
			}
			hole := make([]byte, 8192-12)
			if n, err := r.Pread(fd, hole, 12); n != len(hole) || err != nil || !bytes.Equal(hole[:len(hole)-1], make([]byte, len(hole)-1)) {
				e.t.Errorf("a hole: %d bytes, %v, not all zeros", n, err)
			}
			_, err = r.Pwrite(fd, []byte("x"), -1)
			e.want("pwrite at a negative offset", err, unix.EINVAL)
		}},
		testCase{name: "truncate", needs: func(c Caps) bool { return c.Files }, run: func(e *env) {
			r := e.root
			e.create(r, "/f", "0123456789", 0o644)
			e.must("truncate to 4", r.Truncate("/f", 4))
			if got := e.read(r, "/f"); got != "0123" {
				e.t.Errorf("after truncate to 4: %q", got)
			}
			e.must("truncate to 6", r.Truncate("/f", 6))
			if got := e.read(r, "/f"); got != "0123\x00\x00" {
				e.t.Errorf("after growing to 6: %q, want zeros past the old end", got)
			}
			e.want("truncate to a negative size", r.Truncate("/f", -1), unix.EINVAL)
			fd, err := r.Open("/f", unix.O_WRONLY|unix.O_TRUNC, 0)
			e.must("O_TRUNC", err)
			r.Close(fd)
			if st := e.lstat(r, "/f"); st.Size != 0 {
				e.t.Errorf("size after O_TRUNC: %d", st.Size)
			}
			if e.caps.Dirs {
				e.must("mkdir", r.Mkdir("/d", 0o755))
				e.want("truncate a directory", r.Truncate("/d", 0), unix.EISDIR)
			}
		}},
		testCase{name: "append", needs: func(c Caps) bool { return c.Files }, run: func(e *env) {
			r := e.root
			e.create(r, "/f", "abc", 0o644)
			fd, err := r.Open("/f", unix.O_WRONLY|unix.O_APPEND, 0)
			e.must("open O_APPEND", err)
			if _, err := r.Pwrite(fd, []byte("d"), 0); err != nil {
				e.t.Fatal(err)
			}
			if _, err := r.Write(fd, []byte("e")); err != nil {
				e.t.Fatal(err)
			}
			r.Close(fd)
			// pwrite on an O_APPEND file appends, as Linux does.
			if got := e.read(r, "/f"); got != "abcde" {
				e.t.Errorf("after appends: %q, want %q", got, "abcde")
			}
		}},
		testCase{name: "unlinked open file", needs: func(c Caps) bool { return c.Files }, run: func(e *env) {
			r := e.root
			e.create(r, "/f", "still here", 0o644)
			fd, err := r.Open("/f", unix.O_RDWR, 0)
			e.must("open", err)
			defer r.Close(fd)
			e.must("unlink", r.Unlink("/f"))
			if _, err := r.Lstat("/f"); e.errno(err) != unix.ENOENT {
				e.t.Errorf("lstat after unlink: %v, want ENOENT", err)
			}
			if st, err := r.Fstat(fd); err != nil || st.Nlink != 0 {
				e.t.Errorf("fstat of the unlinked file: nlink %d, %v; want 0", st.Nlink, err)
			}
			buf := make([]byte, 32)
			if n, err := r.Pread(fd, buf, 0); err != nil || string(buf[:n]) != "still here" {
				e.t.Errorf("read of the unlinked file: %q, %v", buf[:n], err)
			}
			if _, err := r.Pwrite(fd, []byte("S"), 0); err != nil {
				e.t.Errorf("write to the unlinked file: %v", err)
			}
			e.create(r, "/f", "new", 0o644)
			if got := e.read(r, "/f"); got != "new" {
				e.t.Errorf("the new /f holds %q", got)
			}
		}},
		testCase{name: "symlinks", needs: func(c Caps) bool { return c.Symlinks && c.Files }, run: func(e *env) {
			r := e.root
			e.create(r, "/f", "target", 0o644)
			e.must("symlink", r.Symlink("f", "/l"))
			if got, err := r.Readlink("/l"); got != "f" || err != nil {
				e.t.Errorf("readlink: %q, %v", got, err)
			}
			if got := e.read(r, "/l"); got != "target" {
				e.t.Errorf("read through the link: %q", got)
			}
			if st := e.lstat(r, "/l"); st.Mode&unix.S_IFMT != unix.S_IFLNK {
				e.t.Errorf("lstat of a symlink: mode %o", st.Mode)
			}
			_, err := r.Open("/l", unix.O_RDONLY|unix.O_NOFOLLOW, 0)
			e.want("O_NOFOLLOW on a symlink", err, unix.ELOOP)
			e.want("symlink onto an existing name", r.Symlink("x", "/f"), unix.EEXIST)
			e.want("an empty target", r.Symlink("", "/e"), unix.ENOENT)
			e.must("symlink", r.Symlink("/loop2", "/loop1"))
			e.must("symlink", r.Symlink("/loop1", "/loop2"))
			_, err = r.Stat("/loop1")
			e.want("a symlink loop", err, unix.ELOOP)
			// O_CREAT through a dangling link creates its target.
			e.must("symlink", r.Symlink("made", "/dangling"))
			fd, err := r.Open("/dangling", unix.O_CREAT|unix.O_WRONLY, 0o644)
			e.must("O_CREAT through a dangling symlink", err)
			r.Close(fd)
			e.lstat(r, "/made")
			_, err = r.Readlink("/f")
			e.want("readlink of a file", err, unix.EINVAL)
		}},
		testCase{name: "hard links", needs: func(c Caps) bool { return c.HardLinks && c.Files }, run: func(e *env) {
			r := e.root
			e.create(r, "/f", "data", 0o644)
			e.must("link", r.Link("/f", "/g"))
			f, g := e.lstat(r, "/f"), e.lstat(r, "/g")
			if f.Ino != g.Ino || f.Nlink != 2 {
				e.t.Errorf("after link: inodes %d and %d, nlink %d; want one inode with 2 links", f.Ino, g.Ino, f.Nlink)
			}
			e.want("link onto an existing name", r.Link("/f", "/g"), unix.EEXIST)
			e.want("link of a missing name", r.Link("/nope", "/x"), unix.ENOENT)
			if e.caps.Dirs {
				e.must("mkdir", r.Mkdir("/d", 0o755))
				e.want("link of a directory", r.Link("/d", "/d2"), unix.EPERM)
			}
			e.must("unlink one name", r.Unlink("/f"))
			if st := e.lstat(r, "/g"); st.Nlink != 1 {
				e.t.Errorf("nlink after unlinking one name: %d, want 1", st.Nlink)
			}
			if got := e.read(r, "/g"); got != "data" {
				e.t.Errorf("the other name holds %q", got)
			}
		}},
		testCase{name: "FIFOs", needs: func(c Caps) bool { return c.FIFOs }, run: func(e *env) {
			e.must("mknod", e.root.Mknod("/p", unix.S_IFIFO|0o644, 0))
			if st := e.lstat(e.root, "/p"); st.Mode&unix.S_IFMT != unix.S_IFIFO {
				e.t.Errorf("mode of a FIFO: %o", st.Mode)
			}
			e.want("mknod onto an existing name", e.root.Mknod("/p", unix.S_IFIFO|0o644, 0), unix.EEXIST)
		}},
		testCase{name: "extended attributes", needs: func(c Caps) bool { return c.Xattrs && c.Files }, run: func(e *env) {
			r := e.root
			e.create(r, "/f", "", 0o644)
			_, err := r.Getxattr("/f", "user.x")
			e.want("a missing attribute", err, unix.ENODATA)
			e.must("setxattr", r.Setxattr("/f", "user.x", []byte("v1"), 0))
			e.want("XATTR_CREATE on a present name", r.Setxattr("/f", "user.x", []byte("v"), unix.XATTR_CREATE), unix.EEXIST)
			e.want("XATTR_REPLACE on a missing name", r.Setxattr("/f", "user.y", []byte("v"), unix.XATTR_REPLACE), unix.ENODATA)
			e.must("XATTR_REPLACE", r.Setxattr("/f", "user.x", []byte("v2"), unix.XATTR_REPLACE))
			if v, err := r.Getxattr("/f", "user.x"); string(v) != "v2" || err != nil {
				e.t.Errorf("getxattr: %q, %v", v, err)
			}
			found := false
			names, err := r.Listxattr("/f")
			for _, n := range names {
				found = found || n == "user.x"
			}
			if !found || err != nil {
				e.t.Errorf("listxattr: %q, %v; want user.x among them", names, err)
			}
			e.must("removexattr", r.Removexattr("/f", "user.x"))
			e.want("removexattr of a missing name", r.Removexattr("/f", "user.x"), unix.ENODATA)
		}},
	)
}
