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
// stopped. It reports whether it took a step (then *cur is a directory).
// a is nil when no search permission is checked (the credentials have
// CAP_DAC_OVERRIDE); otherwise it is left holding what was learnt of
// *cur's attributes. It works on the caller's variables through
// pointers, not on a struct passed and returned (those copies of values
// just stored field by field stalled on store forwarding), and keeps few
// values live in its loop, so the byte scan stays in registers.
func (w *walker) cachedPrefix(cur *location, restp *string, a *dirAttrs) (stepped bool) {
	c := &w.ns.dcache
	st := &c.stripes[stripeIndex(ifaceWords(cur.node).data)]
	rest := *restp
	for len(rest) > 0 && rest[0] == '/' {
		rest = rest[1:]
	}
	for {
		// rest starts with a component; find its end.
		i := 0
		for i < len(rest) && rest[i] != '/' {
			i++
		}
		if i == len(rest) {
			break // the last component is the caller's
		}
		if a != nil && !a.searchable(cur.node) {
			break
		}
		e := c.probe(ifaceWords(cur.node), st, rest[:i])
		if e == nil || e.child == nil || e.kind&(kindDir|kindLink) != kindDir {
			break
		}
		if w.ns.mountBits[e.cfw&3].Load()&e.cfb != 0 {
			if !w.crossCached(cur, e, a) {
				break
			}
			st = &c.stripes[stripeIndex(ifaceWords(cur.node).data)]
		} else {
			cur.node = e.child
			st = &c.stripes[e.cstripe]
			if a != nil {
				a.of(e)
			}
		}
		stepped = true
		rest = rest[i+1:]
		for len(rest) > 0 && rest[0] == '/' {
			rest = rest[1:]
		}
	}
	*restp = rest
	return stepped
}

// crossCached is cachedPrefix's step to e.child when the mount filter
// says a mount may be on it: *cur becomes the child, or the root of the
// mount on it. It returns false, with *cur unchanged, for what the full
// walk must decide: a crossing under RESOLVE_NO_XDEV (EXDEV), a mount
// root that is not a directory.
func (w *walker) crossCached(cur *location, e *dentry, a *dirAttrs) bool {
	next := w.ns.crossMounts(location{cur.mnt, e.child})
	if next.mnt == cur.mnt {
		*cur = next
		if a != nil {
			a.of(e)
		}
		return true
	}
	if w.rflags&unix.RESOLVE_NO_XDEV != 0 || !isDir(next.node) {
		return false
	}
	*cur = next
	if a != nil {
		a.of(nil) // e described the covered node
	}
	return true
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

// of sets a to the attributes of the child e describes, when its
// PermAttrer can tell them without a Stat (e nil: unknown yet).
func (a *dirAttrs) of(e *dentry) {
	a.known = false
	if e != nil && e.perm != nil {
		a.mode, a.uid, a.gid = e.perm.PermAttrs()
		a.known = true
	}
}
