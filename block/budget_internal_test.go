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

func TestMeminfo(t *testing.T) {
	for _, tc := range []struct {
		in           string
		total, avail int64
		ok           bool
	}{
		{"MemTotal:       32795872 kB\nMemFree:        1 kB\nMemAvailable:   20000000 kB\n", 32795872 << 10, 20000000 << 10, true},
		{"MemFree: 1 kB\nMemAvailable: 2 kB\nMemTotal: 3 kB", 3 << 10, 2 << 10, true},
		{"MemTotal: 3 kB\n", 0, 0, false},                                        // no MemAvailable
		{"MemTotalX: 3 kB\nMemAvailable: 2 kB\n", 0, 0, false},                   // another field
		{"MemTotal: kB\nMemAvailable: 2 kB\n", 0, 0, false},                      // no digits
		{"MemTotal: 0 kB\nMemAvailable: 0 kB\n", 0, 0, false},                    // no memory
		{"MemTotal: 99999999999999999999 kB\nMemAvailable: 1 kB\n", 0, 0, false}, // overflow
		{"", 0, 0, false},
	} {
		total, avail, ok := meminfo([]byte(tc.in))
		if ok != tc.ok || ok && (total != tc.total || avail != tc.avail) {
			t.Errorf("%q: %d %d %v, want %d %d %v", tc.in, total, avail, ok, tc.total, tc.avail, tc.ok)
		}
	}
}

// TestPressureAllocs: the check run after every garbage collection,
// /proc/meminfo read included, allocates nothing, so that allocation
// counts taken beside a mount's cache (iovfs bench, AllocsPerRun tests)
// show only what they measure.
func TestPressureAllocs(t *testing.T) {
	c := NewCache(minProcessCache)
	p := &pressure{c: c, budget: minProcessCache}
	p.samples = processSamples()
	p.check(time.Now()) // opens /proc/meminfo
	if _, _, ok := p.mem.read(); !ok && runtime.GOOS == "linux" {
		t.Fatal("no MemTotal and MemAvailable from /proc/meminfo")
	}
	if n := testing.AllocsPerRun(100, func() {
		p.lastAvail = time.Time{}
		p.check(time.Now())
	}); n != 0 {
		t.Errorf("check: %v allocs, want 0", n)
	}
}

// TestPressureArm: once armed, the check runs after every collection.
func TestPressureArm(t *testing.T) {
	if total, avail, ok := memInfo(); ok && avail < total/16 {
		t.Skip("the machine is short of memory: the check keeps the floor")
	}
	const budget = minProcessCache + 1<<20
	c := NewCache(minProcessCache)
	p := &pressure{c: c, budget: budget}
	p.samples = processSamples()
	p.arm()
	for round := range 3 {
		c.SetLimit(minProcessCache)
		deadline := time.Now().Add(10 * time.Second)
		for c.Limit() != budget {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no check after a collection (limit %d)", round, c.Limit())
			}
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	}
}
