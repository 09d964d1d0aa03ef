package tmpfs

import (
	"sync"
	"sync/atomic"
	"time"
)

// The clock. Every write stamps mtime and every read checks relatime's day
// rule, and time.Now, two vDSO reads, cost as much as the copy of a 4 KiB
// page on these machines. Linux stamps files from a coarse clock that the
// timer interrupt advances. Here one goroutine per process ticks once a
// second and keeps the offset of the wall clock from the monotonic one:
// clockNow then costs one monotonic read, and the day rule none at all. A
// step of the wall clock shows in timestamps within a second.
var (
	epoch      = time.Now()
	coarseMono atomic.Int64 // the monotonic reading at the last tick
	wallOffset atomic.Int64 // wall minus monotonic, at the last tick
	clockOnce  sync.Once
)

// instant is a time as Unix nanoseconds (wall) and as nanoseconds since
// epoch on the monotonic clock (mono).
type instant struct{ wall, mono int64 }

func startClock() {
	clockOnce.Do(func() {
		tick(time.Now())
		go func() {
			for t := range time.Tick(time.Second) {
				tick(t)
			}
		}()
	})
}

func tick(t time.Time) {
	m := int64(t.Sub(epoch))
	wallOffset.Store(t.UnixNano() - m)
	coarseMono.Store(m)
}

// clockNow returns the current time.
func clockNow() instant {
	m := int64(time.Since(epoch))
	return instant{wall: m + wallOffset.Load(), mono: m}
}
