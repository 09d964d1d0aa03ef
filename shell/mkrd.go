package shell

import (
	"errors"
	"math"
	"strconv"

	"github.com/iovfs/iovfs/dev/ram"
	"github.com/iovfs/iovfs/internal/sysmem"
	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "mkrd", summary: "make a RAM disk: mkrd [-m MINOR] [-s SECTSIZE] NSECTORS",
		synopsis: "[-m MINOR] [-s SECTSIZE] NSECTORS", minOps: 1, maxOps: 1, run: runMkrd,
		options: []option{
			{short: 'm', arg: needArg, help: "the disk's minor number, /dev/ramMINOR (default: the lowest free)"},
			{short: 's', arg: needArg, help: "the sector size, a power of two from 512 to 4096 (default 512)"},
		}})
}

// runMkrd asks /dev/ram-control for a disk (ram.CtlAdd), as NuttX's mkrd
// asks the board: the driver makes the disk, its /dev node and its
// number in the namespace's device table.
func runMkrd(c *cmd, f flags, ops []string) int {
	cfg := ram.Config{Minor: -1, SectorSize: ram.SectorSize}
	if v, ok := f.last("s"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 512 || n > ram.Align || n&(n-1) != 0 {
			c.errorf("invalid sector size %s: want a power of two from 512 to %d", quote(v), ram.Align)
			return 1
		}
		cfg.SectorSize = n
	}
	nsect, err := strconv.ParseInt(ops[0], 10, 64)
	if err != nil || nsect <= 0 {
		if errors.Is(err, strconv.ErrRange) {
			c.errorf("sector count %s: %s", quote(ops[0]), errText(unix.EFBIG))
			return 1
		}
		c.errorf("invalid sector count %s: want a positive number", quote(ops[0]))
		return 1
	}
	if nsect > (math.MaxInt64-ram.Align)/int64(cfg.SectorSize) {
		c.errorf("%d sectors of %d bytes: %s", nsect, cfg.SectorSize, errText(unix.EFBIG))
		return 1
	}
	cfg.Sectors = nsect
	if v, ok := f.last("m"); ok {
		if cfg.Minor, err = strconv.Atoi(v); err != nil || cfg.Minor < 0 || cfg.Minor > 1<<20-1 {
			c.errorf("invalid minor %s: want 0 to %d", quote(v), 1<<20-1)
			return 1
		}
	}
	const ctl = "/dev/ram-control"
	fd, err := c.p.Open(ctl, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		c.errorf("%s: %s", ctl, errText(err))
		return 1
	}
	defer c.p.Close(fd)
	_, err = c.p.Ioctl(fd, ram.CtlAdd, &cfg)
	name := "/dev/ram" + strconv.Itoa(cfg.Minor)
	if cfg.Minor < 0 {
		name = "a RAM disk"
	}
	switch {
	case errors.Is(err, unix.ENOMEM):
		size := nsect * int64(cfg.SectorSize)
		c.errorf("%s: %s: %s is more than the %s of memory this process may have", name, errText(err), sysmem.Size(size), sysmem.Size(sysmem.Total()))
		return 1
	case err != nil:
		c.errorf("%s: %s", name, errText(err))
		return 1
	}
	return 0
}
