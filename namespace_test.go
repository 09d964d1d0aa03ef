package iovfs_test

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/iofs"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func newProc(t testing.TB) *vfs.Proc {
	t.Helper()
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func createFile(t testing.TB, p *vfs.Proc, path, data string) {
	t.Helper()
	fd, err := p.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
	must(t, err)
	if _, err := p.Write(fd, []byte(data)); err != nil {
		t.Fatal(err)
	}
	must(t, p.Close(fd))
}

// wantErrno checks err against an errno, where 0 means success.
func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if want == 0 {
		if err != nil {
			t.Errorf("%s: %v, want success", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v (the same as Linux)", what, err, want)
	}
}

func TestDefaultLayout(t *testing.T) {
	p := newProc(t)
	for path, mode := range map[string]uint32{"/": 0o755, "/dev": 0o755, "/tmp": 0o1777, "/mnt": 0o755} {
		st, err := p.Stat(path)
		if err != nil || !st.IsDir() || st.Mode&0o7777 != mode {
			t.Errorf("%s: %+v, %v; want a directory with mode %o", path, st, err, mode)
		}
	}
	root, _ := p.Stat("/")
	tmp, _ := p.Stat("/tmp")
	dev, _ := p.Stat("/dev/zero")
	if root.Dev == tmp.Dev || root.Dev == dev.Dev {
		t.Errorf("/, /tmp and /dev share a device number: %d %d %d", root.Dev, tmp.Dev, dev.Dev)
	}
}

// TestWalk lists path resolution cases, each with the errno Linux gives.
func TestWalk(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/tmp/d", 0o755))
	must(t, p.Mkdir("/tmp/d/e", 0o755))
	createFile(t, p, "/tmp/d/f", "file")
	must(t, p.Symlink("f", "/tmp/d/lf"))
	must(t, p.Symlink("e", "/tmp/d/le"))
	must(t, p.Symlink("/tmp/d", "/tmp/abs"))
	must(t, p.Symlink("missing", "/tmp/d/dangling"))
	must(t, p.Symlink("loop2", "/tmp/loop1"))
	must(t, p.Symlink("loop1", "/tmp/loop2"))
	// A chain of 40 links resolves; 41 gives ELOOP (MAXSYMLINKS).
	for i := 1; i <= 41; i++ {
		next := "/tmp/d/f"
		if i > 1 {
			next = "/tmp/c" + strconv.Itoa(i-1)
		}
		must(t, p.Symlink(next, "/tmp/c"+strconv.Itoa(i)))
	}
	long := strings.Repeat("x", 256)
	cases := []struct {
		path  string
		errno syscall.Errno
	}{
		{"/tmp/d/f", 0},
		{"/tmp//d///f", 0},
		{"/tmp/d/./e/../f", 0},
		{"/tmp/d/e/", 0},
		{"/tmp/d/f/", unix.ENOTDIR},
		{"/tmp/d/f/.", unix.ENOTDIR},
		{"/tmp/d/f/x", unix.ENOTDIR},
		{"/tmp/d/missing", unix.ENOENT},
		{"/tmp/d/missing/x", unix.ENOENT},
		{"/tmp/d/lf", 0},
		{"/tmp/d/lf/", unix.ENOTDIR},
		{"/tmp/d/le/", 0},
		{"/tmp/abs/e/../f", 0},
		{"/tmp/d/dangling", unix.ENOENT},
		{"/tmp/loop1", unix.ELOOP},
		{"/tmp/c40", 0},
		{"/tmp/c41", unix.ELOOP},
		{"/tmp/" + long, unix.ENAMETOOLONG},
		{"/tmp/" + strings.Repeat("a/", 2100), unix.ENAMETOOLONG},
		{"", unix.ENOENT},
		{"/..", 0},
		{"/../tmp/d/f", 0},
		{"/tmp/..", 0},
		{"/dev/../tmp/d/f", 0},
	}
	for _, c := range cases {
		_, err := p.Stat(c.path)
		wantErrno(t, "stat "+shortName(c.path), err, c.errno)
	}
	// ".." at a mount root goes to the parent mount.
	st1, _ := p.Stat("/tmp/..")
	st2, _ := p.Stat("/")
	if st1.Ino != st2.Ino || st1.Dev != st2.Dev {
		t.Errorf("/tmp/.. is not /: %+v vs %+v", st1, st2)
	}
	// Lstat does not follow; O_NOFOLLOW gives ELOOP on a final symlink.
	st, err := p.Lstat("/tmp/d/lf")
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK || st.Size != 1 {
		t.Errorf("lstat of a symlink: %+v, %v", st, err)
	}
	_, err = p.Open("/tmp/d/lf", unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	wantErrno(t, "open O_NOFOLLOW on a symlink", err, unix.ELOOP)
	_, err = p.Open("/tmp/d/f", unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	wantErrno(t, "open O_NOFOLLOW on a file", err, 0)
}

func shortName(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func TestChdirAndRelativePaths(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/tmp/a", 0o755))
	must(t, p.Mkdir("/tmp/a/b", 0o755))
	must(t, p.Chdir("/tmp/a"))
	createFile(t, p, "b/f", "x")
	if _, err := p.Stat("/tmp/a/b/f"); err != nil {
		t.Fatal(err)
	}
	must(t, p.Chdir("b"))
	if cwd, err := p.Getcwd(); cwd != "/tmp/a/b" || err != nil {
		t.Fatalf("Getcwd = %q, %v", cwd, err)
	}
	must(t, p.Chdir("../../.."))
	if cwd, _ := p.Getcwd(); cwd != "/" {
		t.Fatalf("Getcwd after .. = %q", cwd)
	}
	wantErrno(t, "chdir to a file", p.Chdir("/tmp/a/b/f"), unix.ENOTDIR)
	wantErrno(t, "chdir to nothing", p.Chdir("/nope"), unix.ENOENT)
	must(t, p.Chdir("/tmp/a/b"))
	must(t, p.Unlink("f"))
	must(t, p.Rmdir("/tmp/a/b"))
	_, err := p.Getcwd()
	wantErrno(t, "getcwd in a removed directory", err, unix.ENOENT)
}

// TestPathOperations lists each operation's error cases with Linux's
// errno.
func TestPathOperations(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/tmp/d", 0o755))
	must(t, p.Mkdir("/tmp/d/sub", 0o755))
	must(t, p.Mkdir("/tmp/empty", 0o755))
	createFile(t, p, "/tmp/d/f", "hello")
	createFile(t, p, "/tmp/g", "g")
	must(t, p.Symlink("f", "/tmp/d/l"))
	cases := []struct {
		name  string
		err   error
		errno syscall.Errno
	}{
		{"mkdir existing", p.Mkdir("/tmp/d", 0o755), unix.EEXIST},
		{"mkdir existing file", p.Mkdir("/tmp/g", 0o755), unix.EEXIST},
		{"mkdir .", p.Mkdir("/tmp/d/.", 0o755), unix.EEXIST},
		{"mkdir in missing dir", p.Mkdir("/tmp/nope/x", 0o755), unix.ENOENT},
		{"mkdir under a file", p.Mkdir("/tmp/g/x", 0o755), unix.ENOTDIR},
		{"mkdir with trailing slash", p.Mkdir("/tmp/t/", 0o755), 0},
		{"rmdir a file", p.Rmdir("/tmp/g"), unix.ENOTDIR},
		{"rmdir non-empty", p.Rmdir("/tmp/d"), unix.ENOTEMPTY},
		{"rmdir .", p.Rmdir("/tmp/empty/."), unix.EINVAL},
		{"rmdir ..", p.Rmdir("/tmp/empty/.."), unix.ENOTEMPTY},
		{"rmdir a mount point", p.Rmdir("/tmp"), unix.EBUSY},
		{"rmdir /", p.Rmdir("/"), unix.EBUSY},
		{"rmdir missing", p.Rmdir("/tmp/nope"), unix.ENOENT},
		{"unlink a directory", p.Unlink("/tmp/d/sub"), unix.EISDIR},
		{"unlink file with trailing slash", p.Unlink("/tmp/g/"), unix.ENOTDIR},
		{"unlink missing", p.Unlink("/tmp/nope"), unix.ENOENT},
		{"symlink onto existing", p.Symlink("x", "/tmp/g"), unix.EEXIST},
		{"symlink empty target", p.Symlink("", "/tmp/s"), unix.ENOENT},
		{"link a directory", p.Link("/tmp/d", "/tmp/d2"), unix.EPERM},
		{"link onto existing", p.Link("/tmp/g", "/tmp/d/f"), unix.EEXIST},
		{"link across mounts", p.Link("/tmp/g", "/mnt/g"), unix.EXDEV},
		{"link missing", p.Link("/tmp/nope", "/tmp/x"), unix.ENOENT},
		{"rename across mounts", p.Rename("/tmp/g", "/mnt/g"), unix.EXDEV},
		{"rename dir into itself", p.Rename("/tmp/d", "/tmp/d/sub/x"), unix.EINVAL},
		{"rename dir onto non-empty dir", p.Rename("/tmp/empty", "/tmp/d"), unix.ENOTEMPTY},
		{"rename dir onto file", p.Rename("/tmp/empty", "/tmp/g"), unix.ENOTDIR},
		{"rename file onto dir", p.Rename("/tmp/g", "/tmp/empty"), unix.EISDIR},
		{"rename file with trailing slash", p.Rename("/tmp/g/", "/tmp/h"), unix.ENOTDIR},
		{"rename .", p.Rename("/tmp/d/.", "/tmp/x"), unix.EBUSY},
		{"rename onto itself", p.Rename("/tmp/g", "/tmp/g"), 0},
		{"rename a mount point", p.Rename("/tmp", "/tmp2"), unix.EBUSY},
		{"truncate a directory", p.Truncate("/tmp/d", 0), unix.EISDIR},
		{"truncate negative", p.Truncate("/tmp/g", -1), unix.EINVAL},
		{"readlink a file", func() error { _, err := p.Readlink("/tmp/g"); return err }(), unix.EINVAL},
	}
	for _, c := range cases {
		wantErrno(t, c.name, c.err, c.errno)
		var pe *fs.PathError
		if c.err != nil && !errors.As(c.err, &pe) {
			t.Errorf("%s: %T is not a *fs.PathError", c.name, c.err)
		}
	}
	// The successful forms.
	must(t, p.Rename("/tmp/empty", "/tmp/t")) // a directory onto an empty one
	must(t, p.Link("/tmp/g", "/tmp/d/g2"))
	if st, _ := p.Stat("/tmp/g"); st.Nlink != 2 {
		t.Errorf("nlink after link = %d, want 2", st.Nlink)
	}
	must(t, p.Rename("/tmp/g", "/tmp/d/f")) // replaces a file
	if s, err := p.Readlink("/tmp/d/l"); s != "f" || err != nil {
		t.Errorf("readlink = %q, %v", s, err)
	}
	must(t, p.Truncate("/tmp/d/l", 1)) // through the symlink
	if st, _ := p.Stat("/tmp/d/f"); st.Size != 1 {
		t.Errorf("size after truncate = %d", st.Size)
	}
	must(t, p.Chmod("/tmp/d/f", 0o600))
	when := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	must(t, p.Utimes("/tmp/d/f", when, when))
	if st, _ := p.Stat("/tmp/d/f"); st.Mode&0o7777 != 0o600 || !st.Mtime.Equal(when) || !st.Atime.Equal(when) {
		t.Errorf("after chmod/utimes: %+v", st)
	}
}

func TestOpenFlags(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/tmp/d", 0o755))
	createFile(t, p, "/tmp/f", "hello")
	must(t, p.Symlink("new", "/tmp/dangling"))
	open := func(path string, flags int) error {
		fd, err := p.Open(path, flags, 0o644)
		if err == nil {
			p.Close(fd)
		}
		return err
	}
	cases := []struct {
		name  string
		path  string
		flags int
		errno syscall.Errno
	}{
		{"O_CREAT|O_EXCL on existing", "/tmp/f", unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, unix.EEXIST},
		{"O_CREAT|O_EXCL on a symlink", "/tmp/dangling", unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, unix.EEXIST},
		{"directory for writing", "/tmp/d", unix.O_WRONLY, unix.EISDIR},
		{"directory with O_CREAT", "/tmp/d", unix.O_CREAT | unix.O_RDONLY, unix.EISDIR},
		{"O_CREAT with trailing slash", "/tmp/n/", unix.O_CREAT | unix.O_RDWR, unix.EISDIR},
		{"O_DIRECTORY on a file", "/tmp/f", unix.O_DIRECTORY, unix.ENOTDIR},
		{"O_CREAT in a missing dir", "/tmp/x/y", unix.O_CREAT | unix.O_RDWR, unix.ENOENT},
		{"missing without O_CREAT", "/tmp/nope", unix.O_RDONLY, unix.ENOENT},
		{"O_CREAT through a dangling symlink creates its target", "/tmp/dangling", unix.O_CREAT | unix.O_WRONLY, 0},
	}
	for _, c := range cases {
		wantErrno(t, c.name, open(c.path, c.flags), c.errno)
	}
	if _, err := p.Stat("/tmp/new"); err != nil {
		t.Errorf("O_CREAT through a dangling symlink did not create /tmp/new: %v", err)
	}
	must(t, open("/tmp/f", unix.O_RDONLY|unix.O_TRUNC))
	if st, _ := p.Stat("/tmp/f"); st.Size != 0 {
		t.Errorf("O_TRUNC left size %d", st.Size)
	}
	p.Umask(0o027)
	must(t, open("/tmp/m", unix.O_CREAT|unix.O_WRONLY))
	if st, _ := p.Stat("/tmp/m"); st.Mode&0o777 != 0o640 {
		t.Errorf("mode with umask 027 = %o, want 640", st.Mode&0o777)
	}
}

func TestMounts(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/mnt/ro", 0o755))
	must(t, p.Mkdir("/mnt/rw", 0o755))
	createFile(t, p, "/mnt/file", "x")
	wantErrno(t, "mount on a file", p.Mount("tmpfs", "/mnt/file", "tmpfs", 0, ""), unix.ENOTDIR)
	wantErrno(t, "mount unknown type", p.Mount("x", "/mnt/rw", "nosuchfs", 0, ""), unix.ENODEV)
	wantErrno(t, "mount bad data", p.Mount("x", "/mnt/rw", "tmpfs", 0, "bogus=1"), unix.EINVAL)
	must(t, p.Mount("tmpfs", "/mnt/ro", "tmpfs", unix.MS_RDONLY, ""))
	_, err := p.Open("/mnt/ro/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	wantErrno(t, "create on a read-only mount", err, unix.EROFS)
	wantErrno(t, "mkdir on a read-only mount", p.Mkdir("/mnt/ro/d", 0o755), unix.EROFS)
	wantErrno(t, "chmod on a read-only mount", p.Chmod("/mnt/ro", 0o700), unix.EROFS)

	must(t, p.Mount("tmpfs", "/mnt/rw", "tmpfs", 0, "size=8k"))
	createFile(t, p, "/mnt/rw/a", "data")
	fd, err := p.Open("/mnt/rw/big", unix.O_CREAT|unix.O_WRONLY, 0o644)
	must(t, err)
	n, err := p.Write(fd, make([]byte, 16384))
	if n != 4096 || err != nil {
		t.Errorf("write over size=8k: %d, %v; want the 4096 bytes that fit", n, err)
	}
	_, err = p.Write(fd, make([]byte, 10))
	wantErrno(t, "write on a full tmpfs", err, unix.ENOSPC)
	// Busy: an open file, then a mount below.
	wantErrno(t, "unmount with an open file", p.Unmount("/mnt/rw", 0), unix.EBUSY)
	must(t, p.Close(fd))
	must(t, p.Mkdir("/mnt/rw/sub", 0o755))
	must(t, p.Mount("tmpfs", "/mnt/rw/sub", "tmpfs", 0, ""))
	wantErrno(t, "unmount with a mount below", p.Unmount("/mnt/rw", 0), unix.EBUSY)
	wantErrno(t, "unmount a non-mount", p.Unmount("/mnt/file", 0), unix.EINVAL)
	wantErrno(t, "unmount /", p.Unmount("/", 0), unix.EBUSY)
	wantErrno(t, "unmount with bad flags", p.Unmount("/mnt/rw", 0x100), unix.EINVAL)
	must(t, p.Unmount("/mnt/rw/sub", 0))
	// Lazy detach keeps an open file working.
	fd, err = p.Open("/mnt/rw/a", unix.O_RDONLY, 0)
	must(t, err)
	must(t, p.Unmount("/mnt/rw", unix.MNT_DETACH))
	if _, err := p.Stat("/mnt/rw/a"); !errors.Is(err, unix.ENOENT) {
		t.Errorf("after detach the mount is still visible: %v", err)
	}
	b := make([]byte, 4)
	if n, err := p.Read(fd, b); n != 4 || string(b) != "data" || err != nil {
		t.Errorf("read after lazy detach = %d %q %v", n, b, err)
	}
	must(t, p.Close(fd))
	// A bind mount shows the same files.
	must(t, p.Mount("/tmp", "/mnt/rw", "", unix.MS_BIND, ""))
	createFile(t, p, "/tmp/seen", "x")
	if _, err := p.Stat("/mnt/rw/seen"); err != nil {
		t.Errorf("bind mount: %v", err)
	}
}

func TestGetdents(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/tmp/d", 0o755))
	for _, n := range []string{"c", "a", "b"} {
		createFile(t, p, "/tmp/d/"+n, n)
	}
	fd, err := p.Open("/tmp/d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	ents, err := p.Getdents(fd)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != ".,..,b,a,c" {
		t.Errorf("getdents = %v, want . .. then newest first, as Linux's tmpfs", names)
	}
	if more, err := p.Getdents(fd); len(more) != 0 || err != nil {
		t.Errorf("second getdents = %v, %v; want the end", more, err)
	}
	if _, err := p.Seek(fd, 0, unix.SEEK_SET); err != nil {
		t.Fatal(err)
	}
	if again, _ := p.Getdents(fd); len(again) != 5 {
		t.Errorf("after rewind: %d entries", len(again))
	}
	ffd, _ := p.Open("/tmp/d/a", unix.O_RDONLY, 0)
	_, err = p.Getdents(ffd)
	wantErrno(t, "getdents on a file", err, unix.ENOTDIR)
	_, err = p.Read(fd, make([]byte, 1))
	wantErrno(t, "read on a directory", err, unix.EISDIR)
}

// TestIOFS runs fstest.TestFS over a tree built through the API: nested
// directories, a symlink, an empty file and a large sparse file.
func TestIOFS(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/tmp/t", 0o755))
	must(t, p.Mkdir("/tmp/t/a", 0o755))
	must(t, p.Mkdir("/tmp/t/a/b", 0o755))
	createFile(t, p, "/tmp/t/a/b/deep.txt", "deep")
	createFile(t, p, "/tmp/t/empty", "")
	createFile(t, p, "/tmp/t/hello.txt", "hello, world\n")
	must(t, p.Symlink("hello.txt", "/tmp/t/link"))
	fd, err := p.Open("/tmp/t/sparse", unix.O_CREAT|unix.O_WRONLY, 0o644)
	must(t, err)
	if _, err := p.Pwrite(fd, []byte("end"), 8<<20); err != nil {
		t.Fatal(err)
	}
	p.Close(fd)
	fsys := iofs.New(p, "/tmp/t")
	if err := fstest.TestFS(fsys, "a/b/deep.txt", "empty", "hello.txt", "link", "sparse"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Open("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open missing: %v, want fs.ErrNotExist", err)
	}
	var pe *fs.PathError
	if _, err := fsys.Open("../etc"); !errors.As(err, &pe) || !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("Open ../etc: %v, want ErrInvalid", err)
	}
	data, err := fs.ReadFile(fsys, "sparse")
	if err != nil || len(data) != 8<<20+3 || string(data[8<<20:]) != "end" || data[100] != 0 {
		t.Errorf("sparse read: %d bytes, %v", len(data), err)
	}
}

// TestTmpfsNoAllocs holds the tmpfs read and overwrite paths, through the
// descriptor API, at 0 allocations.
func TestTmpfsNoAllocs(t *testing.T) {
	p := newProc(t)
	fd, err := p.Open("/tmp/f", unix.O_CREAT|unix.O_RDWR, 0o644)
	must(t, err)
	buf := make([]byte, 4096)
	if _, err := p.Pwrite(fd, make([]byte, 64<<10), 0); err != nil {
		t.Fatal(err)
	}
	vec := [][]byte{buf[:1000], buf[1000:]}
	calls := []struct {
		name string
		do   func()
	}{
		{"Read", func() { p.Seek(fd, 0, unix.SEEK_SET); p.Read(fd, buf) }},
		{"Pread", func() { p.Pread(fd, buf, 8192) }},
		{"Readv", func() { p.Seek(fd, 0, unix.SEEK_SET); p.Readv(fd, vec) }},
		{"Preadv", func() { p.Preadv(fd, vec, 4096) }},
		{"Write (overwrite)", func() { p.Seek(fd, 0, unix.SEEK_SET); p.Write(fd, buf) }},
		{"Pwrite (overwrite)", func() { p.Pwrite(fd, buf, 12288) }},
		{"Writev (overwrite)", func() { p.Seek(fd, 0, unix.SEEK_SET); p.Writev(fd, vec) }},
	}
	for _, c := range calls {
		if a := testing.AllocsPerRun(200, c.do); a != 0 {
			t.Errorf("%s of 4 KiB on tmpfs: %v allocs, want 0", c.name, a)
		}
	}
}

// TestTmpfsConcurrency runs readers and writers on one file, and creates,
// unlinks and renames across a directory, at once; run it with -race.
func TestTmpfsConcurrency(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/tmp/d", 0o755))
	createFile(t, p, "/tmp/d/shared", strings.Repeat("x", 64<<10))
	done := make(chan struct{})
	errs := make(chan error, 16)
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			fd, err := p.Open("/tmp/d/shared", unix.O_RDWR, 0)
			if err != nil {
				errs <- err
				return
			}
			defer p.Close(fd)
			buf := make([]byte, 4096)
			for i := 0; i < 300; i++ {
				off := int64(i%16) * 4096
				if g%2 == 0 {
					if _, err := p.Pread(fd, buf, off); err != nil {
						errs <- err
					}
				} else if _, err := p.Pwrite(fd, buf, off); err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer func() { done <- struct{}{} }()
			name := "/tmp/d/f" + strconv.Itoa(g)
			for i := 0; i < 200; i++ {
				if fd, err := p.Open(name, unix.O_CREAT|unix.O_WRONLY, 0o644); err == nil {
					p.Write(fd, []byte("abc"))
					p.Close(fd)
				}
				p.Rename(name, name+"r")
				p.Link(name+"r", name)
				p.Unlink(name + "r")
				p.Unlink(name)
				fd, err := p.Open("/tmp/d", unix.O_RDONLY, 0)
				if err == nil {
					p.Getdents(fd)
					p.Close(fd)
				}
			}
		}()
	}
	for i := 0; i < 8; i++ {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
