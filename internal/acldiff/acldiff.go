// Package acldiff is the POSIX ACL differential shared by the file
// systems: random ACLs (valid and not) set by root on files and
// directories with random modes and owners, on a host directory and on an
// iovfs one, then random callers (other uids, groups that the ACLs name
// or not, root) asking for each access, opening, creating files and
// directories under default ACLs with random umasks, and root chmodding
// them. Every errno, mode and ACL value is compared.
//
// The callers run on the host as child processes started with their
// credentials (Go's Setresuid changes every thread of the test process):
// the test binary run again for a test that calls Helper, reading steps
// as JSON on stdin and answering on stdout; root's steps run in the test
// process.
package acldiff

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Identity is a caller.
type Identity struct {
	Uid, Gid int
	Groups   []int
}

// Callers are root, and users whose ids and groups the random ACLs name
// (IDs).
var Callers = []Identity{
	{0, 0, nil},
	{1000, 1000, []int{1001, 1002}},
	{1001, 2000, nil},
	{2000, 1001, []int{1000}},
	{3000, 3000, []int{1002, 2000}},
}

// IDs are the uids and gids the random ACLs and owners take.
var IDs = []uint32{0, 1000, 1001, 1002, 2000, 3000}

// Req is a caller's step: Op is access, open, create, mkdir or setflags
// (FS_IOC_SETFLAGS with Mode as the flags).
type Req struct {
	Op    string
	Path  string
	Mode  uint32
	Flags int
	Umask int
}

// Res is a step's result.
type Res struct {
	Errno int
	Out   string
}

// helperEnv marks a child process.
const helperEnv = "IOVFS_ACL_HELPER"

// Helper is a caller's child process: a test of the binary, named to
// StartChild, calls it; run by itself it skips.
func Helper(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("the child process of an ACL differential")
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req Req
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		out.Encode(HostStep(req))
	}
	os.Exit(0)
}

// ErrnoOf reduces an error to its errno, or -1 for a non-errno error.
func ErrnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return ^syscall.Errno(0)
}

// HostStep runs one caller step on the host.
func HostStep(r Req) Res {
	switch r.Op {
	case "access":
		return Res{Errno: int(ErrnoOf(unix.Faccessat2(unix.AT_FDCWD, r.Path, r.Mode, unix.AT_EACCESS)))}
	case "open":
		fd, err := unix.Open(r.Path, r.Flags|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return Res{Errno: int(ErrnoOf(err))}
	case "create":
		old := unix.Umask(r.Umask)
		fd, err := unix.Open(r.Path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, r.Mode)
		unix.Umask(old)
		if err == nil {
			unix.Close(fd)
		}
		return Res{Errno: int(ErrnoOf(err))}
	case "mkdir":
		old := unix.Umask(r.Umask)
		err := unix.Mkdir(r.Path, r.Mode)
		unix.Umask(old)
		return Res{Errno: int(ErrnoOf(err))}
	case "setflags":
		fd, err := unix.Open(r.Path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return Res{Errno: int(ErrnoOf(err))}
		}
		defer unix.Close(fd)
		v := r.Mode
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), vfs.FS_IOC_SETFLAGS, uintptr(unsafe.Pointer(&v)))
		return Res{Errno: int(e)}
	}
	return Res{Errno: -1}
}

// Child is a caller's host side.
type Child struct {
	out *json.Decoder
	w   *bufio.Writer
}

// StartChild starts exe (a copy of the test binary: HelperCopy) running
// the test named helperTest, which calls Helper, with id's credentials.
func StartChild(t *testing.T, exe, helperTest string, id Identity) *Child {
	cmd := exec.Command(exe, "-test.run=^"+helperTest+"$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	groups := make([]uint32, len(id.Groups))
	for i, g := range id.Groups {
		groups[i] = uint32(g)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(id.Uid), Gid: uint32(id.Gid), Groups: groups}}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return &Child{out: json.NewDecoder(out), w: bufio.NewWriter(in)}
}

// Run runs one step in the child.
func (c *Child) Run(t *testing.T, r Req) Res {
	b, _ := json.Marshal(r)
	c.w.Write(append(b, '\n'))
	if err := c.w.Flush(); err != nil {
		t.Fatalf("to the child: %v", err)
	}
	var res Res
	if err := c.out.Decode(&res); err != nil {
		t.Fatalf("from the child: %v", err)
	}
	return res
}

// HelperCopy copies the test binary, which lives in a directory only
// root may enter, to where other users may run it.
func HelperCopy(t *testing.T) string {
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "iovfs-acl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "helper.test")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// OurStep runs one caller step on iovfs.
func OurStep(p *vfs.Proc, r Req) Res {
	switch r.Op {
	case "access":
		return Res{Errno: int(ErrnoOf(p.Faccessat2(unix.AT_FDCWD, r.Path, r.Mode, unix.AT_EACCESS)))}
	case "open":
		fd, err := p.Open(r.Path, r.Flags|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			p.Close(fd)
		}
		return Res{Errno: int(ErrnoOf(err))}
	case "create":
		old := p.Umask(uint32(r.Umask))
		fd, err := p.Open(r.Path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, r.Mode)
		p.Umask(old)
		if err == nil {
			p.Close(fd)
		}
		return Res{Errno: int(ErrnoOf(err))}
	case "mkdir":
		old := p.Umask(uint32(r.Umask))
		err := p.Mkdir(r.Path, r.Mode)
		p.Umask(old)
		return Res{Errno: int(ErrnoOf(err))}
	}
	return Res{Errno: -1}
}

// RandomACL makes an ACL value in the kernel's xattr format: usually
// valid (the entries in order, a mask when named entries need one),
// sometimes not (a missing mask, entries out of order, bad bits, a
// duplicate name, a bad header).
func RandomACL(r *rand.Rand) []byte {
	type ent struct {
		tag, perm uint16
		id        uint32
	}
	perm := func() uint16 { return uint16(r.Intn(8)) }
	var es []ent
	es = append(es, ent{vfs.ACLUserObj, perm(), 0xffffffff})
	users := r.Intn(4)
	if r.Intn(3) == 0 {
		users = 0
	}
	seen := map[uint32]bool{}
	for range users {
		id := IDs[r.Intn(len(IDs))]
		if seen[id] && r.Intn(8) != 0 {
			continue
		}
		seen[id] = true
		es = append(es, ent{vfs.ACLUser, perm(), id})
	}
	es = append(es, ent{vfs.ACLGroupObj, perm(), 0xffffffff})
	groups := r.Intn(4)
	if r.Intn(3) == 0 {
		groups = 0
	}
	seen = map[uint32]bool{}
	for range groups {
		id := IDs[r.Intn(len(IDs))]
		if seen[id] && r.Intn(8) != 0 {
			continue
		}
		seen[id] = true
		es = append(es, ent{vfs.ACLGroup, perm(), id})
	}
	if len(es) > 2 || r.Intn(4) == 0 {
		if r.Intn(30) != 0 {
			es = append(es, ent{vfs.ACLMask, perm(), 0xffffffff})
		}
	}
	es = append(es, ent{vfs.ACLOther, perm(), 0xffffffff})
	switch r.Intn(40) {
	case 0:
		i, j := r.Intn(len(es)), r.Intn(len(es))
		es[i], es[j] = es[j], es[i]
	case 1:
		es[r.Intn(len(es))].perm |= 8
	case 2:
		es = es[:len(es)-1]
	}
	b := make([]byte, 4, 4+8*len(es))
	binary.LittleEndian.PutUint32(b, 2)
	for _, e := range es {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	switch r.Intn(60) {
	case 0:
		b[0] = 1 // version 1: EOPNOTSUPP
	case 1:
		b = b[:len(b)-3] // a partial entry: EINVAL
	}
	return b
}

// HostState is what root sees of a host node: type and mode, owner, and
// both ACL xattrs (or their errno).
func HostState(p string) string {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return fmt.Sprintf("stat %v", ErrnoOf(err))
	}
	return fmt.Sprintf("%o %d:%d access=%s default=%s", st.Mode, st.Uid, st.Gid,
		hostXattr(p, vfs.XattrACLAccess), hostXattr(p, vfs.XattrACLDefault))
}

func hostXattr(p, name string) string {
	b := make([]byte, 1024)
	n, err := unix.Getxattr(p, name, b)
	if err != nil {
		return fmt.Sprint(ErrnoOf(err))
	}
	return fmt.Sprintf("%x", b[:n])
}

// OurState is HostState on iovfs.
func OurState(p *vfs.Proc, name string) string {
	st, err := p.Lstat(name)
	if err != nil {
		return fmt.Sprintf("stat %v", ErrnoOf(err))
	}
	x := func(n string) string {
		v, err := p.Getxattr(name, n)
		if err != nil {
			return fmt.Sprint(ErrnoOf(err))
		}
		return fmt.Sprintf("%x", v)
	}
	return fmt.Sprintf("%o %d:%d access=%s default=%s", st.Mode, st.Uid, st.Gid, x(vfs.XattrACLAccess), x(vfs.XattrACLDefault))
}

// Config is one differential run.
type Config struct {
	// HostDir is the host directory (its file system with ACLs); Dir the
	// iovfs one, in Root's namespace. Both exist, owned by root, 0755,
	// under directories other users may search.
	HostDir, Dir string
	// Root is an iovfs process with uid 0; the callers' processes share
	// its namespace.
	Root *vfs.Proc
	// HelperTest names the test of this binary that calls Helper.
	HelperTest string
	// Cases is how many random nodes are made; Seed seeds them.
	Cases int
	Seed  int64
}

// Counts are what a run compared.
type Counts struct {
	Compared, Allowed, WithACL int
	// Nodes are the nodes made, relative to the directories.
	Nodes []string
}

// Run runs the differential and reports the mismatches through t.
func Run(t *testing.T, cfg Config) Counts {
	exe := HelperCopy(t)
	children := make([]*Child, len(Callers))
	for i, id := range Callers {
		if id.Uid != 0 {
			children[i] = StartChild(t, exe, cfg.HelperTest, id)
		}
	}
	root := cfg.Root
	procs := make([]*vfs.Proc, len(Callers))
	for i, id := range Callers {
		if id.Uid == 0 {
			procs[i] = root
		} else {
			procs[i] = vfs.NewProcCred(root.Namespace(), id.Uid, id.Gid, id.Groups...)
		}
	}
	hostRun := func(i int, r Req) Res {
		if children[i] == nil {
			return HostStep(r)
		}
		return children[i].Run(t, r)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	rnd := rand.New(rand.NewSource(cfg.Seed))
	var n Counts
	check := func(what, h, o string) {
		t.Helper()
		n.Compared++
		if h != o {
			t.Errorf("%s:\n host %s\n ours %s", what, h, o)
		}
	}
	for c := range cfg.Cases {
		name := fmt.Sprintf("c%d", c)
		n.Nodes = append(n.Nodes, name)
		hp, op := path.Join(cfg.HostDir, name), path.Join(cfg.Dir, name)
		dir := rnd.Intn(2) == 0
		mode := uint32(rnd.Intn(0o1000))
		if rnd.Intn(8) == 0 {
			mode |= unix.S_ISGID
		}
		if dir {
			must(unix.Mkdir(hp, 0))
			must(root.Mkdir(op, 0))
		} else {
			fd, err := unix.Open(hp, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0)
			must(err)
			unix.Close(fd)
			fd, err = root.Open(op, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0)
			must(err)
			root.Close(fd)
		}
		uid, gid := IDs[rnd.Intn(len(IDs))], IDs[rnd.Intn(len(IDs))]
		must(unix.Chown(hp, int(uid), int(gid)))
		must(root.Chown(op, uid, gid))
		must(unix.Chmod(hp, mode))
		must(root.Chmod(op, mode))

		// Root sets an access ACL, and on a directory maybe a default
		// ACL; a file's default ACL is refused.
		for _, xname := range []string{vfs.XattrACLAccess, vfs.XattrACLDefault} {
			if rnd.Intn(5) == 0 {
				continue
			}
			v := RandomACL(rnd)
			if rnd.Intn(20) == 0 {
				v = nil // an empty value removes the ACL
			}
			check(fmt.Sprintf("%s: setxattr %s %x", name, xname, v),
				fmt.Sprint(ErrnoOf(unix.Setxattr(hp, xname, v, 0))),
				fmt.Sprint(ErrnoOf(root.Setxattr(op, xname, v, 0))))
		}
		hs, ours := HostState(hp), OurState(root, op)
		check(name+": after setxattr", hs, ours)
		if bytes.Contains([]byte(hs), []byte("access=02")) {
			n.WithACL++
		}

		// Every caller asks for every access, opens, and creates under
		// the directory.
		for i := range Callers {
			for _, m := range []uint32{unix.R_OK, unix.W_OK, unix.X_OK, unix.R_OK | unix.W_OK, unix.R_OK | unix.X_OK} {
				h, o := hostRun(i, Req{Op: "access", Path: hp, Mode: m}), OurStep(procs[i], Req{Op: "access", Path: op, Mode: m})
				check(fmt.Sprintf("%s: caller %v access %d (%s)", name, Callers[i], m, hs), fmt.Sprint(h), fmt.Sprint(o))
				if h.Errno == 0 {
					n.Allowed++
				}
			}
			flags := []int{unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR}
			if dir {
				flags = []int{unix.O_RDONLY | unix.O_DIRECTORY}
			}
			for _, fl := range flags {
				h, o := hostRun(i, Req{Op: "open", Path: hp, Flags: fl}), OurStep(procs[i], Req{Op: "open", Path: op, Flags: fl})
				check(fmt.Sprintf("%s: caller %v open %#x (%s)", name, Callers[i], fl, hs), fmt.Sprint(h), fmt.Sprint(o))
			}
			if !dir {
				continue
			}
			for k, op2 := range []string{"create", "mkdir"} {
				child := fmt.Sprintf("u%d%d", i, k)
				r := Req{Op: op2, Mode: uint32(rnd.Intn(0o10000)), Umask: rnd.Intn(0o1000)}
				rh, ro := r, r
				rh.Path, ro.Path = path.Join(hp, child), path.Join(op, child)
				h, o := hostRun(i, rh), OurStep(procs[i], ro)
				check(fmt.Sprintf("%s: caller %v %s %o umask %o (%s)", name, Callers[i], op2, r.Mode, r.Umask, hs), fmt.Sprint(h), fmt.Sprint(o))
				if h.Errno == 0 {
					n.Nodes = append(n.Nodes, path.Join(name, child))
					check(fmt.Sprintf("%s: caller %v %s %o umask %o (%s): the new node", name, Callers[i], op2, r.Mode, r.Umask, hs),
						HostState(rh.Path), OurState(root, ro.Path))
				}
			}
		}

		// Root changes the mode: the ACL's owner, mask and other
		// entries follow (posix_acl_chmod).
		m2 := uint32(rnd.Intn(0o10000))
		check(name+": chmod", fmt.Sprint(ErrnoOf(unix.Chmod(hp, m2))), fmt.Sprint(ErrnoOf(root.Chmod(op, m2))))
		check(fmt.Sprintf("%s: after chmod %o", name, m2), HostState(hp), OurState(root, op))
	}
	return n
}
