package loop

import (
	"math"
	"os"
	"syscall"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Ioctl implements vfs.Ioctler: the loop requests (lo_ioctl), then the
// generic block ones. Any other request gives EINVAL, as Linux's
// lo_simple_ioctl does.
//
// LOOP_SET_STATUS64, LOOP_SET_CAPACITY, LOOP_SET_DIRECT_IO and
// LOOP_SET_BLOCK_SIZE need the device open for writing or CAP_SYS_ADMIN
// (EPERM), as lo_ioctl checks; the others rely on the device node's
// permissions, as in Linux.
func (h *handle) Ioctl(p *vfs.Proc, req uint, arg any) (int, error) {
	d := h.d
	switch req {
	case unix.LOOP_SET_STATUS64, unix.LOOP_SET_CAPACITY, unix.LOOP_SET_DIRECT_IO, unix.LOOP_SET_BLOCK_SIZE:
		if !h.writable && !p.Privileged() {
			return 0, syscall.EPERM
		}
	}
	switch req {
	case unix.LOOP_CONFIGURE:
		cfg, ok := arg.(*unix.LoopConfig)
		if !ok {
			return 0, errEINVAL
		}
		return 0, d.configure(p, h, cfg)
	case unix.LOOP_SET_FD:
		fd, ok := intArg(arg)
		if !ok {
			return 0, errEINVAL
		}
		cfg := unix.LoopConfig{Fd: uint32(fd)}
		return 0, d.configure(p, h, &cfg)
	case unix.LOOP_CLR_FD:
		return 0, d.clear()
	case unix.LOOP_GET_STATUS64:
		info, ok := arg.(*unix.LoopInfo64)
		if !ok {
			return 0, errEINVAL
		}
		return 0, d.getStatus(info)
	case unix.LOOP_SET_STATUS64:
		info, ok := arg.(*unix.LoopInfo64)
		if !ok {
			return 0, errEINVAL
		}
		return 0, d.setStatus(info)
	case unix.LOOP_SET_CAPACITY:
		return 0, d.setCapacity()
	case unix.LOOP_SET_BLOCK_SIZE:
		bs, ok := intArg(arg)
		if !ok {
			return 0, errEINVAL
		}
		return 0, d.setBlockSize(bs)
	case unix.BLKRRPART:
		return 0, d.rereadParts(p)
	}
	n, err := h.File.Ioctl(p, req, arg)
	if err == syscall.ENOTTY {
		return 0, errEINVAL
	}
	return n, err
}

// intArg reads an integer request argument.
func intArg(arg any) (int, bool) {
	switch v := arg.(type) {
	case int:
		return v, true
	case int32:
		return int(v), true
	case int64:
		return int(v), true
	case uint:
		return int(v), true
	case uint32:
		return int(v), true
	case uint64:
		return int(v), true
	case uintptr:
		return int(v), true
	}
	return 0, false
}

// configure binds the device to the backing file cfg.Fd of p
// (loop_configure).
func (d *Device) configure(p *vfs.Proc, h *handle, cfg *unix.LoopConfig) error {
	info := &cfg.Info
	if info.Flags&^configureFlags != 0 {
		return errEINVAL
	}
	bs := int(cfg.Size)
	if bs == 0 {
		bs = 512
	}
	if !block.ValidSectorSize(bs) {
		return errEINVAL
	}
	if err := validInfo(info); err != nil {
		return err
	}
	b, err := p.Backing(int(cfg.Fd))
	if err != nil {
		return err
	}
	globalMu.Lock()
	d.mu.Lock()
	err = d.bind(b, h, info, bs)
	d.mu.Unlock()
	globalMu.Unlock()
	if err != nil {
		b.Release()
		return err
	}
	d.rescan()
	return nil
}

// validInfo checks the loop_info64 fields Linux rejects
// (loop_set_status_from_info): encryption is gone from Linux, and offsets
// must fit an loff_t.
func validInfo(info *unix.LoopInfo64) error {
	if info.Encrypt_type != 0 || info.Encrypt_key_size != 0 {
		return errEINVAL
	}
	if info.Offset > math.MaxInt64 || info.Sizelimit > math.MaxInt64 {
		return syscall.EOVERFLOW
	}
	return nil
}

// bind sets up a bound device; mu is held.
func (d *Device) bind(b *vfs.Backing, h *handle, info *unix.LoopInfo64, bs int) error {
	if d.state != unbound {
		return errEBUSY
	}
	st, err := b.Stat()
	if err != nil {
		return err
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFBLK {
		return errEINVAL
	}
	if !b.Seekable() {
		return errEINVAL
	}
	if d.below(b) {
		return errEINVAL // loop_validate_file: a cycle of loop devices
	}
	flags := info.Flags &^ unix.LO_FLAGS_DIRECT_IO
	if !b.Writable() || !h.writable {
		flags |= unix.LO_FLAGS_READ_ONLY
	}
	d.b = b
	d.offset, d.sizelimit = int64(info.Offset), int64(info.Sizelimit)
	d.flags = flags
	d.fileName, d.cryptName = info.File_name, info.Crypt_name
	d.fileName[unix.LO_NAME_SIZE-1], d.cryptName[unix.LO_NAME_SIZE-1] = 0, 0
	d.ssize.Store(int32(bs))
	d.state = bound
	d.resize(st.Size)
	return nil
}

// below reports whether d is b, or a loop device under b; globalMu is
// held.
func (d *Device) below(b *vfs.Backing) bool {
	for {
		lh, ok := b.Handle().(interface{ loopDevice() *Device })
		if !ok {
			return false
		}
		lower := lh.loopDevice()
		if lower == d {
			return true
		}
		next := lower.b // globalMu keeps it still
		if next == nil {
			return false
		}
		b = next
	}
}

// resize computes the size from the backing size (loop_set_size and
// lo_calculate_size) and sets up direct access for it; mu is held.
func (d *Device) resize(backing int64) {
	size := backing - d.offset
	if size < 0 {
		size = 0
	}
	if d.sizelimit > 0 && d.sizelimit < size {
		size = d.sizelimit
	}
	size &^= 511 // a capacity in 512-byte sectors
	d.size.Store(size)
	d.setupDirect(size)
	block.Invalidate(d, 0, -1) // new binding, offset or capacity: invalidate_bdev
}

// setupDirect makes the direct-access view of [offset, offset+size) of
// the backing file; mu is held. A backing file with no memory view leaves
// direct access off; that is not an error. Earlier mappings stay until
// teardown (see the package comment).
func (d *Device) setupDirect(size int64) {
	d.dax, d.lower = nil, nil
	if size == 0 {
		return
	}
	if fd := d.b.HostFD(); fd >= 0 {
		d.dax = d.mapHost(fd, size)
		return
	}
	if bf, ok := d.b.Handle().(interface{ Device() block.Device }); ok {
		if da, ok := bf.Device().(block.DirectAccessor); ok {
			d.lower = da
		}
	}
}

// mapHost maps the backing range of the host file open as fd, or returns
// nil.
func (d *Device) mapHost(fd int, size int64) []byte {
	page := int64(os.Getpagesize())
	start := d.offset &^ (page - 1)
	length := d.offset - start + size
	if int64(int(length)) != length {
		return nil
	}
	prot := unix.PROT_READ
	if d.flags&unix.LO_FLAGS_READ_ONLY == 0 {
		prot |= unix.PROT_WRITE
	}
	m, err := unix.Mmap(fd, start, int(length), prot, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	d.maps = append(d.maps, m)
	v := m[d.offset-start:]
	return v[:size:size]
}

// clear is LOOP_CLR_FD (loop_clr_fd): the device is cleared at its last
// close. If the caller is the only opener, new opens fail from now on.
func (d *Device) clear() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != bound {
		return errENXIO
	}
	d.flags |= unix.LO_FLAGS_AUTOCLEAR
	if d.openers == 1 {
		d.state = rundown
	}
	return nil
}

// getStatus is LOOP_GET_STATUS64 (loop_get_status).
func (d *Device) getStatus(info *unix.LoopInfo64) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.state != bound {
		return errENXIO
	}
	st, err := d.b.Stat()
	if err != nil {
		return err
	}
	*info = unix.LoopInfo64{
		Device:     st.Dev,
		Inode:      st.Ino,
		Rdevice:    st.Rdev,
		Offset:     uint64(d.offset),
		Sizelimit:  uint64(d.sizelimit),
		Number:     uint32(d.number),
		Flags:      d.flags,
		File_name:  d.fileName,
		Crypt_name: d.cryptName,
	}
	return nil
}

// setStatus is LOOP_SET_STATUS64 (loop_set_status): it may change the
// offset, the size limit, the names, and set AUTOCLEAR and PARTSCAN;
// AUTOCLEAR alone may be cleared. Other flag bits are ignored.
func (d *Device) setStatus(info *unix.LoopInfo64) error {
	d.mu.Lock()
	rescan, err := d.setStatusLocked(info)
	d.mu.Unlock()
	if rescan {
		// loop_set_status rescans when PARTSCAN is newly set or the
		// geometry changed; the scan reads the device, so it runs
		// after mu is dropped.
		d.rescan()
	}
	return err
}

func (d *Device) setStatusLocked(info *unix.LoopInfo64) (rescan bool, err error) {
	if d.state != bound {
		return false, errENXIO
	}
	if err := validInfo(info); err != nil {
		return false, err
	}
	prev := d.flags
	d.flags = info.Flags&settableFlags | prev&^settableFlags | prev&^clearableFlags
	d.fileName, d.cryptName = info.File_name, info.Crypt_name
	d.fileName[unix.LO_NAME_SIZE-1], d.cryptName[unix.LO_NAME_SIZE-1] = 0, 0
	changed := int64(info.Offset) != d.offset || int64(info.Sizelimit) != d.sizelimit
	if changed {
		d.offset, d.sizelimit = int64(info.Offset), int64(info.Sizelimit)
		size, err := d.b.Size()
		if err != nil {
			return false, err
		}
		d.resize(size)
	}
	return d.flags&unix.LO_FLAGS_PARTSCAN != 0 && (prev&unix.LO_FLAGS_PARTSCAN == 0 || changed), nil
}

// setCapacity is LOOP_SET_CAPACITY: the size is computed again from the
// backing file's.
func (d *Device) setCapacity() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != bound {
		return errENXIO
	}
	size, err := d.b.Size()
	if err != nil {
		return err
	}
	d.resize(size)
	return nil
}

// setBlockSize is LOOP_SET_BLOCK_SIZE.
func (d *Device) setBlockSize(bs int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != bound {
		return errENXIO
	}
	if !block.ValidSectorSize(bs) {
		return errEINVAL
	}
	d.ssize.Store(int32(bs))
	block.Invalidate(d, 0, -1)
	return nil
}
