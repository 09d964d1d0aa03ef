package block

import (
	"sync"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
)

var (
	_ Device         = (*Overlay)(nil)
	_ vfs.IterReader = (*Overlay)(nil)
	_ vfs.IterWriter = (*Overlay)(nil)
)

// Overlay is a device whose writes stay in memory: it reads the lower
// device's sectors until they are written, and never writes the lower
// device. It lets a journal be replayed for reading without changing the
// image (a snapshot, as QEMU's -snapshot gives).
type Overlay struct {
	lower Device

	// mu protects sectors.
	mu      sync.RWMutex
	sectors map[int64][]byte // written sectors by offset
}

// NewOverlay returns a writable overlay of lower.
func NewOverlay(lower Device) *Overlay {
	return &Overlay{lower: lower, sectors: map[int64][]byte{}}
}

// SectorSize implements Device.
func (o *Overlay) SectorSize() int { return o.lower.SectorSize() }

// Size implements Device.
func (o *Overlay) Size() int64 { return o.lower.Size() }

// ReadOnly implements Device: an overlay takes writes.
func (o *Overlay) ReadOnly() bool { return false }

// Flush implements Device: there is nothing to make durable.
func (o *Overlay) Flush() error { return nil }

// Dirty returns the number of sectors written.
func (o *Overlay) Dirty() int {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return len(o.sectors)
}

// ReadIter implements Device.
func (o *Overlay) ReadIter(dst iov.Iter, off int64) (int, error) {
	ss := o.SectorSize()
	if err := Check(off, dst.Len(), ss, ReadEnd(o)); err != nil {
		return 0, err
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	done := 0
	for dst.Len() > 0 {
		pos := off + int64(done)
		if s, ok := o.sectors[pos]; ok {
			dst.CopyOut(s)
			done += ss
			continue
		}
		// A run of sectors not written goes to the lower device at once.
		n := ss
		for n < dst.Len() {
			if _, ok := o.sectors[pos+int64(n)]; ok {
				break
			}
			n += ss
		}
		sub := dst
		sub.Truncate(n)
		got, err := o.lower.ReadIter(sub, pos)
		done += got
		if err != nil {
			return done, err
		}
		dst.Advance(n)
	}
	return done, nil
}

// WriteIter implements Device: the sectors are kept in memory.
func (o *Overlay) WriteIter(src iov.Iter, off int64) (int, error) {
	ss := o.SectorSize()
	if err := Check(off, src.Len(), ss, ReadEnd(o)); err != nil {
		return 0, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	done := 0
	for src.Len() > 0 {
		b := make([]byte, ss)
		src.CopyIn(b)
		o.sectors[off+int64(done)] = b
		done += ss
	}
	return done, nil
}
