// Package block is the block-device contract of iovfs and the helpers
// that every block driver shares: bounds and alignment checks, and File,
// which turns a Device into a file that reads and writes at any byte
// offset, as a Linux block device node does through the page cache.
//
// A Device moves whole logical blocks (sectors) at sector-aligned offsets,
// through iov.Iter vectors, like a bio. Files, file systems and the loop
// driver sit on top of it. A device whose bytes are in addressable memory
// also implements DirectAccessor, Linux's dax_direct_access, so a file
// system can copy file data straight from the device into the caller's
// vector.
//
// Sizes follow Linux, which counts a disk's capacity in 512-byte sectors:
// Size is a multiple of 512 but need not be a multiple of the logical
// block size (a loop device with 4096-byte blocks over a file of 4.5 KiB
// has size 4608). The blocks past the last whole logical block, the
// "tail", exist in the size but cannot be read or written: Linux fails
// such I/O with EIO (bio_check_eod), and so does iovfs. ReadEnd gives
// where the readable part ends.
package block

import (
	"syscall"

	"github.com/iovfs/iovfs/iov"
)

// Limits on the logical block size: Linux's blk_validate_block_size
// accepts powers of two from 512 bytes to BLK_MAX_BLOCK_SIZE, 64 KiB.
const (
	MinSectorSize = 512
	MaxSectorSize = 64 << 10
)

// Errors, made once so returning one does not allocate.
var (
	errEIO        error = syscall.EIO
	errEINVAL     error = syscall.EINVAL
	errENOSPC     error = syscall.ENOSPC
	errEPERM      error = syscall.EPERM
	errENOTTY     error = syscall.ENOTTY
	errEOPNOTSUPP error = syscall.EOPNOTSUPP
)

// Device is a block device.
//
// SectorSize and Size may change only while the device is not in use by
// I/O (a loop device being configured); ReadOnly likewise.
//
// ReadIter and WriteIter move whole sectors. The caller guarantees that
// off and the iterator's length are multiples of SectorSize and that the
// range lies within ReadEnd; a driver checks this with Check, because the
// device may have changed since the caller looked (a loop device torn
// down gives EIO, as Linux's loop_queue_rq does). The iterator's segments
// need not be aligned. A call returns n == len and a nil error, or
// n < len, counting whole sectors moved before the failure, and a non-nil
// syscall.Errno: EIO for a failed transfer, ENOSPC for a full backing
// store, EPERM for a write to a read-only device. All methods may be
// called concurrently.
type Device interface {
	// SectorSize is the logical block size: a power of two from
	// MinSectorSize to MaxSectorSize.
	SectorSize() int
	// Size is the capacity in bytes, a multiple of 512.
	Size() int64
	// ReadOnly reports whether writes are refused (Linux's bdev_read_only).
	ReadOnly() bool
	// ReadIter reads dst.Len() bytes at off into dst.
	ReadIter(dst iov.Iter, off int64) (int, error)
	// WriteIter writes src.Len() bytes from src at off.
	WriteIter(src iov.Iter, off int64) (int, error)
	// Flush makes completed writes durable (REQ_OP_FLUSH).
	Flush() error
}

// DirectAccessor is implemented by a device whose bytes live in memory
// that the process can address: a RAM disk, or a loop device over an
// imported host file (through a shared mmap) or over another such device.
// It is Linux's dax_direct_access.
//
// DirectAccess returns the device memory holding bytes [off, off+n): a
// slice b with 1 <= len(b) <= n (n > 0), whose bytes are the device's
// own, not a copy. It may be shorter than n where the memory is not
// contiguous; the caller asks again for the rest. Its capacity equals
// its length. off need not be aligned; off+n must lie within ReadEnd,
// otherwise EIO. A device that cannot offer direct access at the moment
// (a loop device over a file with no memory view, or unbound) returns
// EOPNOTSUPP: a file system probes once at mount with
// DirectAccess(0, d.SectorSize()).
//
// Validity. The view is valid, and shows the device's current bytes,
// while the caller holds the device open: an open File or a mount that
// keeps one. Writes through WriteIter are visible in it at once, and
// writes into a writable view are the device's bytes. Teardown (the last
// close of a loop device that is set to clear) unmaps it; using a view
// after closing the device is a use after free. For a loop device over a
// host file, a view reads that file's pages through mmap: if another host
// process truncates the file below the device's range, reading the view
// raises SIGBUS, which Go turns into a fatal error. CopyOut turns that
// fault into EIO instead; use it when the backing file may shrink.
type DirectAccessor interface {
	DirectAccess(off int64, n int) ([]byte, error)
}

// ReadEnd returns the end of the part of d that I/O can reach: Size
// rounded down to a whole logical block.
func ReadEnd(d Device) int64 {
	return d.Size() &^ int64(d.SectorSize()-1)
}

// Check applies the rules of a sector I/O of n bytes at off on a device
// with sector size ss and readable end end: off and n must be multiples
// of ss (EINVAL) and the range must lie within [0, end] (EIO, as Linux's
// bio_check_eod).
func Check(off int64, n int, ss int, end int64) error {
	mask := int64(ss - 1)
	if off&mask != 0 || int64(n)&mask != 0 || n < 0 {
		return errEINVAL
	}
	if off < 0 || off > end || int64(n) > end-off {
		return errEIO
	}
	return nil
}

// CheckDirect applies the rules of DirectAccess(off, n) on a device whose
// readable end is end.
func CheckDirect(off int64, n int, end int64) error {
	if n <= 0 || off < 0 || off > end || int64(n) > end-off {
		return errEIO
	}
	return nil
}

// ValidSectorSize reports whether ss is a logical block size Linux
// accepts.
func ValidSectorSize(ss int) bool {
	return ss >= MinSectorSize && ss <= MaxSectorSize && ss&(ss-1) == 0
}
