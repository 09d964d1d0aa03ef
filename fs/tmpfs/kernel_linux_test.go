package tmpfs

import (
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// hostTmpfs returns an empty directory on a host tmpfs mounted relatime:
// one under /dev/shm, or, as root, a private mount.
func hostTmpfs(t *testing.T) string {
	t.Helper()
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC && st.Flags&unix.ST_RELATIME != 0 && st.Flags&unix.ST_RDONLY == 0 {
		dir, err := os.MkdirTemp("/dev/shm", "iovfs-tmpfs-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	if os.Geteuid() != 0 {
		testenv.SkipPrivileged(t, "no writable relatime tmpfs at /dev/shm and not root to mount one")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// ourSide runs the steps on a tmpfs through the node API.
type ourSide struct {
	r *Dir
	h map[string]*OpenFile
}

func (o *ourSide) node(t *testing.T, p string) vfs.Node {
	var n vfs.Node = o.r
	for _, name := range strings.Split(p, "/") {
		if name == "." {
			continue
		}
		d, ok := n.(*Dir)
		if !ok {
			return nil
		}
		c, err := d.Lookup(name)
		if err != nil {
			return nil
		}
		n = c
	}
	return n
}

func (o *ourSide) dir(t *testing.T, p string) *Dir { return o.node(t, p).(*Dir) }

// TestTimestampsLinux runs a script of operations on a host tmpfs and on
// ours, and after each step compares, for every path, which of atime,
// mtime and ctime moved, and the size, link count, mode and blocks.
func TestTimestampsLinux(t *testing.T) {
	host := hostTmpfs(t)
	ours := &ourSide{r: New(Options{}).root, h: map[string]*OpenFile{}}
	hfd := map[string]int{}
	hp := func(p string) string { return path.Join(host, p) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	hostOpen := func(p string, flags int) {
		fd, err := unix.Open(hp(p), flags|unix.O_CLOEXEC, 0o644)
		must(err)
		if old, ok := hfd[p]; ok {
			unix.Close(old)
		}
		hfd[p] = fd
	}
	t.Cleanup(func() {
		for _, fd := range hfd {
			unix.Close(fd)
		}
	})
	buf := make([]byte, 100)
	fixed := time.Date(2020, 1, 2, 3, 4, 5, 6789, time.UTC)
	steps := []struct {
		name string
		host func()
		ours func()
	}{
		{"mkdir d",
			func() { must(unix.Mkdir(hp("d"), 0o755)) },
			func() { ours.r.Mkdir("d", 0o755, root0) }},
		{"create d/f",
			func() { hostOpen("d/f", unix.O_RDWR|unix.O_CREAT|unix.O_EXCL) },
			func() {
				n, _ := ours.dir(t, "d").Create("f", 0o644, root0)
				ours.h["d/f"] = mustOpen(t, n.(*File), rw)
			}},
		{"write",
			func() { unix.Pwrite(hfd["d/f"], []byte("hello"), 0) },
			func() { ours.h["d/f"].Write([]byte("hello"), 0) }},
		{"write of nothing",
			func() { unix.Pwrite(hfd["d/f"], nil, 0) },
			func() { ours.h["d/f"].Write(nil, 0) }},
		{"read after write",
			func() { unix.Pread(hfd["d/f"], buf, 0) },
			func() { ours.h["d/f"].Read(buf, 0) }},
		{"second read",
			func() { unix.Pread(hfd["d/f"], buf, 0) },
			func() { ours.h["d/f"].Read(buf, 0) }},
		{"write far, leaving a hole",
			func() { unix.Pwrite(hfd["d/f"], []byte("x"), 3*pageSize) },
			func() { ours.h["d/f"].Write([]byte("x"), 3*pageSize) }},
		{"readv at end of file",
			func() { unix.Preadv(hfd["d/f"], [][]byte{buf}, 1<<20) },
			func() { ours.h["d/f"].ReadIter(iov.Vec([][]byte{buf}), 1<<20) }},
		{"ftruncate to the same size",
			func() { must(unix.Ftruncate(hfd["d/f"], 3*pageSize+1)) },
			func() {
				ours.node(t, "d/f").(*File).Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: 3*pageSize + 1}, root0)
			}},
		{"truncate smaller",
			func() { must(unix.Truncate(hp("d/f"), 10)) },
			func() { ours.node(t, "d/f").(*File).Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: 10}, root0) }},
		{"chmod",
			func() { must(unix.Chmod(hp("d/f"), 0o600)) },
			func() { ours.node(t, "d/f").(*File).Setattr(vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o600}, root0) }},
		{"chown to the same ids",
			func() { must(unix.Chown(hp("d/f"), 0, 0)) },
			func() { ours.node(t, "d/f").(*File).Setattr(vfs.SetAttr{Valid: vfs.SetUid | vfs.SetGid}, root0) }},
		{"link d/f to g",
			func() { must(unix.Link(hp("d/f"), hp("g"))) },
			func() { ours.r.Link("g", ours.node(t, "d/f"), root0) }},
		{"symlink l",
			func() { must(unix.Symlink("d/f", hp("l"))) },
			func() { ours.r.Symlink("l", "d/f", root0) }},
		{"readlink l",
			func() { unix.Readlink(hp("l"), buf) },
			func() { ours.node(t, "l").(*Symlink).Readlink() }},
		{"rename g into d",
			func() { must(unix.Rename(hp("g"), hp("d/g"))) },
			func() { ours.r.Rename("g", ours.dir(t, "d"), "g", 0, root0) }},
		{"rename d/g to d/h",
			func() { must(unix.Rename(hp("d/g"), hp("d/h"))) },
			func() { ours.dir(t, "d").Rename("g", ours.dir(t, "d"), "h", 0, root0) }},
		{"rename d/h over d/f's twin name g at the root",
			func() { must(unix.Rename(hp("d/h"), hp("g"))) },
			func() { ours.dir(t, "d").Rename("h", ours.r, "g", 0, root0) }},
		{"rename g onto its twin d/f",
			func() { must(unix.Rename(hp("g"), hp("d/f"))) },
			func() { ours.r.Rename("g", ours.dir(t, "d"), "f", 0, root0) }},
		{"unlink g",
			func() { must(unix.Unlink(hp("g"))) },
			func() { ours.r.Unlink("g", root0) }},
		{"list d",
			func() { os.ReadDir(hp("d")) },
			func() { ours.dir(t, "d").ReadDir(0, func(vfs.Dirent) bool { return true }) }},
		{"mkdir d/s",
			func() { must(unix.Mkdir(hp("d/s"), 0o755)) },
			func() { ours.dir(t, "d").Mkdir("s", 0o755, root0) }},
		{"rename d/s to s",
			func() { must(unix.Rename(hp("d/s"), hp("s"))) },
			func() { ours.dir(t, "d").Rename("s", ours.r, "s", 0, root0) }},
		{"rmdir s",
			func() { must(unix.Rmdir(hp("s"))) },
			func() { ours.r.Rmdir("s", root0) }},
		{"open d/f with O_TRUNC",
			func() { hostOpen("d/f", unix.O_WRONLY|unix.O_TRUNC) },
			func() { ours.h["d/f"] = openTrunc(t, ours.node(t, "d/f").(*File), unix.O_WRONLY|unix.O_TRUNC) }},
		{"open the empty d/f with O_TRUNC",
			func() { hostOpen("d/f", unix.O_RDONLY|unix.O_TRUNC) },
			func() { ours.h["d/f"] = openTrunc(t, ours.node(t, "d/f").(*File), unix.O_RDONLY|unix.O_TRUNC) }},
		{"append",
			func() {
				hostOpen("d/f", unix.O_WRONLY|unix.O_APPEND)
				unix.Write(hfd["d/f"], []byte("tail"))
			},
			func() { ours.h["d/f"].Append(iov.Buf([]byte("tail"))) }},
		{"utimes",
			func() {
				ts := []unix.Timespec{unix.NsecToTimespec(fixed.UnixNano()), unix.NsecToTimespec(fixed.UnixNano())}
				must(unix.UtimesNano(hp("d/f"), ts))
			},
			func() {
				ours.node(t, "d/f").(*File).Setattr(vfs.SetAttr{Valid: vfs.SetAtime | vfs.SetMtime, Atime: fixed, Mtime: fixed}, root0)
			}},
		{"read after utimes",
			func() {
				hostOpen("d/f", unix.O_RDONLY)
				unix.Pread(hfd["d/f"], buf, 0)
			},
			func() { ours.h["d/f"].Read(buf, 0) }},
	}
	paths := []string{".", "d", "d/f", "l", "g", "s"}
	type snap struct {
		ok                  bool
		atime, mtime, ctime int64
		size, blocks        int64
		nlink               uint64
		mode                uint32
	}
	hostSnap := func() map[string]snap {
		m := map[string]snap{}
		for _, p := range paths {
			var st unix.Stat_t
			if unix.Lstat(hp(p), &st) != nil {
				continue
			}
			m[p] = snap{true, st.Atim.Nano(), st.Mtim.Nano(), st.Ctim.Nano(), st.Size, st.Blocks, st.Nlink, st.Mode}
		}
		return m
	}
	ourSnap := func() map[string]snap {
		m := map[string]snap{}
		for _, p := range paths {
			n := ours.node(t, p)
			if n == nil {
				continue
			}
			st := mustStat(t, n)
			m[p] = snap{true, st.Atime.UnixNano(), st.Mtime.UnixNano(), st.Ctime.UnixNano(), st.Size, st.Blocks, st.Nlink, st.Mode}
		}
		return m
	}
	hBefore, oBefore := hostSnap(), ourSnap()
	for _, s := range steps {
		time.Sleep(12 * time.Millisecond) // more than a jiffy: coarse clocks move
		s.host()
		s.ours()
		hAfter, oAfter := hostSnap(), ourSnap()
		for _, p := range paths {
			h0, h1, o0, o1 := hBefore[p], hAfter[p], oBefore[p], oAfter[p]
			if h1.ok != o1.ok {
				t.Errorf("%s: %s exists on host %v, ours %v", s.name, p, h1.ok, o1.ok)
				continue
			}
			if !h1.ok {
				continue
			}
			moved := func(a, b snap) [3]bool {
				return [3]bool{a.atime != b.atime, a.mtime != b.mtime, a.ctime != b.ctime}
			}
			if hm, om := moved(h0, h1), moved(o0, o1); h0.ok && o0.ok && hm != om {
				t.Errorf("%s: %s atime/mtime/ctime moved: host %v, ours %v", s.name, p, hm, om)
			}
			if h1.size != o1.size || h1.nlink != o1.nlink || h1.mode&^0o7777 != o1.mode&^0o7777 || h1.blocks != o1.blocks {
				t.Errorf("%s: %s size/nlink/mode/blocks: host %d %d %o %d, ours %d %d %o %d", s.name, p,
					h1.size, h1.nlink, h1.mode, h1.blocks, o1.size, o1.nlink, o1.mode, o1.blocks)
			}
			if p == "d/f" && s.name == "utimes" && (o1.mtime != fixed.UnixNano() || h1.mtime != o1.mtime) {
				t.Errorf("utimes: mtime host %d, ours %d, want %d", h1.mtime, o1.mtime, fixed.UnixNano())
			}
		}
		hBefore, oBefore = hAfter, oAfter
	}
}

// TestSizeLimitLinux compares writes against a host tmpfs mounted with
// size=12k: short counts, ENOSPC, space held by an unlinked open file until
// its close, and a long symlink's page.
func TestSizeLimitLinux(t *testing.T) {
	testenv.RequireRoot(t, "mounting a host tmpfs")
	host := t.TempDir()
	if err := unix.Mount("tmpfs", host, "tmpfs", 0, "size=12k"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(host, unix.MNT_DETACH) })
	opts, err := Parse("size=12k")
	if err != nil {
		t.Fatal(err)
	}
	fs := New(opts)
	hfd := map[string]int{}
	ofd := map[string]*OpenFile{}
	open := func(name string) {
		fd, err := unix.Open(path.Join(host, name), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		hfd[name] = fd
		ofd[name] = mustOpen(t, mustCreate(t, fs.root, name), rw)
	}
	defer func() {
		for _, fd := range hfd {
			unix.Close(fd)
		}
	}()
	type result struct {
		n   int
		err error
	}
	steps := []struct {
		name string
		host func() result
		ours func() result
	}{
		{"open f", func() result { open("f"); return result{} }, func() result { return result{} }},
		{"write 5 pages at 10",
			func() result { n, err := unix.Pwrite(hfd["f"], pattern(5*pageSize, 1), 10); return result{n, err} },
			func() result { n, err := ofd["f"].Write(pattern(5*pageSize, 1), 10); return result{n, err} }},
		{"write into a new page",
			func() result { n, err := unix.Pwrite(hfd["f"], pattern(10, 1), 4*pageSize); return result{n, err} },
			func() result { n, err := ofd["f"].Write(pattern(10, 1), 4*pageSize); return result{n, err} }},
		{"overwrite held pages",
			func() result {
				n, err := unix.Pwrite(hfd["f"], pattern(pageSize, 2), pageSize+7)
				return result{n, err}
			},
			func() result { n, err := ofd["f"].Write(pattern(pageSize, 2), pageSize+7); return result{n, err} }},
		{"open g", func() result { open("g"); return result{} }, func() result { return result{} }},
		{"write to a second file",
			func() result { n, err := unix.Pwrite(hfd["g"], []byte("x"), 0); return result{n, err} },
			func() result { n, err := ofd["g"].Write([]byte("x"), 0); return result{n, err} }},
		{"unlink the open f",
			func() result { return result{0, unix.Unlink(path.Join(host, "f"))} },
			func() result { return result{0, fs.root.Unlink("f", root0)} }},
		{"write to g while f is open",
			func() result { n, err := unix.Pwrite(hfd["g"], []byte("x"), 0); return result{n, err} },
			func() result { n, err := ofd["g"].Write([]byte("x"), 0); return result{n, err} }},
		{"close f",
			func() result { err := unix.Close(hfd["f"]); delete(hfd, "f"); return result{0, err} },
			func() result { return result{0, ofd["f"].Release()} }},
		{"write 5 pages to g",
			func() result { n, err := unix.Pwrite(hfd["g"], pattern(5*pageSize, 3), 0); return result{n, err} },
			func() result { n, err := ofd["g"].Write(pattern(5*pageSize, 3), 0); return result{n, err} }},
		{"long symlink when full",
			func() result { return result{0, unix.Symlink(strings.Repeat("a", 200), path.Join(host, "l"))} },
			func() result { _, err := fs.root.Symlink("l", strings.Repeat("a", 200), root0); return result{0, err} }},
		{"short symlink when full",
			func() result { return result{0, unix.Symlink("a", path.Join(host, "s"))} },
			func() result { _, err := fs.root.Symlink("s", "a", root0); return result{0, err} }},
		{"truncate g to one page",
			func() result { return result{0, unix.Ftruncate(hfd["g"], pageSize)} },
			func() result {
				return result{0, lookup(t, fs.root, "g").(*File).Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: pageSize}, root0)}
			}},
		{"long symlink after truncate",
			func() result { return result{0, unix.Symlink(strings.Repeat("a", 200), path.Join(host, "l"))} },
			func() result { _, err := fs.root.Symlink("l", strings.Repeat("a", 200), root0); return result{0, err} }},
		{"append 3 pages to g",
			func() result {
				fd, err := unix.Open(path.Join(host, "g"), unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
				if err != nil {
					return result{0, err}
				}
				defer unix.Close(fd)
				n, err := unix.Write(fd, pattern(3*pageSize, 4))
				return result{n, err}
			},
			func() result { _, n, err := ofd["g"].Append(iov.Buf(pattern(3*pageSize, 4))); return result{n, err} }},
	}
	for _, s := range steps {
		h, o := s.host(), s.ours()
		if h.err != nil {
			h.n = 0 // the syscall wrappers return -1
		}
		if h.n != o.n || errno(h.err) != errno(o.err) {
			t.Errorf("%s: host %d, %v; ours %d, %v", s.name, h.n, h.err, o.n, o.err)
		}
	}
	var st unix.Stat_t
	unix.Fstat(hfd["g"], &st)
	if ost := mustStat(t, lookup(t, fs.root, "g")); ost.Size != st.Size || ost.Blocks != st.Blocks {
		t.Errorf("g: host size %d blocks %d, ours %d %d", st.Size, st.Blocks, ost.Size, ost.Blocks)
	}
}
