package vfs

// The dentry cache (Linux fs/dcache.c): what a directory's Lookup answered
// for a name, positive (the child Node) or negative (ENOENT), so a walk
// over names it has seen calls no file system code. It caches Lookup, and
// of the child only what cannot change while the node exists (whether it
// is a directory, whether a symlink, its PermAttrer: a node's file type is
// fixed). The walk still applies its own checks to every node it reaches
// (permission checks on attributes read live, symlinks, and mounts, which
// it asks the mount filter about on every step, and the mount table when
// the filter does not rule a mount out), so a cached walk sees
// the same mounts and makes the same permission decisions as an uncached
// one. ".." is never cached (parentOf asks the file system).
//
// Structure. A fixed array of hash buckets, each a singly linked chain of
// dentries published with atomic pointers; the key is (directory Node,
// name) and the hash mixes the directory's pointer with the name. Writers
// (insert, remove, evict) hold the mutex of the bucket's shard; readers
// hold nothing: a lookup is a few atomic loads, as in Linux's RCU-walk,
// and a removed dentry stays readable for a reader still on it (the
// garbage collector is the RCU grace period). Each shard keeps its
// dentries on a CLOCK ring and evicts when it holds limit/dcShards.
// Directories whose Node is not a pointer are not cached (their
// interface words do not identify them).
//
// Consistency, per directory stripe (the directory's hash selects one of
// dcStripes counters; unrelated directories may share one, which costs
// only cache misses):
//   - A change (create, unlink, rmdir, rename, link, symlink, mknod)
//     calls invalidate(dir, name) before the file system's operation and
//     .done() after it: begin raises the stripe's active count; done
//     bumps its generation, removes the (dir, name) dentries, and lowers
//     active. Rename does it for both names at once (invalidate2).
//   - A lookup uses the cache only while no change is active on its
//     stripe, and only if the generation it read first is unchanged after
//     it found the dentry; otherwise it asks the file system.
//   - A miss notes the generation before calling Lookup and inserts the
//     answer, under the shard lock, only if the generation is unchanged
//     and no change is active. So an answer from before a change can
//     never be inserted after it, and once a change's done has returned,
//     no lookup that starts later sees the old answer (sequential
//     consistency of sync/atomic).
//
// Costs: a hit hashes the name (two word loads for names up to 16
// bytes), follows the chain and compares words; names up to 24 bytes
// live in the dentry, so a hit touches one dentry cache line. Hit
// counters are opt-in (Namespace.CountDentryCacheHits): an atomic add per
// hit is not free.
//
// Permission checks (generic_permission's MAY_EXEC on each directory)
// belong in the walk before the call to lookup, where Lookup was called:
// they then run on cached and uncached steps alike. Nothing here caches
// a permission decision.
//
// Entry points for code that changes a namespace (vfs/*.go, and the *at,
// mknod and renameat2 variants to come; RENAME_EXCHANGE and
// RENAME_WHITEOUT change both names, so invalidate2 covers them): wrap the
// file system call with
//
//	defer p.ns.dcache.invalidate(dir.node, name).done()
//	defer p.ns.dcache.invalidate2(odir.node, oname, ndir.node, nname).done()
//
// placed right before the call that changes the directory. Unmount calls
// p.ns.dcache.forgetFS(fs) to drop the detached file system's dentries;
// mount needs nothing (mounts are not cached).
//
// A file system whose directories change behind the VFS (hostfs over a
// live host tree) implements Revalidator (ops.go) on its directories: a
// cached answer is then used only when Revalidate confirms it, Linux's
// d_revalidate.

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

const (
	dcShards  = 64
	dcStripes = 256
	// DefaultDentryCacheSize is the number of dentries a namespace keeps
	// unless SetDentryCacheSize says otherwise.
	DefaultDentryCacheSize = 1 << 18
)

type dcache struct {
	seed    maphash.Seed
	k0, k1  uint64 // keys of the inline hash
	buckets []atomic.Pointer[dentry]
	mask    uint64
	// off disables the cache (SetDentryCacheSize(0)); stats turns on
	// the hit counters (an atomic add per hit, so off by default).
	off     bool
	stats   bool
	shards  [dcShards]dcShard
	stripes [dcStripes]dcStripe
}

type dcShard struct {
	// mu protects the chains of the buckets b with b%dcShards == this
	// shard's index, and the CLOCK ring: a circular list through
	// dentry.prev/rnext, hand its next victim, n its length. New dentries
	// go just behind the hand.
	mu    sync.Mutex
	hand  *dentry
	n     int
	limit int

	hits, negHits, misses, evictions atomic.Uint64
	_                                [64]byte
}

// dcStripe is the change state of the directories that hash to it.
type dcStripe struct {
	active atomic.Int32
	gen    atomic.Uint64
	_      [52]byte
}

type dentry struct {
	// The fields the hit path reads come first, in one cache line: the
	// hash, the chain link, the directory's words and a short name kept
	// inline (a separate string would cost another cache miss).
	hash uint64
	next atomic.Pointer[dentry]
	// dirw is dir's interface words (type, pointer): the key compare,
	// without runtime.ifaceeq. dir keeps the object alive, so no other
	// node can have the same words while the dentry exists.
	dirw iwords
	nlen int
	// w0, w1 are nameWords of a name up to 16 bytes: a hit compares
	// them with the words the hash was made of, not the bytes.
	w0, w1 uint64
	short  [dcShortName]byte // the name, if it fits
	name   string            // the name, if it does not

	dir   Node
	child Node     // nil for a negative dentry
	kind  nodeKind // child's, which never changes (an inode's type is fixed)
	// cstripe is the stripe of child as a directory, and cfw, cfb its
	// word and bit in the mount filter (mountfilter.go): what the next
	// step of a cached walk would compute from child's pointer.
	cstripe, cfw uint8
	cfb          uint64
	perm         PermAttrer // child's, if it has one: the search check's attributes
	fs           FileSystem
	reval        Revalidator // dir's, if it has one
	ref          atomic.Bool
	// cross caches child's mount crossing (walkcached.go), for a child
	// the mount filter does not rule out.
	cross atomic.Pointer[crossing]
	// prev and rnext link the shard's ring, under its mu.
	prev, rnext *dentry
}

// dcShortName is the longest name a dentry keeps inline.
const dcShortName = 24

// is reports whether the dentry's name is name.
func (e *dentry) is(name string) bool {
	if e.nlen != len(name) {
		return false
	}
	if len(name) <= 16 {
		// The words, as in hash: no call to memequal.
		b0, b1 := nameWords(name)
		return e.w0 == b0 && e.w1 == b1
	}
	if len(name) <= dcShortName {
		return string(e.short[:len(name)]) == name
	}
	return e.name == name
}

// nameWords packs a name of at most 16 bytes into two words that differ
// for different names of the same length: overlapping loads of its first
// and last 8 (or 4) bytes, or its bytes.
func nameWords(s string) (uint64, uint64) {
	n := len(s)
	p := unsafe.Pointer(unsafe.StringData(s))
	if n >= 8 {
		return load64(p), load64(unsafe.Add(p, n-8))
	}
	if n >= 4 {
		return uint64(load32(p)), uint64(load32(unsafe.Add(p, n-4)))
	}
	if n > 0 {
		return uint64(*(*byte)(p)) | uint64(*(*byte)(unsafe.Add(p, n/2)))<<8 | uint64(*(*byte)(unsafe.Add(p, n-1)))<<16, 0
	}
	return 0, 0
}

// load64 is the little-endian word of the 8 bytes at p: one load where
// unaligned loads are allowed.
func load64(p unsafe.Pointer) uint64 {
	if unalignedOK {
		return *(*uint64)(p)
	}
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(p), 8))
}

// load32 is the little-endian word of the 4 bytes at p.
func load32(p unsafe.Pointer) uint32 {
	if unalignedOK {
		return *(*uint32)(p)
	}
	return binary.LittleEndian.Uint32(unsafe.Slice((*byte)(p), 4))
}

// unalignedOK is true on the little-endian architectures whose loads need
// no alignment.
const unalignedOK = runtime.GOARCH == "amd64" || runtime.GOARCH == "386" || runtime.GOARCH == "arm64" || runtime.GOARCH == "ppc64le"

// setName stores name in e, inline if it fits (so it does not keep the
// path it was cut from alive either way).
func (e *dentry) setName(name string) {
	e.nlen = len(name)
	if len(name) <= 16 {
		e.w0, e.w1 = nameWords(name)
	}
	if len(name) <= dcShortName {
		copy(e.short[:], name)
		return
	}
	e.name = string(append([]byte(nil), name...))
}

func (c *dcache) init(size int) {
	*c = dcache{seed: maphash.MakeSeed(), stats: c.stats}
	c.k0, c.k1 = maphash.Comparable(c.seed, 0), maphash.Comparable(c.seed, 1)
	if size <= 0 {
		c.off = true
		size = 1
	}
	n := 1
	for n < size/2 { // chains of two dentries when full
		n <<= 1
	}
	c.buckets = make([]atomic.Pointer[dentry], n)
	c.mask = uint64(n - 1)
	for i := range c.shards {
		c.shards[i].limit = max(1, size/dcShards)
	}
}

// SetDentryCacheSize bounds the dentry cache to n entries (0 turns it
// off) and empties it. Call it before the namespace is in use.
func (ns *Namespace) SetDentryCacheSize(n int) { ns.dcache.init(n) }

// CountDentryCacheHits turns the dentry cache's hit counters on or off
// (Hits and NegHits in DentryCacheStats); they cost an atomic add per
// cached lookup, so they are off unless asked for. Misses and evictions
// are always counted. Call it before the namespace is in use.
func (ns *Namespace) CountDentryCacheHits(on bool) { ns.dcache.stats = on }

// DentryCacheStats are the dentry cache's counters.
type DentryCacheStats struct {
	Entries   int    // dentries cached now
	Limit     int    // the bound
	Hits      uint64 // lookups answered with a positive dentry
	NegHits   uint64 // lookups answered with a negative dentry (ENOENT)
	Misses    uint64 // lookups that asked the file system
	Evictions uint64
}

// DentryCacheStats returns the namespace's dentry cache counters.
func (ns *Namespace) DentryCacheStats() DentryCacheStats {
	c := ns.dcache
	var st DentryCacheStats
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Entries += s.n
		st.Limit += s.limit
		s.mu.Unlock()
		st.Hits += s.hits.Load()
		st.NegHits += s.negHits.Load()
		st.Misses += s.misses.Load()
		st.Evictions += s.evictions.Load()
	}
	return st
}

// dirWord returns the pointer that identifies dir, and false if dir's
// dynamic type is not a pointer (then two equal values may have different
// words, and dir is not cached).
func dirWord(dir Node) (uintptr, bool) {
	if reflect.TypeOf(dir).Kind() != reflect.Pointer {
		return 0, false
	}
	return ifaceWords(dir).data, true
}

// iwords are an interface value's two words.
type iwords struct{ typ, data uintptr }

// ifaceWords returns n's type and data words. They are loaded one by one:
// a single 16-byte load of the two words just stored to the stack misses
// store forwarding and stalls.
func ifaceWords(n Node) iwords {
	p := (*[2]uintptr)(unsafe.Pointer(&n))
	return iwords{p[0], p[1]}
}

func mix[T uintptr | uint64](w T) uint64 {
	x := uint64(w)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

// hash returns the dentry hash of name in directory dir, and dir's
// pointer word. Names up to 16 bytes, nearly all of them, are hashed
// inline from two (overlapping) word loads; longer ones by maphash.
func (c *dcache) hash(dir Node, name string) (uint64, uintptr) {
	w := ifaceWords(dir).data
	n := len(name)
	if n > 16 {
		return mix(w) ^ maphash.String(c.seed, name), w
	}
	lo, hi := nameWords(name)
	return c.hashWords(w, lo, hi, n), w
}

// hashWords is hash of a name of n <= 16 bytes whose nameWords are lo
// and hi: one 64x64->128-bit multiply of the keyed words, folded
// (wyhash's mum).
func (c *dcache) hashWords(w uintptr, lo, hi uint64, n int) uint64 {
	h, l := bits.Mul64(uint64(w)^c.k0^lo, hi^c.k1^uint64(n)<<56)
	return h ^ l
}

func (c *dcache) stripe(w uintptr) *dcStripe {
	return &c.stripes[stripeIndex(w)]
}

// stripeIndex is the stripe of the directory whose pointer word is w.
func stripeIndex(w uintptr) uint8 { return uint8(mix(w) >> 56) }

// nodeKind is what the walk asks of every node it reaches, kept in the
// dentry so that a cached step needs no type assertion: kindKnown, and
// whether the node is a directory and whether a symlink (Readlinker).
type nodeKind uint8

const (
	kindKnown nodeKind = 1 << iota
	kindDir
	kindLink
)

// kindOf computes n's nodeKind.
func kindOf(n Node) nodeKind {
	if n == nil {
		return 0
	}
	k := kindKnown
	if isDir(n) {
		k |= kindDir
	}
	if _, ok := n.(Readlinker); ok {
		k |= kindLink
	}
	return k
}

// hit is the cached step of the walk: the dentry of name in directory
// node if one is cached and usable now (no change active on the stripe,
// the generation unchanged, Revalidate agreeing), or nil. A negative
// dentry is returned too (its child is nil). It calls no file system code
// and needs no Lookuper: a dentry exists only for a directory whose
// Lookup made it, and a node's type never changes. No dentry holds "",
// "." or "..", nor a name longer than NAME_MAX: the walk answers those
// before it calls lookup. A directory with a Revalidator is left to
// lookup, which revalidates (and drops what Revalidate rejects). The
// cached prefix of a walk (walkcached.go) makes the same probe inline.
func (c *dcache) hit(node Node, name string) *dentry {
	if c.off {
		return nil
	}
	h, w := c.hash(node, name)
	st := c.stripe(w)
	gen := st.gen.Load()
	if st.active.Load() != 0 {
		return nil
	}
	e := c.find(h, node, name)
	if e == nil || e.reval != nil || st.gen.Load() != gen {
		return nil
	}
	c.used(e)
	return e
}

// used marks e referenced (for CLOCK) and counts the hit if hits are
// counted. It inlines: the rest is in usedSlow.
func (c *dcache) used(e *dentry) {
	if !e.ref.Load() || c.stats {
		c.usedSlow(e)
	}
}

//go:noinline
func (c *dcache) usedSlow(e *dentry) {
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	if !c.stats {
		return
	}
	s := &c.shards[e.hash&c.mask%dcShards]
	if e.child == nil {
		s.negHits.Add(1)
	} else {
		s.hits.Add(1)
	}
}

// lookup is dir.Lookup(name) through the cache; node is dir as a Node
// and fs the file system it belongs to. e is the dentry of the answer
// (its kind and perm describe child), nil when there is none; the caller
// must not change it.
func (c *dcache) lookup(node Node, dir Lookuper, name string, fs FileSystem) (child Node, e *dentry, err error) {
	if c.off {
		child, err = dir.Lookup(name)
		return child, nil, err
	}
	h, w := c.hash(node, name)
	st := c.stripe(w)
	gen := st.gen.Load()
	if st.active.Load() == 0 {
		if e := c.find(h, node, name); e != nil && st.gen.Load() == gen {
			if e.reval == nil || e.reval.Revalidate(name, e.child) {
				c.used(e)
				if e.child == nil {
					return nil, nil, errENOENT
				}
				return e.child, e, nil
			}
			c.remove(&c.shards[h&c.mask%dcShards], &c.buckets[h&c.mask], e)
		}
	}
	return c.miss(node, dir, name, fs, h, st, gen)
}

// find returns the dentry of (node, name), whose hash is h, or nil. It
// takes no lock. Only pointer-shaped directories get dentries (miss
// checks), and their type word differs from any other type's, so the
// words of any node can be compared without that check.
func (c *dcache) find(h uint64, node Node, name string) *dentry {
	words := ifaceWords(node)
	for e := c.buckets[h&c.mask].Load(); e != nil; e = e.next.Load() {
		if e.hash == h && e.dirw.data == words.data && e.dirw.typ == words.typ && e.is(name) {
			return e
		}
	}
	return nil
}

// miss asks the file system and caches its answer.
//
//go:noinline
func (c *dcache) miss(node Node, dir Lookuper, name string, fs FileSystem, h uint64, st *dcStripe, gen uint64) (Node, *dentry, error) {
	s := &c.shards[h&c.mask%dcShards]
	s.misses.Add(1)
	child, err := dir.Lookup(name)
	if err != nil && err != errENOENT {
		return nil, nil, err
	}
	if _, ok := dirWord(node); !ok {
		return child, nil, err
	}
	e := &dentry{hash: h, dirw: ifaceWords(node), dir: node, child: child, fs: fs, kind: kindOf(child)}
	e.perm, _ = child.(PermAttrer)
	if child != nil {
		cw := ifaceWords(child).data
		e.cstripe = stripeIndex(cw)
		fw, fb := bitOf(cw)
		e.cfw, e.cfb = uint8(fw), fb
	}
	e.setName(name)
	e.reval, _ = node.(Revalidator)
	c.insert(s, &c.buckets[h&c.mask], st, gen, e)
	if err != nil {
		return nil, nil, err
	}
	return child, e, nil
}

// insert adds e unless its stripe changed since gen or a dentry for the
// same key is there.
func (c *dcache) insert(s *dcShard, b *atomic.Pointer[dentry], st *dcStripe, gen uint64, e *dentry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.active.Load() != 0 || st.gen.Load() != gen {
		return
	}
	for o := b.Load(); o != nil; o = o.next.Load() {
		if o.hash == e.hash && o.dirw == e.dirw && o.nlen == e.nlen && o.short == e.short && o.name == e.name {
			return
		}
	}
	if s.n >= s.limit {
		c.evict(s)
	}
	e.next.Store(b.Load())
	b.Store(e)
	if s.hand == nil {
		e.prev, e.rnext = e, e
		s.hand = e
	} else {
		e.rnext, e.prev = s.hand, s.hand.prev
		e.prev.rnext = e
		s.hand.prev = e
	}
	s.n++
}

// evict drops one dentry by CLOCK; s.mu is held.
func (c *dcache) evict(s *dcShard) {
	for range 2*s.n + 1 {
		e := s.hand
		if e.ref.Load() {
			e.ref.Store(false)
			s.hand = e.rnext
			continue
		}
		c.unlink(s, e)
		s.evictions.Add(1)
		return
	}
}

// remove drops e if it is still cached.
func (c *dcache) remove(s *dcShard, b *atomic.Pointer[dentry], e *dentry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for o := b.Load(); o != nil; o = o.next.Load() {
		if o == e {
			c.unlink(s, e)
			return
		}
	}
}

// unlink takes e off its chain and its shard's ring; s.mu is held.
func (c *dcache) unlink(s *dcShard, e *dentry) {
	b := &c.buckets[e.hash&c.mask]
	if b.Load() == e {
		b.Store(e.next.Load())
	} else {
		for o := b.Load(); o != nil; o = o.next.Load() {
			if o.next.Load() == e {
				o.next.Store(e.next.Load())
				break
			}
		}
	}
	if s.n == 1 {
		s.hand = nil
	} else {
		if s.hand == e {
			s.hand = e.rnext
		}
		e.prev.rnext, e.rnext.prev = e.rnext, e.prev
	}
	e.prev, e.rnext = nil, nil
	s.n--
}

// dchange is one namespace change in progress: up to two (dir, name)
// pairs. Its done method ends it.
type dchange struct {
	c            *dcache
	dir1, dir2   Node
	name1, name2 string
}

// invalidate begins a change of name in dir; call done on the result
// after the file system's operation, whether it failed or not.
func (c *dcache) invalidate(dir Node, name string) dchange {
	return c.invalidate2(dir, name, nil, "")
}

// invalidate2 begins a change of two names at once (rename).
func (c *dcache) invalidate2(dir1 Node, name1 string, dir2 Node, name2 string) dchange {
	ch := dchange{c: c, dir1: dir1, name1: name1, dir2: dir2, name2: name2}
	for _, d := range [2]Node{dir1, dir2} {
		if w, ok := c.word(d); ok {
			c.stripe(w).active.Add(1)
		}
	}
	return ch
}

func (c *dcache) word(d Node) (uintptr, bool) {
	if d == nil || c.off {
		return 0, false
	}
	return dirWord(d)
}

// done ends the change: bump the generation, drop the dentries, lower
// active.
func (ch dchange) done() {
	c := ch.c
	for i, d := range [2]Node{ch.dir1, ch.dir2} {
		w, ok := c.word(d)
		if !ok {
			continue
		}
		name := ch.name1
		if i == 1 {
			name = ch.name2
		}
		st := c.stripe(w)
		st.gen.Add(1)
		h, _ := c.hash(d, name)
		b := &c.buckets[h&c.mask]
		s := &c.shards[h&c.mask%dcShards]
		s.mu.Lock()
		for e := b.Load(); e != nil; e = e.next.Load() {
			if e.hash == h && e.dir == d && e.is(name) {
				c.unlink(s, e)
			}
		}
		s.mu.Unlock()
		st.active.Add(-1)
	}
}

// forgetFS drops every dentry of file system fs, after an unmount.
func (c *dcache) forgetFS(fs FileSystem) {
	if c.off {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for e, k := s.hand, s.n; k > 0; k-- {
			next := e.rnext
			if e.fs == fs {
				c.unlink(s, e)
			}
			e = next
		}
		s.mu.Unlock()
	}
}
