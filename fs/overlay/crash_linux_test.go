package overlay_test

// Crash trials: each call that copies a lower object up (or makes a
// whiteout, or replaces one) runs on an overlay whose upper layer fails
// its k-th change, for every k until the call completes: in "fail" mode
// only that change fails and the overlay cleans up after itself; in "cut"
// mode every change from the k-th on fails, as if the power went there.
// The merged view, live and after a new mount of the same layers, must be
// the view before the call or the one after it, never a partial copy.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iovfs/iovfs/fs/overlay"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// crashEnv is one trial's namespace: the lower layer on its own tmpfs at
// /l, the upper and work directories /rw/u and /rw/w on the fault
// injecting one, the overlay at /m.
type crashEnv struct {
	t  *testing.T
	p  *vfs.Proc
	ns *vfs.Namespace
	up *faultFS
}

func newCrashEnv(t *testing.T) *crashEnv {
	t.Helper()
	ns := vfs.NewNamespace(tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}))
	p := vfs.NewProc(ns)
	e := &crashEnv{t: t, p: p, ns: ns, up: newFaultFS(tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}))}
	for _, d := range []string{"/l", "/rw", "/m"} {
		e.must(p.Mkdir(d, 0o755))
	}
	e.must(ns.MountFS("/l", tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}), false))
	e.must(ns.MountFS("/rw", e.up, false))
	e.must(p.Mkdir("/rw/u", 0o755))
	e.must(p.Mkdir("/rw/w", 0o755))
	// The lower tree.
	old := time.Date(2003, 4, 5, 6, 7, 8, 0, time.UTC)
	e.must(p.Mkdir("/l/d", 0o750))
	e.must(p.Mkdir("/l/d/e", 0o755))
	e.file("/l/d/e/f", strings.Repeat("data of f ", 20000), 0o640)
	e.must(p.Lsetxattr("/l/d/e/f", "user.a", []byte("1"), 0))
	e.must(p.Lchown("/l/d/e/f", 1000, 1000))
	e.file("/l/g", "g", 0o644)
	e.file("/l/h1", "hard", 0o644)
	e.must(p.Link("/l/h1", "/l/h2"))
	e.must(p.Symlink("d/e/f", "/l/s"))
	e.must(p.Mknod("/l/p", unix.S_IFIFO|0o600, 0))
	e.must(p.Mkdir("/l/full", 0o755))
	e.file("/l/full/x", "x", 0o644)
	for _, path := range []string{"/l/d/e/f", "/l/d/e", "/l/d", "/l/g", "/l/h1", "/l/s", "/l/p", "/l/full/x", "/l/full"} {
		e.must(p.Utimes(path, old, old))
	}
	e.mount()
	return e
}

func (e *crashEnv) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *crashEnv) file(path, data string, mode uint32) {
	e.t.Helper()
	fd, err := e.p.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, mode)
	e.must(err)
	_, err = e.p.Write(fd, []byte(data))
	e.must(err)
	e.must(e.p.Close(fd))
}

func (e *crashEnv) mount() {
	e.t.Helper()
	fs, err := overlay.New(e.p, overlay.Options{Lower: []string{"/l"}, Upper: "/rw/u", Work: "/rw/w"})
	e.must(err)
	e.must(e.ns.MountFS("/m", fs, false))
}

// view is the merged tree: no link counts, which a directory copied up
// as an ancestor changes (a merged directory has one), as Linux's does.
func (e *crashEnv) view() tree { return walk(e.t, ivs{e.p, "/m"}, mergedXattrs) }

// workLeft lists what the work directory holds besides whiteouts.
func (e *crashEnv) workLeft() []string {
	names, err := ivs{e.p, "/rw/w/work"}.readdir("")
	e.must(err)
	var out []string
	for _, n := range names {
		if st, err := e.p.Lstat("/rw/w/work/" + n); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
			out = append(out, n)
		}
	}
	return out
}

type crashTrial struct {
	name string
	pre  func(p *vfs.Proc) error // run before, unarmed
	op   func(p *vfs.Proc) error
}

func crashTrials() []crashTrial {
	when := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC)
	return []crashTrial{
		{"write", nil, func(p *vfs.Proc) error {
			fd, err := p.Open("/m/d/e/f", unix.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = p.Pwrite(fd, []byte("written"), 100)
			p.Close(fd)
			return err
		}},
		{"truncate", nil, func(p *vfs.Proc) error { return p.Truncate("/m/d/e/f", 1000) }},
		{"open-trunc", nil, func(p *vfs.Proc) error {
			fd, err := p.Open("/m/d/e/f", unix.O_WRONLY|unix.O_TRUNC, 0)
			if err == nil {
				p.Close(fd)
			}
			return err
		}},
		{"chmod", nil, func(p *vfs.Proc) error { return p.Chmod("/m/d/e/f", 0o600) }},
		{"chown", nil, func(p *vfs.Proc) error { return p.Lchown("/m/d/e/f", 7, 8) }},
		{"utimes", nil, func(p *vfs.Proc) error { return p.Utimes("/m/d/e/f", when, when) }},
		{"setxattr", nil, func(p *vfs.Proc) error { return p.Lsetxattr("/m/d/e/f", "user.b", []byte("2"), 0) }},
		{"removexattr", nil, func(p *vfs.Proc) error { return p.Lremovexattr("/m/d/e/f", "user.a") }},
		{"link", nil, func(p *vfs.Proc) error { return p.Link("/m/d/e/f", "/m/d/e/f2") }},
		{"rename", nil, func(p *vfs.Proc) error { return p.Rename("/m/d/e/f", "/m/top") }},
		{"hardlinked", nil, func(p *vfs.Proc) error { return p.Chmod("/m/h2", 0o600) }},
		{"symlink", nil, func(p *vfs.Proc) error { return p.Lchown("/m/s", 3, 3) }},
		{"fifo", nil, func(p *vfs.Proc) error { return p.Chmod("/m/p", 0o666) }},
		{"dir", nil, func(p *vfs.Proc) error { return p.Chmod("/m/d/e", 0o700) }},
		{"unlink", nil, func(p *vfs.Proc) error { return p.Unlink("/m/g") }},
		{"rmdir", func(p *vfs.Proc) error { return p.Unlink("/m/full/x") },
			func(p *vfs.Proc) error { return p.Rmdir("/m/full") }},
		{"mkdir-over-whiteout", func(p *vfs.Proc) error { return p.Unlink("/m/g") },
			func(p *vfs.Proc) error { return p.Mkdir("/m/g", 0o700) }},
		{"create-over-whiteout", func(p *vfs.Proc) error { return p.Unlink("/m/g") },
			func(p *vfs.Proc) error {
				fd, err := p.Open("/m/g", unix.O_CREAT|unix.O_WRONLY, 0o600)
				if err == nil {
					p.Close(fd)
				}
				return err
			}},
	}
}

// sameAs reports whether v is one of the views given, in names, types,
// modes, owners, sizes, contents, extended attributes and the times of
// non-directories. Not compared: link counts and shared inode numbers,
// which a copy-up changes by itself (a merged directory has one link; a
// copied-up hard link of a lower file is a file of its own, as on Linux
// without index), and directories' times, which a copy-up into a
// directory restores only as a best effort, as Linux's does.
func sameAs(v tree, views ...tree) bool {
	for _, w := range views {
		if len(crashDiff(v, w)) == 0 {
			return true
		}
	}
	return false
}

func crashDiff(a, b tree) []string { return diffOpts(a, b, false, false) }

func TestCrashTrials(t *testing.T) {
	trials := crashTrials()
	total := 0
	for _, tr := range trials {
		t.Run(tr.name, func(t *testing.T) {
			if raceOn && testenv.Quick() && !testenv.Sample(tr.name, "write", "rename", "rmdir") {
				t.Skip("not in the race detector's quick sample")
			}
			// The view after the call, made without faults.
			e := newCrashEnv(t)
			if tr.pre != nil {
				e.must(tr.pre(e.p))
			}
			before := e.view()
			e.must(tr.op(e.p))
			after := e.view()
			if len(crashDiff(before, after)) == 0 {
				t.Fatal("the call changes nothing")
			}
			for k := 1; ; k++ {
				done := false
				for _, cut := range []bool{false, true} {
					mode := map[bool]string{false: "fail", true: "cut"}[cut]
					e := newCrashEnv(t)
					if tr.pre != nil {
						e.must(tr.pre(e.p))
					}
					e.up.arm(k, cut)
					err := tr.op(e.p)
					fired := e.up.didFire()
					e.up.arm(0, false)
					total++
					if !fired {
						if err != nil {
							t.Fatalf("step %d: no fault, yet %v", k, err)
						}
						if v := e.view(); !sameAs(v, after) {
							t.Fatalf("step %d: no fault, yet the view is not the one after:\n%s", k, strings.Join(crashDiff(after, v), "\n"))
						}
						done = true
						continue
					}
					live := e.view()
					if !sameAs(live, before, after) {
						t.Fatalf("%s at step %d (%v): the live view is partial; against the view before:\n%s\nagainst the one after:\n%s",
							mode, k, err, strings.Join(crashDiff(before, live), "\n"), strings.Join(crashDiff(after, live), "\n"))
					}
					if !cut && err != nil {
						// The call failed and cleaned up after itself (a failed
						// clean-up is not the call's failure: what it leaves,
						// the next mount removes).
						if left := e.workLeft(); len(left) > 0 {
							t.Errorf("fail at step %d: the work directory keeps %v", k, left)
						}
					}
					e.must(e.p.Unmount("/m", 0))
					e.mount()
					again := e.view()
					if !sameAs(again, before, after) {
						t.Fatalf("%s at step %d: after a new mount the view is partial; against the view before:\n%s\nagainst the one after:\n%s",
							mode, k, strings.Join(crashDiff(before, again), "\n"), strings.Join(crashDiff(after, again), "\n"))
					}
					if left := e.workLeft(); len(left) > 0 {
						t.Errorf("%s at step %d: the work directory keeps %v after a new mount", mode, k, left)
					}
				}
				if done {
					t.Logf("interrupted at each of its %d steps", k-1)
					return
				}
			}
		})
	}
	t.Logf("%d trials", total)
	_ = fmt.Sprint
}
