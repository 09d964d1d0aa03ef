package fuse

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// idmapSetup lays out, as root, what the idmapped-mount cases use (ids
// as the file system stores them; through the idmapped mount each shows
// as 10000 more).
func idmapSetup(t *testing.T, root string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mk := func(name string, dir bool, mode uint32, uid, gid int) {
		p := filepath.Join(root, name)
		if dir {
			must(os.Mkdir(p, 0o700))
		} else {
			must(os.WriteFile(p, []byte("content"), 0o600))
		}
		must(os.Chown(p, uid, gid))
		must(unix.Chmod(p, mode))
	}
	mk("d", true, 0o777, 1000, 1000)
	mk("sgdir", true, 0o2777, 1000, 2000)
	mk("own-suid", false, 0o6755, 1000, 1000)
	mk("own-sgid-nx", false, 0o2745, 1000, 2000)
	mk("other-sgid-nx", false, 0o2747, 1000, 3000)
	mk("trunc-suid", false, 0o6777, 0, 0)
	mk("chown-me", false, 0o2755, 1000, 1000)
	mk("chmod-me", false, 0o644, 1000, 1000)
	mk("unmapped", false, 0o666, 70000, 70000)
	mk("direct-sg", false, 0o6745, 1000, 2000)
	mk("falloc-suid", false, 0o6757, 0, 0)
	mk("acl-sg", false, 0o2755, 1000, 3000)
	mk("acl-sg-dir", true, 0o2755, 1000, 3000)
}

// idmapNames are the files whose owners and modes the test compares at
// the end, through the plain mounts.
var idmapNames = []string{"d", "sgdir", "own-suid", "own-sgid-nx", "other-sgid-nx", "trunc-suid", "chown-me", "chmod-me",
	"unmapped", "direct-sg", "falloc-suid", "acl-sg", "acl-sg-dir", "d/new", "d/sub", "d/ln", "sgdir/f", "sgdir/sub", "d/tmp"}

// idmapSteps are the cases, run in root as uid 1000, gid 1000, groups
// 2000 of the file system, shown as shift more (root an idmapped mount
// with shift 10000, or a plain one with shift 0).
func idmapSteps(root string, shift int) []int {
	var out []int
	id := func(fsid int) int { return fsid + shift }
	p := func(name string) string { return filepath.Join(root, name) }
	e := func(err error) {
		if err == nil {
			out = append(out, 0)
			return
		}
		errno, ok := err.(syscall.Errno)
		if !ok {
			errno = 9999
		}
		out = append(out, int(errno))
	}
	stat := func(name string) {
		var st unix.Stat_t
		e(unix.Lstat(p(name), &st))
		out = append(out, int(st.Uid), int(st.Gid), int(st.Mode))
	}
	write := func(name string) {
		fd, err := unix.Open(p(name), unix.O_WRONLY, 0)
		e(err)
		if err == nil {
			_, err = unix.Pwrite(fd, []byte("x"), 0)
			e(err)
			unix.Close(fd)
		}
		stat(name)
	}
	for _, n := range []string{"d", "sgdir", "own-suid", "own-sgid-nx", "other-sgid-nx", "trunc-suid", "chown-me", "unmapped"} {
		stat(n)
	}
	write("own-suid")
	if shift == 0 {
		// A member of the file's group writing a set-group-ID file
		// that is not group-executable keeps the bit; through an
		// idmapped mount the export cannot tell (the write comes
		// without the caller's ids) and clears it.
		write("own-sgid-nx")
	}
	write("other-sgid-nx")
	e(unix.Truncate(p("trunc-suid"), 1))
	stat("trunc-suid")
	e(unix.Chown(p("chown-me"), -1, id(2000)))
	stat("chown-me")
	e(unix.Chown(p("chown-me"), -1, id(3000)))
	e(unix.Chmod(p("chmod-me"), 0o2640))
	stat("chmod-me")
	e(unix.Chown(p("unmapped"), id(1000), -1))
	// An O_DIRECT write by a member of the file's group: S_ISUID goes,
	// S_ISGID stays (not group-executable), and stat shows it at once
	// (on the plain mount: see own-sgid-nx).
	if shift != 0 {
		e(unix.Chmod(p("direct-sg"), 0o4745))
	}
	if fd, err := unix.Open(p("direct-sg"), unix.O_WRONLY|unix.O_DIRECT, 0); err == nil {
		stat("direct-sg")
		buf, _ := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		_, err = unix.Pwrite(fd, buf, 0)
		e(err)
		unix.Munmap(buf)
		unix.Close(fd)
	} else {
		e(err)
	}
	stat("direct-sg")
	// fallocate by a non-owner without CAP_FSETID: both bits go.
	if fd, err := unix.Open(p("falloc-suid"), unix.O_WRONLY, 0); err == nil {
		stat("falloc-suid")
		e(unix.Fallocate(fd, 0, 0, 8192))
		unix.Close(fd)
	} else {
		e(err)
	}
	stat("falloc-suid")
	// An access ACL set by the owner outside the file's group drops
	// S_ISGID (posix_acl_update_mode), on a file and on a directory.
	acl := []byte{2, 0, 0, 0, 1, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, 4, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, 0x20, 0, 7, 0, 0xff, 0xff, 0xff, 0xff}
	for _, n := range []string{"acl-sg", "acl-sg-dir"} {
		e(unix.Setxattr(p(n), "system.posix_acl_access", acl, 0))
		stat(n)
	}
	fd, err := unix.Open(p("d/new"), unix.O_CREAT|unix.O_WRONLY, 0o644)
	e(err)
	if err == nil {
		unix.Close(fd)
	}
	stat("d/new")
	e(unix.Mkdir(p("d/sub"), 0o755))
	stat("d/sub")
	e(unix.Symlink("new", p("d/ln")))
	stat("d/ln")
	fd, err = unix.Open(p("sgdir/f"), unix.O_CREAT|unix.O_WRONLY, 0o2755)
	e(err)
	if err == nil {
		unix.Close(fd)
	}
	stat("sgdir/f")
	e(unix.Mkdir(p("sgdir/sub"), 0o755))
	stat("sgdir/sub")
	fd, err = unix.Open(p("d"), unix.O_TMPFILE|unix.O_WRONLY, 0o600)
	e(err)
	if err == nil {
		e(unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+itoa(fd), unix.AT_FDCWD, p("d/tmp"), unix.AT_SYMLINK_FOLLOW))
		unix.Close(fd)
	}
	stat("d/tmp")
	e(unix.Rename(p("d/new"), p("d/new2")))
	e(unix.Rename(p("d/new2"), p("d/new")))
	e(unix.Unlink(p("own-suid")))
	return out
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestIdmapChild is the child side of TestIdmappedMountKernel.
func TestIdmapChild(t *testing.T) {
	roots := os.Getenv("IOVFS_FUSE_IDMAP_ROOTS")
	if roots == "" {
		t.Skip("child of TestIdmappedMountKernel only")
	}
	shift, _ := strconv.Atoi(os.Getenv("IOVFS_FUSE_IDMAP_SHIFT"))
	var res [][]int
	for _, r := range strings.Split(roots, ":") {
		res = append(res, idmapSteps(r, shift))
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

// idmapped makes an idmapped mount of the mount at src, with the ids of
// user namespace userns (open_tree, mount_setattr MOUNT_ATTR_IDMAP,
// move_mount), and returns where it is.
func idmapped(t *testing.T, src string, userns int) string {
	t.Helper()
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		t.Fatalf("open_tree %s: %v", src, err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(userns)}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		t.Fatalf("mount_setattr MOUNT_ATTR_IDMAP on %s: %v", src, err)
	}
	dst := t.TempDir()
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		t.Fatalf("move_mount to %s: %v", dst, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dst, 0); err != nil {
			t.Errorf("umount %s: %v", dst, err)
		}
	})
	return dst
}

// TestIdmappedMountKernel makes an idmapped mount (ids 0-65535 shown as
// 10000-75535) of an export that allows them and of a kernel tmpfs, runs
// the same calls through both as uid 11000 (gid 11000, groups 12000) in
// a child process, and compares every errno, owner and mode, then the
// owners and modes the file systems stored.
func TestIdmappedMountKernel(t *testing.T) {
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{AllowOther: true, AllowIdmap: true})
	kern := t.TempDir()
	if err := unix.Mount("tmpfs", kern, "tmpfs", 0, "mode=0755,size=16m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(kern, 0); err != nil {
			t.Errorf("umount %s: %v", kern, err)
		}
	})
	for _, d := range []string{mnt, kern} {
		for x := d; x != "/tmp" && x != "/"; x = filepath.Dir(x) {
			os.Chmod(x, 0o755)
		}
		os.Chmod(d, 0o755)
		// A tree for each run below.
		for _, run := range []string{"idmapped", "plain"} {
			if err := os.Mkdir(filepath.Join(d, run), 0o755); err != nil {
				t.Fatal(err)
			}
			idmapSetup(t, filepath.Join(d, run))
		}
	}
	// A user namespace whose ids 0-65535 are the host's 10000-75535.
	ns := exec.Command("sleep", "600")
	ns.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 10000, Size: 65536}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 10000, Size: 65536}},
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Process.Kill(); ns.Wait() })
	userns, err := unix.Open("/proc/"+itoa(ns.Process.Pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(userns)
	imnt, ikern := idmapped(t, mnt, userns), idmapped(t, kern, userns)
	for _, d := range []string{imnt, ikern} {
		for x := filepath.Dir(d); x != "/tmp" && x != "/"; x = filepath.Dir(x) {
			os.Chmod(x, 0o755)
		}
	}
	// Root has no id on the idmapped mounts (host 0 is outside the map).
	for _, d := range []string{imnt, ikern} {
		err := os.WriteFile(filepath.Join(d, "plain", "d", "byroot"), nil, 0o644)
		if !errorIs(err, unix.EOVERFLOW) {
			t.Errorf("create as root through %s: %v, want EOVERFLOW", d, err)
		}
	}
	bin := filepath.Join(t.TempDir(), "fuse.test")
	os.Chmod(filepath.Dir(bin), 0o755)
	copyFile(t, os.Args[0], bin)
	diffs := 0
	// Through the idmapped mounts as host uid 11000, then through the
	// plain ones as uid 1000: the export that allows idmapped mounts gets
	// no caller ids on either.
	for _, run := range []struct {
		roots [2]string
		shift int
	}{{[2]string{imnt + "/idmapped", ikern + "/idmapped"}, 10000}, {[2]string{mnt + "/plain", kern + "/plain"}, 0}} {
		c := exec.Command(bin, "-test.run=^TestIdmapChild$", "-test.count=1")
		c.Env = append(os.Environ(), "IOVFS_FUSE_IDMAP_ROOTS="+run.roots[0]+":"+run.roots[1], "IOVFS_FUSE_IDMAP_SHIFT="+itoa(run.shift))
		u := uint32(1000 + run.shift)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u, Gid: u, Groups: []uint32{u + 1000}}}
		c.Dir = "/"
		out, err := c.Output()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		var res [][]int
		if err := json.NewDecoder(bytes.NewReader(out)).Decode(&res); err != nil || len(res) != 2 {
			t.Fatalf("child output: %v\n%s", err, out)
		}
		got, want := res[0], res[1]
		if len(got) != len(want) {
			t.Fatalf("shift %d: %d results on the export, %d on the kernel", run.shift, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				diffs++
				t.Errorf("shift %d: result %d: export %d (%#o), kernel %d (%#o)", run.shift, i, got[i], got[i], want[i], want[i])
			}
		}
		zeros := 0
		for _, v := range want {
			if v == 0 {
				zeros++
			}
		}
		if zeros < 15 {
			t.Errorf("shift %d: only %d calls succeeded on the kernel's tmpfs: the ids are not the ones the cases assume\n%v", run.shift, zeros, want)
		}
		t.Logf("shift %d: %d results compared", run.shift, len(want))
	}
	// What the file systems stored.
	for _, run := range []string{"idmapped", "plain"} {
		for _, name := range idmapNames {
			var a, b unix.Stat_t
			ea, eb := unix.Lstat(filepath.Join(mnt, run, name), &a), unix.Lstat(filepath.Join(kern, run, name), &b)
			if ea != eb || a.Uid != b.Uid || a.Gid != b.Gid || a.Mode != b.Mode {
				diffs++
				t.Errorf("%s/%s stored: export %v %d:%d %#o, kernel %v %d:%d %#o", run, name, ea, a.Uid, a.Gid, a.Mode, eb, b.Uid, b.Gid, b.Mode)
			}
		}
	}
	t.Logf("%d stored files compared, %d differences in all", 2*len(idmapNames), diffs)
}
