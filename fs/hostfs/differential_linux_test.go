package hostfs_test

// The kernel differential: the random sequences of internal/difftest run
// on hostfs over one private host tmpfs and directly on another, and every
// count, errno and byte is compared.

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/internal/difftest"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// hostTmpfs mounts a private tmpfs on dir (a new temporary directory if
// "") for the test and returns its path; opts are added to the mount data.
func hostTmpfs(t testing.TB, dir string, opts ...string) string {
	t.Helper()
	testenv.RequireRoot(t, "mounting a host tmpfs")
	if dir == "" {
		dir = t.TempDir()
	}
	data := strings.Join(append([]string{"size=64m,mode=0755"}, opts...), ",")
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, data); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// identity is who makes the calls on both sides.
type identity struct {
	name     string
	uid, gid int
}

// The identities the differential runs as. An unprivileged identity runs
// in a child process (the test binary again, with SysProcAttr.Credential),
// because setresuid changes every thread of a Go process.
var identities = []identity{{"root", 0, 0}, {"uid1000", 1000, 1000}}

const diffChild = "IOVFS_HOSTFS_DIFF_CHILD" // "direct:passed" in the child

func TestDifferentialHostfs(t *testing.T) {
	for _, id := range identities {
		t.Run(id.name, func(t *testing.T) { runDifferential(t, id) })
	}
}

func runDifferential(t *testing.T, id identity) {
	var direct, passed string
	switch env := os.Getenv(diffChild); {
	case env != "":
		if os.Getuid() != id.uid {
			t.Skipf("the child runs only %d's sequences", os.Getuid())
		}
		direct, passed, _ = strings.Cut(env, ":")
	case id.uid != 0:
		runAs(t, id)
		return
	default:
		direct = hostTmpfs(t, "") // the host kernel alone
		passed = hostTmpfs(t, "") // the host kernel under hostfs
	}
	p := mountHost(t, passed, 0, "")
	if id.uid != 0 {
		// The iovfs side acts as id too (the host child has no
		// supplementary groups), so the VFS's generic_permission decides
		// before the host below hostfs is asked.
		q, err := p.Fork()
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Setgroups(nil); err != nil {
			t.Fatal(err)
		}
		if err := q.Setresgid(id.gid, id.gid, id.gid); err != nil {
			t.Fatal(err)
		}
		if err := q.Setresuid(id.uid, id.uid, id.uid); err != nil {
			t.Fatal(err)
		}
		p = q
	}
	mask := unix.Umask(0o022)
	unix.Umask(mask)
	p.Umask(uint32(mask))
	checks := 1000 // the minimum, also under -race and -short
	c := difftest.Run(t, checks, func(t *rapid.T, seq int) (host, ours difftest.Side) {
		dir := fmt.Sprintf("s%d", seq)
		if err := os.Mkdir(path.Join(direct, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(path.Join(passed, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		return difftest.HostSide{Root: path.Join(direct, dir)}, difftest.ProcSide{P: p, Root: "/mnt/h/" + dir}
	})
	t.Logf("as uid %d: %d sequences, %d compared operations (%d of them errors on both sides), 0 divergences",
		os.Getuid(), c.Sequences, c.Ops, c.Fails)
}

// runAs runs the sequences of id in a child process with id's uid and
// gid, on two host tmpfs mounts that id owns.
func runAs(t *testing.T, id identity) {
	testenv.RequireRoot(t, "running a child as another user")
	base, err := os.MkdirTemp("", "iovfs-hostfs-diff-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	owner := fmt.Sprintf("uid=%d,gid=%d", id.uid, id.gid)
	var dirs []string
	for _, d := range []string{"direct", "passed"} {
		dir := path.Join(base, d)
		os.Mkdir(dir, 0o755)
		dirs = append(dirs, hostTmpfs(t, dir, owner))
	}
	// The test binary may sit in a directory only root can enter.
	bin := path.Join(base, "hostfs.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestDifferentialHostfs$/^"+id.name+"$", "-test.v")
	cmd.Env = append(os.Environ(), diffChild+"="+dirs[0]+":"+dirs[1])
	cmd.Dir = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(id.uid), Gid: uint32(id.gid)}}
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, ".go:") || strings.Contains(line, "---") {
			t.Log(line)
		}
	}
	if err != nil {
		t.Fatalf("child as uid %d: %v", id.uid, err)
	}
	if !strings.Contains(string(out), "--- PASS: TestDifferentialHostfs/"+id.name) {
		t.Fatalf("child as uid %d did not run the sequences", id.uid)
	}
}
