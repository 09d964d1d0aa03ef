package fuse

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// syscallSteps runs a fixed sequence of calls in dir, covering what the
// export serves beyond plain reads and writes: fallocate and hole
// punching, SEEK_DATA and SEEK_HOLE, copy_file_range, xattrs, renameat2's
// flags, FIFOs, hard links, utimensat with UTIME_OMIT, statfs, and the
// errnos of the directory calls. It returns every errno and result.
func syscallSteps(t *testing.T, dir string) []int64 {
	var out []int64
	p := func(n string) string { return filepath.Join(dir, n) }
	e := func(err error) {
		errno, _ := err.(syscall.Errno)
		if err != nil && errno == 0 {
			t.Fatalf("not an errno: %v", err)
		}
		out = append(out, int64(errno))
	}
	v := func(xs ...int64) { out = append(out, xs...) }
	stat := func(n string) {
		var st unix.Stat_t
		e(unix.Lstat(p(n), &st))
		v(int64(st.Mode), int64(st.Nlink), st.Size, st.Blocks*512/4096)
	}
	fd, err := unix.Open(p("a"), unix.O_CREAT|unix.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	data := bytes.Repeat([]byte("0123456789abcdef"), 2048) // 32 KiB
	n, err := unix.Pwrite(fd, data, 0)
	e(err)
	v(int64(n))
	e(unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 8192, 8192))
	for _, w := range []struct {
		off    int64
		whence int
	}{{0, unix.SEEK_DATA}, {0, unix.SEEK_HOLE}, {8192, unix.SEEK_DATA}, {9000, unix.SEEK_HOLE}, {40000, unix.SEEK_DATA}, {32768, unix.SEEK_HOLE}} {
		o, err := unix.Seek(fd, w.off, w.whence)
		e(err)
		v(o)
	}
	buf := make([]byte, 32768)
	n, err = unix.Pread(fd, buf, 0)
	e(err)
	v(int64(n), int64(bytes.Count(buf, []byte{0})))
	e(unix.Fallocate(fd, 0, 0, 65536))
	stat("a")
	e(unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 65536, 4096))
	stat("a")
	e(unix.Ftruncate(fd, 20000))
	stat("a")

	fd2, err := unix.Open(p("b"), unix.O_CREAT|unix.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd2)
	roff, woff := int64(100), int64(5)
	c, err := unix.CopyFileRange(fd, &roff, fd2, &woff, 1000, 0)
	e(err)
	v(int64(c), roff, woff)
	got := make([]byte, 1005)
	unix.Pread(fd2, got, 0)
	v(int64(bytes.Compare(got[5:], data[100:1100])))

	e(unix.Setxattr(p("a"), "user.one", []byte("v1"), 0))
	e(unix.Setxattr(p("a"), "user.one", []byte("v2"), unix.XATTR_CREATE))
	e(unix.Setxattr(p("a"), "user.two", []byte("v2"), unix.XATTR_REPLACE))
	e(unix.Setxattr(p("a"), "user.two", []byte("longer value"), 0))
	xb := make([]byte, 100)
	xn, err := unix.Getxattr(p("a"), "user.two", xb)
	e(err)
	v(int64(xn))
	_, err = unix.Getxattr(p("a"), "user.two", xb[:3])
	e(err)
	xn, err = unix.Getxattr(p("a"), "user.two", nil)
	e(err)
	v(int64(xn))
	ln, err := unix.Listxattr(p("a"), xb)
	e(err)
	names := bytes.Split(bytes.TrimRight(xb[:max(ln, 0)], "\x00"), []byte{0})
	slices.SortFunc(names, bytes.Compare)
	v(int64(len(names)), int64(len(bytes.Join(names, nil))))
	e(unix.Removexattr(p("a"), "user.one"))
	e(unix.Removexattr(p("a"), "user.one"))
	_, err = unix.Getxattr(p("a"), "user.one", xb)
	e(err)

	e(unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("b"), unix.RENAME_NOREPLACE))
	e(unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("b"), unix.RENAME_EXCHANGE))
	stat("a")
	stat("b")
	e(unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("nope"), unix.RENAME_EXCHANGE))
	e(unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("c"), unix.RENAME_NOREPLACE))
	stat("c")
	stat("a")

	e(unix.Mkfifo(p("fifo"), 0o640))
	stat("fifo")
	ff, err := unix.Open(p("fifo"), unix.O_RDONLY|unix.O_NONBLOCK, 0)
	e(err)
	if err == nil {
		unix.Close(ff)
	}
	e(unix.Link(p("c"), p("c2")))
	stat("c")
	e(unix.Link(p("c"), p("c2")))
	e(unix.Unlink(p("c")))
	stat("c2")

	e(unix.UtimesNanoAt(unix.AT_FDCWD, p("c2"), []unix.Timespec{{Sec: 100, Nsec: 5}, {Sec: 200, Nsec: 7}}, 0))
	e(unix.UtimesNanoAt(unix.AT_FDCWD, p("c2"), []unix.Timespec{{Sec: 300}, {Nsec: unix.UTIME_OMIT}}, 0))
	var st unix.Stat_t
	e(unix.Stat(p("c2"), &st))
	v(st.Atim.Sec, st.Atim.Nsec, st.Mtim.Sec, st.Mtim.Nsec)

	e(unix.Mkdir(p("d"), 0o755))
	e(unix.Mkdir(p("d"), 0o755))
	os.WriteFile(p("d/x"), nil, 0o644)
	e(unix.Rmdir(p("d")))
	e(unix.Rmdir(p("c2")))
	e(unix.Unlink(p("d")))
	e(unix.Rename(p("d"), p("d/x/y")))
	e(unix.Rename(p("c2"), p("d")))
	e(unix.Rename(p("d"), p("c2")))
	_, err = unix.Open(p("c2"), unix.O_CREAT|unix.O_EXCL|unix.O_RDWR, 0o644)
	e(err)
	_, err = unix.Open(p("missing/x"), unix.O_RDONLY, 0)
	e(err)
	_, err = unix.Open(p("c2/x"), unix.O_RDONLY, 0)
	e(err)
	_, err = unix.Readlink(p("c2"), xb)
	e(err)
	e(unix.Symlink("c2", p("s")))
	rn, err := unix.Readlink(p("s"), xb)
	e(err)
	v(int64(rn))
	_, err = unix.Open(p("s"), unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	e(err)

	// Calls on an open file whose name is gone.
	uf, err := unix.Open(p("unl"), unix.O_CREAT|unix.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(uf)
	e(unix.Unlink(p("unl")))
	e(unix.Fchmod(uf, 0o600))
	e(unix.Fchown(uf, -1, 5))
	e(unix.Ftruncate(uf, 777))
	e(unix.UtimesNanoAt(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", uf), []unix.Timespec{{Sec: 10}, {Sec: 20}}, 0))
	e(unix.Fstat(uf, &st))
	v(int64(st.Mode), int64(st.Gid), st.Size, int64(st.Nlink), st.Mtim.Sec)

	// A directory of 300 entries, listed in several getdents calls.
	os.Mkdir(p("many"), 0o755)
	for i := range 300 {
		os.WriteFile(p(fmt.Sprintf("many/%03d-%s", i, bytes.Repeat([]byte("n"), i%40))), nil, 0o644)
	}
	ents, err := os.ReadDir(p("many"))
	if err != nil {
		t.Fatal(err)
	}
	v(int64(len(ents)))

	var sf unix.Statfs_t
	e(unix.Statfs(dir, &sf))
	v(int64(sf.Namelen))
	return out
}

// TestSyscallDifferential runs syscallSteps on a tmpfs export and on a
// kernel tmpfs and compares every result.
func TestSyscallDifferential(t *testing.T) {
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{})
	kern := t.TempDir()
	if err := unix.Mount("tmpfs", kern, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(kern, 0); err != nil {
			t.Errorf("umount: %v", err)
		}
	})
	want := syscallSteps(t, kern)
	got := syscallSteps(t, mnt)
	if len(got) != len(want) {
		t.Fatalf("%d results on the export, %d on the kernel", len(got), len(want))
	}
	diffs := 0
	for i := range want {
		if got[i] != want[i] {
			diffs++
			t.Errorf("result %d: export %d, kernel %d", i, got[i], want[i])
		}
	}
	t.Logf("%d results compared, %d differ; kernel's: %v", len(want), diffs, want)
}
