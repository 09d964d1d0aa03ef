package block

import (
	"github.com/iovfs/iovfs/iov"
)

// PartDevice is a partition of a block device: the window [start,
// start+size) of its parent, with the parent's sector size, read-only
// state and direct access. I/O past the window gives EIO, as a partition
// of Linux's does (bio_check_eod on the partition).
type PartDevice struct {
	parent      Device
	start, size int64
}

// NewPartDevice returns the window [start, start+size) of parent; start
// and size are multiples of the parent's sector size.
func NewPartDevice(parent Device, start, size int64) *PartDevice {
	return &PartDevice{parent: parent, start: start, size: size}
}

// Parent returns the whole-disk device.
func (p *PartDevice) Parent() Device { return p.parent }

// Start returns the partition's offset in the parent, in bytes.
func (p *PartDevice) Start() int64 { return p.start }

// SectorSize implements Device.
func (p *PartDevice) SectorSize() int { return p.parent.SectorSize() }

// Size implements Device.
func (p *PartDevice) Size() int64 { return p.size }

// ReadOnly implements Device.
func (p *PartDevice) ReadOnly() bool { return p.parent.ReadOnly() }

// ReadIter implements Device.
func (p *PartDevice) ReadIter(dst iov.Iter, off int64) (int, error) {
	if err := Check(off, dst.Len(), p.SectorSize(), ReadEnd(p)); err != nil {
		return 0, err
	}
	return p.parent.ReadIter(dst, p.start+off)
}

// WriteIter implements Device.
func (p *PartDevice) WriteIter(src iov.Iter, off int64) (int, error) {
	if err := Check(off, src.Len(), p.SectorSize(), ReadEnd(p)); err != nil {
		return 0, err
	}
	return p.parent.WriteIter(src, p.start+off)
}

// Flush implements Device.
func (p *PartDevice) Flush() error { return p.parent.Flush() }

// DirectAccess implements DirectAccessor by the parent's, if it has one
// (EOPNOTSUPP otherwise).
func (p *PartDevice) DirectAccess(off int64, n int) ([]byte, error) {
	da, ok := p.parent.(DirectAccessor)
	if !ok {
		return nil, errEOPNOTSUPP
	}
	if err := CheckDirect(off, n, ReadEnd(p)); err != nil {
		return nil, err
	}
	return da.DirectAccess(p.start+off, n)
}
