// Package flagdiff is the inode-flag differential shared by the file
// systems: random chattr flags set through FS_IOC_SETFLAGS and
// FS_IOC_FSSETXATTR on files and directories of a host directory and of
// an iovfs one, then every call the immutable and append-only flags
// restrict, through descriptors opened before and after the flags were
// set, and by a caller that owns the file without CAP_LINUX_IMMUTABLE.
// Errnos, flags, fsxattrs, statx attributes, sizes, contents and the
// flags new nodes inherit are compared.
package flagdiff

import (
	"fmt"
	"math/rand"
	"os"
	"path"
	"testing"
	"unsafe"

	"github.com/iovfs/iovfs/internal/acldiff"
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
		return fmt.Sprint(acldiff.ErrnoOf(err))
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
		return fmt.Sprint(acldiff.ErrnoOf(err))
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

// Config is one differential run.
type Config struct {
	// HostDir is the host directory, Dir the iovfs one in Root's
	// namespace; both exist, owned by root, 0755, under directories
	// other users may search.
	HostDir, Dir string
	// Root is an iovfs process with uid 0.
	Root *vfs.Proc
	// HelperTest names the test of this binary that calls acldiff.Helper.
	HelperTest string
	// Flags are the flags the random cases set; Keep, those the cases
	// leave as they are (the file system's own, such as ext4's extents
	// flag, which chattr(1) passes back unchanged).
	Flags []uint32
	Keep  uint32
	// Cases is how many random nodes are made; Seed seeds them.
	Cases int
	Seed  int64
}

// Run runs the differential, reports mismatches through t and returns
// how many results it compared.
func Run(t *testing.T, cfg Config) int {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	host, root := cfg.HostDir, cfg.Root
	exe := acldiff.HelperCopy(t)
	user := acldiff.Identity{Uid: 1000, Gid: 1000, Groups: []int{1001, 1002}}
	child := acldiff.StartChild(t, exe, cfg.HelperTest, user)
	ouser := vfs.NewProcCred(root.Namespace(), user.Uid, user.Gid, user.Groups...)
	hs, os2 := flagSys(hostFlags{}), flagSys(ourFlags{root})
	var err error

	rnd := rand.New(rand.NewSource(cfg.Seed))
	compared := 0
	cmp := func(what string, h, o any) {
		t.Helper()
		compared++
		if fmt.Sprint(h) != fmt.Sprint(o) {
			t.Errorf("%s:\n host %v\n ours %v", what, h, o)
		}
	}
	for c := range cfg.Cases {
		name := fmt.Sprintf("f%d", c)
		dir := rnd.Intn(3) == 0
		hp, op := path.Join(host, name), path.Join(cfg.Dir, name)
		owner := 0
		if rnd.Intn(3) == 0 {
			owner = user.Uid
		}
		// The node, owned by root or the user, and a descriptor open for
		// writing from before the flags change.
		var hfd, ofd int = -1, -1
		if dir {
			must(unix.Mkdir(hp, 0o777))
			must(root.Mkdir(op, 0o777))
			must(unix.Chmod(hp, 0o777))
			must(root.Chmod(op, 0o777))
			for _, s := range []struct {
				sys flagSys
				p   string
			}{{hs, hp + "/in"}, {os2, op + "/in"}} {
				fd, err := s.sys.open(s.p, unix.O_CREAT|unix.O_WRONLY, 0o666)
				must(err)
				s.sys.close(fd)
			}
			hfd, err = hs.open(hp, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			must(err)
			ofd, err = os2.open(op, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			must(err)
		} else {
			hfd, err = hs.open(hp, unix.O_CREAT|unix.O_RDWR, 0o666)
			must(err)
			ofd, err = os2.open(op, unix.O_CREAT|unix.O_RDWR, 0o666)
			must(err)
			unix.Write(hfd, []byte("hello"))
			root.Write(ofd, []byte("hello"))
		}
		must(unix.Chown(hp, owner, owner))
		must(root.Chown(op, uint32(owner), uint32(owner)))

		// Flags: through SETFLAGS, or FSSETXATTR now and then; by root,
		// or by the owner without CAP_LINUX_IMMUTABLE.
		var fl uint32
		for _, f := range cfg.Flags {
			if rnd.Intn(4) == 0 {
				fl |= f
			}
		}
		keep, _ := hs.getflags(hfd)
		keep &= cfg.Keep
		fl |= keep
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
		cmp(fmt.Sprintf("%s: set %#x (user %v fsx %v)", name, fl, asUser, useFsx), acldiff.ErrnoOf(herr), acldiff.ErrnoOf(oerr))
		hf, herr := hs.getflags(hfd)
		of, oerr := os2.getflags(ofd)
		cmp(name+": getflags", fmt.Sprint(hf, acldiff.ErrnoOf(herr)), fmt.Sprint(of, acldiff.ErrnoOf(oerr)))
		hx, herr := hs.fsgetxattr(hfd)
		ox, oerr := os2.fsgetxattr(ofd)
		cmp(name+": fsgetxattr", fmt.Sprint(hx, acldiff.ErrnoOf(herr)), fmt.Sprint(ox, acldiff.ErrnoOf(oerr)))
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
			cmp(what+": "+k.name, acldiff.ErrnoOf(k.h()), acldiff.ErrnoOf(k.o()))
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
			s.sys.setflags(s.fd, keep)
			s.sys.close(s.fd)
		}
	}
	return compared
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
		return fmt.Sprint(acldiff.ErrnoOf(err))
	}
	defer s.close(fd)
	v, err := s.getflags(fd)
	return fmt.Sprint(v, acldiff.ErrnoOf(err))
}
