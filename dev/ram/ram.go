// Package ram holds RAM disks, /dev/ram0 and on: block devices whose bytes
// are memory, like Linux's brd driver.
//
// A Disk is created with a fixed size by New, or by iovfs.New (which adds
// /dev/ram0 of DefaultSize unless told otherwise with iovfs.WithRAMDisks).
// Its memory is one contiguous Go allocation made on first use (the first
// open, I/O or direct access), so a disk that is never opened costs
// nothing, and it reads as zeros until written. New refuses a size larger
// than the memory the process may ever have, and the allocation one
// larger than the memory available then: both with ENOMEM (the I/O that
// would allocate returns it), never a runtime out-of-memory crash. The memory is freed by the
// garbage collector once neither the disk nor any view from DirectAccess
// is referenced: a view can never dangle.
//
// A Disk offers direct access (block.DirectAccessor): the whole range
// asked for, in one slice, since the memory is contiguous.
//
// Concurrency: like Linux's brd, I/O copies without locks. Reads and
// writes of the same bytes at the same time see old bytes, new bytes or a
// mix, and under the race detector they are reported as a data race, as
// they are in the program's own memory.
package ram

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/internal/sysmem"
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

const (
	// Major is Linux's RAMDISK_MAJOR; minor n is /dev/ram<n>.
	Major = 1
	// DefaultSize is the size of the disks iovfs.New makes by default:
	// 64 MiB. Linux's brd defaults to 4 MiB (CONFIG_BLK_DEV_RAM_SIZE);
	// iovfs takes more because the memory is only allocated on first use,
	// and 64 MiB holds a useful ext4 image.
	DefaultSize = 64 << 20
	// SectorSize is the default logical block size, brd's 512.
	SectorSize = 512
	// Align is what a size must be a multiple of: a page, as brd's sizes
	// are whole pages, so that direct access maps whole pages.
	Align = 4096
)

// Disk is a RAM disk. It implements devfs.Device, devfs.Sizer,
// block.Device and block.DirectAccessor.
type Disk struct {
	minor uint32
	size  int64
	sect  int // logical block size

	// mu serialises the allocation of mem.
	mu sync.Mutex
	// mem is the disk's memory, set once, under mu.
	mem atomic.Pointer[[]byte]
}

// New returns a RAM disk of size bytes with device number (1, minor) and
// 512-byte sectors. size must be a positive multiple of Align (EINVAL)
// that the process's memory could hold (ENOMEM).
func New(minor uint32, size int64) (*Disk, error) {
	return NewSectorSize(minor, size, SectorSize)
}

// NewSectorSize is New with a logical block size of sect bytes: a power
// of two from 512 to 4096, as Linux's block layer allows (EINVAL
// otherwise).
func NewSectorSize(minor uint32, size int64, sect int) (*Disk, error) {
	if size <= 0 || size%Align != 0 || int64(int(size)) != size || sect < 512 || sect > Align || sect&(sect-1) != 0 {
		return nil, syscall.EINVAL
	}
	if total := sysmem.Total(); total > 0 && size > total {
		return nil, syscall.ENOMEM
	}
	return &Disk{minor: minor, size: size, sect: sect}, nil
}

// bytes returns the disk's memory, allocating it on first use: ENOMEM if
// the memory available then cannot hold it (a later call tries again).
func (d *Disk) bytes() ([]byte, error) {
	if p := d.mem.Load(); p != nil {
		return *p, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if p := d.mem.Load(); p != nil {
		return *p, nil
	}
	if err := sysmem.Check(d.size, "the RAM disk"); err != nil {
		return nil, syscall.ENOMEM
	}
	b := make([]byte, d.size)
	d.mem.Store(&b)
	return b, nil
}

// DevInfo implements devfs.Device: a block device (1, minor), mode 0660.
func (d *Disk) DevInfo() (uint32, uint64) {
	return unix.S_IFBLK | 0o660, vfs.Mkdev(Major, d.minor)
}

// Open implements vfs.Opener. Any access mode is allowed.
func (d *Disk) Open(int, vfs.Cred) (vfs.Handle, error) {
	d.bytes()
	return block.NewFile(d, nil), nil
}

// Size implements block.Device and devfs.Sizer.
func (d *Disk) Size() int64 { return d.size }

// SectorSize implements block.Device.
func (d *Disk) SectorSize() int { return d.sect }

// ReadOnly implements block.Device: a RAM disk is always writable.
func (d *Disk) ReadOnly() bool { return false }

// Flush implements block.Device; memory has nothing to flush.
func (d *Disk) Flush() error { return nil }

// ReadIter implements block.Device.
func (d *Disk) ReadIter(dst iov.Iter, off int64) (int, error) {
	if err := block.Check(off, dst.Len(), d.sect, d.size); err != nil {
		return 0, err
	}
	b, err := d.bytes()
	if err != nil {
		return 0, err
	}
	return iov.CopyAll(dst, b[off:]), nil
}

// WriteIter implements block.Device.
func (d *Disk) WriteIter(src iov.Iter, off int64) (int, error) {
	if err := block.Check(off, src.Len(), d.sect, d.size); err != nil {
		return 0, err
	}
	b, err := d.bytes()
	if err != nil {
		return 0, err
	}
	n := src.Len()
	src.CopyIn(b[off : off+int64(n)])
	return n, nil
}

// DirectAccess implements block.DirectAccessor: it returns all n bytes
// at off.
func (d *Disk) DirectAccess(off int64, n int) ([]byte, error) {
	if err := block.CheckDirect(off, n, d.size); err != nil {
		return nil, err
	}
	b, err := d.bytes()
	if err != nil {
		return nil, err
	}
	end := off + int64(n)
	return b[off:end:end], nil
}
