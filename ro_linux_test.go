package iovfs_test

// Read-only mounts against the kernel, as uid 1000: a read-only file
// system (a tmpfs remounted MS_RDONLY) gives EROFS before the permission
// checks (sb_permission); a read-only bind mount gives it after them for
// open and truncate (may_open before mnt_want_write).

import (
	"fmt"
	"path"
	"runtime"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

var roTree = []plant{
	{path: "rootf", kind: 'f', mode: 0o644},
	{path: "own", kind: 'f', uid: 1000, gid: 1000, mode: 0o644},
	{path: "rootdir", kind: 'd', mode: 0o755},
	{path: "rootdir/f", kind: 'f', mode: 0o644},
	{path: "pub", kind: 'd', mode: 0o777},
	{path: "pub/f", kind: 'f', mode: 0o666},
	{path: "nulldev", kind: 'c', mode: 0o666, dev: int(unix.Mkdev(1, 3))},
}

var roSteps = []credStep{
	{Op: "open", A: "rootf", Flags: unix.O_WRONLY},
	{Op: "open", A: "own", Flags: unix.O_WRONLY},
	{Op: "open", A: "rootf", Flags: unix.O_RDONLY | unix.O_TRUNC},
	{Op: "open", A: "own", Flags: unix.O_RDWR | unix.O_TRUNC},
	{Op: "open", A: "pub/new", Flags: unix.O_WRONLY | unix.O_CREAT, Mode: 0o644},
	{Op: "open", A: "rootdir/new", Flags: unix.O_WRONLY | unix.O_CREAT, Mode: 0o644},
	{Op: "open", A: "nulldev", Flags: unix.O_WRONLY},
	{Op: "open", A: "pub", Flags: unix.O_RDONLY},
	{Op: "mkdir", A: "rootdir/x", Mode: 0o755},
	{Op: "mkdir", A: "pub/x", Mode: 0o755},
	{Op: "unlink", A: "rootdir/f"},
	{Op: "unlink", A: "pub/f"},
	{Op: "unlink", A: "pub/nothing"},
	{Op: "rename", A: "pub/f", B: "pub/g"},
	{Op: "link", A: "own", B: "pub/l"},
	{Op: "symlink", A: "x", B: "pub/s"},
	{Op: "mknod", A: "pub/n", Mode: unix.S_IFREG | 0o644},
	{Op: "chmod", A: "rootf", Mode: 0o600},
	{Op: "chmod", A: "own", Mode: 0o600},
	{Op: "chown", A: "own", Uid: -1, Gid: -1},
	{Op: "truncate", A: "rootf", Size: 0},
	{Op: "truncate", A: "own", Size: 0},
	{Op: "utimens", A: "rootf"},
	{Op: "utimens", A: "own"},
	{Op: "access", A: "rootf", Mode: unix.W_OK},
	{Op: "access", A: "own", Mode: unix.W_OK},
	{Op: "access", A: "nulldev", Mode: unix.W_OK},
	{Op: "access", A: "own", Mode: unix.R_OK},
	{Op: "fdop", A: "own", Flags: unix.O_RDONLY, Sub: "fchmod", Mode: 0o600},
	{Op: "openat2", A: "pub/new2", Flags: unix.O_WRONLY | unix.O_CREAT, Mode: 0o644, Dev: unix.RESOLVE_BENEATH},
}

func TestReadonlyKernel(t *testing.T) {
	// The host: a tmpfs remounted read-only, and a read-only bind mount
	// of a writable one.
	hsb := hostTmpfs(t)
	hsrc := hostTmpfs(t)
	hbind := t.TempDir()
	plantHost(t, hsb, roTree...)
	plantHost(t, hsrc, roTree...)
	must(t, unix.Mount("", hsb, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""))
	must(t, unix.Mount(hsrc, hbind, "", unix.MS_BIND, ""))
	t.Cleanup(func() { unix.Unmount(hbind, unix.MNT_DETACH) })
	must(t, unix.Mount("", hbind, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""))
	for _, d := range []string{hsb, hsrc, hbind} {
		must(t, unix.Chmod(path.Dir(d), 0o755))
	}
	child := startCredChild(t, false)

	// iovfs: one tmpfs mounted writable to fill it and read-only beside
	// (a read-only file system), and a read-only bind mount of another.
	root, err := iovfs.New()
	must(t, err)
	ns := root.Namespace()
	fsb := tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true})
	for _, d := range []string{"/mnt/fill", "/mnt/sb", "/mnt/src", "/mnt/bind"} {
		must(t, root.Mkdir(d, 0o755))
	}
	must(t, ns.MountFS("/mnt/fill", fsb, false))
	plantOurs(t, root, "/mnt/fill", roTree...)
	must(t, ns.MountFS("/mnt/sb", fsb, true))
	must(t, root.Mount("tmpfs", "/mnt/src", "tmpfs", 0, "mode=0755"))
	plantOurs(t, root, "/mnt/src", roTree...)
	must(t, root.Mount("/mnt/src", "/mnt/bind", "", unix.MS_BIND|unix.MS_RDONLY, ""))
	user := ovfsCred{vfs.NewProcCred(ns, credUid, credGid, credGroups...)}

	n := 0
	for _, c := range []struct{ name, host, ours string }{{"read-only tmpfs", hsb, "/mnt/sb"}, {"read-only bind mount", hbind, "/mnt/bind"}} {
		for _, s := range roSteps {
			hr := child.run(t, c.host, s)
			or := runCredStep(user, c.ours, s)
			n++
			if hr != or {
				t.Errorf("%s: %+v: iovfs %+v, Linux %+v", c.name, s, or, hr)
			}
		}
	}
	t.Logf("%d calls compared on read-only mounts", n)
}

// TestLoopIoctlPrivilegeKernel compares lo_ioctl's privilege rule with the
// kernel: on a descriptor opened read-only by root, the requests that
// change the device give EPERM to uid 1000. The host side runs on a thread
// of its own with a raw setresuid, so nothing is done to the device.
func TestLoopIoctlPrivilegeKernel(t *testing.T) {
	testenv.RequireRoot(t, "opening a host loop device and changing a thread's uid")
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR, 0)
	if err != nil {
		testenv.SkipPrivileged(t, "no /dev/loop-control: "+err.Error())
	}
	n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
	unix.Close(ctl)
	must(t, err)
	hfd, err := unix.Open(fmt.Sprintf("/dev/loop%d", n), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(hfd)
	reqs := []struct {
		name string
		req  uint
		arg  uintptr
	}{
		{"LOOP_SET_CAPACITY", unix.LOOP_SET_CAPACITY, 0},
		{"LOOP_SET_BLOCK_SIZE", unix.LOOP_SET_BLOCK_SIZE, 512},
		{"LOOP_SET_DIRECT_IO", unix.LOOP_SET_DIRECT_IO, 0},
	}
	host := make(chan []unix.Errno)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var out []unix.Errno
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, 1000, 1000, 1000); e != 0 {
			host <- nil
			return
		}
		for _, r := range reqs {
			_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(hfd), uintptr(r.req), r.arg)
			out = append(out, e)
		}
		host <- out
	}()
	hres := <-host
	if hres == nil {
		t.Fatal("setresuid on the host thread failed")
	}
	t.Logf("Linux, uid 1000, read-only fd: %v", hres)
	p, err := iovfs.New()
	must(t, err)
	fd, err := p.Open("/dev/loop0", unix.O_RDONLY, 0)
	must(t, err)
	u, err := p.Fork()
	must(t, err)
	must(t, u.Setresuid(1000, 1000, 1000))
	for i, r := range reqs {
		_, err := u.Ioctl(fd, r.req, int(r.arg))
		if errnoOf(err) != hres[i] {
			t.Errorf("%s as uid 1000 on a read-only fd: iovfs %v, Linux %v", r.name, err, hres[i])
		}
	}
}
