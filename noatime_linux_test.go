package iovfs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestNoatimeKernel reads a file whose atime is older than its mtime (so
// relatime would move it) through opens with and without O_NOATIME, and
// after F_SETFL sets and clears it, on a kernel tmpfs and on iovfs's
// tmpfs, and compares whether each read moved the atime.
func TestNoatimeKernel(t *testing.T) {
	testenv.RequireRoot(t, "a private kernel tmpfs")
	kern := t.TempDir()
	if err := unix.Mount("tmpfs", kern, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(kern, unix.MNT_DETACH) })
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	type ops struct {
		open  func(flags int) (int, error)
		setfl func(fd, fl int) error
		read  func(fd int) error
		close func(fd int)
		reset func() error
		atime func() (int64, error)
	}
	host := filepath.Join(kern, "f")
	os.WriteFile(host, []byte("data"), 0o644)
	p.Mkdir("/tmp/n", 0o755)
	fd, _ := p.Open("/tmp/n/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	p.Write(fd, []byte("data"))
	p.Close(fd)
	old := []unix.Timespec{{Sec: 1000}, {Sec: 2000}}
	b := make([]byte, 2)
	sides := map[string]ops{
		"kernel": {
			open:  func(fl int) (int, error) { return unix.Open(host, fl|unix.O_CLOEXEC, 0) },
			setfl: func(fd, fl int) error { _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl); return err },
			read:  func(fd int) error { _, err := unix.Pread(fd, b, 0); return err },
			close: func(fd int) { unix.Close(fd) },
			reset: func() error { return unix.UtimesNano(host, old) },
			atime: func() (int64, error) { var st unix.Stat_t; err := unix.Stat(host, &st); return st.Atim.Sec, err },
		},
		"iovfs": {
			open:  func(fl int) (int, error) { return p.Open("/tmp/n/f", fl, 0) },
			setfl: func(fd, fl int) error { _, err := p.Fcntl(fd, unix.F_SETFL, fl); return err },
			read:  func(fd int) error { _, err := p.Pread(fd, b, 0); return err },
			close: func(fd int) { p.Close(fd) },
			reset: func() error { return p.Utimensat(unix.AT_FDCWD, "/tmp/n/f", old, 0) },
			atime: func() (int64, error) { st, err := p.Stat("/tmp/n/f"); return st.Atime.Unix(), err },
		},
	}
	run := func(s ops) []string {
		var out []string
		moved := func(step string) {
			a, err := s.atime()
			out = append(out, fmt.Sprintf("%s: atime moved %v (%v)", step, a != 1000, err))
		}
		for _, c := range []struct {
			name   string
			flags  int
			setfls []int
		}{
			{"plain", 0, nil},
			{"O_NOATIME", unix.O_NOATIME, nil},
			{"F_SETFL O_NOATIME", 0, []int{unix.O_NOATIME}},
			{"O_NOATIME, F_SETFL 0", unix.O_NOATIME, []int{0}},
		} {
			if err := s.reset(); err != nil {
				t.Fatal(err)
			}
			fd, err := s.open(unix.O_RDONLY | c.flags)
			if err != nil {
				out = append(out, c.name+": open "+err.Error())
				continue
			}
			for _, fl := range c.setfls {
				if err := s.setfl(fd, fl); err != nil {
					out = append(out, c.name+": F_SETFL "+err.Error())
				}
			}
			if err := s.read(fd); err != nil {
				out = append(out, c.name+": read "+err.Error())
			}
			moved(c.name)
			s.close(fd)
		}
		return out
	}
	want, got := run(sides["kernel"]), run(sides["iovfs"])
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("iovfs  %s\nkernel %s", got[i], want[i])
		}
	}
	t.Logf("%q", want)
}
