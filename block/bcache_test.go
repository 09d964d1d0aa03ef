package block_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/iov"
)

// memDisk is a block device over memory that counts its reads.
type memDisk struct {
	mu    sync.RWMutex
	b     []byte
	reads atomic.Int64
}

func newMemDisk(size int) *memDisk {
	d := &memDisk{b: make([]byte, size)}
	for i := 0; i+8 <= size; i += 8 {
		binary.LittleEndian.PutUint64(d.b[i:], uint64(i))
	}
	return d
}

func (d *memDisk) SectorSize() int { return 512 }
func (d *memDisk) Size() int64     { return int64(len(d.b)) }
func (d *memDisk) ReadOnly() bool  { return false }
func (d *memDisk) Flush() error    { return nil }

func (d *memDisk) ReadIter(dst iov.Iter, off int64) (int, error) {
	if err := block.Check(off, dst.Len(), 512, d.Size()); err != nil {
		return 0, err
	}
	d.reads.Add(1)
	d.mu.RLock()
	defer d.mu.RUnlock()
	return dst.CopyOut(d.b[off : off+int64(dst.Len())]), nil
}

func (d *memDisk) WriteIter(src iov.Iter, off int64) (int, error) {
	if err := block.Check(off, src.Len(), 512, d.Size()); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return src.CopyIn(d.b[off : off+int64(src.Len())]), nil
}

func (d *memDisk) block(blk, bs int) []byte {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return append([]byte(nil), d.b[blk*bs:(blk+1)*bs]...)
}

func get(t testing.TB, v *block.View, blk uint64) []byte {
	t.Helper()
	b, err := v.Get(blk)
	if err != nil {
		t.Fatalf("Get(%d): %v", blk, err)
	}
	defer b.Release()
	return append([]byte(nil), b.Data()...)
}

func TestCacheHitsAndBytes(t *testing.T) {
	d := newMemDisk(1 << 20)
	c := block.NewCache(64 << 10)
	v := c.View(d, 1024)
	defer v.Close()
	for round := range 3 {
		for blk := range 16 {
			if got := get(t, v, uint64(blk)); !bytes.Equal(got, d.block(blk, 1024)) {
				t.Fatalf("round %d block %d: wrong bytes", round, blk)
			}
		}
	}
	st := c.Stats()
	if st.Misses != 16 || st.Hits != 32 || d.reads.Load() != 16 {
		t.Errorf("misses %d hits %d device reads %d, want 16, 32, 16", st.Misses, st.Hits, d.reads.Load())
	}
	if st.Blocks != 16 || st.Bytes != 16<<10 {
		t.Errorf("%d blocks, %d bytes cached, want 16 and %d", st.Blocks, st.Bytes, 16<<10)
	}
	if _, err := v.Get(1 << 10); err == nil {
		t.Error("Get past the device end succeeded")
	}
}

// TestCacheLimit reads far more blocks than fit: the cache never holds
// more than its limit, and every read returns the device's bytes.
func TestCacheLimit(t *testing.T) {
	d := newMemDisk(4 << 20)
	c := block.NewCache(32 << 10)
	v := c.View(d, 4096)
	defer v.Close()
	for blk := range 1024 {
		b := uint64(blk * 7 % 1024)
		if got := get(t, v, b); !bytes.Equal(got, d.block(int(b), 4096)) {
			t.Fatalf("block %d: wrong bytes", b)
		}
		if st := c.Stats(); st.Bytes > st.Limit {
			t.Fatalf("after %d reads: %d bytes cached, limit %d", blk+1, st.Bytes, st.Limit)
		}
	}
	st := c.Stats()
	if st.Peak > st.Limit || st.Peak < st.Limit-4096*16 || st.Evictions == 0 {
		t.Errorf("peak %d, limit %d, %d evictions", st.Peak, st.Limit, st.Evictions)
	}
}

// TestCacheScanResistance: blocks used twice survive a one-time scan of
// many more blocks than the cache holds (2Q), where LRU or CLOCK would
// lose them all.
func TestCacheScanResistance(t *testing.T) {
	const bs = 1024
	d := newMemDisk(64 << 20)
	c := block.NewCache(1 << 20) // 1024 blocks
	v := c.View(d, bs)
	defer v.Close()
	const hot = 200
	for range 2 {
		for blk := range hot {
			get(t, v, uint64(blk))
		}
	}
	// Push the hot blocks through probation: the first evictions promote
	// them to the protected ring.
	for blk := hot; blk < hot+8192; blk++ {
		get(t, v, uint64(blk))
		if blk%64 == 0 {
			for h := range hot {
				get(t, v, uint64(h))
			}
		}
	}
	before := c.Stats()
	for blk := 10000; blk < 10000+16384; blk++ { // the scan: 16x the cache
		get(t, v, uint64(blk))
	}
	mid := c.Stats()
	for blk := range hot {
		get(t, v, uint64(blk))
	}
	after := c.Stats()
	hits := after.Hits - mid.Hits
	if hits < hot*9/10 {
		t.Errorf("after a scan of 16384 blocks, %d of %d hot blocks were still cached (want at least 90%%)", hits, hot)
	}
	if mid.Misses-before.Misses != 16384 {
		t.Errorf("the scan missed %d times, want 16384", mid.Misses-before.Misses)
	}
}

// TestCachePinnedAndDirtyStay: a held, a pinned and a dirty block are not
// evicted however many blocks pass through; Writeback writes the dirty
// one to the device and leaves the cached copy.
func TestCachePinnedAndDirtyStay(t *testing.T) {
	const bs = 1024
	d := newMemDisk(8 << 20)
	c := block.NewCache(16 << 10)
	v := c.View(d, bs)
	defer v.Close()
	held, err := v.Get(1)
	if err != nil {
		t.Fatal(err)
	}
	pinned, _ := v.Get(2)
	pinned.Pin()
	pinned.Release()
	dirty, _ := v.Get(3)
	copy(dirty.Data(), "new bytes")
	if !dirty.MarkDirty() {
		t.Fatal("MarkDirty of a cached block failed")
	}
	dirty.Release()
	for blk := 100; blk < 2100; blk++ {
		get(t, v, uint64(blk))
	}
	misses := c.Stats().Misses
	for _, blk := range []uint64{1, 2, 3} {
		b, _ := v.Get(blk)
		b.Release()
	}
	if m := c.Stats().Misses - misses; m != 0 {
		t.Errorf("%d of the held, pinned and dirty blocks were evicted", m)
	}
	if got := d.block(3, bs); bytes.HasPrefix(got, []byte("new bytes")) {
		t.Fatal("the dirty block reached the device before Writeback")
	}
	if err := v.Writeback(); err != nil {
		t.Fatal(err)
	}
	if got := d.block(3, bs); !bytes.HasPrefix(got, []byte("new bytes")) {
		t.Error("Writeback did not write the dirty block")
	}
	b, _ := v.Get(3)
	if b.Dirty() || !bytes.HasPrefix(b.Data(), []byte("new bytes")) {
		t.Error("after Writeback the block is still dirty or lost its bytes")
	}
	b.Release()
	held.Release()
	pinned.Unpin()
	for blk := 3000; blk < 5000; blk++ {
		get(t, v, uint64(blk))
	}
	misses = c.Stats().Misses
	for _, blk := range []uint64{1, 2, 3} {
		get(t, v, blk)
	}
	if m := c.Stats().Misses - misses; m != 3 {
		t.Errorf("released blocks: %d of 3 were read again, want all evicted", m)
	}
}

// TestCacheInvalidatedByFileWrites: a write through a block.File of the
// device, aligned or not, is seen by the next Get.
func TestCacheInvalidatedByFileWrites(t *testing.T) {
	const bs = 4096
	d := newMemDisk(1 << 20)
	c := block.NewCache(1 << 20)
	v := c.View(d, bs)
	defer v.Close()
	f := block.NewFile(d, nil)
	for _, w := range []struct {
		off int64
		n   int
	}{{0, 4096}, {4096 + 100, 10}, {3*4096 - 5, 4106}, {40960, 512}} {
		for blk := range 16 {
			get(t, v, uint64(blk))
		}
		data := bytes.Repeat([]byte{byte(w.off)}, w.n)
		if n, err := f.Write(data, w.off); n != w.n {
			t.Fatalf("write %d at %d: %d, %v", w.n, w.off, n, err)
		}
		for blk := range 16 {
			if got := get(t, v, uint64(blk)); !bytes.Equal(got, d.block(blk, bs)) {
				t.Errorf("after a write of %d at %d: block %d is stale", w.n, w.off, blk)
			}
		}
	}
	if c.Stats().Invalidated == 0 {
		t.Error("no block was counted as invalidated")
	}
}

// TestCacheInvalidateRace: readers fill the cache while a writer changes
// blocks through a File; after each write returns, a Get must see it,
// even when a reader's device read raced with the write.
func TestCacheInvalidateRace(t *testing.T) {
	const bs = 512
	d := newMemDisk(64 << 10)
	c := block.NewCache(32 << 10)
	v := c.View(d, bs)
	defer v.Close()
	f := block.NewFile(d, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := r; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if b, err := v.Get(uint64(i % 8)); err == nil {
					b.Release()
				}
			}
		}()
	}
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		blk := i % 8
		var word [8]byte
		binary.LittleEndian.PutUint64(word[:], uint64(i))
		if _, err := f.Write(word[:], int64(blk*bs)); err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint64(get(t, v, uint64(blk))); got != uint64(i) {
			t.Fatalf("write %d: block %d reads %d after the write returned", i, blk, got)
		}
	}
	close(stop)
	wg.Wait()
}

// TestCacheHitAllocs: a cache hit allocates nothing.
func TestCacheHitAllocs(t *testing.T) {
	d := newMemDisk(1 << 20)
	c := block.NewCache(1 << 20)
	v := c.View(d, 4096)
	defer v.Close()
	get(t, v, 5)
	if a := testing.AllocsPerRun(1000, func() {
		b, _ := v.Get(5)
		b.Release()
	}); a != 0 {
		t.Errorf("a hit allocates %v times", a)
	}
}

// TestCacheViewClose: closing a view drops its blocks and unregisters the
// device; the cache's bytes go back to 0.
func TestCacheViewClose(t *testing.T) {
	d := newMemDisk(1 << 20)
	c := block.NewCache(1 << 20)
	v := c.View(d, 1024)
	for blk := range 50 {
		get(t, v, uint64(blk))
	}
	v.Close()
	if st := c.Stats(); st.Blocks != 0 || st.Bytes != 0 {
		t.Errorf("after Close: %d blocks, %d bytes", st.Blocks, st.Bytes)
	}
}

func BenchmarkCacheGet(b *testing.B) {
	d := newMemDisk(16 << 20)
	c := block.NewCache(16 << 20)
	v := c.View(d, 1024)
	defer v.Close()
	for blk := range 1024 {
		bb, _ := v.Get(uint64(blk))
		bb.Release()
	}
	b.Run("hit", func(b *testing.B) {
		b.ReportAllocs()
		i := uint64(0)
		for b.Loop() {
			bb, _ := v.Get(i & 1023)
			bb.Release()
			i++
		}
	})
	b.Run("hit-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := uint64(0)
			for pb.Next() {
				bb, _ := v.Get(i & 1023)
				bb.Release()
				i++
			}
		})
	})
}

// TestCacheCharges: charges (what a file system keeps outside the blocks)
// count in the same budget as the blocks and are evicted by the same
// CLOCK, calling their evict; held, pinned and dirty blocks still stay;
// a charge that cannot fit is refused, as is a second charge of one id;
// an invalidation of the device, Uncharge and Close drop charges.
func TestCacheCharges(t *testing.T) {
	const bs = 1024
	d := newMemDisk(8 << 20)
	c := block.NewCache(16 << 10)
	v := c.View(d, bs)
	defer v.Close()
	pinned, _ := v.Get(1)
	pinned.Pin()
	pinned.Release()
	dirty, _ := v.Get(2)
	dirty.MarkDirty()
	dirty.Release()

	var evicted atomic.Int64
	for id := range 64 {
		if v.Charge(uint64(id), 700, func() { evicted.Add(1) }) == nil {
			t.Fatalf("charge %d refused", id)
		}
		get(t, v, uint64(100+id)) // blocks and charges compete
		if st := c.Stats(); st.Bytes > st.Limit {
			t.Fatalf("after charge %d: %d bytes, limit %d", id, st.Bytes, st.Limit)
		}
	}
	st := c.Stats()
	if evicted.Load() == 0 || st.Peak > st.Limit || st.Charges == 0 || st.ChargedBytes != int64(st.Charges)*700 {
		t.Errorf("%d charges evicted; peak %d limit %d; %d charges of %d bytes", evicted.Load(), st.Peak, st.Limit, st.Charges, st.ChargedBytes)
	}
	if int(evicted.Load())+st.Charges != 64 {
		t.Errorf("%d evicted + %d held, want 64 charges", evicted.Load(), st.Charges)
	}
	misses := st.Misses
	get(t, v, 1)
	get(t, v, 2)
	if m := c.Stats().Misses - misses; m != 0 {
		t.Errorf("%d of the pinned and dirty blocks were evicted for charges", m)
	}

	// In a cache of 16 blocks a shard, a touched charge survives a scan
	// of blocks that an untouched one does not (2Q: it is promoted on
	// the hand's next pass).
	big := block.NewCache(256 << 10)
	bv := big.View(d, bs)
	defer bv.Close()
	var hotGone, coldGone atomic.Bool
	hot := bv.Charge(1000, 700, func() { hotGone.Store(true) })
	cold := bv.Charge(1001, 700, func() { coldGone.Store(true) })
	if hot == nil || cold == nil {
		t.Fatal("charges refused")
	}
	for blk := range 2000 {
		hot.Touch()
		get(t, bv, uint64(1000+blk))
	}
	if hotGone.Load() || !coldGone.Load() {
		t.Errorf("after a scan: touched charge evicted %v, untouched one %v", hotGone.Load(), coldGone.Load())
	}
	bv.Uncharge(hot)
	if !hotGone.Load() {
		t.Error("Uncharge did not call evict")
	}
	if v.Charge(2000, 17<<10, func() {}) != nil {
		t.Error("a charge larger than the budget was accepted")
	}
	if b := v.Charge(3000, 100, func() {}); b == nil || v.Charge(3000, 100, func() {}) != nil {
		t.Error("a charge of an id charged already was accepted, or the first refused")
	}

	var dropped atomic.Int64
	for id := range 4 {
		v.Charge(uint64(4000+id), 100, func() { dropped.Add(1) })
	}
	f := block.NewFile(d, nil)
	if _, err := f.Write([]byte("x"), 512*1000); err != nil {
		t.Fatal(err)
	}
	if got := dropped.Load(); got != 4 || c.Stats().Charges != 0 {
		t.Errorf("a write to the device dropped %d of 4 charges; %d charges left", got, c.Stats().Charges)
	}
	pinned.Unpin()
	v.Writeback()
}

// TestCacheDemote: blocks demoted (a file system keeps their contents in
// a charge now) are evicted before the charges. As in a walk of many
// small directories, each block is read twice (the listing, then ".."),
// and its listing charged and used, for more directories than the cache
// holds blocks and listings of: with the blocks demoted, fewer than half
// as many charges are evicted as without (a shard that has no demoted
// block yet when a charge comes still evicts what it has).
func TestCacheDemote(t *testing.T) {
	const bs = 1024
	d := newMemDisk(8 << 20)
	evictedCharges := func(demote bool) int64 {
		c := block.NewCache(64 << 10)
		v := c.View(d, bs)
		defer v.Close()
		var evicted atomic.Int64
		for id := range 48 {
			get(t, v, uint64(id))
			get(t, v, uint64(id))
			if b := v.Charge(uint64(id), bs, func() { evicted.Add(1) }); b != nil {
				b.Touch()
			}
			if demote {
				v.Demote(uint64(id))
			}
		}
		if st := c.Stats(); st.Peak > st.Limit || st.Evictions == 0 {
			t.Errorf("peak %d, limit %d, %d evictions", st.Peak, st.Limit, st.Evictions)
		}
		return evicted.Load()
	}
	with, without := evictedCharges(true), evictedCharges(false)
	if 2*with >= without {
		t.Errorf("charges evicted: %d with the blocks demoted, %d without; want fewer than half", with, without)
	}
}

// TestCacheSetLimit: lowering a cache's limit evicts at once down to it,
// keeping held blocks; raising it lets blocks in again.
func TestCacheSetLimit(t *testing.T) {
	d := newMemDisk(1 << 20)
	c := block.NewCache(256 << 10)
	v := c.View(d, 4096)
	defer v.Close()
	held, err := v.Get(0)
	if err != nil {
		t.Fatal(err)
	}
	for blk := range 64 {
		get(t, v, uint64(blk))
	}
	if st := c.Stats(); st.Bytes != 256<<10 {
		t.Fatalf("%d bytes cached, want %d", st.Bytes, 256<<10)
	}
	if !c.SetLimit(32 << 10) {
		t.Fatal("SetLimit(32K) left more than the limit")
	}
	if st := c.Stats(); st.Bytes > 32<<10 || st.Limit != 32<<10 || st.Evictions < 56 {
		t.Fatalf("after SetLimit(32K): %d bytes, limit %d, %d evictions", st.Bytes, st.Limit, st.Evictions)
	}
	before := d.reads.Load()
	if got := get(t, v, 0); !bytes.Equal(got, d.block(0, 4096)) || d.reads.Load() != before {
		t.Error("the held block was evicted")
	}
	held.Release()
	// Everything held: the limit cannot be met, and SetLimit says so.
	var bufs []*block.Buf
	for blk := range 8 {
		b, err := v.Get(uint64(blk))
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
	}
	if c.SetLimit(0) {
		t.Error("SetLimit(0) with every block held reported success")
	}
	for _, b := range bufs {
		b.Release()
	}
	c.SetLimit(256 << 10)
	for blk := range 64 {
		get(t, v, uint64(blk))
	}
	if st := c.Stats(); st.Bytes != 256<<10 {
		t.Errorf("after raising the limit again: %d bytes cached, want %d", st.Bytes, 256<<10)
	}
}

// TestProcessCacheLimit: the process's budget is a quarter of the Go
// memory limit when that is below an eighth of physical memory, never
// under 16 MiB, and the process cache is one cache.
func TestProcessCacheLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	debug.SetMemoryLimit(math.MaxInt64)
	free := block.ProcessCacheLimit()
	if free < 16<<20 {
		t.Fatalf("budget %d without a Go memory limit, under 16 MiB", free)
	}
	debug.SetMemoryLimit(free * 2) // a quarter of it is half the budget
	if got := block.ProcessCacheLimit(); got != max(free/2, 16<<20) {
		t.Errorf("with a Go memory limit of %d: budget %d, want %d", free*2, got, max(free/2, 16<<20))
	}
	debug.SetMemoryLimit(1 << 20)
	if got := block.ProcessCacheLimit(); got != 16<<20 {
		t.Errorf("with a Go memory limit of 1 MiB: budget %d, want the floor, 16 MiB", got)
	}
	if c := block.ProcessCache(); c.Limit() < 16<<20 {
		t.Errorf("the process cache's limit %d is under the floor", c.Limit())
	}
}
