package iovfs_test

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// atimeSide is one system of TestAtimeMountKernel: a tmpfs mounted at
// dir, with a file f and a directory d in it.
type atimeSide struct {
	mount   func(flags uintptr) error
	remount func(flags uintptr) error
	umount  func() error
	setup   func() error
	utimes  func(name string, ts []unix.Timespec) error
	access  func(name string, flags int) error // read f, or list d
	atime   func(name string) (unix.Timespec, error)
}

// TestAtimeMountKernel compares, on a kernel tmpfs and on iovfs's, whether
// reading a file and listing a directory move their atimes, under each
// initial atime mount flag and then after a chain of remounts
// (MS_REMOUNT|MS_BIND) changing them, with atimes older than mtime (which
// relatime moves) and newer than mtime and ctime (which only strictatime
// moves), with and without O_NOATIME, and on a read-only bind mount; and
// whether readlink and a walk through a symlink move the symlink's.
func TestAtimeMountKernel(t *testing.T) {
	testenv.RequireRoot(t, "mounting kernel tmpfs")
	kdir := t.TempDir()
	kbind := t.TempDir()
	p, err := iovfs.New()
	must(t, err)
	must(t, p.Mkdir("/tmp/a", 0o755))
	must(t, p.Mkdir("/tmp/b", 0o755))
	buf := make([]byte, 4096)
	kernel := atimeSide{
		mount:   func(fl uintptr) error { return unix.Mount("tmpfs", kdir, "tmpfs", fl, "size=1m") },
		remount: func(fl uintptr) error { return unix.Mount("", kdir, "", unix.MS_REMOUNT|unix.MS_BIND|fl, "") },
		umount:  func() error { return unix.Unmount(kdir, unix.MNT_DETACH) },
		setup: func() error {
			if err := os.WriteFile(kdir+"/f", []byte("data"), 0o644); err != nil {
				return err
			}
			if err := os.Mkdir(kdir+"/d", 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(kdir+"/d/e", nil, 0o644); err != nil {
				return err
			}
			if err := os.Symlink("f", kdir+"/l"); err != nil {
				return err
			}
			if err := unix.Mount(kdir, kbind, "", unix.MS_BIND, ""); err != nil {
				return err
			}
			return unix.Mount("", kbind, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, "")
		},
		utimes: func(name string, ts []unix.Timespec) error {
			return unix.UtimesNanoAt(unix.AT_FDCWD, kdir+"/"+name, ts, unix.AT_SYMLINK_NOFOLLOW)
		},
		access: func(name string, fl int) error {
			path := kdir + "/" + name
			if name[0] == '@' {
				path = kbind + "/" + name[1:]
			}
			if name[len(name)-1] == 'l' {
				if fl != 0 {
					var st unix.Stat_t
					return unix.Stat(path, &st) // through the symlink
				}
				_, err := os.Readlink(path)
				return err
			}
			fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|fl, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			if name[len(name)-1] == 'd' {
				_, err = unix.Getdents(fd, buf)
			} else {
				_, err = unix.Read(fd, buf)
			}
			return err
		},
		atime: func(name string) (unix.Timespec, error) {
			var st unix.Stat_t
			err := unix.Lstat(kdir+"/"+name, &st)
			return st.Atim, err
		},
	}
	ours := atimeSide{
		mount:   func(fl uintptr) error { return p.Mount("tmpfs", "/tmp/a", "tmpfs", fl, "size=1m") },
		remount: func(fl uintptr) error { return p.Mount("", "/tmp/a", "", unix.MS_REMOUNT|unix.MS_BIND|fl, "") },
		umount: func() error {
			p.Unmount("/tmp/b", unix.MNT_DETACH)
			return p.Unmount("/tmp/a", unix.MNT_DETACH)
		},
		setup: func() error {
			fd, err := p.Open("/tmp/a/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			p.Write(fd, []byte("data"))
			p.Close(fd)
			if err := p.Mkdir("/tmp/a/d", 0o755); err != nil {
				return err
			}
			fd, err = p.Open("/tmp/a/d/e", unix.O_CREAT|unix.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			p.Close(fd)
			if err := p.Symlink("f", "/tmp/a/l"); err != nil {
				return err
			}
			return p.Mount("/tmp/a", "/tmp/b", "", unix.MS_BIND|unix.MS_RDONLY, "")
		},
		utimes: func(name string, ts []unix.Timespec) error {
			return p.Utimensat(unix.AT_FDCWD, "/tmp/a/"+name, ts, unix.AT_SYMLINK_NOFOLLOW)
		},
		access: func(name string, fl int) error {
			path := "/tmp/a/" + name
			if name[0] == '@' {
				path = "/tmp/b/" + name[1:]
			}
			if name[len(name)-1] == 'l' {
				if fl != 0 {
					_, err := p.Stat(path) // through the symlink
					return err
				}
				_, err := p.Readlink(path)
				return err
			}
			fd, err := p.Open(path, unix.O_RDONLY|fl, 0)
			if err != nil {
				return err
			}
			defer p.Close(fd)
			if name[len(name)-1] == 'd' {
				_, err = p.Getdents(fd)
			} else {
				_, err = p.Read(fd, buf)
			}
			return err
		},
		atime: func(name string) (unix.Timespec, error) {
			st, err := p.Lstat("/tmp/a/" + name)
			return unix.NsecToTimespec(st.Atime.UnixNano()), err
		},
	}
	sides := []struct {
		name string
		s    atimeSide
	}{{"kernel", kernel}, {"iovfs", ours}}

	// step makes every access under the current flags on both sides and
	// compares whether each moved atime.
	compared, moved := 0, 0
	step := func(stage string) {
		now := time.Now().Unix()
		cases := []struct {
			name string
			ts   []unix.Timespec
		}{
			{"atime before mtime", []unix.Timespec{{Sec: 1000}, {Sec: 2000}}},
			{"atime after mtime and ctime", []unix.Timespec{{Sec: now + 100}, {Sec: now - 100}}},
		}
		for _, c := range cases {
			for _, target := range []string{"f", "d", "l", "@f", "@d", "@l"} {
				for _, fl := range []int{0, unix.O_NOATIME} {
					var res [2]string
					for i, sd := range sides {
						name := target
						if name[0] == '@' {
							name = name[1:]
						}
						if err := sd.s.utimes(name, c.ts); err != nil {
							t.Fatalf("%s: utimes %s: %v", sd.name, name, err)
						}
						before, err := sd.s.atime(name)
						must(t, err)
						err = sd.s.access(target, fl)
						after, err2 := sd.s.atime(name)
						must(t, err2)
						res[i] = fmt.Sprintf("err %v, moved %v", err, before != after)
					}
					compared++
					if res[0] == "err <nil>, moved true" {
						moved++
					}
					if res[0] != res[1] {
						t.Errorf("%s, %s, access %s flags %#x: kernel %s, iovfs %s", stage, c.name, target, fl, res[0], res[1])
					}
				}
			}
		}
	}

	initial := []struct {
		name  string
		flags uintptr
	}{
		{"relatime", 0}, {"strictatime", unix.MS_STRICTATIME}, {"noatime", unix.MS_NOATIME},
		{"nodiratime", unix.MS_NODIRATIME}, {"noatime,strictatime", unix.MS_NOATIME | unix.MS_STRICTATIME},
	}
	remounts := []struct {
		name  string
		flags uintptr
	}{
		{"remount strictatime", unix.MS_STRICTATIME}, {"remount noatime", unix.MS_NOATIME},
		{"remount with no atime flag", 0}, {"remount nodiratime", unix.MS_NODIRATIME},
		{"remount nodiratime,strictatime", unix.MS_NODIRATIME | unix.MS_STRICTATIME},
		{"remount relatime", unix.MS_RELATIME},
	}
	for _, in := range initial {
		for _, sd := range sides {
			if err := sd.s.mount(in.flags); err != nil {
				t.Fatalf("%s: mount %s: %v", sd.name, in.name, err)
			}
			if err := sd.s.setup(); err != nil {
				sd.s.umount()
				t.Fatalf("%s: %v", sd.name, err)
			}
		}
		step(in.name)
		for _, r := range remounts {
			for _, sd := range sides {
				if err := sd.s.remount(r.flags); err != nil {
					t.Fatalf("%s: %s: %v", sd.name, r.name, err)
				}
			}
			step(in.name + ", " + r.name)
		}
		unix.Unmount(kbind, unix.MNT_DETACH)
		for _, sd := range sides {
			must(t, sd.s.umount())
		}
	}
	if moved == 0 || moved == compared {
		t.Fatalf("%d accesses compared, %d moved atime on the kernel: the cases do not discriminate", compared, moved)
	}
	t.Logf("%d accesses compared, %d moved atime", compared, moved)

	// A remount cannot change the read-only state.
	must(t, p.Mount("tmpfs", "/tmp/a", "tmpfs", 0, ""))
	if err := p.Mount("", "/tmp/a", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); !errors.Is(err, unix.EINVAL) {
		t.Errorf("remount,bind,ro: %v, want EINVAL", err)
	}
	must(t, p.Mkdir("/tmp/a/x", 0o755))
	if err := p.Mount("", "/tmp/a/x", "", unix.MS_REMOUNT|unix.MS_BIND, ""); !errors.Is(err, unix.EINVAL) {
		t.Errorf("remount,bind of a directory that is not a mount's root: %v, want EINVAL", err)
	}
}
