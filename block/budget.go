package block

// The process's buffer cache: one budget for every mount that does not set
// one of its own, as Linux's page cache is one pool for every file system,
// sized from the memory the process may use and given back under memory
// pressure.
//
// The budget (ProcessCacheLimit) is an eighth of the machine's physical
// memory, or a quarter of the Go memory limit (GOMEMLIMIT,
// debug.SetMemoryLimit) when that is smaller, and at least
// minProcessCache. Blocks come in only as file systems read them, so the
// budget is a ceiling, not an allocation.
//
// Pressure: after each garbage collection (the finalizer of an object
// only it keeps, set again by each run) the cache's limit is set again,
// without allocating:
//   - with a Go memory limit, when the live heap passes 3/4 of it, the
//     limit drops by the excess (the cache's blocks are heap, so the next
//     collection sees them gone);
//   - when the machine's available memory (MemAvailable) is under 1/16 of
//     its total, checked at most once a second, the limit drops to half
//     of what the cache holds, collection after collection;
//   - otherwise it goes back to the budget.
// Never below minProcessCache. Lowering the limit evicts at once
// (SetLimit), by the cache's CLOCK; held and dirty blocks stay.

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// minProcessCache is the floor of the process cache's budget.
const minProcessCache = 16 << 20

// ProcessCacheLimit is the process's buffer cache budget: an eighth of
// physical memory, or a quarter of the Go memory limit if smaller, at
// least 16 MiB (see the file comment).
func ProcessCacheLimit() int64 {
	budget := int64(math.MaxInt64)
	if total, _, ok := memInfo(); ok {
		budget = total / 8
	}
	if lim := debug.SetMemoryLimit(-1); lim < math.MaxInt64 {
		budget = min(budget, lim/4)
	}
	if budget == math.MaxInt64 {
		budget = 1 << 30 // memory unknown
	}
	return max(budget, minProcessCache)
}

// ProcessCache returns the process's buffer cache, made at first use
// with the budget ProcessCacheLimit gives then and reclaimed under memory
// pressure (see the file comment). File systems use it for their mounts
// unless a mount sets a budget of its own.
func ProcessCache() *Cache { return processCache() }

var processCache = sync.OnceValue(func() *Cache {
	c := NewCache(ProcessCacheLimit())
	p := &pressure{c: c, budget: c.Limit()}
	p.samples = processSamples()
	p.arm()
	return c
})

// processSamples are the runtime metrics pressure reads.
func processSamples() []metrics.Sample {
	return []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
}

// pressure adjusts a cache's limit after each garbage collection. Its
// fields are used by one cleanup at a time (each arms the next).
type pressure struct {
	c       *Cache
	budget  int64
	samples []metrics.Sample
	// lastAvail is when MemAvailable was read last; low is what it said.
	lastAvail time.Time
	low       bool
	mem       memReader
}

// arm runs check after every garbage collection: the finalizer of an
// object nothing else keeps, set again on the same object by each run,
// allocates nothing (a cleanup would need a new object each time, and the
// allocation counts of whatever runs beside it would show it).
func (p *pressure) arm() {
	var fin func(*[64]byte)
	fin = func(o *[64]byte) {
		p.check(time.Now())
		runtime.SetFinalizer(o, fin)
	}
	runtime.SetFinalizer(new([64]byte), fin)
}

// check sets the cache's limit for the memory as it is now.
func (p *pressure) check(now time.Time) {
	target := p.budget
	if lim := debug.SetMemoryLimit(-1); lim < math.MaxInt64 {
		metrics.Read(p.samples)
		if s := p.samples[0]; s.Value.Kind() == metrics.KindUint64 {
			live, high := int64(min(s.Value.Uint64(), math.MaxInt64)), lim/4*3
			if live > high {
				target -= live - high
			}
		}
	}
	if now.Sub(p.lastAvail) >= time.Second {
		p.lastAvail = now
		total, avail, ok := p.mem.read()
		p.low = ok && avail < total/16
	}
	if p.low {
		target = min(target, p.c.bytes.Load()/2)
	}
	target = max(target, minProcessCache)
	if target != p.c.Limit() {
		p.c.SetLimit(target)
	}
}
