package fuse

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/iovfs/iovfs/vfs"
)

// credKey is a set of credentials: fs uid and gid from the request
// header, supplementary groups from /proc/PID/status; and the umask a
// request that creates a file carries (0 for the others).
type credKey struct {
	uid, gid uint32
	groups   string // decimal ids, space separated, sorted
	umask    uint32
}

// credentials caches one thread of the server's Proc per set of
// credentials (vfs.Proc.NewThread): it shares the server's descriptor
// table, where the nodes and open files are, and acts with the caller's
// ids, so iovfs's permission checks and the owner of what it creates are
// the caller's. Record locks are never taken through these threads (each
// lock owner has a process of its own, see lock.go), so sharing them
// among callers with the same credentials changes nothing they can
// observe.
type credentials struct {
	base *vfs.Proc // root, umask 0: requests from root and the kernel itself
	// mu protects procs.
	mu    sync.Mutex
	procs map[credKey]*vfs.Proc
}

func (c *credentials) init(base *vfs.Proc) {
	c.base = base
	c.procs = map[credKey]*vfs.Proc{}
}

// proc returns the thread that serves a request from the caller in h.
// Root callers and the kernel's own requests (pid 0) get the server's
// Proc, with root's full privileges, as a root process has on a local
// file system.
func (c *credentials) proc(h *gofuse.InHeader) (*vfs.Proc, error) {
	return c.procUmask(h, 0)
}

// procUmask is proc for a request that creates a file with the caller's
// umask: the kernel leaves it to the server (FUSE_DONT_MASK), since a
// default ACL of the directory replaces it (posix_acl_create), which vfs
// decides under the directory's lock. Each umask gets threads of its own
// (a thread's umask is its own: no CLONE_FS).
func (c *credentials) procUmask(h *gofuse.InHeader, umask uint32) (*vfs.Proc, error) {
	umask &= 0o777
	if (h.Uid == 0 || h.Pid == 0) && umask == 0 {
		return c.base, nil
	}
	k := credKey{uid: h.Uid, gid: h.Gid, groups: "server", umask: umask}
	if h.Uid != 0 && h.Pid != 0 {
		k.groups = groupsOf(h.Pid)
	} else {
		k.uid, k.gid = 0, 0
	}
	c.mu.Lock()
	p := c.procs[k]
	c.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p = c.base.NewThread()
	p.Umask(umask)
	if k.groups == "server" {
		// Root, or the kernel itself: the server's credentials.
		return c.cache(k, p), nil
	}
	var gids []int
	for _, f := range bytes.Fields([]byte(k.groups)) {
		g, _ := strconv.Atoi(string(f))
		gids = append(gids, g)
	}
	if err := p.Setgroups(gids); err != nil {
		return nil, err
	}
	if err := p.Setresgid(int(k.gid), int(k.gid), int(k.gid)); err != nil {
		return nil, err
	}
	if err := p.Setresuid(int(k.uid), int(k.uid), int(k.uid)); err != nil {
		return nil, err
	}
	return c.cache(k, p), nil
}

// cache enters p as the thread for k, unless another request did first,
// and returns the thread for k.
func (c *credentials) cache(k credKey, p *vfs.Proc) *vfs.Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	if q := c.procs[k]; q != nil {
		return q
	}
	c.procs[k] = p
	return p
}

// groupsOf returns the supplementary groups of host process pid, sorted,
// as credKey.groups; "" if the process is gone.
func groupsOf(pid uint32) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("Groups:"))
		if !ok {
			continue
		}
		var ids []int
		for _, f := range bytes.Fields(rest) {
			if g, err := strconv.Atoi(string(f)); err == nil {
				ids = append(ids, g)
			}
		}
		slices.Sort(ids)
		var out []byte
		for i, g := range ids {
			if i > 0 {
				out = append(out, ' ')
			}
			out = strconv.AppendInt(out, int64(g), 10)
		}
		return string(out)
	}
	return ""
}
