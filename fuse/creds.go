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
// Callers with uid and gid 0 and the kernel's own requests (pid 0) get
// the server's Proc, with root's full privileges, as a root process has
// on a local file system; a caller with uid 0 and another gid gets a
// thread of its own, as privileged, whose new files get its group.
func (c *credentials) proc(h *gofuse.InHeader) (*vfs.Proc, error) {
	return c.procUmask(h, 0)
}

// procUmask is proc for a request that creates a file with the caller's
// umask: the kernel leaves it to the server (FUSE_DONT_MASK), since a
// default ACL of the directory replaces it (posix_acl_create), which vfs
// decides under the directory's lock. Each umask gets threads of its own
// (a thread's umask is its own: no CLONE_FS).
//
// A request that comes without the caller's ids (anonymous: an export
// that allows idmapped mounts) is served as root's: the kernel has made
// every permission check for it.
func (c *credentials) procUmask(h *gofuse.InHeader, umask uint32) (*vfs.Proc, error) {
	umask &= 0o777
	server := (h.Uid == 0 && h.Gid == 0) || h.Pid == 0 || anonymous(h)
	if server && umask == 0 {
		return c.base, nil
	}
	k := credKey{uid: h.Uid, gid: h.Gid, groups: "server", umask: umask}
	if server {
		k.uid, k.gid = 0, 0
	} else {
		k.groups = groupsOf(h.Pid, h.Gid)
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

// groupsOf returns the supplementary groups of host thread pid, sorted,
// as credKey.groups; "" if the thread is gone. gid is the fs gid the
// request came with: through an idmapped mount of an export that allows
// them (Options.AllowIdmap), the kernel sends the caller's ids mapped
// into the file system's, while /proc shows the host's; the groups are
// shifted by the difference of the two fs gids, which maps them exactly
// on a plain mount (no difference) and through an idmap of one range.
func groupsOf(pid uint32, gid uint32) string {
	st, ok := readThreadStatus(pid)
	if !ok {
		return ""
	}
	shift := int64(0)
	if st.fsgid >= 0 {
		shift = st.fsgid - int64(gid)
	}
	var ids []int64
	for _, g := range st.groups {
		if g -= shift; g >= 0 && g < int64(noCaller) {
			ids = append(ids, g)
		}
	}
	slices.Sort(ids)
	var out []byte
	for i, g := range ids {
		if i > 0 {
			out = append(out, ' ')
		}
		out = strconv.AppendInt(out, g, 10)
	}
	return string(out)
}

// noCaller is what the kernel sends in place of the caller's uid and gid
// (FUSE_INVALID_UIDGID) on a request that makes no file, when the export
// allows idmapped mounts (Options.AllowIdmap).
const noCaller = ^uint32(0)

// anonymous reports whether h came without the caller's ids.
func anonymous(h *gofuse.InHeader) bool { return h.Uid == noCaller || h.Gid == noCaller }

// capFsetid is CAP_FSETID's bit in /proc/PID/status's CapEff.
const capFsetid = 4

// hasFsetid reports whether host thread tid has CAP_FSETID in its
// effective set; false if the thread is gone.
func hasFsetid(tid uint32) bool {
	st, ok := readThreadStatus(tid)
	return ok && st.capEff&(1<<capFsetid) != 0
}

// inGroupOrCapable reports whether host thread tid is in group gid (its
// fs gid or a supplementary group) or has CAP_FSETID, as Linux's
// in_group_or_capable decides whether a change keeps a set-group-ID
// bit; false if the thread is gone.
func inGroupOrCapable(tid uint32, gid uint32) bool {
	st, ok := readThreadStatus(tid)
	return ok && (st.fsgid == int64(gid) || slices.Contains(st.groups, int64(gid)) || st.capEff&(1<<capFsetid) != 0)
}

// threadStatus is what the export reads of a host thread's
// /proc/PID/status.
type threadStatus struct {
	fsgid  int64   // the fourth id of the Gid line; -1 if not shown
	groups []int64 // the Groups line
	capEff uint64  // the CapEff line
}

// readThreadStatus reads host thread tid's status; false if the thread
// is gone.
func readThreadStatus(tid uint32) (threadStatus, bool) {
	st := threadStatus{fsgid: -1}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return st, false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("Gid:")); ok {
			// real, effective, saved, fs
			if f := bytes.Fields(rest); len(f) == 4 {
				if g, err := strconv.ParseInt(string(f[3]), 10, 64); err == nil {
					st.fsgid = g
				}
			}
		} else if rest, ok := bytes.CutPrefix(line, []byte("Groups:")); ok {
			for _, f := range bytes.Fields(rest) {
				if g, err := strconv.ParseInt(string(f), 10, 64); err == nil {
					st.groups = append(st.groups, g)
				}
			}
		} else if rest, ok := bytes.CutPrefix(line, []byte("CapEff:")); ok {
			st.capEff, _ = strconv.ParseUint(string(bytes.TrimSpace(rest)), 16, 64)
		}
	}
	return st, true
}
