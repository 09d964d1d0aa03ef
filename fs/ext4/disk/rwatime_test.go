package disk

import "testing"

// TestAtimeDue: relatime_need_update's cases at their edges (atime equal
// to mtime or ctime moves; a day in whole seconds moves, a second less
// does not) and atime_needs_update's last rule (never to the value atime
// has), under relatime and strictatime.
func TestAtimeDue(t *testing.T) {
	ts := func(s, ns int64) Timespec { return Timespec{Sec: s, Nsec: ns} }
	const day = 24 * 60 * 60
	for _, c := range []struct {
		name                  string
		atime, mtime, ctime   Timespec
		now                   Timespec
		relatime, strictatime bool
	}{
		{"past-both", ts(100, 5), ts(100, 4), ts(99, 0), ts(200, 0), false, true},
		{"equal-mtime", ts(100, 5), ts(100, 5), ts(99, 0), ts(200, 0), true, true},
		{"equal-ctime", ts(100, 5), ts(99, 0), ts(100, 5), ts(200, 0), true, true},
		{"before-mtime", ts(100, 5), ts(100, 6), ts(99, 0), ts(200, 0), true, true},
		{"day", ts(100, 999), ts(1, 0), ts(1, 0), ts(100+day, 0), true, true},
		{"day-less-a-second", ts(100, 0), ts(1, 0), ts(1, 0), ts(100+day-1, 999999999), false, true},
		{"future", ts(500, 0), ts(1, 0), ts(1, 0), ts(200, 0), false, true},
		{"now-already", ts(200, 7), ts(300, 0), ts(1, 0), ts(200, 7), false, false},
	} {
		if got := AtimeDue(c.atime, c.mtime, c.ctime, c.now, true); got != c.relatime {
			t.Errorf("%s: relatime %v, want %v", c.name, got, c.relatime)
		}
		if got := AtimeDue(c.atime, c.mtime, c.ctime, c.now, false); got != c.strictatime {
			t.Errorf("%s: strictatime %v, want %v", c.name, got, c.strictatime)
		}
	}
}
