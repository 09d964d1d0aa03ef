package fuse

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// ext4RWProc returns a process with a fresh ext4 image of size bytes
// mounted read-write at /mnt through an in-process loop device, and the
// image's path.
func ext4RWProc(t *testing.T, size string) (*vfs.Proc, string) {
	t.Helper()
	testenv.RequireTool(t, "mke2fs")
	img := filepath.Join(t.TempDir(), "ext4.img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", img, size).CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	p := newProc(t)
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := p.ImportFile(f)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(fd)
	lfd, err := p.Open("/dev/loop0", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(lfd)
	cfg := unix.LoopConfig{Fd: uint32(fd)}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("/dev/loop0", "/mnt", "ext4", 0, ""); err != nil {
		t.Fatal(err)
	}
	return p, img
}

// exports returns, for a test that runs on each, a read-write tmpfs
// export, a read-write ext4 export and a kernel tmpfs, by name; the
// exports cache names and attributes for the default second.
func exports(t *testing.T) map[string]string {
	t.Helper()
	requireFUSE(t)
	p := newProc(t)
	tm, _ := export(t, p, "/tmp", Options{})
	ep, _ := ext4RWProc(t, "64M")
	// Registered first, so it runs after the export's Unmount: then
	// nothing of the export may keep the file system busy.
	t.Cleanup(func() {
		if err := ep.Unmount("/mnt", 0); err != nil {
			t.Errorf("in-process unmount of the ext4 image: %v", err)
		}
	})
	em, _ := export(t, ep, "/mnt", Options{})
	kern := t.TempDir()
	if err := unix.Mount("tmpfs", kern, "tmpfs", 0, "size=64m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(kern, 0); err != nil {
			t.Errorf("umount %s: %v", kern, err)
		}
	})
	return map[string]string{"tmpfs": tm, "ext4": em, "kernel": kern}
}

// hardLinkSteps unlinks and renames over names of a file with several,
// and stats and reads every other name at once after each step, in dir;
// it returns one line per result.
func hardLinkSteps(dir string) []string {
	var out []string
	var mu sync.Mutex
	put := func(s string, a ...any) {
		mu.Lock()
		out = append(out, fmt.Sprintf(s, a...))
		mu.Unlock()
	}
	errno := func(err error) string {
		var e syscall.Errno
		if err == nil {
			return "ok"
		}
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err
		}
		if le, ok := err.(*os.LinkError); ok {
			err = le.Err
		}
		if e2, ok := err.(syscall.Errno); ok {
			e = e2
			return e.Error()
		}
		return err.Error()
	}
	p := func(n string) string { return filepath.Join(dir, n) }
	// Every name at once, from several goroutines: stat, then open and
	// read.
	check := func(step string, names ...string) {
		var wg sync.WaitGroup
		res := make([]string, len(names))
		for i, n := range names {
			wg.Go(func() {
				var st unix.Stat_t
				serr := unix.Stat(p(n), &st)
				b, rerr := os.ReadFile(p(n))
				res[i] = fmt.Sprintf("%s %s: stat %s nlink %d read %s %q", step, n, errno(serr), st.Nlink, errno(rerr), b)
			})
		}
		wg.Wait()
		for _, r := range res {
			put("%s", r)
		}
	}
	put("write a: %s", errno(os.WriteFile(p("a"), []byte("x"), 0o644)))
	put("link a b: %s", errno(os.Link(p("a"), p("b"))))
	put("link a c: %s", errno(os.Link(p("a"), p("c"))))
	put("mkdir d: %s", errno(os.Mkdir(p("d"), 0o755)))
	put("link a d/e: %s", errno(os.Link(p("a"), p("d/e"))))
	check("linked", "a", "b", "c", "d/e")
	put("unlink b: %s", errno(os.Remove(p("b"))))
	check("after unlink b", "a", "b", "c", "d/e")
	put("write n: %s", errno(os.WriteFile(p("n"), []byte("new"), 0o644)))
	put("rename n over c: %s", errno(os.Rename(p("n"), p("c"))))
	check("after rename over c", "a", "c", "d/e", "n")
	put("rename a d/f: %s", errno(os.Rename(p("a"), p("d/f"))))
	check("after rename a", "a", "d/e", "d/f")
	put("rename d d2: %s", errno(os.Rename(p("d"), p("d2"))))
	check("after rename d", "d2/e", "d2/f", "d/e")
	put("unlink d2/f: %s", errno(os.Remove(p("d2/f"))))
	check("after unlink d2/f", "d2/e", "d2/f")
	// An open file outlives its last name, and its attributes stay
	// reachable through it.
	f, err := os.OpenFile(p("d2/e"), os.O_RDWR, 0)
	put("open d2/e: %s", errno(err))
	if err == nil {
		put("unlink d2/e: %s", errno(os.Remove(p("d2/e"))))
		var st unix.Stat_t
		serr := unix.Fstat(int(f.Fd()), &st)
		put("fstat unlinked: %s nlink %d size %d", errno(serr), st.Nlink, st.Size)
		put("fchmod unlinked: %s", errno(f.Chmod(0o600)))
		_, werr := f.WriteAt([]byte("yz"), 1)
		put("write unlinked: %s", errno(werr))
		serr = unix.Fstat(int(f.Fd()), &st)
		put("fstat unlinked: %s mode %o size %d", errno(serr), st.Mode, st.Size)
		f.Close()
	}
	return out
}

// TestHardLinks runs hardLinkSteps on a tmpfs export, a read-write ext4
// export and a kernel tmpfs and compares every result: a file keeps
// working through each name it has left, whatever happened to the others.
func TestHardLinks(t *testing.T) {
	dirs := exports(t)
	want := hardLinkSteps(dirs["kernel"])
	for _, name := range []string{"tmpfs", "ext4"} {
		t.Run(name, func(t *testing.T) {
			got := hardLinkSteps(dirs[name])
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				for i := range max(len(got), len(want)) {
					var g, w string
					if i < len(got) {
						g = got[i]
					}
					if i < len(want) {
						w = want[i]
					}
					if g != w {
						t.Errorf("export %s\nkernel %s", g, w)
					}
				}
			}
		})
	}
}

// deepSteps makes a chain of directories whose path from dir is longer
// than PATH_MAX, working relative to descriptors as programs must there,
// and makes, writes, reads, renames, links and removes a file at the
// bottom; it returns one line per result.
func deepSteps(dir string) []string {
	var out []string
	put := func(s string, a ...any) { out = append(out, fmt.Sprintf(s, a...)) }
	name := strings.Repeat("d", 200)
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return []string{err.Error()}
	}
	depth := 0
	for total := len(dir); total < 2*unix.PathMax; total += len(name) + 1 {
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			put("mkdir at depth %d: %v", depth, err)
			break
		}
		nfd, err := unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			put("open at depth %d: %v", depth, err)
			return out
		}
		fd = nfd
		depth++
	}
	defer unix.Close(fd)
	put("depth %d", depth)
	ffd, err := unix.Openat(fd, "f", unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o644)
	put("create: %v", err)
	if err == nil {
		n, err := unix.Pwrite(ffd, []byte("deep"), 0)
		put("write: %d %v", n, err)
		unix.Close(ffd)
	}
	var st unix.Stat_t
	put("stat: %v", unix.Fstatat(fd, "f", &st, 0))
	put("size %d nlink %d", st.Size, st.Nlink)
	put("rename: %v", unix.Renameat(fd, "f", fd, "g"))
	put("link: %v", unix.Linkat(fd, "g", fd, "h", 0))
	put("chmod: %v", unix.Fchmodat(fd, "g", 0o600, 0))
	put("truncate via open: %v", func() error {
		tfd, err := unix.Openat(fd, "h", unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(tfd)
		}
		return err
	}())
	put("stat g: %v", unix.Fstatat(fd, "g", &st, 0))
	put("mode %o size %d nlink %d", st.Mode, st.Size, st.Nlink)
	put("symlink: %v", unix.Symlinkat("g", fd, "l"))
	put("mkfifo: %v", unix.Mknodat(fd, "p", unix.S_IFIFO|0o644, 0))
	put("unlink: %v %v %v %v", unix.Unlinkat(fd, "g", 0), unix.Unlinkat(fd, "h", 0), unix.Unlinkat(fd, "l", 0), unix.Unlinkat(fd, "p", 0))
	return out
}

// TestDeepPaths runs deepSteps on the exports and the kernel's tmpfs:
// no path length limits a file of the export.
func TestDeepPaths(t *testing.T) {
	dirs := exports(t)
	want := deepSteps(dirs["kernel"])
	for _, name := range []string{"tmpfs", "ext4"} {
		t.Run(name, func(t *testing.T) {
			got := deepSteps(dirs[name])
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("export:\n%s\nkernel:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	// Clean the chains away with rm -r, which works relative to
	// descriptors too.
	for _, d := range dirs {
		if out, err := exec.Command("rm", "-rf", filepath.Join(d, strings.Repeat("d", 200))).CombinedOutput(); err != nil {
			t.Errorf("rm -rf in %s: %v\n%s", d, err, out)
		}
	}
}
