package fuse

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// aclXattr encodes entries (tag, perm, id) as a system.posix_acl_* value.
func aclXattr(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2) // POSIX_ACL_XATTR_VERSION
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// ACL tags.
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclMask     = 0x10
	aclOther    = 0x20
	aclNoID     = 0xffffffff
)

// asFsUser runs f on a thread whose fs uid and gid are uid and gid: the
// kernel drops the file capabilities of a thread whose fsuid is not 0, so
// its permission checks are those of that user.
func asFsUser(uid, gid int, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Setfsgid(gid)
	unix.Setfsuid(uid)
	defer func() {
		unix.Setfsuid(0)
		unix.Setfsgid(0)
	}()
	f()
}

// TestACLExport compares POSIX ACLs through the export with a host tmpfs:
// the kernel's permission checks use a file's ACL (FUSE_POSIX_ACL), a
// mode an owner's ACL change sets is seen at once (the kernel forgets the
// attributes), and a create in a directory with a default ACL ignores the
// umask (FUSE_DONT_MASK: the server applies it only without one).
func TestACLExport(t *testing.T) {
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{})
	host := t.TempDir()
	if err := unix.Mount("tmpfs", host, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(host, unix.MNT_DETACH)
	aclExport(t, host, mnt)
}

// TestACLExportExt4 is TestACLExport on an export of a read-write ext4
// mount, compared with a kernel loop mount of the same image.
func TestACLExportExt4(t *testing.T) {
	p, host := ext4RW(t)
	mnt, _ := export(t, p, "/mnt", Options{})
	aclExport(t, host, mnt)
}

// aclExport runs the ACL comparison on host, a host directory, and mnt,
// an export.
func aclExport(t *testing.T, host, mnt string) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Dir(host), 0o755)) // the test's directory, for the other users
	defer unix.Umask(unix.Umask(0o022))

	readOnly1000 := aclXattr([3]uint32{aclUserObj, 6, aclNoID}, [3]uint32{aclUser, 4, 1000},
		[3]uint32{aclGroupObj, 0, aclNoID}, [3]uint32{aclMask, 4, aclNoID}, [3]uint32{aclOther, 0, aclNoID})
	all := aclXattr([3]uint32{aclUserObj, 7, aclNoID}, [3]uint32{aclGroupObj, 7, aclNoID}, [3]uint32{aclOther, 7, aclNoID})
	var results [2][]string
	for i, root := range []string{host, mnt} {
		var out []string
		note := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
		path := func(s string) string { return filepath.Join(root, s) }
		mode := func(s string) string {
			var st unix.Stat_t
			if err := unix.Lstat(path(s), &st); err != nil {
				return err.Error()
			}
			return fmt.Sprintf("%o", st.Mode)
		}
		must(os.WriteFile(path("f"), []byte("data"), 0o600))
		must(unix.Setxattr(path("f"), "system.posix_acl_access", readOnly1000, 0))
		must(os.Mkdir(path("d"), 0o755))
		must(unix.Setxattr(path("d"), "system.posix_acl_default", all, 0))
		must(os.Mkdir(path("plain"), 0o777))
		must(os.WriteFile(path("g"), nil, 0o644))
		must(os.Chown(path("g"), 1000, 1000))
		must(os.Chmod(path("g"), 0o755|os.ModeSetgid))
		note("f %s, g %s", mode("f"), mode("g"))
		for _, uid := range []int{1000, 1001} {
			asFsUser(uid, uid, func() {
				b, err := os.ReadFile(path("f"))
				if pe, ok := err.(*os.PathError); ok {
					err = pe.Err
				}
				note("uid %d reads f: %q %v", uid, b, err)
				note("uid %d sets g's ACL: %v", uid, unix.Setxattr(path("g"), "system.posix_acl_access", all, 0))
				note("then g is %s", mode("g"))
			})
			must(unix.Chmod(path("g"), 0o2755))
		}
		for _, dir := range []string{"d", "plain"} {
			must(os.WriteFile(path(dir+"/file"), nil, 0o666))
			must(os.Mkdir(path(dir+"/dir"), 0o777))
			must(unix.Mknod(path(dir+"/fifo"), unix.S_IFIFO|0o666, 0))
			note("in %s, umask 022: file %s, dir %s, fifo %s", dir, mode(dir+"/file"), mode(dir+"/dir"), mode(dir+"/fifo"))
			b := make([]byte, 256)
			n, err := unix.Getxattr(path(dir+"/dir"), "system.posix_acl_default", b)
			note("its subdirectory's default ACL: %x %v", b[:max(n, 0)], err)
		}
		results[i] = out
	}
	for i := range max(len(results[0]), len(results[1])) {
		var h, o string
		if i < len(results[0]) {
			h = results[0][i]
		}
		if i < len(results[1]) {
			o = results[1][i]
		}
		if h != o {
			t.Errorf("host tmpfs %s\n       export %s", h, o)
		}
	}
	t.Logf("%d results compared", len(results[0]))
}

// TestFallocateKillPrivExport compares with a host tmpfs a fallocate by a
// user without CAP_FSETID of a set-ID file and of a file with
// capabilities: the bits and the security.capability xattr go (Linux's
// file_modified), and the mode the kernel shows after it is the new one.
func TestFallocateKillPrivExport(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{})
	host := t.TempDir()
	must(unix.Mount("tmpfs", host, "tmpfs", 0, "size=16m"))
	defer unix.Unmount(host, unix.MNT_DETACH)
	must(os.Chmod(filepath.Dir(host), 0o755))
	// vfs_cap_data, revision 2: cap_setuid and cap_setgid, effective.
	caps := binary.LittleEndian.AppendUint32(nil, 0x02000001)
	caps = binary.LittleEndian.AppendUint32(caps, 1<<unix.CAP_SETUID|1<<unix.CAP_SETGID)
	caps = append(caps, make([]byte, 12)...)
	var results [2][]string
	for i, root := range []string{host, mnt} {
		var out []string
		for _, c := range []struct {
			name string
			mode uint32
			caps bool
		}{{"suid", 0o6666, false}, {"sgid-x", 0o2676, false}, {"caps", 0o666, true}} {
			f := filepath.Join(root, c.name)
			must(os.WriteFile(f, make([]byte, 8192), 0o600))
			must(os.Chmod(f, 0))
			must(unix.Chmod(f, c.mode))
			if c.caps {
				must(unix.Setxattr(f, "security.capability", caps, 0))
			}
			var err error
			asFsUser(1000, 1000, func() {
				var fd int
				if fd, err = unix.Open(f, unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
					err = unix.Fallocate(fd, 0, 0, 65536)
					unix.Close(fd)
				}
			})
			// The mode alone first, as stat -c %A asks: a cached mode
			// the kernel was not told to forget would show.
			var x unix.Statx_t
			must(unix.Statx(unix.AT_FDCWD, f, 0, unix.STATX_MODE, &x))
			var st unix.Stat_t
			must(unix.Stat(f, &st))
			b := make([]byte, 64)
			n, xerr := unix.Getxattr(f, "security.capability", b)
			out = append(out, fmt.Sprintf("%s: fallocate %v, then mode %o (%o) size %d, capabilities %x %v",
				c.name, err, x.Mode, st.Mode, st.Size, b[:max(n, 0)], xerr))
		}
		results[i] = out
	}
	for i := range results[0] {
		if results[0][i] != results[1][i] {
			t.Errorf("host tmpfs %s\n       export %s", results[0][i], results[1][i])
		}
	}
}

// TestFileAttrExport compares inode flags through the export with a host
// tmpfs: FS_IOC_GETFLAGS, FS_IOC_SETFLAGS and FS_IOC_FSGETXATTR (chattr,
// lsattr), who may set them, and what the immutable and append-only
// flags then refuse.
func TestFileAttrExport(t *testing.T) {
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{})
	host := t.TempDir()
	if err := unix.Mount("tmpfs", host, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(host, unix.MNT_DETACH)
	fileAttrExport(t, host, mnt)
}

// TestFileAttrExportExt4 is TestFileAttrExport on an export of a
// read-write ext4 mount, compared with a kernel loop mount of the same
// image.
func TestFileAttrExportExt4(t *testing.T) {
	p, host := ext4RW(t)
	mnt, _ := export(t, p, "/mnt", Options{})
	fileAttrExport(t, host, mnt)
}

// fileAttrExport runs the flag comparison on host, a host directory, and
// mnt, an export.
func fileAttrExport(t *testing.T, host, mnt string) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Dir(host), 0o755))
	var results [2][]string
	for i, root := range []string{host, mnt} {
		var out []string
		note := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
		path := func(s string) string { return filepath.Join(root, s) }
		errno := func(err error) string {
			if pe, ok := err.(*os.PathError); ok {
				err = pe.Err
			}
			if le, ok := err.(*os.LinkError); ok {
				err = le.Err
			}
			return fmt.Sprint(err)
		}
		flags := func(name string) string {
			fd, err := unix.Open(path(name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return errno(err)
			}
			defer unix.Close(fd)
			fl, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
			x, xerr := unix.IoctlGetInt(fd, 0x801c581f) // FS_IOC_FSGETXATTR's fsx_xflags, the first word
			return fmt.Sprintf("flags %#x %v, xflags %#x %v", fl, err, uint32(x), xerr)
		}
		set := func(name string, fl uint32) error {
			fd, err := unix.Open(path(name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			// As chattr(1): the flags of the file system's own (ext4's
			// extents, inline data, index) are passed back unchanged.
			cur, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
			if err != nil {
				return err
			}
			fl |= cur & (vfs.FS_EXTENT_FL | vfs.FS_INLINE_DATA_FL | vfs.FS_INDEX_FL)
			return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(fl))
		}
		for _, n := range []string{"i", "a", "d"} {
			must(os.WriteFile(path(n), []byte("data"), 0o666))
			must(os.Chown(path(n), 1000, 1000))
		}
		asFsUser(1000, 1000, func() {
			note("owner sets i: %v", errno(set("i", vfs.FS_IMMUTABLE_FL)))
			note("owner sets d: %v", errno(set("d", vfs.FS_NODUMP_FL|vfs.FS_NOATIME_FL)))
		})
		asFsUser(1001, 1001, func() {
			note("other sets d: %v", errno(set("d", 0)))
		})
		note("root sets i: %v", errno(set("i", vfs.FS_IMMUTABLE_FL)))
		note("root sets a: %v", errno(set("a", vfs.FS_APPEND_FL)))
		for _, n := range []string{"i", "a", "d"} {
			note("%s: %s", n, flags(n))
		}
		_, err := os.OpenFile(path("i"), os.O_WRONLY, 0)
		note("write open of i: %v", errno(err))
		note("unlink i: %v, rename i: %v", errno(os.Remove(path("i"))), errno(os.Rename(path("i"), path("i2"))))
		_, err = os.OpenFile(path("a"), os.O_WRONLY, 0)
		note("write open of a: %v", errno(err))
		f, err := os.OpenFile(path("a"), os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			_, err = f.WriteString("more")
			f.Close()
		}
		b, _ := os.ReadFile(path("a"))
		note("append to a: %v, then %q", errno(err), b)
		note("root clears them: %v %v", errno(set("i", 0)), errno(set("a", 0)))
		note("unlink i: %v", errno(os.Remove(path("i"))))
		results[i] = out
	}
	for i := range results[0] {
		if results[0][i] != results[1][i] {
			t.Errorf("host tmpfs %s\n       export %s", results[0][i], results[1][i])
		}
	}
	t.Logf("%d results compared", len(results[0]))
}

// TestBtimeExport checks statx's creation time through the export
// (FUSE_STATX), against a host tmpfs: both report it, for a file and a
// directory, between the times around the create, and unchanged by a
// later write.
func TestBtimeExport(t *testing.T) {
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{})
	host := t.TempDir()
	if err := unix.Mount("tmpfs", host, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(host, unix.MNT_DETACH)
	for _, root := range []string{host, mnt} {
		for _, dir := range []bool{false, true} {
			name := filepath.Join(root, fmt.Sprint("b", dir))
			// Kernel timestamps come from the coarse clock, which may lag
			// a tick or more behind time.Now on a tickless machine: the
			// bound is the coarse clock read before the create.
			var ts unix.Timespec
			if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts); err != nil {
				t.Fatal(err)
			}
			before := time.Unix(ts.Unix())
			var err error
			if dir {
				err = os.Mkdir(name, 0o755)
			} else {
				err = os.WriteFile(name, []byte("x"), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			time.Sleep(10 * time.Millisecond)
			if !dir {
				if err := os.WriteFile(name, []byte("yy"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var x unix.Statx_t
			if err := unix.Statx(unix.AT_FDCWD, name, 0, unix.STATX_BTIME, &x); err != nil {
				t.Fatal(err)
			}
			bt := time.Unix(x.Btime.Sec, int64(x.Btime.Nsec))
			if x.Mask&unix.STATX_BTIME == 0 || bt.Before(before) || bt.After(after) {
				t.Errorf("%s: statx mask %#x, btime %v; want STATX_BTIME, between %v and %v", name, x.Mask, bt, before, after)
			}
		}
	}
}

// TestDevSuidExport checks Options.Dev and Options.Suid: without them the
// export is nodev and nosuid (a device node made on it cannot be opened),
// with them the host opens the node as its own device, as on a kernel
// tmpfs mounted by root.
func TestDevSuidExport(t *testing.T) {
	for _, on := range []bool{false, true} {
		p := newProc(t)
		mnt, _ := export(t, p, "/tmp", Options{Dev: on, Suid: on})
		var sf unix.Statfs_t
		if err := unix.Statfs(mnt, &sf); err != nil {
			t.Fatal(err)
		}
		if got := sf.Flags&(unix.ST_NODEV|unix.ST_NOSUID) == 0; got != on {
			t.Errorf("Dev, Suid %v: statfs flags %#x", on, sf.Flags)
		}
		null := filepath.Join(mnt, "null")
		if err := unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
		err := os.WriteFile(null, []byte("x"), 0)
		if (err == nil) != on {
			t.Errorf("Dev %v: writing a device node for the host's /dev/null: %v", on, err)
		}
	}
}
