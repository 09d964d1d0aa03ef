package fuse

import (
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAtimeHostMountFlags compares atime updates through the export with a
// kernel tmpfs's under the same host mount flags: each initial flag set
// (given as Options.MountFlags), then remounts of the host mount
// (MS_REMOUNT|MS_BIND) to strictatime, noatime, no atime flag (kept),
// nodiratime, relatime, read-only and back, with atimes older than mtime
// (relatime moves them) and newer than mtime and ctime (only strictatime
// does), for a file's read and a directory's listing.
func TestAtimeHostMountFlags(t *testing.T) {
	requireFUSE(t)
	kdir := t.TempDir()
	p := newProc(t)
	if err := p.Mkdir("/tmp/x", 0o755); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	access := func(path string, dir bool) error {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if dir {
			_, err = unix.Getdents(fd, buf)
		} else {
			_, err = unix.Read(fd, buf)
		}
		return err
	}
	atime := func(path string) unix.Timespec {
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return st.Atim
	}
	compared, moved := 0, 0
	step := func(stage string, roots [2]string) {
		now := time.Now().Unix()
		for _, ts := range [][]unix.Timespec{{{Sec: 1000}, {Sec: 2000}}, {{Sec: now + 100}, {Sec: now - 100}}} {
			for _, name := range []string{"f", "d"} {
				var res [2]string
				for i, root := range roots {
					path := root + "/" + name
					ro := false
					if err := unix.UtimesNano(path, ts); err == unix.EROFS {
						ro = true
						// Read-only now: the times stay as the last step left them.
					} else if err != nil {
						t.Fatalf("%s: utimes %s: %v", stage, path, err)
					}
					before := atime(path)
					err := access(path, name == "d")
					after := atime(path)
					res[i] = fmt.Sprintf("ro %v, err %v, moved %v", ro, err, before != after)
				}
				compared++
				if res[0] == "ro false, err <nil>, moved true" {
					moved++
				}
				if res[0] != res[1] {
					t.Errorf("%s, atime %d, mtime %d, %s: kernel %s, export %s", stage, ts[0].Sec, ts[1].Sec, name, res[0], res[1])
				}
			}
		}
	}
	remounts := []struct {
		name  string
		flags uintptr
	}{
		{"strictatime", unix.MS_STRICTATIME}, {"noatime", unix.MS_NOATIME}, {"no atime flag", 0},
		{"nodiratime", unix.MS_NODIRATIME}, {"nodiratime,strictatime", unix.MS_NODIRATIME | unix.MS_STRICTATIME},
		{"ro", unix.MS_RDONLY}, {"rw", 0}, {"relatime", unix.MS_RELATIME},
	}
	for _, in := range []struct {
		name  string
		flags uintptr
	}{{"relatime", 0}, {"noatime", unix.MS_NOATIME}, {"strictatime", unix.MS_STRICTATIME}, {"nodiratime", unix.MS_NODIRATIME}} {
		if err := unix.Mount("tmpfs", kdir, "tmpfs", in.flags, "size=1m"); err != nil {
			t.Fatal(err)
		}
		if err := p.Mount("tmpfs", "/tmp/x", "tmpfs", 0, ""); err != nil {
			t.Fatal(err)
		}
		mnt, s := export(t, p, "/tmp/x", Options{MountFlags: in.flags})
		roots := [2]string{kdir, mnt}
		for _, r := range roots {
			if err := os.WriteFile(r+"/f", []byte("data"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(r+"/d", 0o755); err != nil {
				t.Fatal(err)
			}
		}
		step(in.name, roots)
		for _, r := range remounts {
			for _, root := range roots {
				if err := unix.Mount("", root, "", unix.MS_REMOUNT|unix.MS_BIND|r.flags, ""); err != nil {
					t.Fatalf("%s: remount %s: %v", root, r.name, err)
				}
			}
			step(in.name+", remount "+r.name, roots)
		}
		if err := s.Unmount(); err != nil {
			t.Fatal(err)
		}
		if err := unix.Unmount(kdir, 0); err != nil {
			t.Fatal(err)
		}
		if err := p.Unmount("/tmp/x", 0); err != nil {
			t.Fatal(err)
		}
	}
	if moved == 0 || moved == compared {
		t.Fatalf("%d accesses compared, %d moved atime on the kernel: the cases do not discriminate", compared, moved)
	}
	t.Logf("%d accesses compared, %d moved atime", compared, moved)
}
