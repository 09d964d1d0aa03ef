package iovfs_test

import (
	"fmt"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestWithCred checks that WithCred gives an unprivileged process: its
// ids, the owner of what it creates, and refusals where root passes.
func TestWithCred(t *testing.T) {
	p, err := iovfs.New(iovfs.WithCred(1000, 1000, 1002, 1001))
	must(t, err)
	if u, e, g, eg := p.Getuid(), p.Geteuid(), p.Getgid(), p.Getegid(); u != 1000 || e != 1000 || g != 1000 || eg != 1000 {
		t.Fatalf("ids %d %d %d %d, want 1000", u, e, g, eg)
	}
	if g := fmt.Sprint(p.Getgroups()); g != "[1001 1002]" {
		t.Errorf("groups %s, want [1001 1002]", g)
	}
	if p.Privileged() {
		t.Error("an unprivileged process says it is privileged")
	}
	createFile(t, p, "/tmp/mine", "x")
	st, err := p.Stat("/tmp/mine")
	must(t, err)
	if st.Uid != 1000 || st.Gid != 1000 || st.Mode != unix.S_IFREG|0o644 {
		t.Errorf("new file: uid %d gid %d mode %#o, want 1000 1000 0100644", st.Uid, st.Gid, st.Mode)
	}
	wantErrno(t, "mkdir in / (root's, 0755)", p.Mkdir("/x", 0o755), unix.EACCES)
	wantErrno(t, "mount", p.Mount("tmpfs", "/mnt", "tmpfs", 0, ""), unix.EPERM)
	wantErrno(t, "umount /tmp", p.Unmount("/tmp", 0), unix.EPERM)
	wantErrno(t, "umount of a missing path", p.Unmount("/nope", 0), unix.ENOENT) // the lookup comes first
	wantErrno(t, "setresuid(0, -1, -1)", p.Setresuid(0, -1, -1), unix.EPERM)
	wantErrno(t, "setgroups", p.Setgroups([]int{0}), unix.EPERM)
	_, err = p.Open("/dev/loop0", unix.O_RDONLY, 0) // 0660 root
	wantErrno(t, "open /dev/loop0", err, unix.EACCES)
}

// TestSetresuidRules walks a process from root to an unprivileged one and
// back through its saved uid, as Linux's setresuid allows.
func TestSetresuidRules(t *testing.T) {
	p := newProc(t)
	must(t, p.Setresuid(-1, 1000, 0)) // root may set anything
	if p.Privileged() {
		t.Fatal("euid 1000 still privileged")
	}
	wantErrno(t, "euid 2000 (not r/e/s)", p.Setresuid(-1, 2000, -1), unix.EPERM)
	wantErrno(t, "mkdir / as euid 1000", p.Mkdir("/x", 0o755), unix.EACCES)
	must(t, p.Setresuid(-1, 0, -1)) // back through the saved uid 0
	if !p.Privileged() {
		t.Fatal("euid 0 again, but not privileged")
	}
	must(t, p.Mkdir("/x", 0o755))
	must(t, p.Setresuid(1000, 1000, 1000))
	wantErrno(t, "back to 0 with every id 1000", p.Setresuid(0, 0, 0), unix.EPERM)
	wantErrno(t, "an id of 2^32-1", p.Setresuid(1<<32-1, -1, -1), unix.EINVAL)
	if r, e, s := p.Getresuid(); r != 1000 || e != 1000 || s != 1000 {
		t.Errorf("ids %d %d %d after a refused call", r, e, s)
	}
}

// TestFork checks fork(2)'s sharing: the same open files (one position),
// separate tables, cwd, umask and credentials.
func TestFork(t *testing.T) {
	p := newProc(t)
	createFile(t, p, "/tmp/f", "0123456789")
	fd, err := p.Open("/tmp/f", unix.O_RDONLY, 0)
	must(t, err)
	c, err := p.Fork()
	must(t, err)
	b := make([]byte, 4)
	if n, err := c.Read(fd, b); n != 4 || err != nil {
		t.Fatalf("child read %d %v", n, err)
	}
	if off, _ := p.Seek(fd, 0, unix.SEEK_CUR); off != 4 {
		t.Errorf("parent's position %d after the child read 4: not shared", off)
	}
	must(t, c.Close(fd))
	if n, err := p.Read(fd, b); n != 4 || err != nil || string(b) != "4567" {
		t.Errorf("parent read after the child closed: %d %v %q", n, err, b[:n])
	}
	wantErrno(t, "child's closed fd", c.Close(fd), unix.EBADF)
	must(t, c.Chdir("/tmp"))
	if wd, _ := p.Getcwd(); wd != "/" {
		t.Errorf("parent's cwd %q after the child's chdir", wd)
	}
	c.Umask(0o077)
	if old := p.Umask(0o022); old != 0o022 {
		t.Errorf("parent's umask %#o after the child's", old)
	}
	must(t, c.Setresuid(1000, 1000, 1000))
	if p.Geteuid() != 0 || c.Geteuid() != 1000 {
		t.Errorf("euid parent %d child %d", p.Geteuid(), c.Geteuid())
	}
	// linkat(fd, "", AT_EMPTY_PATH) needs the descriptor to have been
	// opened with the caller's credentials: the child's are its own.
	ffd, err := c.Open("/tmp/cf", unix.O_RDWR|unix.O_CREAT, 0o600)
	must(t, err)
	wantErrno(t, "flink of the child's own fd", c.Linkat(ffd, "", unix.AT_FDCWD, "/tmp/g", unix.AT_EMPTY_PATH), 0)
	pfd, err := p.Open("/tmp/f", unix.O_RDONLY, 0)
	must(t, err)
	c2, err := p.Fork()
	must(t, err)
	must(t, c2.Setresuid(1000, 1000, 1000))
	wantErrno(t, "flink of an fd opened with other credentials", c2.Linkat(pfd, "", unix.AT_FDCWD, "/tmp/h", unix.AT_EMPTY_PATH), unix.ENOENT)
	p.Close(pfd)
	c.Close(ffd)
	// The child's fd table allocates from the lowest free slot.
	nfd, err := c.Open("/tmp/f", unix.O_RDONLY, 0)
	must(t, err)
	if nfd != fd {
		t.Errorf("child's new fd %d, want the freed %d", nfd, fd)
	}
}

// TestDeviceNodes checks that mknod'd device nodes open the registered
// drivers by number, and who may make them.
func TestDeviceNodes(t *testing.T) {
	p := newProc(t)
	must(t, p.Mknod("/tmp/zero", unix.S_IFCHR|0o666, vfs.Mkdev(1, 5)))
	must(t, p.Mknod("/tmp/unknown", unix.S_IFCHR|0o666, vfs.Mkdev(99, 1)))
	fd, err := p.Open("/tmp/zero", unix.O_RDWR, 0)
	must(t, err)
	b := []byte{1, 2, 3}
	if n, err := p.Read(fd, b); n != 3 || err != nil || b[0]|b[1]|b[2] != 0 {
		t.Errorf("read of a mknod'd /dev/zero: %d %v %v", n, err, b)
	}
	st, err := p.Fstat(fd)
	must(t, err)
	if st.Mode != unix.S_IFCHR|0o644 || st.Rdev != vfs.Mkdev(1, 5) {
		t.Errorf("fstat: mode %#o rdev %#x: want the node's own inode", st.Mode, st.Rdev)
	}
	p.Close(fd)
	_, err = p.Open("/tmp/unknown", unix.O_RDONLY, 0)
	wantErrno(t, "open of an unregistered number", err, unix.ENXIO)
	u, err := p.Fork()
	must(t, err)
	must(t, u.Setresuid(1000, 1000, 1000))
	wantErrno(t, "unprivileged mknod of a device", u.Mknod("/tmp/null", unix.S_IFCHR|0o666, vfs.Mkdev(1, 3)), unix.EPERM)
	wantErrno(t, "unprivileged mknod of a block device 0:0", u.Mknodat(unix.AT_FDCWD, "/tmp/b", unix.S_IFBLK|0o666, 0), unix.EPERM)
	must(t, u.Mknodat(unix.AT_FDCWD, "/tmp/wh", unix.S_IFCHR, 0)) // a whiteout needs no CAP_MKNOD
}

// TestLoopIoctlPrivilege checks lo_ioctl's rule: a descriptor not open
// for writing may change the device only with CAP_SYS_ADMIN.
func TestLoopIoctlPrivilege(t *testing.T) {
	p := newProc(t)
	fd, err := p.Open("/dev/loop0", unix.O_RDONLY, 0)
	must(t, err)
	u, err := p.Fork()
	must(t, err)
	must(t, u.Setresuid(1000, 1000, 1000))
	for _, req := range []uint{unix.LOOP_SET_CAPACITY, unix.LOOP_SET_BLOCK_SIZE, unix.LOOP_SET_DIRECT_IO} {
		_, err := u.Ioctl(fd, req, 512)
		wantErrno(t, fmt.Sprintf("ioctl %#x as uid 1000 on a read-only fd", req), err, unix.EPERM)
		_, err = p.Ioctl(fd, req, 512)
		if errnoOf(err) == unix.EPERM {
			t.Errorf("ioctl %#x as root: EPERM", req)
		}
	}
}

// TestOpenPathAndFchdir checks O_PATH descriptors: usable as a dirfd and
// by Fchdir and Fstat, refused by read and the f* calls that change.
func TestOpenPathAndFchdir(t *testing.T) {
	p := newProc(t)
	createFile(t, p, "/tmp/f", "x")
	must(t, p.Symlink("f", "/tmp/l"))
	dfd, err := p.Open("/tmp", unix.O_PATH|unix.O_DIRECTORY, 0)
	must(t, err)
	if _, err := p.Fstatat(dfd, "f", 0); err != nil {
		t.Errorf("fstatat through an O_PATH dirfd: %v", err)
	}
	_, err = p.Read(dfd, make([]byte, 1))
	wantErrno(t, "read of O_PATH", err, unix.EBADF)
	_, err = p.Getdents(dfd)
	wantErrno(t, "getdents of O_PATH", err, unix.EBADF)
	wantErrno(t, "fchmod of O_PATH", p.Fchmod(dfd, 0o700), unix.EBADF)
	must(t, p.Fchdir(dfd))
	if wd, _ := p.Getcwd(); wd != "/tmp" {
		t.Errorf("cwd %q after fchdir, want /tmp", wd)
	}
	lfd, err := p.Open("l", unix.O_PATH|unix.O_NOFOLLOW, 0)
	must(t, err)
	if s, err := p.Readlinkat(lfd, ""); s != "f" || err != nil {
		t.Errorf("readlinkat(O_PATH symlink, \"\") = %q, %v", s, err)
	}
	if st, err := p.Fstatat(lfd, "", unix.AT_EMPTY_PATH); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		t.Errorf("fstatat(symlink fd, AT_EMPTY_PATH): %#o %v", st.Mode, err)
	}
	_, err = p.Readlinkat(dfd, "")
	wantErrno(t, "readlinkat of a directory fd with an empty path", err, unix.ENOENT)
}

// TestUnprivilegedReadNoAllocs checks that the permission model leaves
// the read paths without allocations for an unprivileged process.
func TestUnprivilegedReadNoAllocs(t *testing.T) {
	p, err := iovfs.New(iovfs.WithCred(1000, 1000))
	must(t, err)
	createFile(t, p, "/tmp/f", "0123456789abcdef")
	fd, err := p.Open("/tmp/f", unix.O_RDONLY, 0)
	must(t, err)
	b := make([]byte, 8)
	v := [][]byte{b[:4], b[4:]}
	for name, f := range map[string]func(){
		"read":  func() { p.Seek(fd, 0, unix.SEEK_SET); p.Read(fd, b) },
		"pread": func() { p.Pread(fd, b, 2) },
		"readv": func() { p.Seek(fd, 0, unix.SEEK_SET); p.Readv(fd, v) },
	} {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s as uid 1000: %v allocations, want 0", name, a)
		}
	}
	if n, err := p.Pread(fd, b, 0); n != 8 || err != nil || string(b) != "01234567" {
		t.Fatalf("pread: %d %v %q", n, err, b)
	}
}

// TestCreateRace opens one new name with O_CREAT from several goroutines
// at once: each open succeeds, as in Linux, where the directory's lock
// covers the lookup and the create.
func TestCreateRace(t *testing.T) {
	p := newProc(t)
	for round := 0; round < 200; round++ {
		name := fmt.Sprintf("/tmp/r%d", round)
		errs := make(chan error, 4)
		for g := 0; g < 4; g++ {
			go func() {
				fd, err := p.Open(name, unix.O_WRONLY|unix.O_CREAT, 0o644)
				if err == nil {
					p.Close(fd)
				}
				errs <- err
			}()
		}
		for g := 0; g < 4; g++ {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}
