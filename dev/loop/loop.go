// Package loop holds loop block devices, /dev/loop0 and on, and
// /dev/loop-control, after Linux's drivers/block/loop.c. A loop device
// makes a block device of any open file of the same process: a file of a
// file system in iovfs, another block device, or a host file brought in
// with Proc.ImportFile.
//
// Set-up and teardown go through Proc.Ioctl with Linux's requests and
// x/sys/unix's argument types. On a device: LOOP_CONFIGURE
// (*unix.LoopConfig), LOOP_SET_FD (int fd), LOOP_CLR_FD,
// LOOP_GET_STATUS64 and LOOP_SET_STATUS64 (*unix.LoopInfo64),
// LOOP_SET_CAPACITY and LOOP_SET_BLOCK_SIZE (int), and the generic block
// requests of block.File. On /dev/loop-control: LOOP_CTL_GET_FREE,
// LOOP_CTL_ADD and LOOP_CTL_REMOVE (int).
//
// The rules are those of the Linux kernel this was compared with (6.18;
// see loop_linux_test.go):
//   - LOOP_CONFIGURE on a bound device gives EBUSY; flags other than
//     READ_ONLY, AUTOCLEAR, PARTSCAN and DIRECT_IO give EINVAL; the block
//     size is 0 (meaning 512) or a power of two from 512 to 64 KiB; a
//     backing file that is not a regular file or block device, or that
//     would make a cycle of loop devices, gives EINVAL.
//   - The device is read-only if asked, or if the backing file or the
//     descriptor the request came through is not open for writing.
//   - The size is the backing size less lo_offset, capped by
//     lo_sizelimit, rounded down to 512 bytes (Linux's sector count).
//     With a larger block size the partial last block gives EIO.
//   - LOOP_CLR_FD does not fail on a busy device: it sets AUTOCLEAR, and
//     the device is cleared at its last close. If the caller's descriptor
//     is the only opener, further opens give ENXIO until then.
//   - A device set to AUTOCLEAR is cleared when its last opener closes.
//   - A read from the backing file that comes up short is retried for the
//     rest; one that returns 0 bytes zero-fills the rest and fails with
//     EIO.
//   - Status calls on an unbound device give ENXIO.
//
// DIRECT_IO is accepted and reads back cleared, as Linux does when the
// backing file cannot do O_DIRECT. PARTSCAN makes partition nodes
// (parts.go).
//
// # Locks and lifetime
//
// globalMu is held around binding and teardown.
// mu is read-held by every I/O and by the status reads, and write-held by
// configure, status changes, open, release and teardown, so teardown waits
// for I/O in flight and the backing file is never used after its release.
// The size and block size are also kept in atomics for the lock-free
// checks of block.File; I/O checks them again under mu.
//
// # Direct access
//
// Over an imported host file, LOOP_CONFIGURE maps the backing range with
// mmap(MAP_SHARED), PROT_READ, plus PROT_WRITE if the device is writable,
// and DirectAccess hands out views of it. Over a block device that offers
// direct access (a RAM disk, another loop device), DirectAccess forwards
// to it. A mapping made stale by LOOP_SET_STATUS64 changing the offset or
// size limit stays mapped until teardown, so views taken before stay
// valid; teardown, at the last close, unmaps them all. See
// block.DirectAccessor for what a view promises and the SIGBUS case.
package loop

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Major is Linux's LOOP_MAJOR; minor n is /dev/loop<n>.
const Major = 7

// Flags accepted by LOOP_CONFIGURE and LOOP_SET_STATUS64 (linux/loop.h).
const (
	configureFlags = unix.LO_FLAGS_READ_ONLY | unix.LO_FLAGS_AUTOCLEAR | unix.LO_FLAGS_PARTSCAN | unix.LO_FLAGS_DIRECT_IO
	settableFlags  = unix.LO_FLAGS_AUTOCLEAR | unix.LO_FLAGS_PARTSCAN
	clearableFlags = unix.LO_FLAGS_AUTOCLEAR
)

// Device states, Linux's Lo_unbound, Lo_bound and Lo_rundown.
const (
	unbound = iota
	bound
	rundown
)

var (
	errEBUSY  error = syscall.EBUSY
	errENXIO  error = syscall.ENXIO
	errEINVAL error = syscall.EINVAL
	errEIO    error = syscall.EIO
	errENOSPC error = syscall.ENOSPC
)

// globalMu serialises binding and teardown across all loop devices, so
// the cycle check of LOOP_CONFIGURE sees a still chain of devices (Linux's
// loop_global_lock). Lock order: globalMu, then Device.mu.
var globalMu sync.Mutex

// Device is one loop device. It implements devfs.Device, devfs.Sizer,
// block.Device and block.DirectAccessor.
type Device struct {
	number int
	ctl    *Control

	// size and ssize mirror the fields under mu for lock-free reads.
	size  atomic.Int64
	ssize atomic.Int32

	// mu protects the fields below; see the package comment.
	mu        sync.RWMutex
	state     int
	openers   int
	removed   bool
	b         *vfs.Backing
	offset    int64
	sizelimit int64
	flags     uint32 // LO_FLAGS_*
	fileName  [unix.LO_NAME_SIZE]byte
	cryptName [unix.LO_NAME_SIZE]byte
	dax       []byte // view of the mapped backing range, or nil
	lower     block.DirectAccessor
	maps      [][]byte // mappings to remove at teardown
	parts     []*Part  // partition nodes (parts.go)
}

func newDevice(c *Control, n int) *Device {
	d := &Device{number: n, ctl: c}
	d.ssize.Store(512)
	return d
}

// Number returns the device's index, n in /dev/loop<n>.
func (d *Device) Number() int { return d.number }

// DevInfo implements devfs.Device: a block device (7, n), mode 0660.
func (d *Device) DevInfo() (uint32, uint64) {
	return unix.S_IFBLK | 0o660, vfs.Mkdev(Major, uint32(d.number))
}

// Open implements vfs.Opener. Opening works whether the device is bound
// or not (an unbound device has size 0), except during rundown or after
// removal, which give ENXIO as Linux's lo_open does.
func (d *Device) Open(flags int, _ vfs.Cred) (vfs.Handle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == rundown || d.removed {
		return nil, errENXIO
	}
	d.openers++
	h := &handle{d: d, writable: flags&unix.O_ACCMODE != unix.O_RDONLY}
	h.File = block.NewFile(d, h.release)
	return h, nil
}

// handle is an open loop device: the block file plus the loop requests.
type handle struct {
	*block.File
	d        *Device
	writable bool // opened for writing (BLK_OPEN_WRITE)
	once     sync.Once
}

func (h *handle) release() { h.once.Do(h.d.release) }

// loopDevice lets a loop device recognise another below it.
func (h *handle) loopDevice() *Device { return h.d }

// release is the last close of one open file (lo_release): at the last
// opener, a device set to AUTOCLEAR is cleared.
func (d *Device) release() {
	globalMu.Lock()
	d.mu.Lock()
	d.openers--
	var b *vfs.Backing
	if d.openers == 0 && d.state != unbound && d.flags&unix.LO_FLAGS_AUTOCLEAR != 0 {
		b = d.teardown()
	}
	d.mu.Unlock()
	globalMu.Unlock()
	if b != nil {
		// Outside the locks: the backing file may be another loop device,
		// whose own release takes them.
		b.Release()
	}
}

// Size implements block.Device and devfs.Sizer.
func (d *Device) Size() int64 { return d.size.Load() }

// SectorSize implements block.Device.
func (d *Device) SectorSize() int { return int(d.ssize.Load()) }

// ReadOnly implements block.Device.
func (d *Device) ReadOnly() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.flags&unix.LO_FLAGS_READ_ONLY != 0
}

// check applies block.Check against the bound geometry; mu is held.
func (d *Device) check(off int64, n int) error {
	if d.state == unbound {
		return errEIO // loop_queue_rq: BLK_STS_IOERR when not bound
	}
	return block.Check(off, n, int(d.ssize.Load()), block.ReadEnd(d))
}

// ReadIter implements block.Device. It reads through the backing file's
// vectored read, retrying a short read for the rest; a read that returns
// nothing zero-fills the rest and fails with EIO (lo_complete_rq).
func (d *Device) ReadIter(dst iov.Iter, off int64) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if err := d.check(off, dst.Len()); err != nil {
		return 0, err
	}
	pos := d.offset + off
	done := 0
	for dst.Len() > 0 {
		n, err := d.b.ReadIter(dst, pos)
		if err != nil || n <= 0 {
			dst.Zero(dst.Len())
			return done &^ int(d.ssize.Load()-1), ioErr(err) // whole sectors only
		}
		done += n
		pos += int64(n)
		dst.Advance(n)
	}
	return done, nil
}

// WriteIter implements block.Device. A short write is retried for the
// rest; a write that makes no progress fails with EIO.
func (d *Device) WriteIter(src iov.Iter, off int64) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if err := d.check(off, src.Len()); err != nil {
		return 0, err
	}
	if d.flags&unix.LO_FLAGS_READ_ONLY != 0 {
		return 0, syscall.EPERM
	}
	pos := d.offset + off
	done := 0
	for src.Len() > 0 {
		n, err := d.b.WriteIter(src, pos)
		if err != nil || n <= 0 {
			return done &^ int(d.ssize.Load()-1), ioErr(err)
		}
		done += n
		pos += int64(n)
		src.Advance(n)
	}
	return done, nil
}

// ioErr maps a backing file's error to the block layer's: ENOSPC stays
// ENOSPC (BLK_STS_NOSPC); everything else, and no error at all, is EIO.
func ioErr(err error) error {
	if err == syscall.ENOSPC {
		return errENOSPC
	}
	return errEIO
}

// Flush implements block.Device: it syncs the backing file (vfs_fsync
// for REQ_OP_FLUSH).
func (d *Device) Flush() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.state == unbound {
		return errEIO
	}
	if err := d.b.Sync(); err != nil {
		return errEIO
	}
	return nil
}

// DirectAccess implements block.DirectAccessor; see the package comment.
func (d *Device) DirectAccess(off int64, n int) ([]byte, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.state == unbound || (d.dax == nil && d.lower == nil) {
		return nil, syscall.EOPNOTSUPP
	}
	if err := block.CheckDirect(off, n, block.ReadEnd(d)); err != nil {
		return nil, err
	}
	if d.dax != nil {
		end := off + int64(n)
		return d.dax[off:end:end], nil
	}
	return d.lower.DirectAccess(d.offset+off, n)
}

// teardown clears a bound device (__loop_clr_fd) and returns the backing
// file for the caller to release once it has dropped the locks; mu and
// globalMu are held.
func (d *Device) teardown() *vfs.Backing {
	for _, m := range d.maps {
		unix.Munmap(m)
	}
	b := d.b
	d.dropParts()
	d.b, d.dax, d.lower, d.maps = nil, nil, nil, nil
	d.offset, d.sizelimit, d.flags = 0, 0, 0
	d.fileName, d.cryptName = [unix.LO_NAME_SIZE]byte{}, [unix.LO_NAME_SIZE]byte{}
	d.size.Store(0)
	d.ssize.Store(512)
	d.state = unbound
	block.Invalidate(d, 0, -1) // __loop_clr_fd's invalidate_bdev
	return b
}
