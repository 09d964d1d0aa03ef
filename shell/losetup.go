package shell

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "losetup", summary: "set up loop devices (-f --show -o --sizelimit -b -r -d -a -l)",
		synopsis: "[OPTION]... [LOOPDEV] [FILE]", run: runLosetup,
		options: []option{
			{short: 'f', long: "find", help: "find the first unused device (and set it up with FILE)"},
			{long: "show", help: "print the device name after setting it up"},
			{short: 'o', long: "offset", arg: needArg, help: "start at this offset of FILE"},
			{long: "sizelimit", arg: needArg, help: "use at most this many bytes of FILE"},
			{short: 'b', long: "sector-size", arg: needArg, help: "the logical sector size"},
			{short: 'r', long: "read-only", help: "set up a read-only device"},
			{short: 'd', long: "detach", help: "detach the devices given"},
			{short: 'a', long: "all", help: "list every bound device"},
			{short: 'l', long: "list", help: "list in columns"},
			{short: 'P', long: "partscan", help: "accepted"},
		}})
}

// loopStatus reads a loop device's LOOP_GET_STATUS64, or ENXIO if unbound.
func (c *cmd) loopStatus(dev string) (unix.LoopInfo64, error) {
	fd, err := c.p.Open(dev, unix.O_RDONLY, 0)
	if err != nil {
		return unix.LoopInfo64{}, err
	}
	defer c.p.Close(fd)
	var info unix.LoopInfo64
	_, err = c.p.Ioctl(fd, unix.LOOP_GET_STATUS64, &info)
	return info, err
}

func cstr(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// loopDevices lists the /dev/loopN that exist, in number order. It
// probes the names rather than listing /dev, which devfs does not do.
func (c *cmd) loopDevices() []string {
	var out []string
	for n := 0; n < 256; n++ {
		name := fmt.Sprintf("/dev/loop%d", n)
		if _, err := c.p.Stat(name); err == nil {
			out = append(out, name)
		}
	}
	return out
}

func runLosetup(c *cmd, f flags, ops []string) int {
	switch {
	case f.has("d"):
		status := 0
		for _, dev := range ops {
			fd, err := c.p.Open(dev, unix.O_RDONLY, 0)
			if err == nil {
				_, err = c.p.Ioctl(fd, unix.LOOP_CLR_FD, 0)
				c.p.Close(fd)
			}
			if err != nil {
				c.errorf("%s: detach failed: %s", dev, errText(err))
				status = 1
			}
		}
		return status
	case f.has("a") || f.has("l") || len(ops) == 0 && !f.has("f"):
		if f.has("l") {
			fmt.Fprintln(c.out, "NAME       SIZELIMIT OFFSET AUTOCLEAR RO BACK-FILE DIO LOG-SEC")
		}
		for _, dev := range c.loopDevices() {
			info, err := c.loopStatus(dev)
			if err != nil {
				continue
			}
			name := cstr(info.File_name[:])
			if f.has("l") {
				fmt.Fprintf(c.out, "%-10s %9d %6d %9d %2d %s %3d %7d\n", dev, info.Sizelimit, info.Offset,
					b2i(info.Flags&unix.LO_FLAGS_AUTOCLEAR != 0), b2i(info.Flags&unix.LO_FLAGS_READ_ONLY != 0), name, 0, 512)
			} else {
				fmt.Fprintf(c.out, "%s: [%04d]:%d (%s)\n", dev, info.Device, info.Inode, name)
			}
		}
		return 0
	}
	var dev, file string
	if f.has("f") {
		ctl, err := c.p.Open("/dev/loop-control", unix.O_RDWR, 0)
		if err != nil {
			c.errorf("cannot find an unused loop device: %s", errText(err))
			return 1
		}
		n, err := c.p.Ioctl(ctl, unix.LOOP_CTL_GET_FREE, nil)
		c.p.Close(ctl)
		if err != nil {
			c.errorf("cannot find an unused loop device: %s", errText(err))
			return 1
		}
		dev = fmt.Sprintf("/dev/loop%d", n)
		if len(ops) == 0 {
			fmt.Fprintln(c.out, dev)
			return 0
		}
		file = ops[0]
	} else {
		if len(ops) != 2 {
			return c.usage("bad usage")
		}
		dev, file = ops[0], ops[1]
	}
	ro := f.has("r")
	flags := unix.O_RDWR
	if ro {
		flags = unix.O_RDONLY
	}
	bfd, err := c.p.Open(file, flags, 0)
	if err != nil && !ro && (isErrno(err, unix.EROFS) || isErrno(err, unix.EACCES)) {
		ro = true
		bfd, err = c.p.Open(file, unix.O_RDONLY, 0)
	}
	if err != nil {
		c.errorf("%s: failed to set up loop device: %s", file, errText(err))
		return 1
	}
	defer c.p.Close(bfd)
	lfd, err := c.p.Open(dev, unix.O_RDWR, 0)
	if err != nil {
		c.errorf("%s: failed to set up loop device: %s", file, errText(err))
		return 1
	}
	defer c.p.Close(lfd)
	cfg := unix.LoopConfig{Fd: uint32(bfd)}
	if ro {
		cfg.Info.Flags |= unix.LO_FLAGS_READ_ONLY
	}
	if v := f.value("o"); v != "" {
		n, ok := parseSize(v)
		if !ok {
			c.errorf("invalid offset %s specified", quote(v))
			return 1
		}
		cfg.Info.Offset = uint64(n)
	}
	if v := f.value("sizelimit"); v != "" {
		n, ok := parseSize(v)
		if !ok {
			c.errorf("invalid size %s specified", quote(v))
			return 1
		}
		cfg.Info.Sizelimit = uint64(n)
	}
	if v := f.value("b"); v != "" {
		n, ok := parseSize(v)
		if !ok {
			c.errorf("invalid logical sector size %s specified", quote(v))
			return 1
		}
		cfg.Size = uint32(n) // loop_config.block_size
	}
	copy(cfg.Info.File_name[:], c.abs(file))
	if _, err := c.p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		c.errorf("%s: failed to set up loop device: %s", file, errText(err))
		return 1
	}
	if f.has("show") {
		fmt.Fprintln(c.out, dev)
	}
	return 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
