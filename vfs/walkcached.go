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
// that is not a symlink, after a search check granted). For resolve, the
// last component is taken here too when its dentry is positive and it
// needs no following (Linux's walk_component on the last name, still in
// RCU mode).

import (
	"math/bits"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirAttrs are a directory's mode, owner and group, once read (known),
// for the next search check.
type dirAttrs struct {
	mode, uid, gid uint32
	known          bool
}

// Flags of cachedPrefix's last component.
const (
	lastTake   = 1 << iota // walk the last component too (resolve, no trailing slash)
	lastFollow             // a symlink there is followed: leave it to the full walk
)

// cachedPrefix walks the components of *rest but its last that the
// dentry cache answers, from *cur, and leaves in *cur and *rest where it
// stopped. It reports whether it took a step (then *cur is a directory).
// With lastTake in last, it walks the last component too when it can,
// and then reports done, with *cur the result and *rest empty (a symlink
// there is the result unless lastFollow is set, which leaves it to the
// full walk). a is nil when no search permission is checked (the
// credentials have CAP_DAC_OVERRIDE); otherwise it is left holding what
// was learnt of *cur's attributes.
//
// The common steps run in fastSteps, a function that calls nothing (so
// its loop keeps its values in registers: Go spills every live value
// around a call); what needs a call (a search check, a mount, a long
// name, a first reference) is done here, one component at a time.
func (w *walker) cachedPrefix(cur *location, restp *string, a *dirAttrs, last uint8) (stepped, done bool) {
	c := w.ns.dcache
	node := cur.node
	st := &c.stripes[stripeIndex(ifaceWords(node).data)]
	rest := *restp
	for len(rest) > 0 && rest[0] == '/' {
		rest = rest[1:]
	}
	whole := len(rest)
	for {
		var e *dentry
		var i int
		var why uint8
		node, _, rest, e, i, why = c.fastSteps(&w.ns.mountBits, node, st, rest, last, a != nil)
		if why == fastDone {
			cur.node = node
			*restp = ""
			return true, true
		}
		if why == fastEnd || a != nil && !a.searchable(node) {
			break
		}
		if why == fastLong {
			if e = c.hit(node, rest[:i]); e == nil {
				break
			}
		} else if why == fastFound {
			c.used(e)
		} else {
			break
		}
		lastName := i == len(rest)
		if e.child == nil || e.kind&(kindDir|kindLink) != kindDir && !lastName ||
			lastName && e.kind&kindLink != 0 && last&lastFollow != 0 {
			break
		}
		cur.node = node
		if w.ns.mountBits[e.cfw%filterWords].Load()&e.cfb == 0 {
			cur.node = e.child
			if !lastName && a != nil {
				a.of(e)
			}
		} else if !w.crossCached(cur, e, a, lastName) {
			break
		}
		if lastName {
			*restp = ""
			return true, true
		}
		node = cur.node
		st = &c.stripes[stripeIndex(ifaceWords(node).data)]
		rest = rest[i+1:]
		for len(rest) > 0 && rest[0] == '/' {
			rest = rest[1:]
		}
	}
	cur.node = node
	*restp = rest
	return len(rest) < whole, false
}

// Why fastSteps stopped.
const (
	fastEnd   = iota // no component left for the prefix
	fastDone         // it walked the last component: node is the result
	fastFound        // rest[:i]'s dentry e needs the caller
	fastLong         // rest[:i] is longer than 16 bytes: the caller probes
	fastMiss         // rest[:i] is not cached, or its stripe is changing
)

// fastSteps is cachedPrefix's loop for the steps that need no call
// from directory node (whose stripe is st), while the next component of
// rest (which starts with one, or is empty) is a cached directory,
// referenced already, with no mount on it, it steps into it, and with
// lastTake in last, the last component too if it needs no following. It
// stops at the first component it cannot finish, rest[:i], with the
// reason (and the dentry, for fastFound). With one set (a search check
// runs before each lookup), it takes no step: it only probes.
func (c *dcache) fastSteps(mb *mountFilter, node Node, st *dcStripe, rest string, last uint8, one bool) (Node, *dcStripe, string, *dentry, int, uint8) {
	for len(rest) > 0 {
		i := componentEnd(rest)
		lastName := i == len(rest)
		if lastName && last&lastTake == 0 {
			break
		}
		if i > 16 {
			return node, st, rest, nil, i, fastLong
		}
		words := ifaceWords(node)
		var lo, hi uint64 // nameWords(rest[:i]), inline
		if p := unsafe.Pointer(unsafe.StringData(rest)); i >= 8 {
			lo, hi = load64(p), load64(unsafe.Add(p, i-8))
		} else if i >= 4 {
			lo, hi = uint64(load32(p)), uint64(load32(unsafe.Add(p, i-4)))
		} else {
			lo = uint64(*(*byte)(p)) | uint64(*(*byte)(unsafe.Add(p, i/2)))<<8 | uint64(*(*byte)(unsafe.Add(p, i-1)))<<16
		}
		h := c.hashWords(words.data, lo, hi, i)
		gen := st.gen.Load()
		if st.active.Load() != 0 {
			return node, st, rest, nil, i, fastMiss
		}
		e := c.buckets[h&c.mask].Load()
		for e != nil && !(e.hash == h && e.w0 == lo && e.w1 == hi && e.dirw == words && e.nlen == i) {
			e = e.next.Load()
		}
		if e == nil || e.reval != nil || st.gen.Load() != gen {
			return node, st, rest, nil, i, fastMiss
		}
		if one || !e.ref.Load() || e.child == nil || mb[e.cfw%filterWords].Load()&e.cfb != 0 ||
			(lastName && e.kind&kindLink != 0 && last&lastFollow != 0) ||
			(!lastName && e.kind&(kindDir|kindLink) != kindDir) {
			return node, st, rest, e, i, fastFound
		}
		if c.stats { // dcache.used's count, without its call
			c.shards[h&c.mask%dcShards].hits.Add(1)
		}
		if lastName {
			return e.child, st, "", nil, 0, fastDone
		}
		node, st = e.child, &c.stripes[e.cstripe]
		rest = rest[i+1:]
		for len(rest) > 0 && rest[0] == '/' {
			rest = rest[1:]
		}
	}
	return node, st, rest, nil, 0, fastEnd
}

// componentEnd returns the index of the first '/' in s, or len(s): eight
// bytes a step while eight remain (a word with a zero byte where s has a
// slash, found by the borrow trick of Hacker's Delight 6-1, whose lowest
// flagged byte is always the first zero), then byte by byte.
func componentEnd(s string) int {
	const ones, highs, slashes = 0x0101010101010101, 0x8080808080808080, 0x2f2f2f2f2f2f2f2f
	i := 0
	for ; len(s)-i >= 8; i += 8 {
		x := load64(unsafe.Pointer(unsafe.StringData(s[i:]))) ^ slashes
		if t := (x - ones) &^ x & highs; t != 0 {
			return i + bits.TrailingZeros64(t)>>3
		}
	}
	for i < len(s) && s[i] != '/' {
		i++
	}
	return i
}

// crossCached is cachedPrefix's step to e.child when the mount filter
// says a mount may be on it (lastName: e is the path's last component):
// *cur becomes the child, or the root of the mount on it. It returns
// false, with *cur unchanged, for what the full walk must decide: a
// crossing under RESOLVE_NO_XDEV (EXDEV), a mount root that is not a
// directory where the walk goes on.
func (w *walker) crossCached(cur *location, e *dentry, a *dirAttrs, lastName bool) bool {
	to, dir := w.crossing(cur.mnt, e)
	switch {
	case to.mnt == cur.mnt:
		if a != nil && !lastName {
			a.of(e)
		}
	case w.rflags&unix.RESOLVE_NO_XDEV != 0, !dir && !lastName:
		return false
	case a != nil:
		a.of(nil) // e described the covered node
	}
	*cur = to
	return true
}

// crossing is what crossMounts gave for a dentry's child reached
// through mount from, while the namespace's mount table was table: a
// published table is never changed (update makes a new one), so the
// answer holds exactly as long as the table is the namespace's.
type crossing struct {
	table *map[mountKey]*mount
	from  *mount
	to    location
	dir   bool // to.node is a directory; set only when to.mnt != from
}

// crossing returns where e.child, reached through mount from, leads
// past the mounts on it, and whether that is a mount root that is a
// directory; the answer is cached in e (Linux's walk answers the same
// from the dentry's DCACHE_MOUNTED and the mount hash, under
// mount_lock's seqcount).
func (w *walker) crossing(from *mount, e *dentry) (location, bool) {
	t := w.ns.mounts.Load()
	if x := e.cross.Load(); x != nil && x.table == t && x.from == from {
		return x.to, x.dir
	}
	return w.ns.newCrossing(from, e)
}

// newCrossing computes e.child's crossing from mount from, and caches it
// in e when no mount change ran meanwhile: seq is even and unchanged
// around the loads of the table and of mountList (which update replaces
// after mounts, inside seq's odd window), so both were the same table's.
//
//go:noinline
func (ns *Namespace) newCrossing(from *mount, e *dentry) (location, bool) {
	s := ns.rename.seq.Load()
	x := crossing{table: ns.mounts.Load(), from: from, to: ns.crossMounts(location{from, e.child})}
	if x.to.mnt != from {
		x.dir = isDir(x.to.node)
	}
	if s&1 == 0 && !ns.rename.retry(s) {
		c := x
		e.cross.Store(&c)
	}
	return x.to, x.dir
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
	return a.mode&(0o111|PermACL) == 0o111
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
