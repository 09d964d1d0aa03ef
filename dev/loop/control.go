package loop

import (
	"fmt"
	"sort"
	"sync"
	"syscall"

	"github.com/iovfs/iovfs/fs/devfs"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// maxDevices bounds the device numbers, as Linux's minor numbers are
// (MINORMASK, 20 bits).
const maxDevices = 1 << 20

// Control is /dev/loop-control: it creates, finds and removes loop
// devices, and keeps their names in a devfs as udev would. It implements
// devfs.Device.
type Control struct {
	dev *devfs.FS

	// mu protects devices.
	mu      sync.Mutex
	devices map[int]*Device
}

// Register adds loop-control and the loop devices loop0 ... loop<n-1> to
// dev, as Linux's loop module does with max_loop=n, and returns the
// control device. LOOP_CTL_ADD and LOOP_CTL_GET_FREE add more.
func Register(dev *devfs.FS, n int) (*Control, error) {
	c := &Control{dev: dev, devices: map[int]*Device{}}
	if err := dev.Add("loop-control", c); err != nil {
		return nil, fmt.Errorf("loop-control: %w", err)
	}
	for i := 0; i < n; i++ {
		if _, err := c.add(i); err != nil {
			return nil, fmt.Errorf("loop%d: %w", i, err)
		}
	}
	return c, nil
}

// Device returns loop device n, or nil.
func (c *Control) Device(n int) *Device {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.devices[n]
}

// DevInfo implements devfs.Device: the misc character device (10, 237).
func (c *Control) DevInfo() (uint32, uint64) {
	return unix.S_IFCHR | 0o660, vfs.Mkdev(10, 237)
}

// Open implements vfs.Opener.
func (c *Control) Open(int, vfs.Cred) (vfs.Handle, error) { return ctlHandle{c}, nil }

type ctlHandle struct{ c *Control }

// Ioctl implements vfs.Ioctler (loop_control_ioctl). Other requests give
// ENOSYS, as on Linux.
func (h ctlHandle) Ioctl(_ *vfs.Proc, req uint, arg any) (int, error) {
	switch req {
	case unix.LOOP_CTL_GET_FREE:
		return h.c.getFree()
	case unix.LOOP_CTL_ADD:
		n, ok := intArg(arg)
		if !ok {
			return 0, errEINVAL
		}
		return h.c.add(n)
	case unix.LOOP_CTL_REMOVE:
		n, ok := intArg(arg)
		if !ok {
			return 0, errEINVAL
		}
		return 0, h.c.remove(n)
	}
	return 0, syscall.ENOSYS
}

// add creates loop device n, or the lowest free number if n < 0, and
// returns its number. A number in use gives EEXIST.
func (c *Control) add(n int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addLocked(n)
}

func (c *Control) addLocked(n int) (int, error) {
	if n >= maxDevices {
		return 0, errEINVAL
	}
	if n < 0 {
		for n = 0; c.devices[n] != nil; n++ {
		}
		if n >= maxDevices {
			return 0, syscall.ENOSPC
		}
	}
	if c.devices[n] != nil {
		return 0, syscall.EEXIST
	}
	d := newDevice(c, n)
	if err := c.dev.Add(fmt.Sprintf("loop%d", n), d); err != nil {
		return 0, err
	}
	c.devices[n] = d
	return n, nil
}

// remove deletes loop device n: EINVAL for n < 0, ENODEV if there is
// none, EBUSY if it is bound or open.
func (c *Control) remove(n int) error {
	if n < 0 {
		return errEINVAL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.devices[n]
	if d == nil {
		return syscall.ENODEV
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != unbound || d.openers > 0 {
		return errEBUSY
	}
	d.removed = true
	delete(c.devices, n)
	c.dev.Remove(fmt.Sprintf("loop%d", n))
	return nil
}

// getFree returns the lowest-numbered unbound device, adding one if all
// are bound (loop_control_get_free).
func (c *Control) getFree() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nums := make([]int, 0, len(c.devices))
	for n := range c.devices {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		d := c.devices[n]
		d.mu.RLock()
		free := d.state == unbound
		d.mu.RUnlock()
		if free {
			return n, nil
		}
	}
	return c.addLocked(-1)
}
