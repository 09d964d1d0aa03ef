package hostfs_test

// The adversarial escape suite. It runs in a child process with a private
// mount namespace whose / is a scratch tmpfs (TESTING.md, "Escape tests act
// on the real machine when they fail"): if hostfs escapes, the damage lands
// on the scratch root. Canary files planted outside the hostfs root are
// checked afterwards (contents, mode, link count, atime, mtime, ctime on a
// strictatime mount, and the set of names around them), and every result
// the guest gets is checked against them as it comes (no canary inode in a
// stat, no canary bytes in a read, no canary name in a listing).

import (
	"bytes"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/fs/hostfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

const escapeChild = "IOVFS_HOSTFS_ESCAPE_CHILD"

// The suite's minimums, from the issue; CI runs exactly these.
const (
	minAttempts = 100_000
	minRacing   = 10 * time.Second
)

func TestEscape(t *testing.T) {
	if os.Getenv(escapeChild) == "" {
		testenv.RequireRoot(t, "a private mount namespace with a scratch root")
		cmd := exec.Command(os.Args[0], "-test.run=^TestEscape$", "-test.v", "-test.timeout=5m")
		cmd.Env = append(os.Environ(), escapeChild+"="+t.TempDir())            // the scratch root's mount point
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: unix.CLONE_NEWNS} // mounts made private by os/exec
		out, err := cmd.CombinedOutput()
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.Contains(line, "escape") || strings.Contains(line, "FAIL") || strings.Contains(line, "---") || strings.Contains(line, ".go:") {
				t.Log(line)
			}
		}
		if err != nil {
			t.Fatalf("escape suite child: %v", err)
		}
		if !bytes.Contains(out, []byte("--- PASS: TestEscape")) {
			t.Fatal("escape suite child did not run")
		}
		return
	}
	scratchRoot(t, os.Getenv(escapeChild))
	runEscape(t)
}

// scratchRoot makes a strictatime tmpfs mounted on dir (an empty
// directory the parent made) the process's root, with /proc and /tmp. The
// mount namespace is the child's own, so everything mounted here goes
// away with it.
func scratchRoot(t *testing.T, dir string) {
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_STRICTATIME, "size=64m,mode=0755"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"proc", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o1777); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("/proc", filepath.Join(dir, "proc"), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chroot(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir("/"); err != nil {
		t.Fatal(err)
	}
	os.Setenv("TMPDIR", "/tmp")
}

// canary is a file or directory outside the root whose state must not
// change.
type canary struct {
	path  string
	st    unix.Stat_t
	data  []byte   // a file's contents
	names []string // a directory's entries, less the wandering ones
}

// wandering are the entries the host racers move in and out of /outside2.
var wandering = map[string]bool{"mv": true, "mvfile": true}

func snapshot(t *testing.T, path string) canary {
	c := canary{path: path}
	if err := unix.Lstat(path, &c.st); err != nil {
		t.Fatalf("canary %s: %v", path, err)
	}
	if c.st.Mode&unix.S_IFMT == unix.S_IFDIR {
		ents, err := os.ReadDir(path) // moves atime: taken before the snapshot is compared
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if !wandering[e.Name()] {
				c.names = append(c.names, e.Name())
			}
		}
		sort.Strings(c.names)
		if err := unix.Lstat(path, &c.st); err != nil {
			t.Fatal(err)
		}
		return c
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c.data = data
	// Reading moved atime; set it back below mtime so that under
	// strictatime any later read shows.
	old := time.Unix(0, 0).Add(time.Hour)
	if err := os.Chtimes(path, old, time.Time{}); err != nil {
		t.Fatal(err)
	}
	unix.Lstat(path, &c.st)
	return c
}

func (c canary) check(t *testing.T, dirTimes bool) {
	var st unix.Stat_t
	if err := unix.Lstat(c.path, &st); err != nil {
		t.Errorf("ESCAPE: canary %s: %v", c.path, err)
		return
	}
	same := st.Ino == c.st.Ino && st.Mode == c.st.Mode && st.Nlink == c.st.Nlink && st.Uid == c.st.Uid &&
		st.Gid == c.st.Gid
	if c.st.Mode&unix.S_IFMT != unix.S_IFDIR || dirTimes {
		// A directory that the racers move entries in and out of changes
		// its size and times; its names are checked instead.
		same = same && st.Size == c.st.Size && st.Atim == c.st.Atim && st.Mtim == c.st.Mtim && st.Ctim == c.st.Ctim
	}
	if !same {
		t.Errorf("ESCAPE: canary %s changed: %+v, was %+v", c.path, st, c.st)
	}
	if c.data != nil {
		// Compare the bytes after the times: reading moves atime.
		if b, err := os.ReadFile(c.path); err != nil || !bytes.Equal(b, c.data) {
			t.Errorf("ESCAPE: canary %s contents %q, %v", c.path, b, err)
		}
	}
}

func (c canary) checkNames(t *testing.T) {
	if c.st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return
	}
	now := snapshotNames(c.path)
	if strings.Join(now, "/") != strings.Join(c.names, "/") {
		t.Errorf("ESCAPE: entries of %s are %v, were %v", c.path, now, c.names)
	}
}

func snapshotNames(path string) []string {
	ents, _ := os.ReadDir(path)
	var names []string
	for _, e := range ents {
		if !wandering[e.Name()] {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// The guest paths the attempts use: each is a way out if hostfs or the
// walk had a hole.
var escapePaths = []string{
	"abs", "abs/x", "absdir/CANARY-secret", "absdir/CANARY-dir/CANARY-inner", "rootlink/outside/CANARY-secret",
	"rootlink/CANARY-root", "rel", "reldir/CANARY-secret", "reldir/CANARY-dir", "proc", "proc/outside/CANARY-secret",
	"procfd", "procfd/CANARY-secret",
	"..", "../CANARY-root", "../outside/CANARY-secret", "../../../../outside/CANARY-dir", "a/../../outside",
	"a/b/../../../CANARY-root", "bind", "bind/CANARY-secret", "bind/../outside/CANARY-secret",
	"race/dir", "race/dir/x", "race/dir/CANARY-secret", "race/dir/../../outside/CANARY-secret", "race/dir/new",
	"race/link/CANARY-secret", "race/alink/CANARY-dir", "race/dir/CANARY-dir/CANARY-inner",
	"mv", "mv/inner", "mv/..", "mv/../CANARY-2", "mv/../../outside2/CANARY-2", "mv/../../CANARY-root", "mv/new",
	"mvfile", "f", "new", "a/new",
}

// guest is one iovfs process attacking through one mount.
type guest struct {
	p      *vfs.Proc
	prefix string // where the hostfs is in p's namespace
	rng    *rand.Rand
	// canaryInos are the inodes outside the root: a stat that returns one
	// is an escape.
	canaryInos map[uint64]string
	t          *testing.T
	succeeded  int // calls that returned no error
}

func (g *guest) path() string {
	p := escapePaths[g.rng.Intn(len(escapePaths))]
	switch g.rng.Intn(4) {
	case 0:
		return p // relative to the cwd, which the guest moves around
	case 1:
		return "/" + p // absolute: from the guest's root
	}
	return g.prefix + "/" + p
}

func (g *guest) checkStat(what string, st vfs.Stat, err error) {
	if err == nil {
		if c, ok := g.canaryInos[st.Ino]; ok && st.Dev == g.canaryDev() {
			g.t.Errorf("ESCAPE: %s stat'ed %s (ino %d)", what, c, st.Ino)
		}
	}
}

var scratchDev uint64

func (g *guest) canaryDev() uint64 { return scratchDev }

func (g *guest) checkBytes(what string, b []byte) {
	if bytes.Contains(b, []byte("CANARY")) {
		g.t.Errorf("ESCAPE: %s read canary bytes %q", what, b)
	}
}

// attempt makes one random call through a random attack path and
// counts the calls that succeeded.
func (g *guest) attempt() {
	p, q := g.path(), g.path()
	buf := make([]byte, 64)
	var err error
	switch g.rng.Intn(17) {
	case 0, 1:
		var fd int
		fd, err = g.p.Open(p, unix.O_RDONLY, 0)
		if err == nil {
			n, _ := g.p.Read(fd, buf)
			g.checkBytes("read "+p, buf[:max(n, 0)])
			st, err := g.p.Fstat(fd)
			g.checkStat("fstat "+p, st, err)
			if err == nil && st.Dev == scratchDev { // iovfs's own tmpfs has inode numbers of its own
				g.list(fd, p)
			}
			g.p.Close(fd)
		}
	case 2:
		var fd int
		fd, err = g.p.Open(p, unix.O_RDWR|unix.O_CREAT, 0o666)
		if err == nil {
			g.p.Write(fd, []byte("guest"))
			g.p.Close(fd)
		}
	case 3:
		var fd int
		fd, err = g.p.Open(p, unix.O_WRONLY|unix.O_TRUNC, 0)
		if err == nil {
			g.p.Close(fd)
		}
	case 4:
		var st vfs.Stat
		st, err = g.p.Stat(p)
		g.checkStat("stat "+p, st, err)
	case 5:
		var st vfs.Stat
		st, err = g.p.Lstat(p)
		g.checkStat("lstat "+p, st, err)
	case 6:
		err = g.p.Mkdir(p, 0o777)
	case 7:
		err = g.p.Unlink(p)
	case 8:
		err = g.p.Rmdir(p)
	case 9:
		err = g.p.Rename(p, q)
	case 10:
		err = g.p.Link(p, q)
	case 11:
		err = g.p.Symlink("/outside/CANARY-secret", p)
	case 12:
		err = g.p.Chmod(p, 0o777)
	case 13:
		err = g.p.Truncate(p, 0)
	case 14:
		err = g.p.Utimes(p, time.Unix(1, 0), time.Unix(2, 0))
	case 15:
		err = g.p.Chown(p, 1234, 1234)
	case 16:
		if g.rng.Intn(2) == 0 {
			err = g.p.Chdir(g.prefix + "/" + []string{"mv", "race/dir", "a/b", "."}[g.rng.Intn(4)])
		} else {
			err = g.p.Chdir(p)
		}
		// The chdir is what counts; the getxattr checks the bytes.
		if v, gerr := g.p.Getxattr(p, "user.x"); gerr == nil {
			g.checkBytes("getxattr "+p, v)
		}
	}
	if err == nil {
		g.succeeded++
	}
}

func (g *guest) list(fd int, p string) {
	for i := 0; i < 4; i++ {
		ents, err := g.p.Getdents(fd)
		if err != nil || len(ents) == 0 {
			return
		}
		for _, e := range ents {
			if c, ok := g.canaryInos[e.Ino]; ok && e.Name != "." && e.Name != ".." {
				g.t.Errorf("ESCAPE: listing %s shows inode of %s", p, c)
			}
		}
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func runEscape(t *testing.T) {
	// The host tree. / is the scratch tmpfs.
	for _, d := range []string{"/outside", "/outside/CANARY-dir", "/outside2", "/jail", "/jail/a", "/jail/a/b",
		"/jail/bind", "/jail/race", "/jail/race/dir", "/jail/mv"} {
		mustDo(t, os.Mkdir(d, 0o755))
	}
	for f, data := range map[string]string{
		"/CANARY-root": "CANARY root", "/outside/CANARY-secret": "CANARY secret",
		"/outside/CANARY-dir/CANARY-inner": "CANARY inner", "/outside2/CANARY-2": "CANARY 2",
		"/jail/f": "tree file", "/jail/race/dir/x": "tree x", "/jail/mv/inner": "tree inner", "/jail/mvfile": "tree mvfile",
	} {
		mustDo(t, os.WriteFile(f, []byte(data), 0o644))
	}
	for link, target := range map[string]string{
		"/jail/abs": "/outside/CANARY-secret", "/jail/absdir": "/outside", "/jail/rootlink": "/",
		"/jail/rel": "../outside/CANARY-secret", "/jail/reldir": "../../../../outside",
		"/jail/proc": "/proc/self/root", "/jail/procfd": "/proc/self/cwd",
		"/jail/race/link": "../../outside", "/jail/race/alink": "/outside",
	} {
		mustDo(t, os.Symlink(target, link))
	}
	mustDo(t, unix.Mount("/outside", "/jail/bind", "", unix.MS_BIND, ""))
	unix.Setxattr("/outside/CANARY-secret", "user.x", []byte("CANARY xattr"), 0)

	var rootSt unix.Stat_t
	unix.Stat("/", &rootSt)
	scratchDev = rootSt.Dev
	canaryInos := map[uint64]string{}
	var canaries []canary
	for _, c := range []string{"/", "/CANARY-root", "/outside", "/outside/CANARY-secret", "/outside/CANARY-dir",
		"/outside/CANARY-dir/CANARY-inner", "/outside2", "/outside2/CANARY-2", "/proc", "/tmp"} {
		var st unix.Stat_t
		mustDo(t, unix.Lstat(c, &st))
		if c != "/proc" {
			canaryInos[st.Ino] = c
		}
		if c != "/proc" && c != "/tmp" {
			canaries = append(canaries, snapshot(t, c))
		}
	}

	// The guests: one namespace with the mount at /mnt/h (absolute links
	// resolve in iovfs's own tmpfs), and one whose root is the hostfs, as a
	// WASI preopen or RESOLVE_IN_ROOT gives; each with openat2 and with the
	// fallback walk.
	var guests []*guest
	for i, fallback := range []bool{false, true} {
		hostfs.ForceFallback(fallback)
		p, err := iovfs.New()
		mustDo(t, err)
		mustDo(t, p.Mkdir("/mnt/h", 0o755))
		mustDo(t, p.Mount("/jail", "/mnt/h", "hostfs", 0, ""))
		mustDo(t, p.Chdir("/mnt/h"))
		fs, err := hostfs.New("/jail", hostfs.Options{})
		mustDo(t, err)
		t.Logf("escape suite: guest set %d confined by %v", i, fs.Resolver())
		q := vfs.NewProc(vfs.NewNamespace(fs))
		guests = append(guests,
			&guest{p: p, prefix: "/mnt/h", rng: rand.New(rand.NewSource(int64(2*i + 1))), canaryInos: canaryInos, t: t},
			&guest{p: q, prefix: "", rng: rand.New(rand.NewSource(int64(2*i + 2))), canaryInos: canaryInos, t: t})
	}
	hostfs.ForceFallback(false)

	// The host racers: swap a directory on the walk's path with a symlink
	// out of the tree; move a directory and a file out of the tree and
	// back.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swaps, moves atomic.Int64
	racer := func(fn func() error, count *atomic.Int64) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if fn() == nil {
				count.Add(1)
			}
		}
	}
	wg.Add(3)
	go racer(func() error {
		return unix.Renameat2(unix.AT_FDCWD, "/jail/race/dir", unix.AT_FDCWD, "/jail/race/link", unix.RENAME_EXCHANGE)
	}, &swaps)
	go racer(func() error {
		if err := unix.Rename("/jail/mv", "/outside2/mv"); err != nil {
			return unix.Rename("/outside2/mv", "/jail/mv")
		}
		return nil
	}, &moves)
	go racer(func() error {
		if err := unix.Rename("/jail/mvfile", "/outside2/mvfile"); err != nil {
			return unix.Rename("/outside2/mvfile", "/jail/mvfile")
		}
		return nil
	}, &moves)

	// An open file renamed out of the tree: reading it goes on (it is the
	// file that was opened), but nothing it leads to is outside.
	g0 := guests[0]
	held, err := g0.p.Open("/mnt/h/f", unix.O_RDONLY, 0)
	mustDo(t, err)
	mustDo(t, os.Rename("/jail/f", "/outside2/f-moved"))
	wandering["f-moved"] = true
	b := make([]byte, 64)
	if n, err := g0.p.Read(held, b); err != nil || string(b[:n]) != "tree file" {
		t.Errorf("read of the moved-out file: %q, %v", b[:n], err)
	}
	g0.p.Close(held)

	start := time.Now()
	var attempts atomic.Int64
	var gwg sync.WaitGroup
	for _, g := range guests {
		gwg.Add(1)
		go func(g *guest) {
			defer gwg.Done()
			for attempts.Load() < minAttempts || time.Since(start) < minRacing {
				for i := 0; i < 100; i++ {
					g.attempt()
				}
				attempts.Add(100)
				if t.Failed() {
					return
				}
			}
		}(g)
	}
	gwg.Wait()
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)
	unix.Unmount("/jail/bind", unix.MNT_DETACH)
	// Bring the wanderers home, so /outside2 has its first entries again.
	for _, w := range [][2]string{{"/outside2/mv", "/jail/mv"}, {"/outside2/mvfile", "/jail/mvfile"}, {"/outside2/f-moved", "/jail/f"}} {
		if _, err := os.Lstat(w[0]); err == nil {
			os.Rename(w[1], w[1]+".made-by-guest") // a guest may have made the name meanwhile
			if err := os.Rename(w[0], w[1]); err != nil {
				t.Errorf("moving %s home: %v", w[0], err)
			}
		}
	}

	for _, c := range canaries {
		c.check(t, c.path != "/outside2")
	}
	for _, c := range canaries {
		c.checkNames(t)
	}
	if t.Failed() {
		return
	}
	succeeded := 0
	for _, g := range guests {
		succeeded += g.succeeded
	}
	t.Logf("escape suite: %d attempts by %d guests in %v (%d succeeded, inside the root), %d racing swaps and %d moves on the host; %d canaries unchanged, no canary seen by a guest",
		attempts.Load(), len(guests), elapsed.Round(time.Millisecond), succeeded, swaps.Load(), moves.Load(), len(canaries))
}
