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
	"fmt"

	"github.com/iovfs/iovfs/dev/mem"
	"github.com/iovfs/iovfs/fs/devfs"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/vfs"
)

// An Option changes what New builds.
type Option func(*config)

type config struct {
	devices []namedDevice
}

type namedDevice struct {
	name string
	dev  devfs.Device
}

// WithDevice adds the device d to /dev under name.
func WithDevice(name string, d devfs.Device) Option {
	return func(c *config) { c.devices = append(c.devices, namedDevice{name, d}) }
}

// New returns a process in a new namespace laid out as a program expects:
// tmpfs at /, devfs at /dev (null, zero, full, random, urandom and the
// devices given by WithDevice), a separate tmpfs at /tmp (mode 1777), and
// an empty /mnt.
func New(opts ...Option) (*vfs.Proc, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	dev := devfs.New()
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
	ns := vfs.NewNamespace(tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}))
	p := vfs.NewProc(ns)
	for _, d := range []struct {
		path string
		mode uint32
	}{{"/dev", 0o755}, {"/tmp", 0o1777}, {"/mnt", 0o755}} {
		if err := p.Mkdir(d.path, 0o777); err != nil {
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
	return p, nil
}
