package ram

// /dev/ram-control: RAM disks made at run time through a process, as
// loop-control makes loop devices. Linux makes its RAM disks only when
// brd loads (rd_nr, rd_size); NuttX's mkrd asks the board with
// BOARDIOC_MKRD. iovfs offers NuttX's request as an ioctl of a control
// device, so that a shell or a guest makes a disk through its process and
// never constructs the driver itself.

import (
	"fmt"
	"math"
	"sync"
	"syscall"

	"github.com/iovfs/iovfs/fs/devfs"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// CtlAdd is the request of /dev/ram-control that makes a RAM disk: its
// argument is a *Config, the result the disk's minor number.
const CtlAdd = 0x5280

// ControlMinor is ram-control's number, (10, ControlMinor): a misc
// character device, in the range Linux leaves to local use.
const ControlMinor = 242

// A Config describes the disk CtlAdd makes.
type Config struct {
	// Minor is the disk's number, /dev/ram<Minor>; -1 takes the lowest
	// free one.
	Minor int
	// Sectors is the size in sectors; the size is rounded up to Align.
	Sectors int64
	// SectorSize is the logical block size: 0 for SectorSize, else a
	// power of two from 512 to Align.
	SectorSize int
}

// Control is /dev/ram-control. It implements devfs.Device.
type Control struct {
	dev *devfs.FS

	// mu protects disks.
	mu    sync.Mutex
	disks map[uint32]*Disk
}

// Register adds ram-control and the disks ram0 ... ram<n-1>, of size
// bytes each, to dev, and returns the control device.
func Register(dev *devfs.FS, n int, size int64) (*Control, error) {
	c := &Control{dev: dev, disks: map[uint32]*Disk{}}
	if err := dev.Add("ram-control", c); err != nil {
		return nil, fmt.Errorf("ram-control: %w", err)
	}
	for i := 0; i < n; i++ {
		d, err := New(uint32(i), size)
		if err == nil {
			err = c.add(d)
		}
		if err != nil {
			return nil, fmt.Errorf("ram%d: %w", i, err)
		}
	}
	return c, nil
}

// DevInfo implements devfs.Device: the misc character device (10,
// ControlMinor), mode 0600, as only root makes disks.
func (c *Control) DevInfo() (uint32, uint64) {
	return unix.S_IFCHR | 0o600, vfs.Mkdev(10, ControlMinor)
}

// Open implements vfs.Opener.
func (c *Control) Open(int, vfs.Cred) (vfs.Handle, error) { return ctlHandle{c}, nil }

type ctlHandle struct{ c *Control }

// Ioctl implements vfs.Ioctler: CtlAdd makes a disk, adds its node to the
// devfs and registers its number in the caller's namespace, so that a
// node made with mknod opens it too. It needs privilege (EPERM), as
// every device change does; EEXIST for a minor in use, EINVAL for a bad
// size or sector size, EFBIG for a size past what an int64 holds,
// ENOMEM for one the memory could never hold. Other requests give
// ENOSYS.
func (h ctlHandle) Ioctl(p *vfs.Proc, req uint, arg any) (int, error) {
	if req != CtlAdd {
		return 0, syscall.ENOSYS
	}
	cfg, ok := arg.(*Config)
	if !ok || cfg == nil {
		return 0, syscall.EINVAL
	}
	if !p.Privileged() {
		return 0, syscall.EPERM
	}
	sect := cfg.SectorSize
	if sect == 0 {
		sect = SectorSize
	}
	if cfg.Sectors <= 0 || cfg.Minor < -1 || cfg.Minor > 1<<20-1 || sect < 512 || sect > Align || sect&(sect-1) != 0 {
		return 0, syscall.EINVAL
	}
	if cfg.Sectors > (math.MaxInt64-Align)/int64(sect) {
		return 0, syscall.EFBIG
	}
	size := cfg.Sectors * int64(sect)
	if size%Align != 0 {
		size += Align - size%Align
	}
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	minor := cfg.Minor
	if minor < 0 {
		for minor = 0; c.disks[uint32(minor)] != nil; minor++ {
		}
	}
	if c.disks[uint32(minor)] != nil {
		return 0, syscall.EEXIST
	}
	d, err := NewSectorSize(uint32(minor), size, sect)
	if err != nil {
		return 0, err
	}
	if err := c.addLocked(d); err != nil {
		return 0, err
	}
	if err := p.Namespace().RegisterDevice(unix.S_IFBLK, vfs.Mkdev(Major, uint32(minor)), d); err != nil && err != syscall.EBUSY {
		return 0, err
	}
	return minor, nil
}

func (c *Control) add(d *Disk) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addLocked(d)
}

func (c *Control) addLocked(d *Disk) error {
	if err := c.dev.Add(fmt.Sprintf("ram%d", d.minor), d); err != nil {
		return err
	}
	c.disks[d.minor] = d
	return nil
}
