package iovfs_test

import (
	"os"
	"testing"
	"time"

	"github.com/iovfs/iovfs/vfs/vfstest"
)

// TestConfinementRace is the openat2 escape attempt of vfstest's
// RaceConfinement on the root tmpfs for 10 seconds (IOVFS_CONFINE_RACE
// sets another duration, such as 60s).
func TestConfinementRace(t *testing.T) {
	d := 10 * time.Second
	if s := os.Getenv("IOVFS_CONFINE_RACE"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("IOVFS_CONFINE_RACE=%q: %v", s, err)
		}
	}
	p := newProc(t)
	vfstest.RaceConfinement(t, p, "/tmp/race", d)
}
