package iovfs_test

// The dirfd rules of the *at family against the kernel: every call with a
// directory descriptor, an O_PATH one, a regular file's, a closed one and
// AT_FDCWD, on relative, empty and absolute paths, with and without
// AT_EMPTY_PATH.

import (
	"os"
	"path"
	"strings"
	"testing"

	"github.com/iovfs/iovfs"
	"golang.org/x/sys/unix"
)

func TestAtDirfdKernel(t *testing.T) {
	host := hostTmpfs(t)
	p, err := iovfs.New()
	must(t, err)
	must(t, p.Mkdir("/tmp/at", 0o755))
	tree := []plant{
		{path: "d", kind: 'd', mode: 0o755},
		{path: "d/f", kind: 'f', mode: 0o644},
		{path: "d/l", kind: 'l', target: "f"},
		{path: "f", kind: 'f', mode: 0o644},
	}
	plantHost(t, host, tree...)
	plantOurs(t, p, "/tmp/at", tree...)
	wd, _ := os.Getwd()
	must(t, os.Chdir(path.Join(host, "d")))
	defer os.Chdir(wd)
	must(t, p.Chdir("/tmp/at/d"))

	type fds struct{ dir, opath, file, closed int }
	var h, o fds
	h.dir, _ = unix.Open(path.Join(host, "d"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	h.opath, _ = unix.Open(path.Join(host, "d"), unix.O_PATH|unix.O_DIRECTORY, 0)
	h.file, _ = unix.Open(path.Join(host, "f"), unix.O_RDONLY, 0)
	o.dir, _ = p.Open("/tmp/at/d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	o.opath, _ = p.Open("/tmp/at/d", unix.O_PATH|unix.O_DIRECTORY, 0)
	o.file, _ = p.Open("/tmp/at/f", unix.O_RDONLY, 0)
	h.closed, o.closed = 999, 999
	defer func() {
		for _, fd := range []int{h.dir, h.opath, h.file} {
			unix.Close(fd)
		}
	}()
	dirfds := []struct {
		name string
		h, o int
	}{
		{"AT_FDCWD", unix.AT_FDCWD, unix.AT_FDCWD}, {"dir", h.dir, o.dir}, {"O_PATH dir", h.opath, o.opath},
		{"file", h.file, o.file}, {"closed", h.closed, o.closed},
	}
	paths := []string{"f", "l", "", ".", "ABS/d/f", "ABS/d", "nothing", "f/"}
	calls := []struct {
		name string
		run  func(host bool, dirfd int, pth string) error
	}{
		{"fstatat", func(hs bool, d int, pth string) error {
			if hs {
				var st unix.Stat_t
				return unix.Fstatat(d, pth, &st, 0)
			}
			_, err := p.Fstatat(d, pth, 0)
			return err
		}},
		{"fstatat AT_EMPTY_PATH", func(hs bool, d int, pth string) error {
			if hs {
				var st unix.Stat_t
				return unix.Fstatat(d, pth, &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
			}
			_, err := p.Fstatat(d, pth, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
			return err
		}},
		{"statx AT_EMPTY_PATH", func(hs bool, d int, pth string) error {
			if hs {
				var st unix.Statx_t
				return unix.Statx(d, pth, unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &st)
			}
			_, err := p.Statx(d, pth, unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS)
			return err
		}},
		{"openat", func(hs bool, d int, pth string) error {
			if hs {
				fd, err := unix.Openat(d, pth, unix.O_RDONLY, 0)
				if err == nil {
					unix.Close(fd)
				}
				return err
			}
			fd, err := p.Openat(d, pth, unix.O_RDONLY, 0)
			if err == nil {
				p.Close(fd)
			}
			return err
		}},
		{"readlinkat", func(hs bool, d int, pth string) error {
			if hs {
				_, err := unix.Readlinkat(d, pth, make([]byte, 64))
				return err
			}
			_, err := p.Readlinkat(d, pth)
			return err
		}},
		{"faccessat2", func(hs bool, d int, pth string) error {
			if hs {
				return unix.Faccessat2(d, pth, unix.R_OK, 0)
			}
			return p.Faccessat2(d, pth, unix.R_OK, 0)
		}},
		{"faccessat2 AT_EMPTY_PATH", func(hs bool, d int, pth string) error {
			if hs {
				return unix.Faccessat2(d, pth, unix.R_OK, unix.AT_EMPTY_PATH)
			}
			return p.Faccessat2(d, pth, unix.R_OK, unix.AT_EMPTY_PATH)
		}},
		{"fchownat -1 -1 AT_EMPTY_PATH", func(hs bool, d int, pth string) error {
			if hs {
				return unix.Fchownat(d, pth, -1, -1, unix.AT_EMPTY_PATH)
			}
			return p.Fchownat(d, pth, -1, -1, unix.AT_EMPTY_PATH)
		}},
		{"fchmodat 0644", func(hs bool, d int, pth string) error {
			if hs {
				return unix.Fchmodat(d, pth, 0o644, 0)
			}
			return p.Fchmodat(d, pth, 0o644, 0)
		}},
		{"utimensat now", func(hs bool, d int, pth string) error {
			ts := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_OMIT}}
			if hs {
				return unix.UtimesNanoAt(d, pth, ts, 0)
			}
			return p.Utimensat(d, pth, ts, 0)
		}},
		{"mkdirat+unlinkat", func(hs bool, d int, pth string) error {
			if pth == "" || pth == "." || strings.HasPrefix(pth, "ABS") {
				pth += "/newdir" // a fresh name in each place
			} else {
				pth = "new" + pth
			}
			if hs {
				if err := unix.Mkdirat(d, pth, 0o755); err != nil {
					return err
				}
				return unix.Unlinkat(d, pth, unix.AT_REMOVEDIR)
			}
			if err := p.Mkdirat(d, pth, 0o755); err != nil {
				return err
			}
			return p.Unlinkat(d, pth, unix.AT_REMOVEDIR)
		}},
	}
	cases := 0
	seen := map[string]int{}
	for _, c := range calls {
		for _, df := range dirfds {
			for _, pth := range paths {
				hp := strings.Replace(pth, "ABS", host, 1)
				op := strings.Replace(pth, "ABS", "/tmp/at", 1)
				herr := c.run(true, df.h, hp)
				oerr := c.run(false, df.o, op)
				cases++
				seen[errnoOf(herr).Error()]++
				if errnoOf(herr) != errnoOf(oerr) {
					t.Errorf("%s(%s, %q): iovfs %v, Linux %v", c.name, df.name, pth, oerr, herr)
				}
			}
		}
	}
	t.Logf("%d dirfd cases compared; Linux's answers: %v", cases, seen)
	if len(seen) < 5 {
		t.Errorf("only %d distinct answers: the cases do not reach the rules", len(seen))
	}
}
