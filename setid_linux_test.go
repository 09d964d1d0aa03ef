package iovfs_test

// The set*id differential: random sequences of setresuid, setresgid and
// setgroups, from root, in a child process of the host (Go's Setresuid
// changes every thread, so each sequence has a process of its own) and on
// an iovfs process, comparing each errno, the ids after each step, and
// what the ids allow: opening a root-only file, creating in a root-owned
// directory, and access(2) with the real ids.

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

type setidStep struct {
	Op      string // setresuid, setresgid, setgroups
	A, B, C int
	Groups  []int
}

type setidJob struct {
	Dir   string
	Steps []setidStep
}

// TestSetidHelper is the host side's child process; run by itself it
// does nothing. It runs each sequence on a thread of its own, locked to
// its goroutine and thrown away after it: Linux's credentials belong to a
// thread, and the raw set*id system calls change only the caller's (Go's
// wrappers change every thread of the process).
func TestSetidHelper(t *testing.T) {
	if os.Getenv("IOVFS_SETID_HELPER") != "1" {
		t.Skip("the child process of TestSetidKernel")
	}
	unix.Umask(0o022)
	in := json.NewDecoder(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for {
		var job setidJob
		if err := in.Decode(&job); err != nil {
			os.Exit(0)
		}
		done := make(chan []string)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			done <- runSetidJob(job)
		}()
		out.Encode(<-done)
	}
}

func runSetidJob(job setidJob) []string {
	var out []string
	for i, s := range job.Steps {
		var e unix.Errno
		switch s.Op {
		case "setresuid":
			_, _, e = unix.RawSyscall(unix.SYS_SETRESUID, uintptr(s.A), uintptr(s.B), uintptr(s.C))
		case "setresgid":
			_, _, e = unix.RawSyscall(unix.SYS_SETRESGID, uintptr(s.A), uintptr(s.B), uintptr(s.C))
		case "setgroups":
			gs := make([]uint32, len(s.Groups)+1)
			for i, g := range s.Groups {
				gs[i] = uint32(g)
			}
			_, _, e = unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(s.Groups)), uintptr(unsafe.Pointer(&gs[0])), 0)
		}
		var err error
		if e != 0 {
			err = e
		}
		out = append(out, setidState(errnoOf(err), hostIds(), hostProbe(job.Dir, i)))
	}
	return out
}

func setidState(e error, ids, probe string) string {
	return fmt.Sprintf("errno %d; %s; %s", e, ids, probe)
}

func hostIds() string {
	r, e, s := unix.Getresuid()
	rg, eg, sg := unix.Getresgid()
	g, _ := unix.Getgroups()
	return fmt.Sprintf("uid %d %d %d gid %d %d %d groups %v", r, e, s, rg, eg, sg, g)
}

func hostProbe(dir string, i int) string {
	fd, err1 := unix.Open(path.Join(dir, "secret"), unix.O_RDONLY, 0)
	if err1 == nil {
		unix.Close(fd)
	}
	name := fmt.Sprintf("rootdir/d%d", i)
	err2 := unix.Mkdir(path.Join(dir, name), 0o755)
	var st unix.Stat_t
	owner := ""
	if err2 == nil && unix.Lstat(path.Join(dir, name), &st) == nil {
		owner = fmt.Sprintf(" owner %d:%d", st.Uid, st.Gid)
	}
	err3 := unix.Access(path.Join(dir, "secret"), unix.R_OK)
	err4 := unix.Faccessat2(unix.AT_FDCWD, path.Join(dir, "secret"), unix.R_OK, unix.AT_EACCESS)
	return fmt.Sprintf("open %d mkdir %d%s access %d eaccess %d", errnoOf(err1), errnoOf(err2), owner, errnoOf(err3), errnoOf(err4))
}

func ourProbe(p *vfs.Proc, dir string, i int) string {
	fd, err1 := p.Open(path.Join(dir, "secret"), unix.O_RDONLY, 0)
	if err1 == nil {
		p.Close(fd)
	}
	name := fmt.Sprintf("rootdir/d%d", i)
	err2 := p.Mkdir(path.Join(dir, name), 0o755)
	owner := ""
	if err2 == nil {
		if st, err := p.Lstat(path.Join(dir, name)); err == nil {
			owner = fmt.Sprintf(" owner %d:%d", st.Uid, st.Gid)
		}
	}
	err3 := p.Access(path.Join(dir, "secret"), unix.R_OK)
	err4 := p.Faccessat2(unix.AT_FDCWD, path.Join(dir, "secret"), unix.R_OK, unix.AT_EACCESS)
	return fmt.Sprintf("open %d mkdir %d%s access %d eaccess %d", errnoOf(err1), errnoOf(err2), owner, errnoOf(err3), errnoOf(err4))
}

func ourIds(p *vfs.Proc) string {
	r, e, s := p.Getresuid()
	rg, eg, sg := p.Getresgid()
	return fmt.Sprintf("uid %d %d %d gid %d %d %d groups %v", r, e, s, rg, eg, sg, p.Getgroups())
}

// setidTree is planted in each sequence's directory: a file only root may
// read, and a directory only root may write, open to search.
var setidTree = []plant{
	{path: "secret", kind: 'f', mode: 0o600},
	{path: "rootdir", kind: 'd', mode: 0o775, gid: 1001},
}

// TestSetidKernel compares set*id sequences with the host kernel: 1000
// sequences (200 under -race or -short), each on a new host thread.
func TestSetidKernel(t *testing.T) {
	testenv.RequireRoot(t, "starting host processes that change their ids from root")
	host := hostTmpfs(t)
	must(t, os.Chmod(filepath.Dir(host), 0o755))
	child := startSetidChild(t)
	root, err := iovfs.New()
	must(t, err)

	checks := 1000
	if testenv.Quick() || raceEnabled {
		checks = 200
	}
	f := flag.Lookup("rapid.checks")
	old := f.Value.String()
	flag.Set("rapid.checks", fmt.Sprint(checks))
	defer flag.Set("rapid.checks", old)

	ids := []int{-1, -1, 0, 1000, 1001, 2000}
	seqs, steps, okSteps := 0, 0, 0
	rapid.Check(t, func(t *rapid.T) {
		seqs++
		name := fmt.Sprintf("i%d", seqs)
		hdir, odir := path.Join(host, name), "/tmp/"+name
		for _, err := range []error{unix.Mkdir(hdir, 0o755), root.Mkdir(odir, 0o755)} {
			if err != nil {
				t.Fatalf("sequence directory: %v", err)
			}
		}
		plantHost(t, hdir, setidTree...)
		plantOurs(t, root, odir, setidTree...)
		p, err := root.Fork()
		if err != nil {
			t.Fatalf("fork: %v", err)
		}
		var job setidJob
		job.Dir = hdir
		n := rapid.IntRange(1, 8).Draw(t, "steps")
		var ours []string
		for i := 0; i < n; i++ {
			s := setidStep{Op: rapid.SampledFrom([]string{"setresuid", "setresuid", "setresgid", "setgroups"}).Draw(t, "op")}
			id := func(l string) int { return rapid.SampledFrom(ids).Draw(t, l) }
			var err error
			switch s.Op {
			case "setresuid":
				s.A, s.B, s.C = id("r"), id("e"), id("s")
				err = p.Setresuid(s.A, s.B, s.C)
			case "setresgid":
				s.A, s.B, s.C = id("r"), id("e"), id("s")
				err = p.Setresgid(s.A, s.B, s.C)
			case "setgroups":
				s.Groups = rapid.SliceOfN(rapid.SampledFrom([]int{0, 1000, 1001, 2000}), 0, 3).Draw(t, "groups")
				err = p.Setgroups(s.Groups)
			}
			job.Steps = append(job.Steps, s)
			ours = append(ours, setidState(errnoOf(err), ourIds(p), ourProbe(p, odir, i)))
		}
		hostOut := child.run(t, job)
		for i := range ours {
			steps++
			if hostOut[i] != ours[i] {
				t.Fatalf("step %d %+v:\nLinux %s\niovfs %s", i, job.Steps[i], hostOut[i], ours[i])
			}
			if hostOut[i][:7] == "errno 0" {
				okSteps++
			}
		}
	})
	t.Logf("%d sequences, %d steps compared (errno, ids, and four probes each), %d steps succeeded; 0 divergences", seqs, steps, okSteps)
}

// setidChild is the host side: the test binary again, as root.
type setidChild struct {
	in  *json.Encoder
	out *json.Decoder
}

func startSetidChild(t *testing.T) *setidChild {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSetidHelper$")
	cmd.Env = append(os.Environ(), "IOVFS_SETID_HELPER=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return &setidChild{json.NewEncoder(in), json.NewDecoder(out)}
}

func (c *setidChild) run(t fatalfer, job setidJob) []string {
	if err := c.in.Encode(job); err != nil {
		t.Fatalf("to the child: %v", err)
	}
	var out []string
	if err := c.out.Decode(&out); err != nil {
		t.Fatalf("from the child: %v", err)
	}
	if len(out) != len(job.Steps) {
		t.Fatalf("the child answered %d steps of %d", len(out), len(job.Steps))
	}
	return out
}
