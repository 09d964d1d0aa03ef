package vfs

// Device numbers (Linux fs/char_dev.c, block/bdev.c): a namespace maps a
// device type and number to a driver, so a device node made by mknod on
// any file system opens that driver, as /dev's nodes do.

import (
	"sync"

	"golang.org/x/sys/unix"
)

type devKey struct {
	typ  uint32 // unix.S_IFCHR or unix.S_IFBLK
	rdev uint64
}

// deviceTable is a namespace's registered devices.
type deviceTable struct {
	// mu protects m.
	mu sync.RWMutex
	m  map[devKey]Opener
}

// RegisterDevice makes device nodes of type typ (unix.S_IFCHR or
// unix.S_IFBLK) and number rdev open d in this namespace. Another type
// gives EINVAL; a number already registered for the type gives EBUSY, as
// register_chrdev_region does.
func (ns *Namespace) RegisterDevice(typ uint32, rdev uint64, d Opener) error {
	if typ != unix.S_IFCHR && typ != unix.S_IFBLK {
		return errEINVAL
	}
	t := &ns.devices
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[devKey]Opener{}
	}
	k := devKey{typ, rdev}
	if _, dup := t.m[k]; dup {
		return unix.EBUSY
	}
	t.m[k] = d
	return nil
}

// device returns the driver registered for typ and rdev, or nil.
func (ns *Namespace) device(typ uint32, rdev uint64) Opener {
	t := &ns.devices
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m[devKey{typ, rdev}]
}
