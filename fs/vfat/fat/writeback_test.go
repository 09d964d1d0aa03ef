package fat_test

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/fs/vfat/fat"
)

// lockedDev is a memDev safe for the write-back's goroutine.
type lockedDev struct {
	mu sync.Mutex
	d  memDev
}

func (l *lockedDev) ReadAt(p []byte, off int64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.d.ReadAt(p, off)
}

func (l *lockedDev) WriteAt(p []byte, off int64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.d.WriteAt(p, off)
}

func (l *lockedDev) Size() int64  { return l.d.Size() }
func (l *lockedDev) Flush() error { return nil }

// onDevice reports whether the device's bytes, as they are now, hold
// name in the root with the contents want.
func (l *lockedDev) onDevice(t *testing.T, name, want string) bool {
	t.Helper()
	l.mu.Lock()
	snap := append([]byte(nil), l.d.b...)
	l.mu.Unlock()
	v, err := fat.Open(&memDev{snap}, fat.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	n, err := v.Lookup(v.Root(), name)
	if err == syscall.ENOENT {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64)
	k, _ := v.ReadAt(n, b, 0)
	return string(b[:k]) == want
}

// TestWriteback: directory entries and the FAT stay in memory after a
// change, reach the device at Sync, and without a Sync once the
// write-back delay has passed.
func TestWriteback(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)
	for _, delay := range []time.Duration{time.Hour, 10 * time.Millisecond} {
		dev := &lockedDev{d: memDev{seed(t)}}
		v, err := fat.Open(dev, fat.Options{Writeback: delay})
		if err != nil {
			t.Fatal(err)
		}
		n, err := v.Create(v.Root(), "a new file.txt", false, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.WriteAt(n, []byte("written back"), 0, now); err != nil {
			t.Fatal(err)
		}
		if delay == time.Hour {
			if dev.onDevice(t, "a new file.txt", "written back") {
				t.Errorf("the entry was on the device before a sync or the write-back")
			}
			if err := v.Sync(); err != nil {
				t.Fatal(err)
			}
			if !dev.onDevice(t, "a new file.txt", "written back") {
				t.Errorf("the entry is not on the device after Sync")
			}
		} else {
			deadline := time.Now().Add(10 * time.Second)
			for !dev.onDevice(t, "a new file.txt", "written back") {
				if time.Now().After(deadline) {
					t.Fatalf("the entry did not reach the device within 10 s of a write-back delay of %v", delay)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
