package ext4_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/paired"
	"github.com/iovfs/iovfs/vfs"
)

// atimeSide runs TestAtimeKernel's operations on one side: the kernel's
// loop mount or the iovfs mount; paths are relative to the mount.
type atimeSide interface {
	do(op, path string) error
	atime(path string) (unix.Timespec, error) // lstat's
}

type kernelAtime struct{ root string }

func (k kernelAtime) abs(p string) string { return filepath.Join(k.root, p) }

func (k kernelAtime) atime(p string) (unix.Timespec, error) {
	var st unix.Stat_t
	err := unix.Lstat(k.abs(p), &st)
	return st.Atim, err
}

func (k kernelAtime) do(op, p string) error {
	return atimeOp(op, p, atimeCalls{
		open: func(p string, fl int) (int, error) { return unix.Open(k.abs(p), fl|unix.O_CLOEXEC, 0o644) },
		read: func(fd int, b []byte, off int64) (int, error) {
			if off < 0 {
				return unix.Read(fd, b)
			}
			return unix.Pread(fd, b, off)
		},
		write: func(fd int, b []byte) (int, error) { return unix.Pwrite(fd, b, 0) },
		close: unix.Close,
		readdir: func(fd int) error {
			buf := make([]byte, 4096)
			for {
				n, err := unix.Getdents(fd, buf)
				if err != nil || n == 0 {
					return err
				}
			}
		},
		readlink: func(p string) error { _, err := os.Readlink(k.abs(p)); return err },
		stat:     func(p string) error { var st unix.Stat_t; return unix.Stat(k.abs(p), &st) },
		utimes: func(p string, ts []unix.Timespec) error {
			return unix.UtimesNanoAt(unix.AT_FDCWD, k.abs(p), ts, unix.AT_SYMLINK_NOFOLLOW)
		},
	})
}

type iovfsAtime struct{ p *vfs.Proc }

func (x iovfsAtime) abs(p string) string { return "/mnt/" + p }

func (x iovfsAtime) atime(p string) (unix.Timespec, error) {
	st, err := x.p.Lstat(x.abs(p))
	return unix.NsecToTimespec(st.Atime.UnixNano()), err
}

func (x iovfsAtime) do(op, p string) error {
	return atimeOp(op, p, atimeCalls{
		open: func(p string, fl int) (int, error) { return x.p.Open(x.abs(p), fl, 0o644) },
		read: func(fd int, b []byte, off int64) (int, error) {
			if off < 0 {
				return x.p.Read(fd, b)
			}
			return x.p.Pread(fd, b, off)
		},
		write: func(fd int, b []byte) (int, error) { return x.p.Pwrite(fd, b, 0) },
		close: x.p.Close,
		readdir: func(fd int) error {
			for {
				d, err := x.p.Getdents(fd)
				if err != nil || len(d) == 0 {
					return err
				}
			}
		},
		readlink: func(p string) error { _, err := x.p.Readlink(x.abs(p)); return err },
		stat:     func(p string) error { _, err := x.p.Stat(x.abs(p)); return err },
		utimes: func(p string, ts []unix.Timespec) error {
			return x.p.Utimensat(unix.AT_FDCWD, x.abs(p), ts, unix.AT_SYMLINK_NOFOLLOW)
		},
	})
}

// atimeCalls are one side's system calls.
type atimeCalls struct {
	open     func(p string, flags int) (int, error)
	read     func(fd int, b []byte, off int64) (int, error) // off < 0: read(2)
	write    func(fd int, b []byte) (int, error)
	close    func(fd int) error
	readdir  func(fd int) error // getdents to the end
	readlink func(p string) error
	stat     func(p string) error // follows a symlink
	utimes   func(p string, ts []unix.Timespec) error
}

// atimeOp runs one of TestAtimeKernel's operations through c.
func atimeOp(op, p string, c atimeCalls) error {
	withFd := func(flags int, fn func(fd int) error) error {
		fd, err := c.open(p, flags)
		if err != nil {
			return err
		}
		err = fn(fd)
		if cerr := c.close(fd); err == nil {
			err = cerr
		}
		return err
	}
	buf := make([]byte, 4096)
	switch op {
	case "read":
		return withFd(unix.O_RDONLY, func(fd int) error { _, err := c.read(fd, buf, -1); return err })
	case "read0": // no bytes asked for: atime stays (ext4_file_read_iter)
		return withFd(unix.O_RDONLY, func(fd int) error { _, err := c.read(fd, buf[:0], -1); return err })
	case "readEOF": // at end of file: atime moves (filemap_read)
		return withFd(unix.O_RDONLY, func(fd int) error { _, err := c.read(fd, buf, 1<<20); return err })
	case "readNoatime":
		return withFd(unix.O_RDONLY|unix.O_NOATIME, func(fd int) error { _, err := c.read(fd, buf, -1); return err })
	case "write":
		return withFd(unix.O_WRONLY, func(fd int) error { _, err := c.write(fd, []byte("w")); return err })
	case "create":
		return withFd(unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, func(int) error { return nil })
	case "readdir":
		return withFd(unix.O_RDONLY|unix.O_DIRECTORY, c.readdir)
	case "readdirNoatime":
		return withFd(unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOATIME, c.readdir)
	case "readlink":
		return c.readlink(p)
	case "follow":
		return c.stat(p)
	case "futureAtime": // atime after ctime (now) and mtime
		return c.utimes(p, []unix.Timespec{unix.NsecToTimespec(time.Now().Add(time.Hour).UnixNano()), {Nsec: unix.UTIME_OMIT}})
	}
	panic("unknown op " + op)
}

// waitClock waits until the kernel's coarse clock (current_time's) has
// moved 10 ms past start, the end of a step, so that the next step stamps
// a later time than the last on both sides (and on iovfs's jiffy clock)
// whatever HZ is.
func waitClock(t *testing.T, start unix.Timespec) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var now unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &now); err != nil {
			t.Fatal(err)
		}
		if now.Nano()-start.Nano() >= int64(10*time.Millisecond) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("CLOCK_REALTIME_COARSE does not move")
		}
		time.Sleep(time.Millisecond) // the clock's progress, not another goroutine, is waited for
	}
}

// TestAtimeKernel: the same operations on a kernel loop mount and an
// iovfs mount of the same image, under each atime policy (relatime by
// default and given, strictatime, noatime, nodiratime with and without
// strictatime, a read-only mount), and after each step whether each
// inode's atime moved, and the step's errno, must agree: reads
// (including at end of file and of no bytes, and with O_NOATIME),
// listings, readlink and walks through a symlink, after writes, creates
// and an atime set in the future, and a first read of a file whose atime
// is after its mtime and ctime but more than a day old (relatime's day
// rule).
func TestAtimeKernel(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	img := mkImage(t, 8<<10, func(tb testing.TB, dir string) {
		os.WriteFile(filepath.Join(dir, "f"), []byte("data of f"), 0o644)
		os.WriteFile(filepath.Join(dir, "h"), []byte("data of h"), 0o644)
		os.Mkdir(filepath.Join(dir, "d"), 0o755)
		os.WriteFile(filepath.Join(dir, "d", "x"), []byte("x"), 0o644)
		os.Symlink("f", filepath.Join(dir, "l"))
	}, "-t", "ext4")
	// h: atime after mtime and ctime (mke2fs's 1700000000), two days old.
	old := time.Now().Add(-48 * time.Hour).Unix()
	if out, err := exec.Command("debugfs", "-w", "-R", fmt.Sprintf("sif /h atime @%d", old), img).CombinedOutput(); err != nil {
		t.Fatalf("debugfs: %v\n%s", err, out)
	}
	steps := [][2]string{
		{"read", "f"}, {"read", "f"}, {"read", "h"}, {"read", "h"},
		{"readdir", "d"}, {"readdir", "d"}, {"readlink", "l"}, {"readlink", "l"}, {"follow", "l"},
		{"write", "f"}, {"read", "f"}, {"read0", "f"}, {"readEOF", "f"}, {"read", "f"},
		{"create", "d/n"}, {"readdirNoatime", "d"}, {"readdir", "d"}, {"readdir", "d"},
		{"write", "h"}, {"readNoatime", "h"}, {"read", "h"},
		{"futureAtime", "f"}, {"read", "f"}, {"readEOF", "f"},
		{"readlink", "l"}, {"follow", "l"},
	}
	objs := []string{"f", "h", "d", "l", "d/x"}
	cases := 0
	for _, pol := range []struct {
		name  string
		flags uintptr
	}{
		{"default", 0}, {"relatime", unix.MS_RELATIME}, {"strictatime", unix.MS_STRICTATIME},
		{"noatime", unix.MS_NOATIME}, {"nodiratime", unix.MS_NODIRATIME},
		{"nodiratime,strictatime", unix.MS_NODIRATIME | unix.MS_STRICTATIME}, {"ro", unix.MS_RDONLY},
	} {
		t.Run(pol.name, func(t *testing.T) {
			b, err := os.ReadFile(img)
			if err != nil {
				t.Fatal(err)
			}
			kimg := filepath.Join(t.TempDir(), "k.img")
			if err := os.WriteFile(kimg, b, 0o600); err != nil {
				t.Fatal(err)
			}
			kdir, kum, err := hostLoopMount(t, kimg, false, pol.flags, "")
			if err != nil {
				t.Fatal(err)
			}
			defer kum()
			p, dev, done := newProc(t, img, viaRAM)
			err = p.Mount(dev, "/mnt", "ext4", pol.flags, "")
			done()
			if err != nil {
				t.Fatal(err)
			}
			mounted := true
			defer func() {
				if mounted {
					p.Unmount("/mnt", 0)
				}
			}()
			sides := []atimeSide{kernelAtime{kdir}, iovfsAtime{p}}
			for i, st := range steps {
				var before, after [2][]unix.Timespec
				var errs [2]error
				for s, side := range sides {
					for _, o := range objs {
						ts, err := side.atime(o)
						if err != nil {
							t.Fatalf("step %d: lstat %s: %v", i, o, err)
						}
						before[s] = append(before[s], ts)
					}
					errs[s] = side.do(st[0], st[1])
					for _, o := range objs {
						ts, _ := side.atime(o)
						after[s] = append(after[s], ts)
					}
				}
				if errnoOf(errs[0]) != errnoOf(errs[1]) {
					t.Errorf("step %d %v: kernel %v, iovfs %v", i, st, errs[0], errs[1])
				}
				for j, o := range objs {
					k, x := before[0][j] != after[0][j], before[1][j] != after[1][j]
					cases++
					if k != x {
						t.Errorf("step %d %v: %s's atime moved: kernel %v, iovfs %v (kernel %v to %v, iovfs %v to %v)", i, st, o, k, x, before[0][j], after[0][j], before[1][j], after[1][j])
					}
				}
				var end unix.Timespec
				unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &end)
				waitClock(t, end)
			}
			// The atimes are on disk after the unmount: e2fsck-clean, and
			// the same through a kernel mount of iovfs's image.
			var want []unix.Timespec
			for _, o := range objs {
				ts, _ := sides[1].atime(o)
				want = append(want, ts)
			}
			if err := p.Unmount("/mnt", 0); err != nil {
				t.Fatal(err)
			}
			mounted = false
			out := ramBytes(t, p, len(b))
			e2fsckN(t, out)
			oimg := filepath.Join(t.TempDir(), "o.img")
			if err := os.WriteFile(oimg, out, 0o600); err != nil {
				t.Fatal(err)
			}
			odir, oum, err := hostLoopMount(t, oimg, true, unix.MS_RDONLY, "")
			if err != nil {
				t.Fatal(err)
			}
			defer oum()
			for j, o := range objs {
				if got, err := (kernelAtime{odir}).atime(o); err != nil || got != want[j] {
					t.Errorf("%s's atime on disk: %v, %v; iovfs's mount said %v", o, got, err, want[j])
				}
			}
		})
	}
	t.Logf("%d cases (%d steps, %d inodes, 7 policies)", cases, len(steps), len(objs))
}

// TestAtimeReadNoAllocs: on a read-write mount, reads (pread, preadv, at
// end of file) of a file whose atime stays (noatime, relatime once atime
// is past mtime and ctime) allocate nothing and leave atime alone; under
// relatime the first read of the file (atime as old as mtime) moves it.
func TestAtimeReadNoAllocs(t *testing.T) {
	needMke2fs(t)
	img := mkImage(t, 8<<10, func(tb testing.TB, dir string) {
		os.WriteFile(filepath.Join(dir, "f"), make([]byte, 64<<10), 0o644)
	}, "-t", "ext4")
	for _, pol := range []struct {
		name  string
		flags uintptr
		moves bool // the first read moves atime
	}{{"relatime", 0, true}, {"noatime", unix.MS_NOATIME, false}} {
		t.Run(pol.name, func(t *testing.T) {
			p, dev, done := newProc(t, img, viaRAM)
			err := p.Mount(dev, "/mnt", "ext4", pol.flags, "")
			done()
			if err != nil {
				t.Fatal(err)
			}
			defer p.Unmount("/mnt", 0)
			fd, err := p.Open("/mnt/f", unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(fd)
			atime := func() time.Time {
				st, err := p.Stat("/mnt/f")
				if err != nil {
					t.Fatal(err)
				}
				return st.Atime
			}
			before := atime()
			buf := make([]byte, 4096)
			iovs := [][]byte{buf[:100], buf[100:]}
			if _, err := p.Pread(fd, buf, 0); err != nil {
				t.Fatal(err)
			}
			first := atime()
			if moved := !first.Equal(before); moved != pol.moves {
				t.Fatalf("first read: atime moved %v, want %v", moved, pol.moves)
			}
			off := int64(0)
			for name, fn := range map[string]func(){
				"pread":  func() { p.Pread(fd, buf, off); off = (off + 4096*7) % (64 << 10) },
				"preadv": func() { p.Preadv(fd, iovs, off) },
				"eof":    func() { p.Pread(fd, buf, 64<<10) },
			} {
				if a := testing.AllocsPerRun(200, fn); a != 0 && !raceEnabled {
					t.Errorf("%s: %v allocations per read", name, a)
				}
			}
			if got := atime(); !got.Equal(first) {
				t.Fatalf("atime moved from %v to %v by reads that must leave it", first, got)
			}
		})
	}
}

// BenchmarkExt4PreadAtime reads 4 KiB at random aligned offsets of a 16
// MiB file on a read-write mount (relatime) through two descriptors of
// the file, in the interleaved rounds of internal/paired: one opened with
// O_NOATIME, which skips the atime check, and one without, whose reads
// check relatime's rule on an atime the first read moved past mtime and
// ctime. relatime/noatime is what the check costs a read.
func BenchmarkExt4PreadAtime(b *testing.B) {
	const fileSize = 16 << 20
	data := make([]byte, fileSize)
	rand.NewChaCha8([32]byte{7}).Read(data)
	img := mkImage(b, 24<<10, func(t testing.TB, dir string) {
		if err := os.WriteFile(filepath.Join(dir, "file"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}, "-t", "ext4", "-b", "4096")
	p, dev, done := newProc(b, img, viaRAM)
	err := p.Mount(dev, "/mnt", "ext4", 0, "")
	done()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Unmount("/mnt", 0) })
	open := func(flags int) func(*testing.B) func() error {
		fd, err := p.Open("/mnt/file", unix.O_RDONLY|flags, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close(fd) })
		buf := make([]byte, 4096)
		if _, err := p.Pread(fd, buf, 0); err != nil { // moves atime, once
			b.Fatal(err)
		}
		rng := rand.NewPCG(uint64(flags), 7)
		return func(*testing.B) func() error {
			return func() error {
				off := int64(rng.Uint64()%(fileSize/4096)) * 4096
				if n, err := p.Pread(fd, buf, off); n != len(buf) {
					return fmt.Errorf("pread at %d: %d, %v", off, n, err)
				}
				return nil
			}
		}
	}
	paired.Run(b, 5000,
		paired.Variant{Name: "noatime", Open: open(unix.O_NOATIME)},
		paired.Variant{Name: "relatime", Open: open(0)},
	)
}

// TestAtimeNoatimeOpen: O_NOATIME is for the file's owner (or
// CAP_FOWNER): another user's open gives EPERM, as Linux's do_dentry_open
// path (may_open's inode_owner_or_capable); the owner's read through it
// leaves atime alone where a plain read moves it.
func TestAtimeNoatimeOpen(t *testing.T) {
	needMke2fs(t)
	img := mkImage(t, 8<<10, func(tb testing.TB, dir string) {
		os.WriteFile(filepath.Join(dir, "root"), []byte("r"), 0o644)
		os.WriteFile(filepath.Join(dir, "mine"), []byte("m"), 0o644)
		os.Chown(filepath.Join(dir, "mine"), 1000, 1000)
	}, "-t", "ext4")
	p, dev, done := newProc(t, img, viaRAM)
	err := p.Mount(dev, "/mnt", "ext4", unix.MS_STRICTATIME, "")
	done()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Unmount("/mnt", 0)
	th := p.NewThread()
	th.Setgroups(nil)
	th.Setresgid(1000, 1000, 1000)
	th.Setresuid(1000, 1000, 1000)
	if _, err := th.Open("/mnt/root", unix.O_RDONLY|unix.O_NOATIME, 0); errnoOf(err) != unix.EPERM {
		t.Errorf("O_NOATIME open of another user's file: %v, want EPERM", err)
	}
	atime := func() time.Time {
		st, err := p.Stat("/mnt/mine")
		if err != nil {
			t.Fatal(err)
		}
		return st.Atime
	}
	for _, c := range []struct {
		flags int
		moves bool
	}{{unix.O_NOATIME, false}, {0, true}} {
		before := atime()
		fd, err := th.Open("/mnt/mine", unix.O_RDONLY|c.flags, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = th.Read(fd, make([]byte, 16))
		th.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		if moved := !atime().Equal(before); moved != c.moves {
			t.Errorf("read by the owner, flags %#x: atime moved %v, want %v", c.flags, moved, c.moves)
		}
	}
}
