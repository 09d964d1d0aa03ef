// fsops is a wasip1 test program for the differential test of iovfs run
// against wazero's built-in WASI: it runs a fixed script of file
// operations in the directory named by its argument and prints one line
// per step, with the result or the errno.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

var dir string

func p(s string) string { return filepath.Join(dir, s) }

// raw joins without cleaning, to keep a trailing "/" or "/.".
func raw(s string) string { return strings.TrimSuffix(dir, "/") + "/" + s }

func report(step string, v any, err error) {
	if err != nil {
		var e syscall.Errno
		if errors.As(err, &e) {
			fmt.Printf("%s: %s\n", step, errnoName(e))
			return
		}
		fmt.Printf("%s: error %v\n", step, err)
		return
	}
	fmt.Printf("%s: %v\n", step, v)
}

func main() {
	dir = os.Args[1]
	f, err := os.Create(p("a.txt"))
	report("create a.txt", f != nil, err)
	n, err := f.Write([]byte("hello, world\n"))
	report("write", n, err)
	n, err = f.WriteAt([]byte("HELLO"), 0)
	report("pwrite 0", n, err)
	n, err = f.WriteAt([]byte("tail"), 100)
	report("pwrite 100 (hole)", n, err)
	off, err := f.Seek(0, io.SeekCurrent)
	report("tell", off, err)
	off, err = f.Seek(-4, io.SeekEnd)
	report("seek end-4", off, err)
	b := make([]byte, 10)
	n, err = f.Read(b)
	report("read at end-4", fmt.Sprintf("%d %q", n, b[:n]), err)
	n, err = f.Read(b)
	report("read at eof", n, err)
	_, err = f.Seek(-1, io.SeekStart)
	report("seek -1", nil, err)
	n, err = f.ReadAt(b[:5], 0)
	report("pread 0", fmt.Sprintf("%d %q", n, b[:n]), err)
	st, err := f.Stat()
	report("fstat size", st.Size(), err)
	err = f.Truncate(8)
	report("ftruncate 8", nil, err)
	st, _ = f.Stat()
	report("size after truncate", st.Size(), nil)
	err = f.Sync()
	report("fsync", nil, err)
	report("close", nil, f.Close())
	err = f.Close()
	report("close again is ErrClosed", errors.Is(err, os.ErrClosed), nil)

	_, err = os.OpenFile(p("a.txt"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	report("create excl existing", nil, err)
	_, err = os.Open(p("missing"))
	report("open missing", nil, err)
	_, err = os.Open(p("a.txt/x"))
	report("open through a file", nil, err)

	af, err := os.OpenFile(p("log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	report("open append", nil, err)
	af.Write([]byte("one\n"))
	af.WriteAt([]byte("x"), 0)
	af.Write([]byte("two\n"))
	af.Close()
	data, err := os.ReadFile(p("log"))
	report("append result", fmt.Sprintf("%q", data), err)

	report("mkdir d", nil, os.Mkdir(p("d"), 0o755))
	report("mkdir d again", nil, os.Mkdir(p("d"), 0o755))
	report("mkdirall d/e/f", nil, os.MkdirAll(p("d/e/f"), 0o755))
	report("write d/e/f/g", nil, os.WriteFile(p("d/e/f/g"), []byte("g"), 0o644))
	report("rmdir non-empty", nil, syscall.Rmdir(p("d/e")))
	report("remove file as dir", nil, syscall.Rmdir(p("a.txt")))
	report("unlink dir", nil, syscall.Unlink(p("d")))
	report("rename a.txt b.txt", nil, os.Rename(p("a.txt"), p("b.txt")))
	report("rename missing", nil, os.Rename(p("nope"), p("b.txt")))
	report("rename dir onto file", nil, os.Rename(p("d"), p("b.txt")))
	report("rename file onto dir", nil, os.Rename(p("b.txt"), p("d")))
	report("rename dir into itself", nil, os.Rename(p("d"), p("d/e/x")))
	report("link b.txt c.txt", nil, os.Link(p("b.txt"), p("c.txt")))
	report("link onto existing", nil, os.Link(p("b.txt"), p("c.txt")))
	report("link a dir", nil, os.Link(p("d"), p("dl")))
	report("symlink", nil, os.Symlink("b.txt", p("s")))
	report("symlink dangling", nil, os.Symlink("nowhere", p("dang")))
	t, err := os.Readlink(p("s"))
	report("readlink", t, err)
	_, err = os.Readlink(p("b.txt"))
	report("readlink a file", nil, err)
	st, err = os.Stat(p("s"))
	report("stat via symlink", fmt.Sprint(st.Mode().IsRegular(), st.Size()), err)
	lst, err := os.Lstat(p("s"))
	report("lstat symlink", lst.Mode()&os.ModeSymlink != 0, err)
	_, err = os.Stat(p("dang"))
	report("stat dangling", nil, err)
	st, _ = os.Stat(p("b.txt"))
	report("nlink", st.Sys().(*syscall.Stat_t).Nlink, nil)
	report("remove c.txt", nil, os.Remove(p("c.txt")))
	st, _ = os.Stat(p("b.txt"))
	report("nlink after remove", st.Sys().(*syscall.Stat_t).Nlink, nil)
	report("truncate path", nil, os.Truncate(p("b.txt"), 3))
	report("truncate missing", nil, os.Truncate(p("zzz"), 3))

	for i := 0; i < 40; i++ {
		os.WriteFile(p(fmt.Sprintf("d/many-%02d", i)), []byte(strings.Repeat("x", i)), 0o644)
	}
	ents, err := os.ReadDir(p("d"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name()+map[bool]string{true: "/", false: ""}[e.IsDir()])
	}
	sort.Strings(names)
	report("readdir d", fmt.Sprint(len(names), names[:3], names[len(names)-1]), err)
	df, _ := os.Open(p("d"))
	first, err := df.Readdirnames(5)
	report("readdirnames 5", len(first), err)
	rest, err := df.Readdirnames(-1)
	report("readdirnames rest", len(rest), err)
	df.Close()
	_, err = os.ReadDir(p("b.txt"))
	report("readdir a file", nil, err)
	report("removeall d", nil, os.RemoveAll(p("d/e")))
	_, err = os.OpenFile(p("b.txt"), os.O_RDONLY|syscall.O_DIRECTORY, 0)
	report("O_DIRECTORY on a file", nil, err)
	_, err = os.OpenFile(p("s"), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	report("O_NOFOLLOW on a symlink", nil, err)
	_, err = os.OpenFile(p("d"), os.O_WRONLY, 0)
	report("open a directory for writing", nil, err)
	report("symlink loop", nil, os.Symlink("loop", p("loop")))
	_, err = os.Open(p("loop"))
	report("open a symlink loop", nil, err)
	_, err = os.Create(p(strings.Repeat("n", 256)))
	report("create a 256-byte name", nil, err)
	dd, _ := os.Open(p("d"))
	_, err = dd.Read(b)
	report("read a directory", nil, err)
	dd.Close()
	_, err = os.Stat(raw("b.txt/"))
	report("stat file/", nil, err)
	report("remove file/", nil, os.Remove(raw("b.txt/")))
	report("rename onto itself", nil, os.Rename(p("b.txt"), p("b.txt")))
	report("rename a missing name onto itself", nil, os.Rename(p("nope2"), p("nope2")))
	report("mkdir with a trailing slash", nil, os.Mkdir(raw("nd/"), 0o755))
	report("truncate a directory", nil, os.Truncate(p("nd"), 0))
	report("link a symlink", nil, os.Link(p("s"), p("s2")))
	lst, err = os.Lstat(p("s2"))
	report("lstat the link of a symlink", lst.Mode()&os.ModeSymlink != 0, err)
	report("rmdir with a trailing dot", nil, syscall.Rmdir(raw("nd/.")))
	report("remove nd", nil, os.Remove(p("nd")))
	wd, _ := os.Getwd()
	report("chdir d", nil, os.Chdir(p("d")))
	report("relative create", nil, os.WriteFile("rel", []byte("r"), 0o644))
	os.Chdir(wd)
}

// errnoName names e by the constants wasip1 and linux share, so the
// output of both builds can be compared.
func errnoName(e syscall.Errno) string {
	for _, c := range []struct {
		e    syscall.Errno
		name string
	}{
		{syscall.ENOENT, "ENOENT"}, {syscall.EEXIST, "EEXIST"}, {syscall.ENOTDIR, "ENOTDIR"},
		{syscall.EISDIR, "EISDIR"}, {syscall.ENOTEMPTY, "ENOTEMPTY"}, {syscall.EINVAL, "EINVAL"},
		{syscall.EBADF, "EBADF"}, {syscall.EPERM, "EPERM"}, {syscall.EXDEV, "EXDEV"},
		{syscall.ELOOP, "ELOOP"}, {syscall.EACCES, "EACCES"}, {syscall.ENOSPC, "ENOSPC"},
		{syscall.ESPIPE, "ESPIPE"}, {syscall.EBUSY, "EBUSY"}, {syscall.EMLINK, "EMLINK"},
		{syscall.ENAMETOOLONG, "ENAMETOOLONG"}, {syscall.EROFS, "EROFS"}, {syscall.ENOSYS, "ENOSYS"},
		{syscall.EIO, "EIO"}, {syscall.EFAULT, "EFAULT"}, {syscall.ENOTSUP, "ENOTSUP"},
	} {
		if e == c.e {
			return c.name
		}
	}
	return fmt.Sprintf("errno %d (%v)", int(e), e)
}
