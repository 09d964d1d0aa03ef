package block

// File: a block device opened through the descriptor API. Linux gives
// block device nodes def_blk_fops (block/fops.c); File follows its
// blkdev_read_iter, blkdev_write_iter and blkdev_llseek, with the page
// cache's effect that any byte offset can be read and written:
//
//   - a transfer that starts and ends on sector boundaries goes to the
//     device as it is, with the caller's vector, and does not allocate;
//   - an unaligned head or tail goes through a sector buffer (a pooled
//     one, so that path does not allocate either), and an unaligned
//     write reads, modifies and writes back the sector under a lock
//     striped by sector number, so two unaligned writes to the same sector
//     do not lose each other's bytes, as Linux's page lock ensures.
//
// A full-sector write does not take that lock: it may overwrite a
// concurrent read-modify-write of the same sector, as O_DIRECT writes
// may on Linux.

import (
	"math/bits"
	"sync"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// File is the open-file handle of a block device. It implements the
// vfs.Reader, IterReader, Writer, IterWriter, Seeker, Syncer, Releaser and
// Ioctler parts of the driver contract.
type File struct {
	dev     Device
	release func()
}

// NewFile returns a handle on d for a device driver's Open. release, if
// not nil, is called once when the open file is released (the last close).
func NewFile(d Device, release func()) *File {
	return &File{dev: d, release: release}
}

// Device returns the device the handle reads and writes, for a file
// system that mounts on it and wants sector I/O or direct access.
func (f *File) Device() Device { return f.dev }

// Release implements vfs.Releaser.
func (f *File) Release() error {
	if f.release != nil {
		f.release()
	}
	return nil
}

// Read implements vfs.Reader.
func (f *File) Read(p []byte, off int64) (int, error) {
	return f.ReadIter(iov.Buf(p), off)
}

// Write implements vfs.Writer.
func (f *File) Write(p []byte, off int64) (int, error) {
	return f.WriteIter(iov.Buf(p), off)
}

// ReadIter implements vfs.IterReader with blkdev_read_iter's rules: a read
// at or past Size returns 0; a read that crosses it is cut short there. A
// read that starts in the unreadable tail (see the package comment) gives
// EIO, and one that crosses into it is cut short before it.
func (f *File) ReadIter(dst iov.Iter, off int64) (int, error) {
	d := f.dev
	size := d.Size()
	if off >= size {
		return 0, nil
	}
	ss := d.SectorSize()
	end := size &^ int64(ss-1)
	if off >= end {
		return 0, errEIO
	}
	if int64(dst.Len()) > end-off {
		dst.Truncate(int(end - off))
	}
	mask := int64(ss - 1)
	if off&mask == 0 && int64(dst.Len())&mask == 0 {
		return d.ReadIter(dst, off)
	}
	return f.readSlow(dst, off, ss)
}

// readSlow reads a range with an unaligned head or tail.
func (f *File) readSlow(dst iov.Iter, off int64, ss int) (int, error) {
	d := f.dev
	mask := int64(ss - 1)
	done := 0
	bp := getSector(ss)
	defer putSector(bp)
	buf := *bp
	if h := int(off & mask); h != 0 {
		if _, err := d.ReadIter(iov.Buf(buf), off-int64(h)); err != nil {
			return 0, err
		}
		n := dst.CopyOut(buf[h:])
		done += n
		off += int64(n)
	}
	if mid := dst.Len() &^ int(mask); mid > 0 {
		m := dst
		m.Truncate(mid)
		n, err := d.ReadIter(m, off)
		done += n
		off += int64(n)
		dst.Advance(n)
		if err != nil {
			return short(done, err)
		}
	}
	if dst.Len() > 0 {
		if _, err := d.ReadIter(iov.Buf(buf), off); err != nil {
			return short(done, err)
		}
		done += dst.CopyOut(buf)
	}
	return done, nil
}

// WriteIter implements vfs.IterWriter with blkdev_write_iter's rules, in
// its order: a read-only device gives EPERM (even for 0 bytes); an empty
// write returns 0; a write at or past Size gives ENOSPC; one that crosses
// it is cut short. The unreadable tail gives EIO, as for reads. The bytes
// written are invalidated in every buffer cache (bcache.go), so a file
// system mounted from the device never reads its old copy of them.
func (f *File) WriteIter(src iov.Iter, off int64) (int, error) {
	n, err := f.writeIter(src, off)
	if n > 0 {
		Invalidate(f.dev, off, int64(n))
	}
	return n, err
}

func (f *File) writeIter(src iov.Iter, off int64) (int, error) {
	d := f.dev
	if d.ReadOnly() {
		return 0, errEPERM
	}
	if src.Len() == 0 {
		return 0, nil
	}
	size := d.Size()
	if off >= size {
		return 0, errENOSPC
	}
	ss := d.SectorSize()
	end := size &^ int64(ss-1)
	if off >= end {
		return 0, errEIO
	}
	if int64(src.Len()) > end-off {
		src.Truncate(int(end - off))
	}
	mask := int64(ss - 1)
	if off&mask == 0 && int64(src.Len())&mask == 0 {
		return d.WriteIter(src, off)
	}
	return f.writeSlow(src, off, ss)
}

// writeSlow writes a range with an unaligned head or tail.
func (f *File) writeSlow(src iov.Iter, off int64, ss int) (int, error) {
	mask := int64(ss - 1)
	done := 0
	if h := int(off & mask); h != 0 {
		n, err := f.rmw(&src, off-int64(h), h, ss)
		if err != nil {
			return 0, err
		}
		done += n
		off += int64(n)
	}
	if mid := src.Len() &^ int(mask); mid > 0 {
		m := src
		m.Truncate(mid)
		n, err := f.dev.WriteIter(m, off)
		done += n
		off += int64(n)
		src.Advance(n)
		if err != nil {
			return short(done, err)
		}
	}
	if src.Len() > 0 {
		n, err := f.rmw(&src, off, 0, ss)
		if err != nil {
			return short(done, err)
		}
		done += n
	}
	return done, nil
}

// rmw reads the sector at sec, replaces its bytes from h on with bytes of
// src (as many as fit), and writes it back.
func (f *File) rmw(src *iov.Iter, sec int64, h, ss int) (int, error) {
	bp := getSector(ss)
	defer putSector(bp)
	buf := *bp
	mu := &rmwLocks[uint64(sec/int64(ss))%uint64(len(rmwLocks))]
	mu.Lock()
	defer mu.Unlock()
	if _, err := f.dev.ReadIter(iov.Buf(buf), sec); err != nil {
		return 0, err
	}
	n := src.CopyIn(buf[h:])
	if _, err := f.dev.WriteIter(iov.Buf(buf), sec); err != nil {
		return 0, err
	}
	return n, nil
}

// rmwLocks serialise read-modify-write cycles on one sector, striped by
// sector number across all devices.
var rmwLocks [64]sync.Mutex

// short applies the driver rule that a transfer that moved bytes is a
// success.
func short(done int, err error) (int, error) {
	if done > 0 {
		return done, nil
	}
	return 0, err
}

// Llseek implements vfs.Seeker as Linux's blkdev_llseek
// (fixed_size_llseek): positions lie in [0, Size]; beyond either end
// gives EINVAL, and so do SEEK_DATA and SEEK_HOLE.
func (f *File) Llseek(pos, off int64, whence int) (int64, error) {
	size := f.dev.Size()
	switch whence {
	case unix.SEEK_SET:
		pos = off
	case unix.SEEK_CUR:
		if off == 0 {
			return pos, nil
		}
		pos += off
	case unix.SEEK_END:
		pos = size + off
	default:
		return 0, errEINVAL
	}
	if pos < 0 || pos > size {
		return 0, errEINVAL
	}
	return pos, nil
}

// Sync implements vfs.Syncer: fsync on a block device flushes it.
func (f *File) Sync() error { return f.dev.Flush() }

// Ioctl implements vfs.Ioctler with the generic block requests of Linux's
// blkdev_ioctl: BLKGETSIZE64 (*uint64, bytes), BLKGETSIZE (*uint64,
// 512-byte sectors), BLKSSZGET (*int or *int32, the logical block size),
// BLKPBSZGET (*uint32), BLKROGET (*int or *int32) and BLKFLSBUF (flush).
// Others give ENOTTY.
func (f *File) Ioctl(_ *vfs.Proc, req uint, arg any) (int, error) {
	d := f.dev
	switch req {
	case unix.BLKGETSIZE64:
		return 0, putInt(arg, d.Size())
	case unix.BLKGETSIZE:
		return 0, putInt(arg, d.Size()>>9)
	case unix.BLKSSZGET, unix.BLKPBSZGET:
		return 0, putInt(arg, int64(d.SectorSize()))
	case unix.BLKROGET:
		ro := int64(0)
		if d.ReadOnly() {
			ro = 1
		}
		return 0, putInt(arg, ro)
	case unix.BLKFLSBUF:
		return 0, d.Flush()
	}
	return 0, errENOTTY
}

// putInt stores v through arg, a pointer to an integer type.
func putInt(arg any, v int64) error {
	switch p := arg.(type) {
	case *int:
		*p = int(v)
	case *int32:
		*p = int32(v)
	case *uint32:
		*p = uint32(v)
	case *int64:
		*p = v
	case *uint64:
		*p = uint64(v)
	case *uint:
		*p = uint(v)
	default:
		return errEINVAL
	}
	return nil
}

// Sector buffers for unaligned I/O, one pool per power-of-two size.
var sectorPools [8]sync.Pool // 512 << 0 ... 512 << 7 = MaxSectorSize

// getSector returns a buffer of ss bytes. It hands out the pointer it
// keeps in the pool, so putting it back allocates nothing.
func getSector(ss int) *[]byte {
	i := bits.TrailingZeros(uint(ss)) - bits.TrailingZeros(MinSectorSize)
	if p, ok := sectorPools[i].Get().(*[]byte); ok {
		return p
	}
	b := make([]byte, ss)
	return &b
}

func putSector(p *[]byte) {
	i := bits.TrailingZeros(uint(len(*p))) - bits.TrailingZeros(MinSectorSize)
	sectorPools[i].Put(p)
}

// Of returns the block device behind a driver handle, for a file system
// that mounts on an open block device: take a vfs.Backing of the
// descriptor (which keeps the device open for the life of the mount) and
// pass its Handle. ok is false for a handle that is not a block device.
func Of(h vfs.Handle) (d Device, ok bool) {
	if bf, ok := h.(interface{ Device() Device }); ok {
		return bf.Device(), true
	}
	return nil, false
}
