package iovfs_test

// Differential test of the xattr permission rules as an unprivileged user:
// the tree is made as root on a host tmpfs and on iovfs (files and
// directories of several owners and modes, a sticky directory, a symlink),
// then uid 1000 (groups 1000 and 2000) sets, reads, lists and removes
// attributes in every namespace: on the host from a child process running
// with those credentials, on iovfs from a Proc made by NewProcCred.

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

const xattrChildEnv = "IOVFS_XATTR_CHILD"

type xattrStep struct {
	Op, Path, Name string
	Data           []byte
	Flags          int
}

type xattrResult struct {
	Errno int
	Out   []byte
}

// TestXattrChild runs as the host side's unprivileged process of
// TestXattrCredDifferential.
func TestXattrChild(t *testing.T) {
	if os.Getenv(xattrChildEnv) != "1" {
		t.Skip("runs as a child of TestXattrCredDifferential")
	}
	dec, enc := json.NewDecoder(os.Stdin), json.NewEncoder(os.Stdout)
	buf := make([]byte, 70000)
	for {
		var s xattrStep
		if dec.Decode(&s) != nil {
			os.Exit(0)
		}
		var r xattrResult
		var err error
		var n int
		switch s.Op {
		case "set":
			err = unix.Lsetxattr(s.Path, s.Name, s.Data, s.Flags)
		case "get":
			n, err = unix.Lgetxattr(s.Path, s.Name, buf)
		case "list":
			n, err = unix.Llistxattr(s.Path, buf)
		case "remove":
			err = unix.Lremovexattr(s.Path, s.Name)
		}
		if err == nil && n > 0 {
			r.Out = buf[:n]
		}
		r.Errno = int(errnoOf(err))
		if enc.Encode(r) != nil {
			os.Exit(1)
		}
	}
}

func (v xattrStep) onVFS(p *vfs.Proc) xattrResult {
	var r xattrResult
	var err error
	switch v.Op {
	case "set":
		err = p.Lsetxattr(v.Path, v.Name, v.Data, v.Flags)
	case "get":
		r.Out, err = p.Lgetxattr(v.Path, v.Name)
	case "list":
		var names []string
		names, err = p.Llistxattr(v.Path)
		for _, n := range names {
			r.Out = append(append(r.Out, n...), 0)
		}
	case "remove":
		err = p.Lremovexattr(v.Path, v.Name)
	}
	if len(r.Out) == 0 {
		r.Out = nil
	}
	r.Errno = int(errnoOf(err))
	return r
}

func TestXattrCredDifferential(t *testing.T) {
	testenv.RequireRoot(t, "running a child as uid 1000 on a host tmpfs")
	// Everything the child needs sits where uid 1000 can reach it: the
	// test binary may be in a directory only root can enter.
	base, err := os.MkdirTemp("", "iovfs-xattr-cred-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	hroot := base + "/t"
	os.Mkdir(hroot, 0o755)
	if err := unix.Mount("tmpfs", hroot, "tmpfs", 0, "size=1m,mode=0755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(hroot, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", hroot, err)
		}
	})
	bin := base + "/iovfs.test"
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Mkdir("/mnt/u", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("tmpfs", "/mnt/u", "tmpfs", 0, "size=1m,mode=0755"); err != nil {
		t.Fatal(err)
	}
	// The tree, made as root on both sides.
	type obj struct {
		rel       string
		dir, link bool
		mode      uint32
		uid, gid  int
	}
	objs := []obj{
		{rel: "mine", mode: 0o644, uid: 1000, gid: 1000},
		{rel: "mine-ro", mode: 0o444, uid: 1000, gid: 1000},
		{rel: "roots", mode: 0o644},
		{rel: "open", mode: 0o666},
		{rel: "group-rw", mode: 0o604, gid: 2000},
		{rel: "group-none", mode: 0o606, gid: 2000},
		{rel: "sticky", dir: true, mode: 0o1777},
		{rel: "sticky/mine", dir: true, mode: 0o777, uid: 1000, gid: 1000},
		{rel: "dir", dir: true, mode: 0o755, uid: 1000, gid: 1000},
		{rel: "rootdir", dir: true, mode: 0o755},
		{rel: "link", link: true},
	}
	for _, o := range objs {
		h, v := hroot+"/"+o.rel, "/mnt/u/"+o.rel
		switch {
		case o.link:
			if err := os.Symlink("mine", h); err != nil {
				t.Fatal(err)
			}
			if err := p.Symlink("mine", v); err != nil {
				t.Fatal(err)
			}
			continue
		case o.dir:
			os.Mkdir(h, 0o700)
			p.Mkdir(v, 0o700)
		default:
			os.WriteFile(h, nil, 0o600)
			fd, err := p.Open(v, unix.O_CREAT|unix.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			p.Close(fd)
		}
		if err := os.Chown(h, o.uid, o.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(h, os.FileMode(o.mode&0o777)|modeBits(o.mode)); err != nil {
			t.Fatal(err)
		}
		if err := p.Chown(v, uint32(o.uid), uint32(o.gid)); err != nil {
			t.Fatal(err)
		}
		if err := p.Chmod(v, o.mode); err != nil {
			t.Fatal(err)
		}
		// Attributes present from the start, in every namespace.
		for _, n := range []string{"user.pre", "trusted.pre", "security.pre"} {
			if o.link && n == "user.pre" {
				continue
			}
			if err := unix.Lsetxattr(h, n, []byte("v0"), 0); err != nil {
				t.Fatalf("host setxattr %s %s: %v", o.rel, n, err)
			}
			if err := p.Lsetxattr(v, n, []byte("v0"), 0); err != nil {
				t.Fatalf("iovfs setxattr %s %s: %v", o.rel, n, err)
			}
		}
	}

	cmd := exec.Command(bin, "-test.run=^TestXattrChild$", "-test.count=1")
	cmd.Dir = base
	cmd.Env = append(os.Environ(), xattrChildEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{1000, 2000}}}
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	enc, dec := json.NewEncoder(in), json.NewDecoder(out)
	user := vfs.NewProcCred(p.Namespace(), 1000, 1000, 1000, 2000)

	checks := 1000
	if testenv.Quick() || raceEnabled {
		checks = 200
	}
	old := flag.Lookup("rapid.checks").Value.String()
	flag.Set("rapid.checks", fmt.Sprint(checks))
	defer flag.Set("rapid.checks", old)
	names := []string{"user.pre", "user.new", "trusted.pre", "trusted.new", "security.pre", "security.new", "foo.bar"}
	compared, successes := 0, 0
	errs := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		o := rapid.SampledFrom(objs).Draw(rt, "obj")
		s := xattrStep{
			Op:   rapid.SampledFrom([]string{"set", "get", "list", "remove"}).Draw(rt, "op"),
			Name: rapid.SampledFrom(names).Draw(rt, "name"),
		}
		if s.Op == "set" {
			s.Data = []byte(rapid.SampledFrom([]string{"a", "", "bbbb"}).Draw(rt, "data"))
			s.Flags = rapid.SampledFrom([]int{0, unix.XATTR_CREATE, unix.XATTR_REPLACE}).Draw(rt, "flags")
		}
		hs := s
		hs.Path = hroot + "/" + o.rel
		s.Path = "/mnt/u/" + o.rel
		if err := enc.Encode(hs); err != nil {
			rt.Fatal(err)
		}
		var hr xattrResult
		if err := dec.Decode(&hr); err != nil {
			rt.Fatal(err)
		}
		vr := s.onVFS(user)
		compared++
		errs[syscall.Errno(hr.Errno).Error()]++
		if hr.Errno == 0 {
			successes++
		}
		if hr.Errno != vr.Errno || string(hr.Out) != string(vr.Out) {
			rt.Fatalf("uid 1000: %s %s %q: host %d %q, iovfs %d %q", s.Op, o.rel, s.Name,
				hr.Errno, strings.ReplaceAll(string(hr.Out), "\x00", " "), vr.Errno, strings.ReplaceAll(string(vr.Out), "\x00", " "))
		}
	})
	t.Logf("%d results compared as uid 1000 (%d successes), 0 divergences; errnos %v", compared, successes, errs)
}

// modeBits turns the set-id and sticky bits of a Linux mode into Go's.
func modeBits(m uint32) os.FileMode {
	var b os.FileMode
	if m&unix.S_ISVTX != 0 {
		b |= os.ModeSticky
	}
	return b
}
