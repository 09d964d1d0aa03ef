package loop

// Partitions of a loop device (LO_FLAGS_PARTSCAN): the table is read with
// block.ReadTable, as Linux's loop driver has the block layer scan it
// (loop_reread_partitions), and each partition becomes a device node
// loop<N>p<M> in the devfs, numbered as the kernel numbers them. They are
// rescanned by LOOP_CONFIGURE and LOOP_SET_STATUS64 when PARTSCAN is set,
// and by BLKRRPART; teardown removes them.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// PartMajor is Linux's BLOCK_EXT_MAJOR: partitions of a loop device
// without max_part get dynamic numbers under it.
const PartMajor = 259

// partMinor hands out minors under PartMajor.
var partMinor atomic.Uint32

// Part is the device node of one partition of a loop device. It
// implements devfs.Device, devfs.Sizer and vfs.Opener.
type Part struct {
	d     *Device
	num   int
	dev   *block.PartDevice
	minor uint32
	opens atomic.Int32
}

// Number returns M in loop<N>pM.
func (p *Part) Number() int { return p.num }

// Device returns the partition's block device.
func (p *Part) Device() block.Device { return p.dev }

// DevInfo implements devfs.Device.
func (p *Part) DevInfo() (uint32, uint64) {
	return unix.S_IFBLK | 0o660, vfs.Mkdev(PartMajor, p.minor)
}

// Size implements devfs.Sizer.
func (p *Part) Size() int64 { return p.dev.Size() }

// Open implements vfs.Opener: opening a partition opens the whole device
// too, so an autoclear device stays bound while a partition is open, as
// in Linux (the partition's open holds the disk).
func (p *Part) Open(flags int, c vfs.Cred) (vfs.Handle, error) {
	h, err := p.d.Open(flags, c)
	if err != nil {
		return nil, err
	}
	lh := h.(*handle)
	p.d.mu.RLock()
	gone := p.d.state != bound || !p.d.hasPart(p)
	p.d.mu.RUnlock()
	if gone {
		lh.release()
		return nil, errENXIO
	}
	p.opens.Add(1)
	var once sync.Once
	return block.NewFile(p.dev, func() {
		once.Do(func() {
			p.opens.Add(-1)
			lh.release()
		})
	}), nil
}

// hasPart reports whether p is one of d's current partitions; mu is held.
func (d *Device) hasPart(p *Part) bool {
	for _, q := range d.parts {
		if q == p {
			return true
		}
	}
	return false
}

// Parts returns the device's partition nodes, in number order.
func (d *Device) Parts() []*Part {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return append([]*Part(nil), d.parts...)
}

func (d *Device) partName(num int) string { return fmt.Sprintf("loop%dp%d", d.number, num) }

// rescan reads the partition table and replaces the partition nodes. A
// device without PARTSCAN, or one whose table cannot be read, ends up
// with none (a read error is Linux's "unable to read partition table",
// not a failure of the call). mu must not be held.
func (d *Device) rescan() {
	d.mu.RLock()
	scan := d.state == bound && d.flags&unix.LO_FLAGS_PARTSCAN != 0
	d.mu.RUnlock()
	var t *block.Table
	if scan {
		t, _ = block.ReadDeviceTable(d, block.TableOptions{})
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropParts()
	if t == nil || d.state != bound {
		return
	}
	for _, bp := range t.Parts {
		p := &Part{d: d, num: bp.Number, dev: block.NewPartDevice(d, bp.Start, bp.Size), minor: partMinor.Add(1) - 1}
		if err := d.ctl.dev.Add(d.partName(p.num), p); err != nil {
			continue
		}
		d.parts = append(d.parts, p)
	}
}

// dropParts removes the partition nodes; mu is held.
func (d *Device) dropParts() {
	for _, p := range d.parts {
		d.ctl.dev.Remove(d.partName(p.num))
	}
	d.parts = nil
}

// rereadParts is BLKRRPART (blkdev_common_ioctl, disk_scan_partitions):
// EACCES without CAP_SYS_ADMIN, EINVAL on a device without PARTSCAN (or
// unbound), EBUSY while a partition is open.
func (d *Device) rereadParts(p *vfs.Proc) error {
	if !p.Privileged() {
		return syscall.EACCES
	}
	d.mu.RLock()
	ok := d.state == bound && d.flags&unix.LO_FLAGS_PARTSCAN != 0
	busy := false
	for _, q := range d.parts {
		busy = busy || q.opens.Load() > 0
	}
	d.mu.RUnlock()
	if !ok {
		return errEINVAL
	}
	if busy {
		return errEBUSY
	}
	d.rescan()
	return nil
}
