package jbd2

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lockedDev is a memDev safe for concurrent use.
type lockedDev struct {
	mu sync.Mutex
	memDev
}

func (d *lockedDev) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.memDev.ReadAt(p, off)
}

func (d *lockedDev) WriteAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.memDev.WriteAt(p, off)
}

// TestReadBlockBesideCommit: readers that read a block from the
// transaction, else from the device, see its versions in order while the
// writer rewrites and commits it: none goes back to an older one.
func TestReadBlockBesideCommit(t *testing.T) {
	const bs = 1024
	base, ext := newLog(t, bs, 2048, 64, IncompatRevoke|IncompatCsumV3)
	d := &lockedDev{memDev: *base}
	j, err := Open(d, bs, ext)
	if err != nil {
		t.Fatal(err)
	}
	tx := NewTransaction(d, bs)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := make([]byte, bs)
			last := uint64(0)
			for !stop.Load() {
				if !tx.ReadBlock(77, p) {
					if err := readFull(d, p, 77*bs); err != nil {
						t.Error(err)
						return
					}
				}
				v := binary.LittleEndian.Uint64(p)
				if v < last {
					t.Errorf("block 77 went back from version %d to %d", last, v)
					return
				}
				last = v
			}
		}()
	}
	p := make([]byte, bs)
	deadline := time.Now().Add(300 * time.Millisecond)
	for v := uint64(1); time.Now().Before(deadline); v++ {
		binary.LittleEndian.PutUint64(p, v)
		tx.WriteAt(p, 77*bs)
		if v%3 == 0 {
			if err := tx.Commit(j, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}
