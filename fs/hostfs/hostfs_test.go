package hostfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/fs/hostfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// mountHost returns a process with the host directory dir mounted at
// /mnt/h with the mount data given.
func mountHost(t testing.TB, dir string, flags uintptr, data string) *vfs.Proc {
	t.Helper()
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Mkdir("/mnt/h", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount(dir, "/mnt/h", "hostfs", flags, data); err != nil {
		t.Fatal(err)
	}
	return p
}

func errno(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	if err != nil {
		return ^syscall.Errno(0)
	}
	return 0
}

func TestMountErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	p.Mkdir("/mnt/h", 0o755)
	for _, c := range []struct {
		src, data string
		want      syscall.Errno
	}{
		{filepath.Join(dir, "f"), "", unix.ENOTDIR},
		{filepath.Join(dir, "missing"), "", unix.ENOENT},
		{dir, "bogus", unix.EINVAL},
		{dir, "uid=x", unix.EINVAL},
		{dir, "uid=5,gid=6,xdev", 0},
	} {
		if err := p.Mount(c.src, "/mnt/h", "hostfs", 0, c.data); errno(err) != c.want {
			t.Errorf("mount %s -o %q: %v, want %v", c.src, c.data, err, c.want)
		}
	}
}

func TestPassThrough(t *testing.T) {
	dir := t.TempDir()
	p := mountHost(t, dir, 0, "")
	fd, err := p.Open("/mnt/h/f", unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Write(fd, []byte("hello, host")); n != 11 || err != nil {
		t.Fatal(n, err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil || string(got) != "hello, host" {
		t.Fatalf("host sees %q, %v", got, err)
	}
	a, b := make([]byte, 5), make([]byte, 20)
	if n, err := p.Preadv(fd, [][]byte{a, b}, 0); n != 11 || err != nil || string(a) != "hello" || string(b[:6]) != ", host" {
		t.Fatalf("preadv %d %v %q %q", n, err, a, b)
	}
	var hst unix.Stat_t
	unix.Stat(filepath.Join(dir, "f"), &hst)
	st, err := p.Stat("/mnt/h/f")
	if err != nil || st.Ino != hst.Ino || st.Mode != hst.Mode || st.Size != 11 {
		t.Fatalf("stat %+v %v, host ino %d mode %o", st, err, hst.Ino, hst.Mode)
	}
	// A change on the host is seen at once.
	os.WriteFile(filepath.Join(dir, "f"), []byte("changed"), 0o640)
	if st, _ := p.Fstat(fd); st.Size != 7 {
		t.Fatalf("size after host write %d", st.Size)
	}
	// Hard links: one node, the host's link count.
	if err := p.Link("/mnt/h/f", "/mnt/h/g"); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.Stat("/mnt/h/g"); st.Ino != hst.Ino || st.Nlink != 2 {
		t.Fatalf("link: %+v", st)
	}
	if err := p.Rename("/mnt/h/g", "/mnt/h/h"); err != nil {
		t.Fatal(err)
	}
	if err := p.Symlink("f", "/mnt/h/l"); err != nil {
		t.Fatal(err)
	}
	if s, err := os.Readlink(filepath.Join(dir, "l")); s != "f" || err != nil {
		t.Fatal(s, err)
	}
	if st, err := p.Stat("/mnt/h/l"); err != nil || st.Ino != hst.Ino {
		t.Fatalf("stat through symlink: %+v %v", st, err)
	}
	if err := p.Mkdir("/mnt/h/d", 0o750); err != nil {
		t.Fatal(err)
	}
	unix.Stat(filepath.Join(dir, "d"), &hst)
	if hst.Mode&0o777 != 0o750 {
		t.Fatalf("mkdir mode %o", hst.Mode)
	}
	if err := p.Chmod("/mnt/h/f", 0o604); err != nil {
		t.Fatal(err)
	}
	unix.Stat(filepath.Join(dir, "f"), &hst)
	if hst.Mode&0o7777 != 0o604 {
		t.Fatalf("chmod: host mode %o", hst.Mode)
	}
	if err := p.Truncate("/mnt/h/f", 3); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.Stat("/mnt/h/h"); st.Size != 3 {
		t.Fatalf("truncate: size %d", st.Size)
	}
	if err := p.Rmdir("/mnt/h/d"); err != nil {
		t.Fatal(err)
	}
	if err := p.Unlink("/mnt/h/h"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "h")); !os.IsNotExist(err) {
		t.Fatal("unlink did not reach the host")
	}
	if _, err := p.Stat("/mnt/h/.."); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.Stat("/mnt/h/.."); st.Ino == hst.Ino {
		t.Fatal("..")
	}
}

func TestGetdentsResumes(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := 0; i < 300; i++ {
		n := filepath.Join(dir, "file-with-a-long-name-"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		os.WriteFile(n, nil, 0o644)
		want = append(want, filepath.Base(n))
	}
	p := mountHost(t, dir, 0, "")
	fd, err := p.Open("/mnt/h", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		ents, err := p.Getdents(fd)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) == 0 {
			break
		}
		for _, e := range ents {
			if e.Name != "." && e.Name != ".." {
				got = append(got, e.Name)
			}
		}
		// Resume from the middle of the batch, as a caller with a small
		// buffer does.
		if len(ents) > 2 {
			if _, err := p.Seek(fd, ents[len(ents)/2].Off, unix.SEEK_SET); err != nil {
				t.Fatal(err)
			}
			got = got[:len(got)-(len(ents)-1-len(ents)/2)]
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if len(got) != len(want) || !equal(got, want) {
		t.Fatalf("listing: %d names, want %d", len(got), len(want))
	}
	// At the end the position is the host's (ext4's end cookie is
	// MaxInt64, which must not wrap around in the VFS's +2).
	hfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(hfd)
	buf := make([]byte, 1<<16)
	for {
		if n, err := unix.Getdents(hfd, buf); n <= 0 || err != nil {
			break
		}
	}
	hpos, _ := unix.Seek(hfd, 0, unix.SEEK_CUR)
	if pos, err := p.Seek(fd, 0, unix.SEEK_CUR); pos != hpos || err != nil {
		t.Errorf("position at the end: %d, %v; host %d", pos, err, hpos)
	}
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestUidGid(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	p := mountHost(t, dir, 0, "uid=1234,gid=5678")
	st, err := p.Stat("/mnt/h/f")
	if err != nil || st.Uid != 1234 || st.Gid != 5678 {
		t.Fatalf("%+v %v", st, err)
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	p := mountHost(t, dir, unix.MS_RDONLY, "")
	if _, err := p.Open("/mnt/h/f", unix.O_RDWR, 0); errno(err) != unix.EROFS {
		t.Fatalf("open O_RDWR: %v", err)
	}
	if err := p.Mkdir("/mnt/h/d", 0o755); errno(err) != unix.EROFS {
		t.Fatalf("mkdir: %v", err)
	}
	fd, err := p.Open("/mnt/h/f", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if n, err := p.Read(fd, b); n != 1 || err != nil || b[0] != 'x' {
		t.Fatal(n, err)
	}
}

func TestSameInodeSameNode(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	os.Link(filepath.Join(dir, "f"), filepath.Join(dir, "g"))
	fs, err := hostfs.New(dir, hostfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root := fs.Root().(*hostfs.Dir)
	a, err := root.Lookup("f")
	if err != nil {
		t.Fatal(err)
	}
	b, err := root.Lookup("g")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("two links of one inode are two nodes")
	}
	if up, err := root.Lookup(".."); err != nil || up != fs.Root() {
		t.Fatalf("root's .. = %v, %v", up, err)
	}
	// Replace f on the host: a new inode, a new node, while a is alive.
	os.Remove(filepath.Join(dir, "f"))
	os.Remove(filepath.Join(dir, "g"))
	os.Mkdir(filepath.Join(dir, "f"), 0o755)
	c, err := root.Lookup("f")
	if err != nil {
		t.Fatal(err)
	}
	if c == a {
		t.Fatal("a replaced inode gave the old node")
	}
	if _, ok := c.(*hostfs.Dir); !ok {
		t.Fatalf("new f is %T", c)
	}
	st, _ := a.Stat()
	if st.Nlink != 0 {
		t.Fatalf("old node's nlink %d", st.Nlink)
	}
}

func TestXdev(t *testing.T) {
	testenv.RequireRoot(t, "mounting a tmpfs below the root")
	dir := t.TempDir()
	sub := filepath.Join(dir, "m")
	os.Mkdir(sub, 0o755)
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(sub, unix.MNT_DETACH) })
	os.WriteFile(filepath.Join(sub, "f"), []byte("x"), 0o644)
	p := mountHost(t, dir, 0, "")
	if _, err := p.Stat("/mnt/h/m/f"); errno(err) != unix.EXDEV {
		t.Fatalf("without xdev: %v, want EXDEV", err)
	}
	p = mountHost(t, dir, 0, "xdev")
	if _, err := p.Stat("/mnt/h/m/f"); err != nil {
		t.Fatalf("with xdev: %v", err)
	}
}

func TestAppend(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("abc"), 0o644)
	p := mountHost(t, dir, 0, "")
	fd, err := p.Open("/mnt/h/f", unix.O_WRONLY|unix.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Pwrite(fd, []byte("de"), 0); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	if off, _ := p.Seek(fd, 0, unix.SEEK_CUR); off != 0 {
		t.Fatalf("pwrite moved the position to %d", off)
	}
	if n, err := p.Write(fd, []byte("f")); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	if off, _ := p.Seek(fd, 0, unix.SEEK_CUR); off != 6 {
		t.Fatalf("position after append %d", off)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "f"))
	if !bytes.Equal(got, []byte("abcdef")) {
		t.Fatalf("%q", got)
	}
}

// TestRWFlags: preadv2 and pwritev2 flags reach the host's preadv2 and
// pwritev2, and the host's answer comes back: the same results as the
// host's own calls on a file of the same host file system.
func TestRWFlags(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("0123456789"), 0o644)
	os.WriteFile(filepath.Join(dir, "g"), []byte("0123456789"), 0o644)
	p := mountHost(t, dir, 0, "")
	fd, err := p.Open("/mnt/h/f", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	hfd, err := unix.Open(filepath.Join(dir, "g"), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(hfd)
	for _, fl := range []int{unix.RWF_NOWAIT, unix.RWF_HIPRI, unix.RWF_DSYNC, unix.RWF_SYNC, unix.RWF_NOWAIT | unix.RWF_DSYNC} {
		a, b := make([]byte, 4), make([]byte, 4)
		hn, herr := unix.Preadv2(hfd, [][]byte{a, a}, 2, fl)
		on, oerr := p.Preadv2(fd, [][]byte{b, b}, 2, fl)
		if hn < 0 {
			hn = 0
		}
		if hn != on || errno(herr) != errno(oerr) || !bytes.Equal(a, b) {
			t.Errorf("preadv2 flags %#x: host %d %v, hostfs %d %v", fl, hn, herr, on, oerr)
		}
		hn, herr = unix.Pwritev2(hfd, [][]byte{[]byte("ab"), []byte("cd")}, 3, fl)
		on, oerr = p.Pwritev2(fd, [][]byte{[]byte("ab"), []byte("cd")}, 3, fl)
		if hn < 0 {
			hn = 0
		}
		if hn != on || errno(herr) != errno(oerr) {
			t.Errorf("pwritev2 flags %#x: host %d %v, hostfs %d %v", fl, hn, herr, on, oerr)
		}
	}
	f, _ := os.ReadFile(filepath.Join(dir, "f"))
	g, _ := os.ReadFile(filepath.Join(dir, "g"))
	if !bytes.Equal(f, g) {
		t.Fatalf("f %q, g %q", f, g)
	}
	// procfs files have no FMODE_NOWAIT: the host refuses RWF_NOWAIT, so
	// the flag must have reached it for hostfs to refuse too.
	p = mountHost(t, "/proc/sys/kernel", unix.MS_RDONLY, "")
	fd, err = p.Open("/mnt/h/ostype", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	if n, err := p.Preadv2(fd, [][]byte{b, b}, 0, unix.RWF_NOWAIT); errno(err) != unix.EOPNOTSUPP {
		t.Errorf("preadv2(RWF_NOWAIT) on procfs through hostfs: %d, %v; the host gives EOPNOTSUPP", n, err)
	}
	if n, err := p.Preadv2(fd, [][]byte{b, b}, 0, 0); n == 0 || err != nil {
		t.Errorf("preadv2 on procfs through hostfs: %d, %v", n, err)
	}
}

// TestNodeCalls: xattrs, statfs, fallocate, fsync and utimes reach the
// host and give its answers.
func TestNodeCalls(t *testing.T) {
	dir := t.TempDir()
	hp := filepath.Join(dir, "f")
	os.WriteFile(hp, make([]byte, 3*4096), 0o644)
	if err := unix.Setxattr(hp, "user.a", []byte("va"), 0); err != nil {
		t.Skipf("no user xattrs on %s: %v", dir, err)
	}
	fs, err := hostfs.New(dir, hostfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := fs.Root().(*hostfs.Dir).Lookup("f")
	if err != nil {
		t.Fatal(err)
	}
	f := n.(*hostfs.File)
	if v, err := f.Getxattr("user.a"); err != nil || string(v) != "va" {
		t.Fatalf("getxattr: %q %v", v, err)
	}
	if _, err := f.Getxattr("user.missing"); errno(err) != unix.ENODATA {
		t.Fatalf("missing xattr: %v", err)
	}
	if err := f.Setxattr("user.b", []byte("vb"), unix.XATTR_CREATE, vfs.Cred{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Setxattr("user.b", []byte("vb"), unix.XATTR_CREATE, vfs.Cred{}); errno(err) != unix.EEXIST {
		t.Fatalf("XATTR_CREATE twice: %v", err)
	}
	buf := make([]byte, 64)
	if n, err := unix.Getxattr(hp, "user.b", buf); err != nil || string(buf[:n]) != "vb" {
		t.Fatalf("host sees %q %v", buf[:max(n, 0)], err)
	}
	names, err := f.Listxattr()
	sort.Strings(names)
	if err != nil || !equal(names, []string{"user.a", "user.b"}) {
		t.Fatalf("listxattr %v %v", names, err)
	}
	if err := f.Removexattr("user.a", vfs.Cred{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Removexattr("user.a", vfs.Cred{}); errno(err) != unix.ENODATA {
		t.Fatalf("remove twice: %v", err)
	}

	var want unix.Statfs_t
	unix.Statfs(dir, &want)
	got, err := fs.Statfs()
	if err != nil || got.Type != want.Type || got.Bsize != want.Bsize || got.Blocks != want.Blocks {
		t.Fatalf("statfs %+v %v, host %+v", got, err, want)
	}
	if hostfs.Resolver(got.Spare[0]) != fs.Resolver() || fs.Resolver() != hostfs.Openat2 {
		t.Fatalf("statfs says resolver %v, FS %v; this kernel has openat2", hostfs.Resolver(got.Spare[0]), fs.Resolver())
	}

	h, err := f.Open(unix.O_RDWR, vfs.Cred{})
	if err != nil {
		t.Fatal(err)
	}
	fh := h.(*hostfs.Handle)
	defer fh.Release()
	err = fh.Fallocate(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 4096, 4096, vfs.Cred{})
	hfd, _ := unix.Open(hp, unix.O_RDWR|unix.O_CLOEXEC, 0)
	defer unix.Close(hfd)
	var st unix.Stat_t
	unix.Fstat(hfd, &st)
	if err != nil || st.Size != 3*4096 {
		t.Fatalf("punch hole: %v, size %d", err, st.Size)
	}
	hole, herr := unix.Seek(hfd, 0, unix.SEEK_HOLE)
	ohole, oerr := fh.Llseek(0, 0, unix.SEEK_HOLE)
	if hole != ohole || herr != oerr {
		t.Fatalf("SEEK_HOLE host %d %v, hostfs %d %v", hole, herr, ohole, oerr)
	}
	if err := fh.Fallocate(0xff, 0, 1, vfs.Cred{}); errno(err) != unix.EOPNOTSUPP && errno(err) != unix.EINVAL {
		t.Fatalf("bad mode: %v", err)
	}
	if err := fh.SetFlags(unix.O_RDWR | unix.O_NOATIME | unix.O_APPEND); err != nil {
		t.Fatal(err)
	}
	if fl, _ := unix.FcntlInt(uintptr(fh.HostFD()), unix.F_GETFL, 0); fl&unix.O_NOATIME == 0 || fl&unix.O_APPEND != 0 {
		t.Fatalf("host flags %#o after SetFlags(O_NOATIME|O_APPEND)", fl)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fh.Datasync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Setattr(vfs.SetAttr{Valid: vfs.SetMtime, Mtime: time.Unix(12345, 678)}, vfs.Cred{}); err != nil {
		t.Fatal(err)
	}
	unix.Fstat(hfd, &st)
	if st.Mtim.Sec != 12345 || st.Mtim.Nsec != 678 {
		t.Fatalf("utimes: host mtime %v", st.Mtim)
	}
}

// TestUmaskIsTheGuests: the VFS applies the guest's umask; the host
// process's own umask must not clear more bits.
func TestUmaskIsTheGuests(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	dir := t.TempDir()
	p := mountHost(t, dir, 0, "")
	p.Umask(0)
	fd, err := p.Open("/mnt/h/f", unix.O_CREAT|unix.O_WRONLY, 0o777)
	if err != nil {
		t.Fatal(err)
	}
	p.Close(fd)
	if err := p.Mkdir("/mnt/h/d", 0o777); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"f", "d"} {
		var st unix.Stat_t
		unix.Stat(filepath.Join(dir, n), &st)
		if st.Mode&0o777 != 0o777 {
			t.Errorf("%s: host mode %o, want 777", n, st.Mode&0o777)
		}
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestNodesReleased: a node that nothing refers to gives its host
// descriptor back once collected, so walking a large tree does not run
// out of descriptors.
func TestNodesReleased(t *testing.T) {
	dir := t.TempDir()
	const files = 3000
	for i := 0; i < files; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o644)
	}
	fs, err := hostfs.New(dir, hostfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root := fs.Root().(*hostfs.Dir)
	before := openFDs(t)
	for i := 0; i < files; i++ {
		if _, err := root.Lookup(fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Cleanups run after a collection, on their own goroutine.
	deadline := time.Now().Add(5 * time.Second)
	for openFDs(t) > before+files/10 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := openFDs(t); n > before+files/10 {
		t.Fatalf("%d descriptors open after dropping %d nodes (%d before)", n, files, before)
	}
	// A held node keeps its descriptor and identity across collections.
	a, _ := root.Lookup("7")
	runtime.GC()
	b, _ := root.Lookup("7")
	if a != b {
		t.Fatal("a held node was replaced")
	}
	runtime.KeepAlive(a)
}

// TestLookupOneComponent: Lookup takes one name, whatever the caller, with
// either resolver.
func TestLookupOneComponent(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	for _, fallback := range []bool{false, true} {
		hostfs.ForceFallback(fallback)
		fs, err := hostfs.New(filepath.Join(dir, "d"), hostfs.Options{})
		hostfs.ForceFallback(false)
		if err != nil {
			t.Fatal(err)
		}
		root := fs.Root().(*hostfs.Dir)
		for _, name := range []string{"../d", "a/b", "/", ".", ""} {
			if n, err := root.Lookup(name); errno(err) != unix.EINVAL {
				t.Errorf("fallback %v: Lookup(%q) = %v, %v; want EINVAL", fallback, name, n, err)
			}
		}
	}
}
