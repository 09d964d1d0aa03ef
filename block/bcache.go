package block

// The buffer cache: Linux's buffer heads over the block device's page
// cache, reduced to what a file system's metadata path needs. A Cache holds
// device blocks keyed by (device, block number, block size), up to a byte
// limit; file systems read superblocks, descriptors, bitmaps, inode tables,
// directory and index blocks through a View of it, and file data does not
// go through it.
//
// Invariants and locks:
//   - A Cache has cacheShards shards, chosen by block number. Each shard's
//     mu protects its map and its two CLOCK rings. The hit path takes only
//     the shard's read lock and sets the block's referenced bit with an
//     atomic store, so concurrent readers of one block never serialise and
//     readers of different shards never share a lock.
//   - Eviction is 2Q with CLOCK rings (scan resistant): a block enters the
//     probation ring; when the hand reaches it, a block referenced since
//     it came in moves to the protected ring, and one not referenced is
//     evicted. The protected ring keeps up to 3/4 of the budget; past
//     that, its hand demotes unreferenced blocks to probation. A one-time
//     scan of many blocks therefore passes through probation without
//     displacing the blocks that were used twice.
//   - bytes counts the bytes of blocks in the maps, and of charges: what
//     a file system keeps outside the blocks but derived from them (ext4's
//     parsed directory listings), entered with View.Charge under a key of
//     block size 0, and evicted by the same CLOCK (the cache then calls
//     the charge's evict). A miss, or a charge, reserves its bytes before
//     it inserts (evicting as needed), so bytes never exceeds limit; if
//     nothing can be evicted (every block held or dirty), the block is
//     handed out uncached (and a charge refused). Any invalidation of a
//     device drops its charges too.
//   - A block with holds > 0 (handed out and not yet released, or pinned)
//     or marked dirty is never evicted. Dirty blocks are written back by
//     View.Writeback, the hook a journal needs.
//   - Invalidation: every device that has a View is registered in
//     devices, with a generation counter. Invalidate (called by File's
//     writes and by the loop driver on LOOP_CLR_FD, LOOP_CONFIGURE,
//     LOOP_SET_STATUS64, LOOP_SET_CAPACITY and LOOP_SET_BLOCK_SIZE) first
//     bumps the generation, then drops the blocks. A miss notes the
//     generation before it reads the device and inserts only if it is
//     unchanged, under the shard lock, so a read that raced with a write
//     or a rebinding never leaves old bytes in the cache.
//   - Lock order: a device driver's own lock (loop's mu), then
//     devices.mu, then a shard's mu. No device I/O happens under a cache
//     lock.

import (
	"sync"
	"sync/atomic"

	"github.com/iovfs/iovfs/iov"
)

const cacheShards = 16

// A Cache is a bounded set of device blocks shared by the Views made from
// it. All its methods are safe for concurrent use.
type Cache struct {
	// limit is the budget now: what NewCache or SetLimit gave, lowered
	// for a while under memory pressure for the process's cache
	// (budget.go).
	limit atomic.Int64
	// bytes is the size of the blocks in the maps; peak its maximum.
	bytes atomic.Int64
	peak  atomic.Int64
	// charges counts the charges (Charge) in the maps.
	charges atomic.Int64
	// hand picks the next shard to evict from when the inserting shard
	// has nothing to give.
	hand   atomic.Uint32
	shards [cacheShards]cacheShard
}

type bufKey struct {
	dev Device
	blk uint64
	bs  int
}

type cacheShard struct {
	// mu protects m, prob, prot, probBytes and protBytes, and the ring
	// fields of the Bufs in them.
	mu                   sync.RWMutex
	m                    map[bufKey]*Buf
	prob, prot           clockRing
	probBytes, protBytes int64

	hits, misses, evictions, invalidated atomic.Uint64
	_                                    [64]byte // keep shards off each other's cache lines
}

// clockRing is one CLOCK list: a circular doubly linked list of blocks
// and a hand. A block is added just behind the hand, so the hand reaches
// the blocks in the order they came (FIFO, as 2Q's A1in), and removal
// keeps that order.
type clockRing struct {
	hand *Buf
	n    int
}

func (r *clockRing) len() int { return r.n }

func (r *clockRing) add(b *Buf, protected bool) {
	b.protected = protected
	if r.hand == nil {
		b.prev, b.next = b, b
		r.hand = b
	} else {
		b.next, b.prev = r.hand, r.hand.prev
		b.prev.next = b
		r.hand.prev = b
	}
	r.n++
}

func (r *clockRing) remove(b *Buf) {
	if r.n == 1 {
		r.hand = nil
	} else {
		if r.hand == b {
			r.hand = b.next
		}
		b.prev.next, b.next.prev = b.next, b.prev
	}
	b.prev, b.next = nil, nil
	r.n--
}

func (r *clockRing) current() *Buf { return r.hand }

func (r *clockRing) advance() { r.hand = r.hand.next }

// A Buf is one cached block. Its Data may be read by whoever holds it
// (from View.Get until Release); it must be changed only under the
// caller's own protocol for dirty blocks (MarkDirty after the change).
type Buf struct {
	key  bufKey
	data []byte
	s    *cacheShard // nil for a block handed out uncached
	// size is what the entry counts in the budget: len(data) for a
	// block, the charged bytes for a charge (Charge), whose evict is
	// called when the cache drops it.
	size  int64
	evict func()

	// holds counts Get references and pins; ref is the CLOCK bit; dirty
	// marks a block that must be written back before it can go.
	holds    atomic.Int32
	ref      atomic.Bool
	dirty    atomic.Bool
	verified atomic.Uint64

	// prev, next and protected are the block's place in its shard's
	// rings, under the shard's mu; inMap is false once the block left the
	// cache.
	prev, next *Buf
	protected  bool
	inMap      bool
}

// Data returns the block's bytes, BlockSize long.
func (b *Buf) Data() []byte { return b.data }

// Block returns the block number.
func (b *Buf) Block() uint64 { return b.key.blk }

// Release drops the reference Get returned. The Buf must not be used after.
func (b *Buf) Release() { b.holds.Add(-1) }

// Pin keeps the block in the cache until Unpin, as a journal pins a
// buffer it has logged. A pin is a reference like Get's.
func (b *Buf) Pin() { b.holds.Add(1) }

// Unpin drops a Pin.
func (b *Buf) Unpin() { b.holds.Add(-1) }

// MarkDirty records that Data was changed and must reach the device: the
// block is not evicted until View.Writeback has written it. A block that
// Get handed out uncached (see Get) cannot be marked dirty; MarkDirty
// reports false then, and the caller must write it itself.
func (b *Buf) MarkDirty() bool {
	if b.s == nil {
		return false
	}
	b.dirty.Store(true)
	return true
}

// Dirty reports whether the block waits for write-back.
func (b *Buf) Dirty() bool { return b.dirty.Load() }

// Verified reports whether SetVerified(tag) was the last mark set on this
// copy of the block: a file system's note that it has checked the block
// (its checksum, say) for the use tag names (a directory's inode number,
// say, when the checksum depends on it), Linux's buffer_verified. A block
// read again after an invalidation starts unverified. tag must not be 0.
func (b *Buf) Verified(tag uint64) bool { return b.verified.Load() == tag }

// SetVerified sets the mark Verified reports.
func (b *Buf) SetVerified(tag uint64) { b.verified.Store(tag) }

// NewCache returns an empty cache of at most limit bytes of blocks.
func NewCache(limit int64) *Cache {
	c := &Cache{}
	c.limit.Store(limit)
	for i := range c.shards {
		c.shards[i].m = map[bufKey]*Buf{}
	}
	return c
}

// Limit returns the cache's byte budget.
func (c *Cache) Limit() int64 { return c.limit.Load() }

// SetLimit sets the cache's byte budget to limit and evicts blocks and
// charges (by its CLOCK) until what it holds fits, or until only held and
// dirty blocks are left. It reports whether what the cache holds fits.
func (c *Cache) SetLimit(limit int64) bool {
	c.limit.Store(limit)
	for failed := 0; c.bytes.Load() > c.limit.Load(); {
		s := &c.shards[c.hand.Add(1)%cacheShards]
		s.mu.Lock()
		ok := s.evictOne(c)
		s.mu.Unlock()
		if ok {
			failed = 0
		} else if failed++; failed > cacheShards {
			return false
		}
	}
	return true
}

// CacheStats are a cache's counters.
type CacheStats struct {
	Limit, Bytes, Peak int64  // budget, bytes cached now, most ever cached
	Blocks             int    // blocks cached now
	Hits, Misses       uint64 // Get calls served from memory, and from the device
	Evictions          uint64 // blocks and charges dropped to make room
	Invalidated        uint64 // blocks and charges dropped by Invalidate
	// Charges and ChargedBytes are the charges (View.Charge) held now and
	// their bytes, which Bytes includes.
	Charges      int
	ChargedBytes int64
}

// Stats returns the counters, summed over the shards.
func (c *Cache) Stats() CacheStats {
	st := CacheStats{Limit: c.limit.Load(), Bytes: c.bytes.Load(), Peak: c.peak.Load()}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		for k, b := range s.m {
			if k.bs == 0 {
				st.Charges++
				st.ChargedBytes += b.size
			} else {
				st.Blocks++
			}
		}
		s.mu.RUnlock()
		st.Hits += s.hits.Load()
		st.Misses += s.misses.Load()
		st.Evictions += s.evictions.Load()
		st.Invalidated += s.invalidated.Load()
	}
	return st
}

func (c *Cache) shard(blk uint64) *cacheShard {
	return &c.shards[(blk*0x9E3779B97F4A7C15)>>60]
}

// A View is a cache's window on one device at one block size: what a
// mounted file system reads its metadata through. Close it when the file
// system lets go of the device.
type View struct {
	c    *Cache
	f    File // reads at block offsets of any alignment
	dev  Device
	bs   int
	ds   *devState
	once sync.Once
}

// View returns a view of d's blocks of bs bytes (a power of two of at
// least 512) and registers d for invalidation.
func (c *Cache) View(d Device, bs int) *View {
	return &View{c: c, f: File{dev: d}, dev: d, bs: bs, ds: register(d, c, bs)}
}

// BlockSize returns the view's block size.
func (v *View) BlockSize() int { return v.bs }

// Cache returns the cache the view reads through.
func (v *View) Cache() *Cache { return v.c }

// Get returns block blk (bytes blk*bs up to (blk+1)*bs of the device),
// held until Release. It reads the device on a miss; an error is the
// device's (EIO for a block past the readable end). Under memory
// pressure, with every cached block held or dirty, the block is read and
// returned without being cached.
func (v *View) Get(blk uint64) (*Buf, error) {
	k := bufKey{v.dev, blk, v.bs}
	s := v.c.shard(blk)
	s.mu.RLock()
	b := s.m[k]
	if b != nil {
		b.holds.Add(1)
		if !b.ref.Load() {
			b.ref.Store(true)
		}
	}
	s.mu.RUnlock()
	if b != nil {
		s.hits.Add(1)
		return b, nil
	}
	s.misses.Add(1)
	return v.fill(k, s)
}

// fill reads block k on a miss and inserts it if no invalidation of the
// device happened meanwhile.
func (v *View) fill(k bufKey, s *cacheShard) (*Buf, error) {
	gen := v.ds.gen.Load()
	b := &Buf{key: k, data: make([]byte, v.bs), size: int64(v.bs)}
	b.holds.Store(1)
	n, err := v.f.ReadIter(iov.Buf(b.data), int64(k.blk)*int64(v.bs))
	if err == nil && n < v.bs {
		err = errEIO
	}
	if err != nil {
		return nil, err
	}
	c := v.c
	if !c.reserve(s, int64(v.bs)) {
		return b, nil
	}
	s.mu.Lock()
	if old := s.m[k]; old != nil || v.ds.gen.Load() != gen {
		s.mu.Unlock()
		c.bytes.Add(-int64(v.bs))
		if old != nil {
			old.holds.Add(1)
			old.ref.Store(true)
			return old, nil
		}
		return b, nil
	}
	b.s, b.inMap = s, true
	s.m[k] = b
	s.prob.add(b, false)
	s.probBytes += int64(v.bs)
	s.mu.Unlock()
	return b, nil
}

// reserve makes room for n bytes and counts them in; false if nothing
// could be evicted. s is the shard the block will go to, tried first.
func (c *Cache) reserve(s *cacheShard, n int64) bool {
	limit := c.limit.Load()
	if n > limit {
		return false
	}
	tried := 0
	for {
		cur := c.bytes.Load()
		if cur+n <= limit {
			if c.bytes.CompareAndSwap(cur, cur+n) {
				for p := c.peak.Load(); cur+n > p && !c.peak.CompareAndSwap(p, cur+n); p = c.peak.Load() {
				}
				return true
			}
			continue
		}
		victim := s
		if tried > 0 {
			victim = &c.shards[c.hand.Add(1)%cacheShards]
		}
		victim.mu.Lock()
		ok := victim.evictOne(c)
		victim.mu.Unlock()
		if ok {
			tried = 0
			continue
		}
		if tried++; tried > 2*cacheShards {
			return false
		}
	}
}

// evictOne drops one unheld, clean block of the shard, by 2Q-CLOCK, and
// reports whether it did; mu is held.
func (s *cacheShard) evictOne(c *Cache) bool {
	protMax := c.limit.Load() / cacheShards * 3 / 4
	for i := 3*(s.prob.len()+s.prot.len()) + 3; i > 0; i-- {
		if s.prob.len() > 0 && (s.protBytes <= protMax || s.prot.len() == 0) {
			b := s.prob.current()
			switch {
			case b.holds.Load() > 0 || b.dirty.Load():
				s.prob.advance()
			case b.ref.Load():
				b.ref.Store(false)
				s.prob.remove(b)
				s.probBytes -= b.size
				s.prot.add(b, true)
				s.protBytes += b.size
			default:
				s.drop(c, b)
				s.evictions.Add(1)
				return true
			}
			continue
		}
		if s.prot.len() == 0 {
			return false
		}
		b := s.prot.current()
		switch {
		case b.holds.Load() > 0 || b.dirty.Load():
			s.prot.advance()
		case b.ref.Load():
			b.ref.Store(false)
			s.prot.advance()
		default:
			s.prot.remove(b)
			s.protBytes -= b.size
			s.prob.add(b, false)
			s.probBytes += b.size
		}
	}
	return false
}

// unring takes b off whichever ring it is on; mu is held.
func (s *cacheShard) unring(b *Buf) {
	if b.protected {
		s.prot.remove(b)
		s.protBytes -= b.size
	} else {
		s.prob.remove(b)
		s.probBytes -= b.size
	}
}

// drop takes b out of the shard; mu is held.
func (s *cacheShard) drop(c *Cache, b *Buf) {
	delete(s.m, b.key)
	s.unring(b)
	b.inMap = false
	c.bytes.Add(-b.size)
	if b.evict != nil {
		c.charges.Add(-1)
		b.evict()
	}
}

// Writeback writes every dirty block of the view to the device, in block
// order within a shard, and clears its dirty mark; the first error stops
// it. Other caches' copies of the written blocks are invalidated; this
// cache's stay.
func (v *View) Writeback() error {
	for i := range v.c.shards {
		s := &v.c.shards[i]
		var dirty []*Buf
		s.mu.RLock()
		for k, b := range s.m {
			if k.dev == v.dev && k.bs == v.bs && b.dirty.Load() {
				b.holds.Add(1)
				dirty = append(dirty, b)
			}
		}
		s.mu.RUnlock()
		for j, b := range dirty {
			b.dirty.Store(false)
			off := int64(b.key.blk) * int64(v.bs)
			_, err := v.f.writeIter(iov.Buf(b.data), off)
			if err == nil {
				invalidate(v.dev, off, int64(v.bs), v.c)
			}
			if err != nil {
				b.dirty.Store(true)
				for _, r := range dirty[j:] {
					r.holds.Add(-1)
				}
				return err
			}
			b.holds.Add(-1)
		}
	}
	return nil
}

// Close drops the view's blocks from the cache (dirty ones too: write
// them back first) and unregisters the device.
func (v *View) Close() {
	v.once.Do(func() {
		v.c.dropRange(v.dev, 0, -1)
		unregister(v.dev, v.c, v.bs)
	})
}

// dropRange removes the blocks of d that overlap bytes [off, off+n) (all
// of d's blocks if n < 0).
func (c *Cache) dropRange(d Device, off, n int64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, b := range s.m {
			if k.dev != d {
				continue
			}
			if n >= 0 && k.bs != 0 { // a charge goes with any change of d
				start := int64(k.blk) * int64(k.bs)
				if start >= off+n || start+int64(k.bs) <= off {
					continue
				}
			}
			s.drop(c, b)
			s.invalidated.Add(1)
		}
		s.mu.Unlock()
	}
}

// dropBlocks removes the blocks of d at block size bs from first to last,
// by key, for a small range.
func (c *Cache) dropBlocks(d Device, bs int, first, last uint64) {
	for blk := first; blk <= last; blk++ {
		s := c.shard(blk)
		k := bufKey{d, blk, bs}
		s.mu.Lock()
		if b := s.m[k]; b != nil {
			s.drop(c, b)
			s.invalidated.Add(1)
		}
		s.mu.Unlock()
	}
}

// Charge counts size bytes that a file system keeps about this view's
// device outside its blocks (a parsed directory listing, say) in the
// cache's budget, as one more entry under key id (unique among the
// view's charges): the limit then bounds blocks and charges together,
// and the same 2Q CLOCK evicts both. Room is made by evicting as for a
// block. It returns the entry, or nil if the bytes do not fit (more than
// the limit, or nothing evictable) or id is charged already. When the
// cache drops the entry (eviction, an invalidation of the device, Close,
// Uncharge), it calls evict, under a shard lock: evict must let go of
// what was charged and must not call the cache. Call Touch on the entry
// at each use, as Get marks a block.
func (v *View) Charge(id uint64, size int64, evict func()) *Buf {
	return v.c.charge(v.dev, id, size, evict)
}

// Charge is View.Charge for memory tied to no device's blocks (no
// invalidation drops it): a cache used for charges alone, as a budget
// with eviction.
func (c *Cache) Charge(id uint64, size int64, evict func()) *Buf {
	return c.charge(nil, id, size, evict)
}

func (c *Cache) charge(d Device, id uint64, size int64, evict func()) *Buf {
	k := bufKey{d, id, 0}
	s := c.shard(id)
	if size <= 0 || !c.reserve(s, size) {
		return nil
	}
	b := &Buf{key: k, size: size, evict: evict, s: s}
	s.mu.Lock()
	if s.m[k] != nil {
		s.mu.Unlock()
		c.bytes.Add(-size)
		return nil
	}
	b.inMap = true
	s.m[k] = b
	s.prob.add(b, false)
	s.probBytes += size
	c.charges.Add(1)
	s.mu.Unlock()
	return b
}

// Uncharge is Cache.Uncharge.
func (v *View) Uncharge(b *Buf) { v.c.Uncharge(b) }

// Uncharge drops charge b, if the cache still holds it, calling its
// evict.
func (c *Cache) Uncharge(b *Buf) {
	s := b.s
	s.mu.Lock()
	if b.inMap && s.m[b.key] == b {
		s.drop(c, b)
	}
	s.mu.Unlock()
}

// Demote makes block blk, if cached, unheld and clean, the next one its
// shard evicts unless it is used again first: unreferenced, in probation,
// at the hand. A file system calls it for blocks whose contents it now
// keeps in a better form (a directory's blocks, once charged as a
// listing), so that eviction takes them before what is still used.
func (v *View) Demote(blk uint64) {
	s := v.c.shard(blk)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.m[bufKey{v.dev, blk, v.bs}]
	if b == nil || b.holds.Load() > 0 || b.dirty.Load() {
		return
	}
	b.ref.Store(false)
	s.unring(b)
	s.prob.add(b, false)
	s.probBytes += b.size
	s.prob.hand = b
}

// Touch marks a charge (or a held block) used, for the CLOCK.
func (b *Buf) Touch() {
	if !b.ref.Load() {
		b.ref.Store(true)
	}
}

// dropCharges removes every charge on d.
func (c *Cache) dropCharges(d Device) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, b := range s.m {
			if k.dev == d && k.bs == 0 {
				s.drop(c, b)
				s.invalidated.Add(1)
			}
		}
		s.mu.Unlock()
	}
}

// devState is a registered device: its invalidation generation and the
// caches (with their block sizes) that have views of it.
type devState struct {
	gen  atomic.Uint64
	refs map[*Cache]map[int]int // cache → block size → views
}

// devices is the invalidation registry. watched counts its entries so a
// write to an unwatched device costs one atomic load.
var devices struct {
	mu      sync.Mutex
	m       map[Device]*devState
	watched atomic.Int32
}

// register records a view of d in cache c at block size bs.
func register(d Device, c *Cache, bs int) *devState {
	devices.mu.Lock()
	defer devices.mu.Unlock()
	if devices.m == nil {
		devices.m = map[Device]*devState{}
	}
	ds := devices.m[d]
	if ds == nil {
		ds = &devState{refs: map[*Cache]map[int]int{}}
		devices.m[d] = ds
		devices.watched.Add(1)
	}
	if ds.refs[c] == nil {
		ds.refs[c] = map[int]int{}
	}
	ds.refs[c][bs]++
	return ds
}

// unregister undoes one register.
func unregister(d Device, c *Cache, bs int) {
	devices.mu.Lock()
	defer devices.mu.Unlock()
	ds := devices.m[d]
	if ds == nil || ds.refs[c] == nil {
		return
	}
	if ds.refs[c][bs]--; ds.refs[c][bs] <= 0 {
		delete(ds.refs[c], bs)
	}
	if len(ds.refs[c]) == 0 {
		delete(ds.refs, c)
	}
	if len(ds.refs) == 0 {
		delete(devices.m, d)
		devices.watched.Add(-1)
	}
}

// Invalidate tells every cache that bytes [off, off+n) of d changed
// behind it: their copies are dropped, and reads in flight are not
// cached. n < 0 means the whole device (a loop device rebound or
// resized). Block drivers call it when a device's contents change other
// than through a cache: File's writes do, and so does the loop driver.
func Invalidate(d Device, off, n int64) {
	if devices.watched.Load() == 0 {
		return
	}
	invalidate(d, off, n, nil)
}

// invalidate is Invalidate sparing cache except.
func invalidate(d Device, off, n int64, except *Cache) {
	devices.mu.Lock()
	defer devices.mu.Unlock()
	ds := devices.m[d]
	if ds == nil {
		return
	}
	ds.gen.Add(1)
	for c, sizes := range ds.refs {
		if c == except {
			continue
		}
		for bs := range sizes {
			if n >= 0 && n/int64(bs) < 256 {
				if n == 0 {
					continue
				}
				c.dropBlocks(d, bs, uint64(off/int64(bs)), uint64((off+n-1)/int64(bs)))
				if c.charges.Load() != 0 {
					c.dropCharges(d)
				}
				continue
			}
			c.dropRange(d, off, n)
			break
		}
	}
}
