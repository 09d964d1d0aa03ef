package vfs

// The cached prefix of a walk (Linux's RCU-walk, fs/namei.c's
// link_path_walk under LOOKUP_RCU): the leading components of a path
// whose dentries are cached are walked here, one hash probe each, with
// no file system call but PermAttrs; the first component that needs
// anything else (".", "..", a name not cached or negative, a symlink, a
// non-directory, a Revalidator, a search check that is not a quick yes,
// a mount under RESOLVE_NO_XDEV) is left, with the rest of the path, to
// the full walk in parent, which then decides it exactly as if it had
// walked the whole path: the prefix makes only the decisions the full
// walk would make the same way (a cached positive step into a directory
// that is not a symlink, after a search check granted).

import "golang.org/x/sys/unix"

// dirAttrs are a directory's mode, owner and group, once read (known),
// for the next search check.
type dirAttrs struct {
	mode, uid, gid uint32
	known          bool
}

// cachedPrefix walks the components of *rest but its last that the
// dentry cache answers, from *cur, and leaves in *cur and *rest where it
// stopped and in *a what it learnt of *cur's attributes. It reports
// whether it took a step (then *cur is a directory). check says whether
// search permission is checked (the caller's credentials lack
// CAP_DAC_OVERRIDE). It works on pointers to the caller's variables, not
// a struct passed and returned: such copies of values just stored field
// by field stall on store forwarding.
func (w *walker) cachedPrefix(curp *location, restp *string, a *dirAttrs, check bool) (stepped bool) {
	c := &w.ns.dcache
	cur, rest := *curp, *restp
	st := &c.stripes[stripeIndex(ifaceWords(cur.node).data)]
	for {
		j, i := component(rest)
		if i == len(rest) {
			break // the last component is the caller's
		}
		if check && !a.searchable(cur.node) {
			break
		}
		e := c.probe(ifaceWords(cur.node), st, rest[j:i])
		if e == nil || e.child == nil || e.kind&(kindDir|kindLink) != kindDir {
			break
		}
		if w.ns.mountBits[e.cfw&3].Load()&e.cfb != 0 {
			next := w.ns.crossMounts(location{cur.mnt, e.child})
			if next.mnt != cur.mnt {
				if w.rflags&unix.RESOLVE_NO_XDEV != 0 || !isDir(next.node) {
					break
				}
				// e described the covered node: the next search check
				// reads the mount root's attributes.
				cur, rest, stepped, a.known = next, rest[i:], true, false
				st = &c.stripes[stripeIndex(ifaceWords(cur.node).data)]
				continue
			}
		}
		if check {
			a.known = false
			if e.perm != nil {
				a.mode, a.uid, a.gid = e.perm.PermAttrs()
				a.known = true
			}
		}
		cur.node, rest, stepped = e.child, rest[i:], true
		st = &c.stripes[e.cstripe]
	}
	*curp, *restp = cur, rest
	return stepped
}

// component returns where the first component of path begins (j, after
// any slashes) and ends (i, at a slash or the end).
func component(path string) (j, i int) {
	for j < len(path) && path[j] == '/' {
		j++
	}
	for i = j; i < len(path) && path[i] != '/'; i++ {
	}
	return j, i
}

// searchable is the search check's quick yes for directory n: true when
// every x bit of its mode is set (any class grants the search); false
// sends the walk to the full check.
func (a *dirAttrs) searchable(n Node) bool {
	if !a.known {
		var err error
		if a.mode, a.uid, a.gid, err = nodeAttrs(n); err != nil {
			return false
		}
		a.known = true
	}
	return a.mode&0o111 == 0o111
}
