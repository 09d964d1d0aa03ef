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

// walkState is where a walk stands between components: the directory
// reached, what is left of the path, and the directory's mode, owner and
// group once read (known) for the next search check.
type walkState struct {
	cur            location
	rest           string
	mode, uid, gid uint32
	known, stepped bool // stepped: cur is a step's result, tested to be a directory
}

// cachedPrefix walks the components of s.rest but its last that the
// dentry cache answers, from s.cur. check says whether search permission
// is checked (the caller's credentials lack CAP_DAC_OVERRIDE).
func (w *walker) cachedPrefix(s walkState, check bool) walkState {
	c := &w.ns.dcache
	for {
		rest := s.rest
		for len(rest) > 0 && rest[0] == '/' {
			rest = rest[1:]
		}
		i := indexSlash(rest)
		if i < 0 {
			return s // the last component is the caller's
		}
		// The search check's quick yes: every x bit set, or no check.
		if check {
			if !s.known {
				var err error
				if s.mode, s.uid, s.gid, err = nodeAttrs(s.cur.node); err != nil {
					return s
				}
				s.known = true
			}
			if s.mode&0o111 != 0o111 {
				return s
			}
		}
		e := c.hit(s.cur.node, rest[:i])
		if e == nil || e.child == nil || e.kind&(kindDir|kindLink) != kindDir {
			return s
		}
		next := location{s.cur.mnt, e.child}
		if w.ns.mountBits.mayCover(e.child) {
			if next = w.ns.crossMounts(next); next.mnt != s.cur.mnt {
				if w.rflags&unix.RESOLVE_NO_XDEV != 0 || !isDir(next.node) {
					return s
				}
				e = nil // it described the covered node
			}
		}
		s.known = false
		if check {
			if e != nil && e.perm != nil {
				s.mode, s.uid, s.gid = e.perm.PermAttrs()
				s.known = true
			}
		}
		s.cur, s.rest, s.stepped = next, rest[i:], true
	}
}
