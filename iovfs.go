// Package iovfs is an in-process file system and device-driver layer: the
// I/O stack of a small kernel inside a Go program, with Linux semantics and
// vectored I/O that costs nothing on the single-buffer path.
//
// New returns a process ready to use:
//
//	p, err := iovfs.New()
//	fd, err := p.Open("/dev/zero", unix.O_RDONLY, 0)
//	n, err := p.Readv(fd, [][]byte{a, b})
//
// The packages below it are layered as in a kernel: vfs (descriptors,
// mounts, dispatch), fs/... (file systems), dev/... (drivers), iov (the
// I/O vector).
package iovfs

import (
	"errors"
	"fmt"

	"github.com/iovfs/iovfs/dev/loop"
	"github.com/iovfs/iovfs/dev/mem"
	"github.com/iovfs/iovfs/dev/ram"
	"github.com/iovfs/iovfs/fs/devfs"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// An Option changes what New builds.
type Option func(*config)

type config struct {
	root     vfs.FileSystem
	devfsOut **devfs.FS
	devices  []namedDevice
	ramDisks int
	ramSize  int64
	cred     *credOption
}

type credOption struct {
	uid, gid int
	groups   []int
}

// WithCred makes New return a process whose real, effective, saved and
// file-system user and group ids are uid and gid, with the supplementary
// groups given: an unprivileged process, refused where Linux refuses one,
// unless uid is 0. The namespace is laid out as root first.
func WithCred(uid, gid int, groups ...int) Option {
	return func(c *config) { c.cred = &credOption{uid, gid, groups} }
}

type namedDevice struct {
	name string
	dev  devfs.Device
}

// WithDevice adds the device d to /dev under name.
func WithDevice(name string, d devfs.Device) Option {
	return func(c *config) { c.devices = append(c.devices, namedDevice{name, d}) }
}

// WithRAMDisks makes New add n RAM disks, /dev/ram0 ... /dev/ram<n-1>,
// of size bytes each (a positive multiple of 4096; 0 means
// ram.DefaultSize, 64 MiB), instead of the default single /dev/ram0 of
// ram.DefaultSize. A disk's memory is allocated on its first open.
func WithRAMDisks(n int, size int64) Option {
	return func(c *config) { c.ramDisks, c.ramSize = n, size }
}

// WithRoot makes New use fs as the namespace's root instead of a new
// tmpfs (an overlay over an image, say): /dev, /tmp and /mnt are made in
// it where they are missing, and mounted on as usual.
func WithRoot(fs vfs.FileSystem) Option {
	return func(c *config) { c.root = fs }
}

// WithDevFS makes New store its /dev file system in *dst, so that
// devices can be added later (the shell's mkrd does).
func WithDevFS(dst **devfs.FS) Option {
	return func(c *config) { c.devfsOut = dst }
}

// New returns a process in a new namespace laid out as a program expects:
// tmpfs at /, devfs at /dev (null, zero, full, random, urandom and the
// devices given by WithDevice; loop-control, loop0-7, ram-control and
// ram0 too), a
// separate tmpfs at /tmp (mode 1777), and an empty /mnt.
func New(opts ...Option) (*vfs.Proc, error) {
	c := config{ramDisks: 1}
	for _, o := range opts {
		o(&c)
	}
	dev := devfs.New()
	if c.devfsOut != nil {
		*c.devfsOut = dev
	}
	std := []namedDevice{
		{"null", mem.Null{}},
		{"zero", mem.Zero{}},
		{"full", mem.Full{}},
		{"random", mem.Random{Minor: 8}},
		{"urandom", mem.Random{Minor: 9}},
	}
	for _, d := range append(std, c.devices...) {
		if err := dev.Add(d.name, d.dev); err != nil {
			return nil, fmt.Errorf("iovfs: /dev/%s: %w", d.name, err)
		}
	}
	if c.ramSize == 0 {
		c.ramSize = ram.DefaultSize
	}
	if _, err := ram.Register(dev, c.ramDisks, c.ramSize); err != nil { // ram-control, ram0...
		return nil, fmt.Errorf("iovfs: /dev/%w", err)
	}
	if _, err := loop.Register(dev, 8); err != nil { // loop-control, loop0-7
		return nil, fmt.Errorf("iovfs: /dev/%w", err)
	}
	root := c.root
	if root == nil {
		rootOpts, err := tmpfsOptions("mode=0755") // the memory bounds of the tmpfs type
		if err != nil {
			return nil, fmt.Errorf("iovfs: %w", err)
		}
		root = tmpfs.New(rootOpts)
	}
	ns := vfs.NewNamespace(root)
	p := vfs.NewProc(ns)
	for _, d := range []struct {
		path string
		mode uint32
	}{{"/dev", 0o755}, {"/tmp", 0o1777}, {"/mnt", 0o755}} {
		if err := p.Mkdir(d.path, 0o777); err != nil {
			if c.root != nil && errors.Is(err, unix.EEXIST) {
				continue // the given root's own
			}
			return nil, fmt.Errorf("iovfs: %w", err)
		}
		if err := p.Chmod(d.path, d.mode); err != nil {
			return nil, fmt.Errorf("iovfs: %w", err)
		}
	}
	if err := ns.MountFS("/dev", dev, false); err != nil {
		return nil, fmt.Errorf("iovfs: %w", err)
	}
	if err := p.Mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777"); err != nil {
		return nil, fmt.Errorf("iovfs: %w", err)
	}
	if err := registerDevices(ns, dev); err != nil {
		return nil, fmt.Errorf("iovfs: %w", err)
	}
	if c.cred != nil {
		return vfs.NewProcCred(ns, c.cred.uid, c.cred.gid, c.cred.groups...), nil
	}
	return p, nil
}

// registerDevices registers every device of /dev by its type and number,
// so that device nodes made with mknod anywhere open the same drivers.
// Devices added to /dev later (LOOP_CTL_ADD) are not registered.
func registerDevices(ns *vfs.Namespace, dev *devfs.FS) error {
	root := dev.Root()
	names, ok := root.(interface{ Names() []string })
	lk, ok2 := root.(vfs.Lookuper)
	if !ok || !ok2 {
		return nil
	}
	for _, name := range names.Names() {
		n, err := lk.Lookup(name)
		if err != nil {
			return err
		}
		st, err := n.Stat()
		if err != nil {
			return err
		}
		o, ok := n.(vfs.Opener)
		if !ok {
			continue
		}
		// A number given to two names (WithDevice may add variants of a
		// standard device) opens the first name in sorted order.
		if err := ns.RegisterDevice(st.Mode&unix.S_IFMT, st.Rdev, o); err != nil && err != unix.EBUSY {
			return fmt.Errorf("/dev/%s: %w", name, err)
		}
	}
	return nil
}
