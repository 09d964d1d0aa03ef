package iovfs_test

// The inode-flag differential: random chattr flags set through
// FS_IOC_SETFLAGS and FS_IOC_FSSETXATTR on files and directories of a host
// tmpfs and of iovfs's tmpfs, then every call the immutable and
// append-only flags restrict, through descriptors opened before and after
// the flags were set, and by a caller that owns the file without
// CAP_LINUX_IMMUTABLE. Errnos, flags, fsxattrs, statx attributes, sizes
// and contents are compared.

import (
	"fmt"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/acldiff"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// flagSys is the calls the test makes, on the host or on iovfs.
type flagSys interface {
	open(p string, flags int, mode uint32) (int, error)
	close(fd int)
	getflags(fd int) (uint32, error)
	setflags(fd int, v uint32) error
	fsgetxattr(fd int) (vfs.Fsxattr, error)
	fssetxattr(fd int, x vfs.Fsxattr) error
	state(p string) string
}

type hostFlags struct{}

func (hostFlags) open(p string, flags int, mode uint32) (int, error) {
	return unix.Open(p, flags|unix.O_CLOEXEC, mode)
}
func (hostFlags) close(fd int) { unix.Close(fd) }
func (hostFlags) getflags(fd int) (uint32, error) {
	var v uint32
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), vfs.FS_IOC_GETFLAGS, uintptr(unsafe.Pointer(&v)))
	return v, errnoErr(e)
}
func (hostFlags) setflags(fd int, v uint32) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), vfs.FS_IOC_SETFLAGS, uintptr(unsafe.Pointer(&v)))
	return errnoErr(e)
}
func (hostFlags) fsgetxattr(fd int) (vfs.Fsxattr, error) {
	var x vfs.Fsxattr
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), vfs.FS_IOC_FSGETXATTR, uintptr(unsafe.Pointer(&x)))
	return x, errnoErr(e)
}
func (hostFlags) fssetxattr(fd int, x vfs.Fsxattr) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), vfs.FS_IOC_FSSETXATTR, uintptr(unsafe.Pointer(&x)))
	return errnoErr(e)
}
func (hostFlags) state(p string) string {
	var x unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &x); err != nil {
		return fmt.Sprint(errnoOf(err))
	}
	b, _ := os.ReadFile(p)
	if x.Mode&unix.S_IFMT == unix.S_IFDIR {
		b = nil
	}
	return fmt.Sprintf("mode %o uid %d size %d attrs %#x/%#x data %q", x.Mode, x.Uid, x.Size, x.Attributes, x.Attributes_mask, b)
}

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

type ourFlags struct{ p *vfs.Proc }

func (o ourFlags) open(p string, flags int, mode uint32) (int, error) {
	return o.p.Open(p, flags|unix.O_CLOEXEC, mode)
}
func (o ourFlags) close(fd int) { o.p.Close(fd) }
func (o ourFlags) getflags(fd int) (uint32, error) {
	var v uint32
	_, err := o.p.Ioctl(fd, vfs.FS_IOC_GETFLAGS, &v)
	return v, err
}
func (o ourFlags) setflags(fd int, v uint32) error {
	_, err := o.p.Ioctl(fd, vfs.FS_IOC_SETFLAGS, &v)
	return err
}
func (o ourFlags) fsgetxattr(fd int) (vfs.Fsxattr, error) {
	var x vfs.Fsxattr
	_, err := o.p.Ioctl(fd, vfs.FS_IOC_FSGETXATTR, &x)
	return x, err
}
func (o ourFlags) fssetxattr(fd int, x vfs.Fsxattr) error {
	_, err := o.p.Ioctl(fd, vfs.FS_IOC_FSSETXATTR, &x)
	return err
}
func (o ourFlags) state(p string) string {
	x, err := o.p.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS)
	if err != nil {
		return fmt.Sprint(errnoOf(err))
	}
	var b []byte
	if x.Mode&unix.S_IFMT != unix.S_IFDIR {
		fd, err := o.p.Open(p, unix.O_RDONLY, 0)
		if err == nil {
			b = make([]byte, 256)
			n, _ := o.p.Read(fd, b)
			b = b[:n]
			o.p.Close(fd)
		}
	}
	return fmt.Sprintf("mode %o uid %d size %d attrs %#x/%#x data %q", x.Mode, x.Uid, x.Size, x.Attributes, x.Attributes_mask, b)
}

// chattrFlags are the flags the test sets: those tmpfs has and a few it
// refuses.
var chattrFlags = []uint32{vfs.FS_IMMUTABLE_FL, vfs.FS_APPEND_FL, vfs.FS_NODUMP_FL, vfs.FS_NOATIME_FL,
	vfs.FS_SYNC_FL, vfs.FS_DIRSYNC_FL, vfs.FS_NOTAIL_FL, vfs.FS_COMPR_FL, vfs.FS_TOPDIR_FL, vfs.FS_PROJINHERIT_FL}

// TestFileAttrKernel compares inode flags with a host tmpfs's: 200 random
// cases (2,000 under IOVFS_LONG).
func TestFileAttrKernel(t *testing.T) {
	testenv.RequireRoot(t, "setting the immutable and append-only flags")
	cases := 200
	if testenv.Long() {
		cases = 2000
	}
	host := hostTmpfs(t)
	must(t, os.Chmod(filepath.Dir(host), 0o755))
	exe := acldiff.HelperCopy(t)
	user := acldiff.Identity{Uid: 1000, Gid: 1000, Groups: []int{1001, 1002}}
	child := acldiff.StartChild(t, exe, "TestACLHelper", user)
	root, err := iovfs.New()
	must(t, err)
	must(t, root.Mkdir("/tmp/fa", 0o755))
	must(t, root.Chmod("/tmp/fa", 0o755))
	ouser := vfs.NewProcCred(root.Namespace(), user.Uid, user.Gid, user.Groups...)
	hs, os2 := flagSys(hostFlags{}), flagSys(ourFlags{root})

	rnd := rand.New(rand.NewSource(5))
	compared := 0
	cmp := func(what string, h, o any) {
		t.Helper()
		compared++
		if fmt.Sprint(h) != fmt.Sprint(o) {
			t.Errorf("%s:\n host %v\n ours %v", what, h, o)
		}
	}
	for c := range cases {
		name := fmt.Sprintf("f%d", c)
		dir := rnd.Intn(3) == 0
		hp, op := path.Join(host, name), "/tmp/fa/"+name
		owner := 0
		if rnd.Intn(3) == 0 {
			owner = user.Uid
		}
		// The node, owned by root or the user, and a descriptor open for
		// writing from before the flags change.
		var hfd, ofd int = -1, -1
		if dir {
			must(t, unix.Mkdir(hp, 0o777))
			must(t, root.Mkdir(op, 0o777))
			must(t, unix.Chmod(hp, 0o777))
			must(t, root.Chmod(op, 0o777))
			for _, s := range []struct {
				sys flagSys
				p   string
			}{{hs, hp + "/in"}, {os2, op + "/in"}} {
				fd, err := s.sys.open(s.p, unix.O_CREAT|unix.O_WRONLY, 0o666)
				must(t, err)
				s.sys.close(fd)
			}
			hfd, err = hs.open(hp, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			must(t, err)
			ofd, err = os2.open(op, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			must(t, err)
		} else {
			hfd, err = hs.open(hp, unix.O_CREAT|unix.O_RDWR, 0o666)
			must(t, err)
			ofd, err = os2.open(op, unix.O_CREAT|unix.O_RDWR, 0o666)
			must(t, err)
			unix.Write(hfd, []byte("hello"))
			root.Write(ofd, []byte("hello"))
		}
		must(t, unix.Chown(hp, owner, owner))
		must(t, root.Chown(op, uint32(owner), uint32(owner)))

		// Flags: through SETFLAGS, or FSSETXATTR now and then; by root,
		// or by the owner without CAP_LINUX_IMMUTABLE.
		var fl uint32
		for _, f := range chattrFlags {
			if rnd.Intn(4) == 0 {
				fl |= f
			}
		}
		asUser := owner != 0 && rnd.Intn(2) == 0
		useFsx := rnd.Intn(5) == 0
		var herr, oerr error
		switch {
		case asUser:
			r := child.Run(t, acldiff.Req{Op: "setflags", Path: hp, Mode: fl})
			herr = errnoErrOf(r.Errno)
			if fd, err := ouser.Open(op, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
				oerr = ourFlags{ouser}.setflags(fd, fl)
				ouser.Close(fd)
			} else {
				oerr = err
			}
		case useFsx:
			var a vfs.FileAttr
			a.FillFlags(fl)
			x := vfs.Fsxattr{Xflags: a.Xflags}
			if rnd.Intn(4) == 0 {
				x.Extsize = 4096
			}
			herr, oerr = hs.fssetxattr(hfd, x), os2.fssetxattr(ofd, x)
		default:
			herr, oerr = hs.setflags(hfd, fl), os2.setflags(ofd, fl)
		}
		cmp(fmt.Sprintf("%s: set %#x (user %v fsx %v)", name, fl, asUser, useFsx), errnoOf(herr), errnoOf(oerr))
		hf, herr := hs.getflags(hfd)
		of, oerr := os2.getflags(ofd)
		cmp(name+": getflags", fmt.Sprint(hf, errnoOf(herr)), fmt.Sprint(of, errnoOf(oerr)))
		hx, herr := hs.fsgetxattr(hfd)
		ox, oerr := os2.fsgetxattr(ofd)
		cmp(name+": fsgetxattr", fmt.Sprint(hx, errnoOf(herr)), fmt.Sprint(ox, errnoOf(oerr)))
		what := fmt.Sprintf("%s (flags %#x, dir %v)", name, hf, dir)

		// The calls the flags restrict, on both sides, in order.
		type call struct {
			name string
			h, o func() error
		}
		hsub, osub := hp+"/in", op+"/in"
		calls := []call{
			{"open wronly", func() error { return openClose(hs, hp, unix.O_WRONLY) }, func() error { return openClose(os2, op, unix.O_WRONLY) }},
			{"open append", func() error { return openClose(hs, hp, unix.O_WRONLY|unix.O_APPEND) }, func() error { return openClose(os2, op, unix.O_WRONLY|unix.O_APPEND) }},
			{"open trunc", func() error { return openClose(hs, hp, unix.O_WRONLY|unix.O_APPEND|unix.O_TRUNC) }, func() error { return openClose(os2, op, unix.O_WRONLY|unix.O_APPEND|unix.O_TRUNC) }},
			{"open rdonly", func() error { return openClose(hs, hp, unix.O_RDONLY) }, func() error { return openClose(os2, op, unix.O_RDONLY) }},
			{"chmod", func() error { return unix.Chmod(hp, 0o750) }, func() error { return root.Chmod(op, 0o750) }},
			{"chown", func() error { return unix.Chown(hp, owner, 7) }, func() error { return root.Chown(op, uint32(owner), 7) }},
			{"utimes now", func() error { return unix.UtimesNano(hp, nil) }, func() error { return root.Utimensat(unix.AT_FDCWD, op, nil, 0) }},
			{"utimes set", func() error { return unix.UtimesNano(hp, []unix.Timespec{{Sec: 5}, {Sec: 6}}) },
				func() error { return root.Utimensat(unix.AT_FDCWD, op, []unix.Timespec{{Sec: 5}, {Sec: 6}}, 0) }},
			{"setxattr", func() error { return unix.Setxattr(hp, "user.x", []byte("1"), 0) }, func() error { return root.Setxattr(op, "user.x", []byte("1"), 0) }},
			{"setxattr trusted", func() error { return unix.Setxattr(hp, "trusted.x", []byte("1"), 0) }, func() error { return root.Setxattr(op, "trusted.x", []byte("1"), 0) }},
			{"link", func() error { return unix.Link(hp, hp+".l") }, func() error { return root.Link(op, op+".l") }},
			{"rename", func() error { return unix.Rename(hp, hp+".r") }, func() error { return root.Rename(op, op+".r") }},
		}
		if dir {
			calls = append(calls,
				call{"create in", func() error { return openClose(hs, hp+"/new", unix.O_CREAT|unix.O_WRONLY) }, func() error { return openClose(os2, op+"/new", unix.O_CREAT|unix.O_WRONLY) }},
				call{"mkdir in", func() error { return unix.Mkdir(hp+"/nd", 0o755) }, func() error { return root.Mkdir(op+"/nd", 0o755) }},
				call{"write in", func() error { return openClose(hs, hsub, unix.O_WRONLY) }, func() error { return openClose(os2, osub, unix.O_WRONLY) }},
				call{"rename in", func() error { return unix.Rename(hsub, hsub+"2") }, func() error { return root.Rename(osub, osub+"2") }},
				call{"unlink in", func() error { return unix.Unlink(hsub) }, func() error { return root.Unlink(osub) }},
			)
		} else {
			calls = append(calls,
				call{"write old fd", func() error { _, err := unix.Write(hfd, []byte("w")); return err }, func() error { _, err := root.Write(ofd, []byte("w")); return err }},
				call{"pwrite old fd", func() error { _, err := unix.Pwrite(hfd, []byte("p"), 1); return err }, func() error { _, err := root.Pwrite(ofd, []byte("p"), 1); return err }},
				call{"pwritev2 noappend", func() error { _, err := unix.Pwritev2(hfd, [][]byte{[]byte("n")}, 0, unix.RWF_NOAPPEND); return err },
					func() error { _, err := root.Pwritev2(ofd, [][]byte{[]byte("n")}, 0, unix.RWF_NOAPPEND); return err }},
				call{"setfl append", func() error { _, err := unix.FcntlInt(uintptr(hfd), unix.F_SETFL, unix.O_APPEND); return err },
					func() error { _, err := root.Fcntl(ofd, unix.F_SETFL, unix.O_APPEND); return err }},
				call{"fallocate keep", func() error { return unix.Fallocate(hfd, unix.FALLOC_FL_KEEP_SIZE, 0, 100) }, func() error { return root.Fallocate(ofd, unix.FALLOC_FL_KEEP_SIZE, 0, 100) }},
				call{"fallocate punch", func() error { return unix.Fallocate(hfd, unix.FALLOC_FL_KEEP_SIZE|unix.FALLOC_FL_PUNCH_HOLE, 0, 1) },
					func() error { return root.Fallocate(ofd, unix.FALLOC_FL_KEEP_SIZE|unix.FALLOC_FL_PUNCH_HOLE, 0, 1) }},
				call{"copy_file_range old fd", func() error {
					r, w := int64(0), int64(100)
					_, err := unix.CopyFileRange(hfd, &r, hfd, &w, 1, 0)
					return err
				}, func() error {
					r, w := int64(0), int64(100)
					_, err := root.CopyFileRange(ofd, &r, ofd, &w, 1, 0)
					return err
				}},
				call{"ftruncate", func() error { return unix.Ftruncate(hfd, 3) }, func() error { return root.Ftruncate(ofd, 3) }},
				call{"truncate", func() error { return unix.Truncate(hp, 2) }, func() error { return root.Truncate(op, 2) }},
				call{"unlink", func() error { return unix.Unlink(hp) }, func() error { return root.Unlink(op) }},
			)
		}
		rnd.Shuffle(len(calls), func(i, j int) { calls[i], calls[j] = calls[j], calls[i] })
		for _, k := range calls {
			cmp(what+": "+k.name, errnoOf(k.h()), errnoOf(k.o()))
		}
		for _, s := range []string{"", ".l", ".r"} {
			cmp(what+": state"+s, hs.state(hp+s), os2.state(op+s))
		}
		if dir {
			// What a new file and directory inherit.
			for _, n := range []string{"/new", "/nd"} {
				h, o := flagsAt(hs, hp+n), flagsAt(os2, op+n)
				cmp(what+": inherited"+n, h, o)
			}
		}
		// Clear the flags, so that the next cases can use the names.
		for _, s := range []struct {
			sys flagSys
			fd  int
		}{{hs, hfd}, {os2, ofd}} {
			s.sys.setflags(s.fd, 0)
			s.sys.close(s.fd)
		}
	}
	t.Logf("%d results compared", compared)
}

func errnoErrOf(e int) error {
	if e == 0 {
		return nil
	}
	return unix.Errno(e)
}

func openClose(s flagSys, p string, flags int) error {
	fd, err := s.open(p, flags, 0o644)
	if err == nil {
		s.close(fd)
	}
	return err
}

func flagsAt(s flagSys, p string) string {
	fd, err := s.open(p, unix.O_RDONLY, 0)
	if err != nil {
		return fmt.Sprint(errnoOf(err))
	}
	defer s.close(fd)
	v, err := s.getflags(fd)
	return fmt.Sprint(v, errnoOf(err))
}
