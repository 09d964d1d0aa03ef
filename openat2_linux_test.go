package iovfs_test

// openat2: the non-racing cases against the host kernel's openat2 on the
// same tree (errnos, and which file was opened), and the escape test: a
// concurrent goroutine swaps symlinks and moves directories across the
// root while others open through them with RESOLVE_BENEATH and
// RESOLVE_IN_ROOT, and no file outside the root is ever opened.

import (
	"fmt"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// o2Tree is the tree both sides build under their base directory: the
// root ("root") the opens are confined to, and files outside it.
var o2Tree = []plant{
	{path: "canary", kind: 'f', mode: 0o644},
	{path: "root", kind: 'd', mode: 0o755},
	{path: "root/canary", kind: 'f', mode: 0o644},
	{path: "root/a", kind: 'd', mode: 0o755},
	{path: "root/a/f", kind: 'f', mode: 0o644},
	{path: "root/a/b", kind: 'd', mode: 0o755},
	{path: "root/a/b/g", kind: 'f', mode: 0o644},
	{path: "root/c", kind: 'f', mode: 0o644},
	{path: "root/abs", kind: 'l', target: "/"},
	{path: "root/abs_a", kind: 'l', target: "/a/f"},
	{path: "root/up", kind: 'l', target: ".."},
	{path: "root/upup", kind: 'l', target: "../../canary"},
	{path: "root/a/up2", kind: 'l', target: "../../canary"},
	{path: "root/a/in", kind: 'l', target: "../c"},
	{path: "root/loop", kind: 'l', target: "loop"},
	{path: "root/rel", kind: 'l', target: "a/f"},
	{path: "root/dirlink", kind: 'l', target: "a"},
	{path: "root/dangling", kind: 'l', target: "nothing"},
	{path: "root/mnt", kind: 'd', mode: 0o755},
}

var o2Paths = []string{
	"c", "a/f", "a/b/g", "a/../c", "../canary", "../root/c", "/c", "/a/f", "/../canary", "/", ".", "..",
	"a/b/../../c", "a/b/../../../canary", "abs", "abs/c", "abs_a", "up", "up/canary", "upup", "a/up2",
	"a/in", "loop", "rel", "dirlink", "dirlink/f", "dirlink/../c", "dangling", "nothing", "a/f/x",
	"mnt", "mnt/g", "mnt/..", "mnt/../c", "mnt/up", "mnt/up/c", "c/", "a//b///g", "up/root/c",
}

// o2Escaping are the paths that leave the base directory when nothing
// confines them.
var o2Escaping = map[string]bool{
	"/c": true, "/a/f": true, "/../canary": true, "/": true, "../canary": true, "../root/c": true,
	"a/b/../../../canary": true, "abs": true, "abs/c": true, "abs_a": true, "up": true, "up/canary": true,
	"upup": true, "a/up2": true, "..": true, "up/root/c": true, "mnt/up": true, "mnt/up/c": true,
}

var o2Resolve = []uint64{
	0, unix.RESOLVE_BENEATH, unix.RESOLVE_IN_ROOT, unix.RESOLVE_NO_SYMLINKS, unix.RESOLVE_NO_XDEV,
	unix.RESOLVE_NO_MAGICLINKS, unix.RESOLVE_BENEATH | unix.RESOLVE_NO_XDEV, unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS,
	unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_XDEV, unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS,
}

var o2Flags = []uint64{
	unix.O_RDONLY, unix.O_PATH, unix.O_PATH | unix.O_NOFOLLOW, unix.O_RDONLY | unix.O_DIRECTORY,
	unix.O_WRONLY | unix.O_CREAT, unix.O_RDONLY | unix.O_NOFOLLOW,
}

// TestOpenat2Kernel opens every path of o2Paths with every combination of
// o2Resolve and o2Flags on a host tmpfs with the kernel's openat2 and on
// iovfs, relative to the same root, and compares the errnos and, for
// each success, which planted file was opened. It then compares
// openat2's argument checks.
func TestOpenat2Kernel(t *testing.T) {
	host := hostTmpfs(t)
	plantHost(t, host, o2Tree...)
	// A mount inside the tree, for RESOLVE_NO_XDEV.
	hmnt := path.Join(host, "root/mnt")
	must(t, unix.Mount("tmpfs", hmnt, "tmpfs", 0, "size=1m,mode=0755"))
	t.Cleanup(func() { unix.Unmount(hmnt, unix.MNT_DETACH) })
	must(t, os.WriteFile(path.Join(hmnt, "g"), []byte("data"), 0o644))
	must(t, unix.Symlink("..", path.Join(hmnt, "up")))

	p, err := iovfs.New()
	must(t, err)
	must(t, p.Mkdir("/tmp/o2", 0o755))
	plantOurs(t, p, "/tmp/o2", o2Tree...)
	must(t, p.Mount("tmpfs", "/tmp/o2/root/mnt", "tmpfs", 0, "mode=0755"))
	createFile(t, p, "/tmp/o2/root/mnt/g", "data")
	must(t, p.Symlink("..", "/tmp/o2/root/mnt/up"))

	hroot, err := unix.Open(path.Join(host, "root"), unix.O_PATH|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(hroot)
	oroot, err := p.Open("/tmp/o2/root", unix.O_PATH|unix.O_DIRECTORY, 0)
	must(t, err)
	defer p.Close(oroot)
	hnames := hostNames(t, host)
	onames := ourNames(t, p, "/tmp/o2")

	cases, successes := 0, 0
	for _, pth := range o2Paths {
		for _, res := range o2Resolve {
			if o2Escaping[pth] && res&(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) == 0 {
				// Unconfined, these lead to the host's real files (and
				// O_CREAT would make some): only scoped walks compare.
				continue
			}
			for _, fl := range o2Flags {
				how := unix.OpenHow{Flags: fl | unix.O_CLOEXEC, Resolve: res}
				if fl&unix.O_CREAT != 0 {
					how.Mode = 0o644
				}
				hfd, herr := unix.Openat2(hroot, pth, &how)
				ofd, oerr := p.Openat2(oroot, pth, &how)
				cases++
				what := fmt.Sprintf("openat2(root, %q, flags %#o, resolve %#x)", pth, fl, res)
				if errnoOf(herr) != errnoOf(oerr) {
					t.Errorf("%s: iovfs %v, Linux %v", what, oerr, herr)
				}
				if herr == nil && oerr == nil {
					successes++
					var st unix.Stat_t
					must(t, unix.Fstat(hfd, &st))
					ost, err := p.Fstat(ofd)
					must(t, err)
					hn, on := hnames[[2]uint64{st.Dev, st.Ino}], onames[[2]uint64{ost.Dev, ost.Ino}]
					if hn != on {
						t.Errorf("%s opened %q on iovfs, %q on Linux", what, on, hn)
					}
				}
				if herr == nil {
					unix.Close(hfd)
				}
				if oerr == nil {
					p.Close(ofd)
				}
				// The one name an O_CREAT case can make (directly, or
				// through "dangling").
				unix.Unlinkat(hroot, "nothing", 0)
				p.Unlinkat(oroot, "nothing", 0)
			}
		}
	}

	// The argument checks of build_open_flags.
	checks := []unix.OpenHow{
		{Flags: unix.O_RDONLY, Resolve: 0x40},                                        // unknown resolve bit
		{Flags: 1 << 40},                                                             // unknown flag
		{Flags: unix.O_RDONLY, Mode: 0o644},                                          // mode without O_CREAT
		{Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o10644},                         // mode beyond 07777
		{Flags: unix.O_RDONLY, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_IN_ROOT}, // both scopes
		{Flags: unix.O_CREAT | unix.O_DIRECTORY},                                     // O_CREAT|O_DIRECTORY
		{Flags: unix.O_PATH | unix.O_WRONLY},                                         // O_PATH with an access mode
		{Flags: unix.O_PATH | unix.O_APPEND},                                         // O_PATH with another flag
		{Flags: unix.O_TMPFILE&^unix.O_DIRECTORY | unix.O_RDWR},                      // __O_TMPFILE without O_DIRECTORY
		{Flags: unix.O_TMPFILE | unix.O_RDONLY},                                      // O_TMPFILE read-only
		{Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o644, Resolve: 0x20},            // RESOLVE_CACHED with O_CREAT
		{Flags: unix.O_TRUNC | unix.O_WRONLY, Resolve: 0x20},                         // RESOLVE_CACHED with O_TRUNC
		{Flags: unix.O_RDONLY, Resolve: 0x20},                                        // RESOLVE_CACHED, a cached path
		{Flags: unix.O_RDONLY | 0o100000},                                            // the kernel's O_LARGEFILE
	}
	for _, how := range checks {
		hfd, herr := unix.Openat2(hroot, "c", &how)
		ofd, oerr := p.Openat2(oroot, "c", &how)
		cases++
		if errnoOf(herr) != errnoOf(oerr) {
			t.Errorf("openat2(root, \"c\", %+v): iovfs %v, Linux %v", how, oerr, herr)
		}
		if herr == nil {
			unix.Close(hfd)
		}
		if oerr == nil {
			p.Close(ofd)
		}
	}
	t.Logf("%d openat2 cases compared, %d opened a file on both sides", cases, successes)
}

// hostNames maps each file under dir, by device and inode, to its path.
func hostNames(t *testing.T, dir string) map[[2]uint64]string {
	out := map[[2]uint64]string{}
	var walk func(rel string)
	walk = func(rel string) {
		var st unix.Stat_t
		must(t, unix.Lstat(path.Join(dir, rel), &st))
		out[[2]uint64{st.Dev, st.Ino}] = rel
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			ents, err := os.ReadDir(path.Join(dir, rel))
			must(t, err)
			for _, e := range ents {
				walk(path.Join(rel, e.Name()))
			}
		}
	}
	walk(".")
	return out
}

func ourNames(t *testing.T, p *vfs.Proc, dir string) map[[2]uint64]string {
	out := map[[2]uint64]string{}
	var walk func(rel string)
	walk = func(rel string) {
		st, err := p.Lstat(path.Join(dir, rel))
		must(t, err)
		out[[2]uint64{st.Dev, st.Ino}] = rel
		if st.IsDir() {
			fd, err := p.Open(path.Join(dir, rel), unix.O_RDONLY|unix.O_DIRECTORY, 0)
			must(t, err)
			defer p.Close(fd)
			for {
				ents, err := p.Getdents(fd)
				must(t, err)
				if len(ents) == 0 {
					break
				}
				for _, e := range ents {
					if e.Name != "." && e.Name != ".." {
						walk(path.Join(rel, e.Name))
					}
				}
			}
		}
	}
	walk(".")
	return out
}

// TestOpenat2Escape races opens confined to a root against a goroutine
// that keeps swapping a symlink between an inside and an outside target
// and moving a directory out of the root and back, for 10 seconds. The
// canaries are files outside the root, in iovfs's own namespace: opening
// one is an escape. It needs no privileges: iovfs's namespace is in the
// process, so an escape cannot touch the machine.
func TestOpenat2Escape(t *testing.T) {
	p, err := iovfs.New()
	must(t, err)
	for _, d := range []string{"/t", "/t/root", "/t/root/a", "/t/root/a/b", "/t/root/a/b/c", "/t/park", "/t/root/m"} {
		must(t, p.Mkdir(d, 0o755))
	}
	// Canaries wherever an escape could land, and harmless twins inside.
	canaries := map[[2]uint64]string{}
	for _, c := range []string{"/canary", "/t/canary", "/t/park/canary", "/tmp/canary"} {
		createFile(t, p, c, "outside")
		st, err := p.Stat(c)
		must(t, err)
		canaries[[2]uint64{st.Dev, st.Ino}] = c
	}
	for _, c := range []string{"/t/root/canary", "/t/root/a/canary", "/t/root/a/b/canary", "/t/root/a/b/c/canary"} {
		createFile(t, p, c, "inside")
	}
	must(t, p.Mount("tmpfs", "/t/root/m", "tmpfs", 0, ""))
	createFile(t, p, "/t/root/m/canary", "inside")
	must(t, p.Symlink("a/b", "/t/root/l"))
	must(t, p.Symlink("../../..", "/t/root/m/up"))
	root, err := p.Open("/t/root", unix.O_PATH|unix.O_DIRECTORY, 0)
	must(t, err)

	// The racer: swap the symlink "l" among inside and escaping targets by
	// renaming prepared links over it, and move a/b to the park outside the
	// root and back.
	targets := []string{"a/b", "/", "../..", "../../../..", "a/b/c/../../..", "/t"}
	for i, tg := range targets {
		must(t, p.Symlink(tg, fmt.Sprintf("/t/root/l%d", i)))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		q, _ := p.Fork()
		for i := 0; !stop.Load(); i++ {
			k := i % len(targets)
			tmp := fmt.Sprintf("/t/root/tmp%d", k)
			q.Symlink(targets[k], tmp)
			q.Rename(tmp, "/t/root/l")
			if i%2 == 0 {
				q.Rename("/t/root/a/b", "/t/park/b")
			} else {
				q.Rename("/t/park/b", "/t/root/a/b")
			}
			swaps.Add(1)
		}
	}()

	paths := []string{
		"l/canary", "l/../canary", "l/../../canary", "l/../../../canary", "l/c/../../../canary",
		"a/b/../../canary", "a/b/../../../canary", "a/b/c/../../../../canary", "a/b/c/../../../../../tmp/canary",
		"/canary", "/../canary", "m/up/canary", "m/../../canary", "l/up/../canary",
	}
	creates := []string{"l/../../created", "a/b/../../../created", "/../created", "l/created", "a/b/c/../../../../created", "m/up/created"}
	duration := 10 * time.Second
	var attempts, opened, escapes atomic.Int64
	var errs sync.Map
	workers := 2
	deadline := time.Now().Add(duration)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			q, _ := p.Fork()
			for i := w; time.Now().Before(deadline); i++ {
				res := uint64(unix.RESOLVE_IN_ROOT)
				if i%2 == 1 {
					res = unix.RESOLVE_BENEATH
				}
				how := unix.OpenHow{Flags: unix.O_RDONLY, Resolve: res}
				pth := paths[i%len(paths)]
				if i%7 == 3 {
					// A create that escaped would leave a file outside.
					how = unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT, Mode: 0o644, Resolve: res}
					pth = creates[i%len(creates)]
				}
				fd, err := q.Openat2(root, pth, &how)
				attempts.Add(1)
				if err != nil {
					e := errnoOf(err)
					v, _ := errs.LoadOrStore(e, new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
					continue
				}
				opened.Add(1)
				st, err := q.Fstat(fd)
				if err == nil {
					if c, bad := canaries[[2]uint64{st.Dev, st.Ino}]; bad {
						escapes.Add(1)
						t.Errorf("escape: openat2(root, %q, resolve %#x) opened %s", pth, res, c)
					}
				}
				q.Close(fd)
			}
		}(w)
	}
	time.Sleep(time.Until(deadline))
	stop.Store(true)
	wg.Wait()
	summary := ""
	errs.Range(func(k, v any) bool {
		summary += fmt.Sprintf(" %v:%d", k.(syscall.Errno), v.(*atomic.Int64).Load())
		return true
	})
	t.Logf("%d attempts in %v against %d swaps: %d opened inside the root, %d escapes; errors%s",
		attempts.Load(), duration, swaps.Load(), opened.Load(), escapes.Load(), summary)
	for _, d := range []string{"/", "/t", "/tmp", "/t/root/m"} {
		if _, err := p.Lstat(d + "/created"); err == nil {
			t.Errorf("escape: a confined O_CREAT made %s/created", d)
		}
	}
	if _, err := p.Lstat("/t/root/created"); err != nil {
		t.Errorf("no confined O_CREAT made /t/root/created: the creates raced nothing (%v)", err)
	}
	if min := int64(100000); attempts.Load() < min && !raceEnabled {
		t.Errorf("only %d attempts, want at least %d", attempts.Load(), min)
	}
	if opened.Load() == 0 {
		t.Error("no attempt opened anything: the race test raced nothing")
	}
}
