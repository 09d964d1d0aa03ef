package block

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestPressure: with the live heap past 3/4 of the Go memory limit, the
// cache's limit drops by the excess (to the floor at most);
// once the pressure is gone it is back to the budget.
func TestPressure(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const budget = minProcessCache + 4<<20
	c := NewCache(budget)
	p := &pressure{c: c, budget: budget}
	p.samples = processSamples()
	p.check(time.Now())
	if got := c.Limit(); got != budget && !p.low {
		t.Fatalf("without pressure: limit %d, want the budget", got)
	}
	// A live heap 5 MiB or more past 3/4 of the limit: the budget less
	// that, here under the floor.
	ballast := make([]byte, 8<<20)
	runtime.GC()
	debug.SetMemoryLimit(4 << 20)
	p.check(time.Now())
	runtime.KeepAlive(ballast)
	if got := c.Limit(); got != minProcessCache {
		t.Errorf("live heap past the Go memory limit: cache limit %d, want %d", got, minProcessCache)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	p.check(time.Now())
	if got := c.Limit(); got != budget && !p.low {
		t.Errorf("pressure gone: limit %d, want the budget", got)
	}
}
