package iovfs_test

// The POSIX ACL differential: random ACLs (valid and not) set by root on
// files and directories with random modes and owners, on a host tmpfs and
// on iovfs's tmpfs, then random callers (other uids, groups that the ACLs
// name or not, root) asking for each access, opening, creating files and
// directories under default ACLs with random umasks, and root chmodding
// them. Every errno, mode and ACL value is compared.
//
// The callers run on the host as child processes started with their
// credentials (Go's Setresuid changes every thread of the test process),
// reading steps as JSON on stdin and answering on stdout; root's steps run
// in the test process.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// aclIdentity is a caller.
type aclIdentity struct {
	Uid, Gid int
	Groups   []int
}

// aclCallers: root, and users whose ids and groups the random ACLs name
// (aclIDs).
var aclCallers = []aclIdentity{
	{0, 0, nil},
	{1000, 1000, []int{1001, 1002}},
	{1001, 2000, nil},
	{2000, 1001, []int{1000}},
	{3000, 3000, []int{1002, 2000}},
}

var aclIDs = []uint32{0, 1000, 1001, 1002, 2000, 3000}

type aclReq struct {
	Op    string // access, open, create, mkdir, setflags
	Path  string
	Mode  uint32
	Flags int
	Umask int
}

type aclRes struct {
	Errno int
	Out   string
}

// TestACLHelper is a caller's child process; run by itself it does
// nothing.
func TestACLHelper(t *testing.T) {
	if os.Getenv("IOVFS_ACL_HELPER") != "1" {
		t.Skip("the child process of TestACLKernel")
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req aclReq
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		out.Encode(hostACLStep(req))
	}
	os.Exit(0)
}

// hostACLStep runs one caller step on the host.
func hostACLStep(r aclReq) aclRes {
	switch r.Op {
	case "access":
		return aclRes{Errno: int(errnoOf(unix.Faccessat2(unix.AT_FDCWD, r.Path, r.Mode, unix.AT_EACCESS)))}
	case "open":
		fd, err := unix.Open(r.Path, r.Flags|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return aclRes{Errno: int(errnoOf(err))}
	case "create":
		old := unix.Umask(r.Umask)
		fd, err := unix.Open(r.Path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, r.Mode)
		unix.Umask(old)
		if err == nil {
			unix.Close(fd)
		}
		return aclRes{Errno: int(errnoOf(err))}
	case "mkdir":
		old := unix.Umask(r.Umask)
		err := unix.Mkdir(r.Path, r.Mode)
		unix.Umask(old)
		return aclRes{Errno: int(errnoOf(err))}
	case "setflags":
		fd, err := unix.Open(r.Path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return aclRes{Errno: int(errnoOf(err))}
		}
		defer unix.Close(fd)
		return aclRes{Errno: int(errnoOf(hostFlags{}.setflags(fd, r.Mode)))}
	}
	return aclRes{Errno: -1}
}

// aclChild is a caller's host side.
type aclChild struct {
	out *json.Decoder
	w   *bufio.Writer
}

func startACLChild(t *testing.T, exe string, id aclIdentity) *aclChild {
	cmd := exec.Command(exe, "-test.run=^TestACLHelper$")
	cmd.Env = append(os.Environ(), "IOVFS_ACL_HELPER=1")
	groups := make([]uint32, len(id.Groups))
	for i, g := range id.Groups {
		groups[i] = uint32(g)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(id.Uid), Gid: uint32(id.Gid), Groups: groups}}
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
	return &aclChild{out: json.NewDecoder(out), w: bufio.NewWriter(in)}
}

func (c *aclChild) run(t *testing.T, r aclReq) aclRes {
	b, _ := json.Marshal(r)
	c.w.Write(append(b, '\n'))
	if err := c.w.Flush(); err != nil {
		t.Fatalf("to the child: %v", err)
	}
	var res aclRes
	if err := c.out.Decode(&res); err != nil {
		t.Fatalf("from the child: %v", err)
	}
	return res
}

// ourACLStep runs one caller step on iovfs.
func ourACLStep(p *vfs.Proc, r aclReq) aclRes {
	switch r.Op {
	case "access":
		return aclRes{Errno: int(errnoOf(p.Faccessat2(unix.AT_FDCWD, r.Path, r.Mode, unix.AT_EACCESS)))}
	case "open":
		fd, err := p.Open(r.Path, r.Flags|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			p.Close(fd)
		}
		return aclRes{Errno: int(errnoOf(err))}
	case "create":
		old := p.Umask(uint32(r.Umask))
		fd, err := p.Open(r.Path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, r.Mode)
		p.Umask(old)
		if err == nil {
			p.Close(fd)
		}
		return aclRes{Errno: int(errnoOf(err))}
	case "mkdir":
		old := p.Umask(uint32(r.Umask))
		err := p.Mkdir(r.Path, r.Mode)
		p.Umask(old)
		return aclRes{Errno: int(errnoOf(err))}
	}
	return aclRes{Errno: -1}
}

// randomACL makes an ACL value in the kernel's xattr format: usually
// valid (the entries in order, a mask when named entries need one),
// sometimes not (a missing mask, entries out of order, bad bits, a
// duplicate name, a bad header).
func randomACL(r *rand.Rand) []byte {
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
		id := aclIDs[r.Intn(len(aclIDs))]
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
		id := aclIDs[r.Intn(len(aclIDs))]
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

// aclState is what root sees of a node: type and mode, owner, and both
// ACL xattrs (or their errno).
func hostACLState(p string) string {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return fmt.Sprintf("stat %v", errnoOf(err))
	}
	return fmt.Sprintf("%o %d:%d access=%s default=%s", st.Mode, st.Uid, st.Gid,
		hostXattr(p, vfs.XattrACLAccess), hostXattr(p, vfs.XattrACLDefault))
}

func hostXattr(p, name string) string {
	b := make([]byte, 1024)
	n, err := unix.Getxattr(p, name, b)
	if err != nil {
		return fmt.Sprint(errnoOf(err))
	}
	return fmt.Sprintf("%x", b[:n])
}

func ourACLState(p *vfs.Proc, name string) string {
	st, err := p.Lstat(name)
	if err != nil {
		return fmt.Sprintf("stat %v", errnoOf(err))
	}
	x := func(n string) string {
		v, err := p.Getxattr(name, n)
		if err != nil {
			return fmt.Sprint(errnoOf(err))
		}
		return fmt.Sprintf("%x", v)
	}
	return fmt.Sprintf("%o %d:%d access=%s default=%s", st.Mode, st.Uid, st.Gid, x(vfs.XattrACLAccess), x(vfs.XattrACLDefault))
}

// TestACLKernel compares POSIX ACLs with a host tmpfs's: 150 random
// files and directories (1,500 under IOVFS_LONG), each checked by five
// callers.
func TestACLKernel(t *testing.T) {
	testenv.RequireRoot(t, "setting ACLs as root and running callers as other users")
	cases := 150
	if testenv.Long() {
		cases = 1500
	}
	host := hostTmpfs(t)
	must(t, os.Chmod(filepath.Dir(host), 0o755))
	exe := helperCopy(t)
	children := make([]*aclChild, len(aclCallers))
	for i, id := range aclCallers {
		if id.Uid != 0 {
			children[i] = startACLChild(t, exe, id)
		}
	}
	root, err := iovfs.New()
	must(t, err)
	must(t, root.Mkdir("/tmp/acl", 0o755))
	must(t, root.Chmod("/tmp/acl", 0o755))
	procs := make([]*vfs.Proc, len(aclCallers))
	for i, id := range aclCallers {
		if id.Uid == 0 {
			procs[i] = root
		} else {
			procs[i] = vfs.NewProcCred(root.Namespace(), id.Uid, id.Gid, id.Groups...)
		}
	}
	hostRun := func(i int, r aclReq) aclRes {
		if children[i] == nil {
			return hostACLStep(r)
		}
		return children[i].run(t, r)
	}

	rnd := rand.New(rand.NewSource(31))
	compared, allowed, withACL := 0, 0, 0
	check := func(what, h, o string) {
		t.Helper()
		compared++
		if h != o {
			t.Errorf("%s:\n host %s\n ours %s", what, h, o)
		}
	}
	for c := range cases {
		name := fmt.Sprintf("c%d", c)
		hp, op := path.Join(host, name), "/tmp/acl/"+name
		dir := rnd.Intn(2) == 0
		mode := uint32(rnd.Intn(0o1000))
		if rnd.Intn(8) == 0 {
			mode |= unix.S_ISGID
		}
		if dir {
			must(t, unix.Mkdir(hp, 0))
			must(t, root.Mkdir(op, 0))
		} else {
			fd, err := unix.Open(hp, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0)
			must(t, err)
			unix.Close(fd)
			createFile(t, root, op, "")
		}
		uid, gid := aclIDs[rnd.Intn(len(aclIDs))], aclIDs[rnd.Intn(len(aclIDs))]
		must(t, unix.Chown(hp, int(uid), int(gid)))
		must(t, root.Chown(op, uid, gid))
		must(t, unix.Chmod(hp, mode))
		must(t, root.Chmod(op, mode))

		// Root sets an access ACL, and on a directory maybe a default
		// ACL; a file's default ACL is refused.
		for _, name := range []string{vfs.XattrACLAccess, vfs.XattrACLDefault} {
			if rnd.Intn(5) == 0 {
				continue
			}
			v := randomACL(rnd)
			if rnd.Intn(20) == 0 {
				v = nil // an empty value removes the ACL
			}
			check(fmt.Sprintf("%s: setxattr %s %x", name, name, v),
				fmt.Sprint(errnoOf(unix.Setxattr(hp, name, v, 0))),
				fmt.Sprint(errnoOf(root.Setxattr(op, name, v, 0))))
		}
		hs, ours := hostACLState(hp), ourACLState(root, op)
		check(name+": after setxattr", hs, ours)
		if bytes.Contains([]byte(hs), []byte("access=02")) {
			withACL++
		}

		// Every caller asks for every access, opens, and creates under
		// the directory.
		for i := range aclCallers {
			for _, m := range []uint32{unix.R_OK, unix.W_OK, unix.X_OK, unix.R_OK | unix.W_OK, unix.R_OK | unix.X_OK} {
				h, o := hostRun(i, aclReq{Op: "access", Path: hp, Mode: m}), ourACLStep(procs[i], aclReq{Op: "access", Path: op, Mode: m})
				check(fmt.Sprintf("%s: caller %v access %d (%s)", name, aclCallers[i], m, hs), fmt.Sprint(h), fmt.Sprint(o))
				if h.Errno == 0 {
					allowed++
				}
			}
			flags := []int{unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR}
			if dir {
				flags = []int{unix.O_RDONLY | unix.O_DIRECTORY}
			}
			for _, fl := range flags {
				h, o := hostRun(i, aclReq{Op: "open", Path: hp, Flags: fl}), ourACLStep(procs[i], aclReq{Op: "open", Path: op, Flags: fl})
				check(fmt.Sprintf("%s: caller %v open %#x (%s)", name, aclCallers[i], fl, hs), fmt.Sprint(h), fmt.Sprint(o))
			}
			if !dir {
				continue
			}
			for k, op2 := range []string{"create", "mkdir"} {
				child := fmt.Sprintf("u%d%d", i, k)
				r := aclReq{Op: op2, Mode: uint32(rnd.Intn(0o10000)), Umask: rnd.Intn(0o1000)}
				rh, ro := r, r
				rh.Path, ro.Path = path.Join(hp, child), path.Join(op, child)
				h, o := hostRun(i, rh), ourACLStep(procs[i], ro)
				check(fmt.Sprintf("%s: caller %v %s %o umask %o (%s)", name, aclCallers[i], op2, r.Mode, r.Umask, hs), fmt.Sprint(h), fmt.Sprint(o))
				if h.Errno == 0 {
					check(fmt.Sprintf("%s: caller %v %s %o umask %o (%s): the new node", name, aclCallers[i], op2, r.Mode, r.Umask, hs),
						hostACLState(rh.Path), ourACLState(root, ro.Path))
				}
			}
		}

		// Root changes the mode: the ACL's owner, mask and other
		// entries follow (posix_acl_chmod).
		m2 := uint32(rnd.Intn(0o10000))
		check(name+": chmod", fmt.Sprint(errnoOf(unix.Chmod(hp, m2))), fmt.Sprint(errnoOf(root.Chmod(op, m2))))
		check(fmt.Sprintf("%s: after chmod %o", name, m2), hostACLState(hp), ourACLState(root, op))
	}
	t.Logf("%d results compared (%d accesses allowed), %d nodes with an access ACL", compared, allowed, withACL)
}
