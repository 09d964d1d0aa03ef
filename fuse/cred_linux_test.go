package fuse

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// credSetup lays out, as root, the files the permission cases use.
func credSetup(t *testing.T, root string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	dir := func(name string, mode uint32, uid, gid int) {
		must(os.Mkdir(filepath.Join(root, name), 0o700))
		must(os.Chown(filepath.Join(root, name), uid, gid))
		must(os.Chmod(filepath.Join(root, name), os.FileMode(mode&0o777)|modeBits(mode)))
	}
	file := func(name string, mode uint32, uid, gid int) {
		must(os.WriteFile(filepath.Join(root, name), []byte("content"), 0o600))
		must(os.Chown(filepath.Join(root, name), uid, gid))
		must(os.Chmod(filepath.Join(root, name), os.FileMode(mode&0o777)|modeBits(mode)))
	}
	dir("ro", 0o755, 0, 0)
	file("ro/secret", 0o600, 0, 0)
	file("ro/pub", 0o644, 0, 0)
	dir("sticky", 0o1777, 0, 0)
	file("sticky/rootfile", 0o666, 0, 0)
	dir("mine", 0o755, 1000, 1000)
	dir("grp", 0o770, 0, 1000)
	dir("grp2", 0o770, 0, 2000)
	dir("other", 0o770, 0, 3000)
	dir("priv", 0o700, 0, 0)
	file("priv/f", 0o644, 0, 0)
	file("x", 0o755, 0, 0)
	file("nox", 0o644, 0, 0)
	file("sgid", 0o2775, 0, 2000)
	// Set-ID files others may write: a write, a truncate and an
	// ftruncate by a non-owner clear the bits (file_remove_privs).
	file("kp-write", 0o6777, 0, 0)
	file("kp-trunc", 0o6777, 0, 0)
	file("kp-ftrunc", 0o6757, 0, 2000)
	// The owner's own writes clear the bits too, through the page cache
	// and with O_DIRECT (a FUSE WRITE the kernel sends with
	// WRITE_KILL_SUIDGID and then keeps the mode it had cached).
	file("kp-own", 0o6777, 1000, 1000)
	file("kp-own-direct", 0o6777, 1000, 1000)
	// Set-group-ID without group execute, written by a member of its
	// group: only S_ISUID goes, and stat must show that too.
	file("kp-own-sg", 0o6745, 1000, 1000)
	file("kp-own-sg-direct", 0o6745, 1000, 1000)
}

func modeBits(m uint32) os.FileMode {
	var fm os.FileMode
	if m&0o1000 != 0 {
		fm |= os.ModeSticky
	}
	if m&0o2000 != 0 {
		fm |= os.ModeSetgid
	}
	if m&0o4000 != 0 {
		fm |= os.ModeSetuid
	}
	return fm
}

// credSteps are the permission cases, run as uid 1000, gid 1000,
// groups 2000, in root. Each returns an errno, and some a value too.
func credSteps(root string) []int {
	var out []int
	p := func(name string) string { return filepath.Join(root, name) }
	e := func(err error) {
		if err == nil {
			out = append(out, 0)
			return
		}
		var errno syscall.Errno
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err
		}
		if le, ok := err.(*os.LinkError); ok {
			err = le.Err
		}
		errno, _ = err.(syscall.Errno)
		if errno == 0 {
			errno = 9999
		}
		out = append(out, int(errno))
	}
	open := func(name string, flags int, mode uint32) {
		fd, err := unix.Open(p(name), flags, mode)
		if err == nil {
			unix.Close(fd)
		}
		e(err)
	}
	stat := func(name string) {
		var st unix.Stat_t
		err := unix.Lstat(p(name), &st)
		e(err)
		out = append(out, int(st.Uid), int(st.Gid), int(st.Mode))
	}
	open("ro/secret", unix.O_RDONLY, 0)
	open("ro/pub", unix.O_RDONLY, 0)
	open("ro/pub", unix.O_WRONLY, 0)
	open("ro/new", unix.O_CREAT|unix.O_WRONLY, 0o644)
	e(unix.Mkdir(p("ro/d"), 0o755))
	e(unix.Unlink(p("ro/pub")))
	open("sticky/mine", unix.O_CREAT|unix.O_WRONLY, 0o644)
	stat("sticky/mine")
	e(unix.Unlink(p("sticky/rootfile")))
	e(unix.Rename(p("sticky/rootfile"), p("sticky/moved")))
	e(unix.Chmod(p("ro/pub"), 0o777))
	e(unix.Chown(p("sticky/mine"), 0, -1))
	e(unix.Chown(p("sticky/mine"), -1, 2000))
	stat("sticky/mine")
	e(unix.Chown(p("sticky/mine"), -1, 3000))
	e(unix.UtimesNano(p("ro/pub"), nil))
	e(unix.UtimesNano(p("ro/pub"), []unix.Timespec{{Sec: 1}, {Sec: 2}}))
	e(unix.UtimesNano(p("sticky/mine"), []unix.Timespec{{Sec: 1}, {Sec: 2}}))
	open("grp/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	stat("grp/f")
	open("grp2/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	stat("grp2/f")
	open("other/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	e(unix.Access(p("ro/secret"), unix.R_OK))
	e(unix.Access(p("x"), unix.X_OK))
	e(unix.Access(p("nox"), unix.X_OK))
	e(unix.Access(p("ro/pub"), unix.W_OK))
	e(unix.Mkdir(p("mine/sub"), 0o777))
	e(unix.Chmod(p("mine/sub"), 0o2755))
	stat("mine/sub")
	e(unix.Truncate(p("ro/pub"), 0))
	e(unix.Symlink("pub", p("ro/l")))
	e(unix.Link(p("ro/pub"), p("mine/l")))
	open("priv", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	stat("priv/f")
	open("priv/f", unix.O_RDONLY, 0)
	e(unix.Rmdir(p("grp2")))
	e(unix.Rename(p("mine/sub"), p("mine/sub2")))
	e(unix.Rename(p("mine/sub2"), p("ro/sub2")))
	open("sgid", unix.O_WRONLY, 0)
	e(unix.Chmod(p("sticky/mine"), 0o2644))
	stat("sticky/mine")
	e(unix.Mknod(p("mine/fifo"), unix.S_IFIFO|0o644, 0))
	stat("mine/fifo")
	e(unix.Mknod(p("mine/chr"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))))
	if fd, err := unix.Open(p("kp-write"), unix.O_WRONLY, 0); err == nil {
		_, err = unix.Write(fd, []byte("x"))
		e(err)
		unix.Close(fd)
	} else {
		e(err)
	}
	stat("kp-write")
	e(unix.Truncate(p("kp-trunc"), 1))
	stat("kp-trunc")
	if fd, err := unix.Open(p("kp-ftrunc"), unix.O_WRONLY, 0); err == nil {
		e(unix.Ftruncate(fd, 1))
		unix.Close(fd)
	} else {
		e(err)
	}
	stat("kp-ftrunc")
	// The mode as statx gives it from the kernel's cache, right after
	// each write.
	statxMode := func(name string) {
		var sx unix.Statx_t
		e(unix.Statx(unix.AT_FDCWD, p(name), 0, unix.STATX_MODE, &sx))
		out = append(out, int(sx.Mode))
	}
	write := func(name string, flags int) {
		fd, err := unix.Open(p(name), unix.O_WRONLY|flags, 0)
		if err != nil {
			e(err)
			return
		}
		defer unix.Close(fd)
		statxMode(name) // the mode is in the kernel's cache
		// One aligned page: what O_DIRECT asks of the buffer.
		buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			e(err)
			return
		}
		defer unix.Munmap(buf)
		n, err := unix.Pwrite(fd, buf, 0)
		e(err)
		out = append(out, n)
	}
	write("kp-own", 0)
	statxMode("kp-own")
	write("kp-own-direct", unix.O_DIRECT)
	statxMode("kp-own-direct")
	write("kp-own-sg", 0)
	statxMode("kp-own-sg")
	write("kp-own-sg-direct", unix.O_DIRECT)
	statxMode("kp-own-sg-direct")
	return out
}

// TestCredChild is the child side of TestCredentials: it runs credSteps
// in each root given by IOVFS_FUSE_CRED_ROOTS and prints the results as
// JSON.
func TestCredChild(t *testing.T) {
	roots := os.Getenv("IOVFS_FUSE_CRED_ROOTS")
	if roots == "" {
		t.Skip("child of TestCredentials only")
	}
	var res [][]int
	for _, r := range strings.Split(roots, ":") {
		res = append(res, credSteps(r))
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

// TestCredentials runs the permission cases as uid 1000 (gid 1000,
// supplementary group 2000) in a child process, on a tmpfs export
// mounted with allow_other and on a kernel tmpfs, and compares every
// errno and resulting owner and mode.
func TestCredentials(t *testing.T) {
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{AllowOther: true})
	kern := t.TempDir()
	if err := unix.Mount("tmpfs", kern, "tmpfs", 0, "mode=1777,size=16m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(kern, 0); err != nil {
			t.Errorf("umount %s: %v", kern, err)
		}
	})
	for _, d := range []string{mnt, kern} {
		// Let uid 1000 through the test's temporary directories.
		for x := d; x != "/tmp" && x != "/"; x = filepath.Dir(x) {
			os.Chmod(x, 0o755)
		}
		credSetup(t, d)
	}
	os.Chmod(mnt, 0o1777)
	os.Chmod(kern, 0o1777)
	// A copy of the test binary that uid 1000 can run.
	bin := filepath.Join(t.TempDir(), "fuse.test")
	os.Chmod(filepath.Dir(bin), 0o755)
	copyFile(t, os.Args[0], bin)
	c := exec.Command(bin, "-test.run=^TestCredChild$", "-test.count=1")
	c.Env = append(os.Environ(), "IOVFS_FUSE_CRED_ROOTS="+mnt+":"+kern)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{2000}}}
	c.Dir = "/"
	out, err := c.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var res [][]int
	if err := json.NewDecoder(strings.NewReader(string(out))).Decode(&res); err != nil {
		t.Fatalf("child output: %v\n%s", err, out)
	}
	got, want := res[0], res[1]
	if len(got) != len(want) {
		t.Fatalf("%d results on the export, %d on the kernel", len(got), len(want))
	}
	diffs := 0
	for i := range want {
		if got[i] != want[i] {
			diffs++
			t.Errorf("result %d: export %d (%v), kernel %d (%v)", i, got[i], syscall.Errno(got[i]), want[i], syscall.Errno(want[i]))
		}
	}
	t.Logf("%d results compared, %d differ", len(want), diffs)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
}

// TestRootOtherGroup: a caller with fs uid 0 and another fs gid makes
// files of its group, on the export as on the kernel's tmpfs.
func TestRootOtherGroup(t *testing.T) {
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{})
	kern := t.TempDir()
	if err := unix.Mount("tmpfs", kern, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(kern, 0) })
	runtime.LockOSThread() // setfsgid changes this thread only
	defer runtime.UnlockOSThread()
	prev, _ := unix.SetfsgidRetGid(1000)
	defer unix.Setfsgid(prev)
	var got [2]uint32
	for i, d := range []string{mnt, kern} {
		fd, err := unix.Open(filepath.Join(d, "f"), unix.O_CREAT|unix.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		unix.Fstat(fd, &st)
		unix.Close(fd)
		got[i] = st.Gid
	}
	if got[0] != got[1] || got[1] != 1000 {
		t.Errorf("group of a file made with fs gid 1000: export %d, kernel %d", got[0], got[1])
	}
}
