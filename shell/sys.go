package shell

import (
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/iovfs/iovfs/dev/ram"
	"github.com/iovfs/iovfs/internal/sysmem"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "find", summary: "search for files (-name -type -maxdepth)", run: runFind})
	register(&builtin{name: "du", summary: "estimate file space usage (-s -h)", run: runDu})
	register(&builtin{name: "mount", summary: "mount a file system (-t -o), or list mounts", run: runMount})
	register(&builtin{name: "umount", summary: "unmount a file system (-l)", run: runUmount})
	register(&builtin{name: "losetup", summary: "set up loop devices (-f --show -o --sizelimit -b -r -d -a -l)", run: runLosetup})
	register(&builtin{name: "mkrd", summary: "make a RAM disk: mkrd [-m MINOR] [-s SECTSIZE] NSECTORS", run: runMkrd})
	register(&builtin{name: "env", summary: "print the exported environment", run: runEnv})
	register(&builtin{name: "id", summary: "print user and group ids", run: runId})
	register(&builtin{name: "sync", summary: "flush files (fsync) or, without operands, every mount", run: runSync})
	register(&builtin{name: "bench", summary: "run iovfs bench experiments (bench --help)", run: runBench})
}

func runFind(c *cmd, args []string) int {
	var roots []string
	i := 0
	for ; i < len(args) && !strings.HasPrefix(args[i], "-"); i++ {
		roots = append(roots, args[i])
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	maxDepth := -1
	var names []string
	var types string
	for ; i < len(args); i++ {
		a := args[i]
		if i+1 >= len(args) && (a == "-name" || a == "-type" || a == "-maxdepth") {
			c.errorf("missing argument to `%s'", a)
			return 1
		}
		switch a {
		case "-name":
			i++
			names = append(names, args[i])
		case "-type":
			i++
			types += args[i]
		case "-maxdepth":
			i++
			n, err := strconv.Atoi(args[i])
			if err != nil || n < 0 {
				c.errorf("Expected a positive decimal integer argument to -maxdepth, but got %s", quote(args[i]))
				return 1
			}
			maxDepth = n
		case "-print":
		default:
			c.errorf("unknown predicate `%s'", a)
			return 1
		}
	}
	match := func(name string, st vfs.Stat) bool {
		for _, pat := range names {
			if ok, _ := path.Match(pat, name); !ok {
				return false
			}
		}
		if types != "" {
			t := map[uint32]byte{unix.S_IFREG: 'f', unix.S_IFDIR: 'd', unix.S_IFLNK: 'l', unix.S_IFCHR: 'c',
				unix.S_IFBLK: 'b', unix.S_IFIFO: 'p', unix.S_IFSOCK: 's'}[st.Mode&unix.S_IFMT]
			if !strings.ContainsRune(types, rune(t)) {
				return false
			}
		}
		return true
	}
	status := 0
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		if c.stopped() {
			return
		}
		st, err := c.p.Lstat(p)
		if err != nil {
			c.errorf("%s: %s", quote(p), errText(err))
			status = 1
			return
		}
		if match(baseName(p), st) {
			fmt.Fprintln(c.out, p)
		}
		if !st.IsDir() || maxDepth >= 0 && depth >= maxDepth {
			return
		}
		ents, err := readDirents(c.p, p)
		if err != nil {
			c.errorf("%s: %s", quote(p), errText(err))
			status = 1
			return
		}
		for _, d := range ents {
			child := p + "/" + d.Name
			if strings.HasSuffix(p, "/") {
				child = p + d.Name
			}
			walk(child, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return status
}

func runDu(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "shak", map[string]string{"summarize": "s", "human-readable": "h", "all": "a"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) == 0 {
		ops = []string{"."}
	}
	seen := map[[2]uint64]bool{}
	status := 0
	show := func(blocks int64, p string) {
		kb := (blocks*512 + 1023) / 1024
		s := strconv.FormatInt(kb, 10)
		if has(opts, "h") {
			s = human(kb * 1024)
			if kb == 0 {
				s = "0"
			}
		}
		fmt.Fprintf(c.out, "%s\t%s\n", s, p)
	}
	var walk func(p string, depth int) int64
	walk = func(p string, depth int) int64 {
		st, err := c.p.Lstat(p)
		if err != nil {
			c.errorf("cannot access %s: %s", quote(p), errText(err))
			status = 1
			return 0
		}
		key := [2]uint64{st.Dev, st.Ino}
		if st.Nlink > 1 && !st.IsDir() {
			if seen[key] {
				return 0
			}
			seen[key] = true
		}
		total := st.Blocks
		if st.IsDir() {
			ents, err := readDirents(c.p, p)
			if err != nil {
				c.errorf("cannot read directory %s: %s", quote(p), errText(err))
				status = 1
			}
			for _, d := range ents {
				total += walk(strings.TrimSuffix(p, "/")+"/"+d.Name, depth+1)
			}
			if !has(opts, "s") || depth == 0 {
				show(total, p)
			}
		} else if depth == 0 || has(opts, "a") && !has(opts, "s") {
			show(total, p)
		}
		return total
	}
	for _, op := range ops {
		walk(op, 0)
	}
	return status
}

// mountFlags splits -o options into mount(2) flags and file system data.
func mountFlags(o string) (uintptr, string) {
	var flags uintptr
	var data []string
	for _, opt := range strings.Split(o, ",") {
		switch opt {
		case "":
		case "ro":
			flags |= unix.MS_RDONLY
		case "rw", "defaults":
		case "bind":
			flags |= unix.MS_BIND
		case "nosuid":
			flags |= unix.MS_NOSUID
		case "nodev":
			flags |= unix.MS_NODEV
		case "noexec":
			flags |= unix.MS_NOEXEC
		default:
			data = append(data, opt)
		}
	}
	return flags, strings.Join(data, ",")
}

func runMount(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "t:o:r", map[string]string{"types=": "t", "options=": "o", "read-only": "r", "bind": "B"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) == 0 {
		for _, m := range c.p.Namespace().Mounts() {
			fmt.Fprintf(c.out, "%s %s %s %s 0 0\n", m.Source, m.Target, m.FSType, m.Options)
		}
		return 0
	}
	if len(ops) != 2 {
		c.errorf("bad usage")
		fmt.Fprintf(c.err, "Try 'mount --help' for more information.\n")
		return 1
	}
	flags, data := mountFlags(strings.Join(opts["o"], ","))
	if has(opts, "r") {
		flags |= unix.MS_RDONLY
	}
	if has(opts, "B") {
		flags |= unix.MS_BIND
	}
	fstype := last(opts, "t")
	if fstype == "" && flags&unix.MS_BIND == 0 {
		c.errorf("%s: specify the file system type with -t", ops[1])
		return 32
	}
	if err := c.p.Mount(ops[0], ops[1], fstype, flags, data); err != nil {
		c.errorf("%s: %s", ops[1], errDetail(err))
		return 32
	}
	return 0
}

func runUmount(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "lf", map[string]string{"lazy": "l", "force": "f"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) == 0 {
		c.errorf("bad usage")
		fmt.Fprintf(c.err, "Try 'umount --help' for more information.\n")
		return 1
	}
	flags := 0
	if has(opts, "l") {
		flags |= unix.MNT_DETACH
	}
	if has(opts, "f") {
		flags |= unix.MNT_FORCE
	}
	status := 0
	for _, op := range ops {
		if err := c.p.Unmount(op, flags); err != nil {
			switch {
			case isErrno(err, unix.EINVAL):
				c.errorf("%s: not mounted.", op)
			case isErrno(err, unix.EBUSY):
				c.errorf("%s: target is busy.", op)
			default:
				c.errorf("%s: %s", op, errText(err))
			}
			status = 32
		}
	}
	return status
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

func runLosetup(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "fo:b:rdalP", map[string]string{"find": "f", "show": "show", "offset=": "o",
		"sizelimit=": "sizelimit", "sector-size=": "b", "read-only": "r", "detach": "d", "all": "a", "list": "l"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	switch {
	case has(opts, "d"):
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
	case has(opts, "a") || has(opts, "l") || len(ops) == 0 && !has(opts, "f"):
		if has(opts, "l") {
			fmt.Fprintln(c.out, "NAME       SIZELIMIT OFFSET AUTOCLEAR RO BACK-FILE DIO LOG-SEC")
		}
		for _, dev := range c.loopDevices() {
			info, err := c.loopStatus(dev)
			if err != nil {
				continue
			}
			name := cstr(info.File_name[:])
			if has(opts, "l") {
				fmt.Fprintf(c.out, "%-10s %9d %6d %9d %2d %s %3d %7d\n", dev, info.Sizelimit, info.Offset,
					b2i(info.Flags&unix.LO_FLAGS_AUTOCLEAR != 0), b2i(info.Flags&unix.LO_FLAGS_READ_ONLY != 0), name, 0, 512)
			} else {
				fmt.Fprintf(c.out, "%s: [%04d]:%d (%s)\n", dev, info.Device, info.Inode, name)
			}
		}
		return 0
	}
	var dev, file string
	if has(opts, "f") {
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
	ro := has(opts, "r")
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
	c.sh.track(bfd)
	defer c.p.Close(bfd)
	lfd, err := c.p.Open(dev, unix.O_RDWR, 0)
	if err != nil {
		c.errorf("%s: failed to set up loop device: %s", file, errText(err))
		return 1
	}
	c.sh.track(lfd)
	defer c.p.Close(lfd)
	cfg := unix.LoopConfig{Fd: uint32(bfd)}
	if ro {
		cfg.Info.Flags |= unix.LO_FLAGS_READ_ONLY
	}
	if v := last(opts, "o"); v != "" {
		n, ok := parseSize(v)
		if !ok {
			c.errorf("invalid offset %s specified", quote(v))
			return 1
		}
		cfg.Info.Offset = uint64(n)
	}
	if v := last(opts, "sizelimit"); v != "" {
		n, ok := parseSize(v)
		if !ok {
			c.errorf("invalid size %s specified", quote(v))
			return 1
		}
		cfg.Info.Sizelimit = uint64(n)
	}
	if v := last(opts, "b"); v != "" {
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
	if has(opts, "show") {
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

func runMkrd(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "m:s:", nil)
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) != 1 {
		c.errorf("usage: mkrd [-m MINOR] [-s SECTSIZE] NSECTORS")
		return 1
	}
	if c.sh.addDevice == nil {
		c.errorf("this shell has no devfs to add a RAM disk to")
		return 1
	}
	sect := int64(ram.SectorSize)
	if v := last(opts, "s"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 512 || n > ram.Align || n&(n-1) != 0 {
			c.errorf("invalid sector size %s: want a power of two from 512 to %d", quote(v), ram.Align)
			return 1
		}
		sect = n
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
	if nsect > (math.MaxInt64-ram.Align)/sect {
		c.errorf("%d sectors of %d bytes: %s", nsect, sect, errText(unix.EFBIG))
		return 1
	}
	minor := -1
	if v := last(opts, "m"); v != "" {
		if minor, err = strconv.Atoi(v); err != nil || minor < 0 || minor > 1<<20-1 {
			c.errorf("invalid minor %s: want 0 to %d", quote(v), 1<<20-1)
			return 1
		}
	} else {
		for n := 0; ; n++ {
			if _, err := c.p.Lstat(fmt.Sprintf("/dev/ram%d", n)); err != nil {
				minor = n
				break
			}
		}
	}
	size := nsect * sect
	if size%ram.Align != 0 {
		size += ram.Align - size%ram.Align
	}
	d, err := ram.NewSectorSize(uint32(minor), size, int(sect))
	if errors.Is(err, unix.ENOMEM) {
		c.errorf("/dev/ram%d: %s: %s is more than the %s of memory this process may have", minor, errText(err), sysmem.Size(size), sysmem.Size(sysmem.Total()))
		return 1
	}
	if err != nil {
		c.errorf("/dev/ram%d: %s", minor, errText(err))
		return 1
	}
	if err := c.sh.addDevice(fmt.Sprintf("ram%d", minor), d); err != nil {
		c.errorf("/dev/ram%d: %s", minor, errText(err))
		return 1
	}
	return 0
}

func runEnv(c *cmd, args []string) int {
	if len(args) > 0 {
		c.errorf("running commands is not supported; env only prints the environment")
		return 125
	}
	var lines []string
	for name, v := range c.env.Each {
		if v.Exported && v.IsSet() {
			lines = append(lines, name+"="+v.String())
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(c.out, l)
	}
	return 0
}

func runId(c *cmd, args []string) int {
	opts, _, bad := getopt(args, "ugn", nil)
	if bad != "" {
		return c.usage("%s", bad)
	}
	uid, gid := uint32(c.p.Geteuid()), uint32(c.p.Getegid())
	switch {
	case has(opts, "u"):
		if has(opts, "n") {
			fmt.Fprintln(c.out, userName(c.p, uid))
		} else {
			fmt.Fprintln(c.out, uid)
		}
		return 0
	case has(opts, "g"):
		if has(opts, "n") {
			fmt.Fprintln(c.out, groupName(c.p, gid))
		} else {
			fmt.Fprintln(c.out, gid)
		}
		return 0
	}
	line := fmt.Sprintf("uid=%d(%s) gid=%d(%s)", uid, userName(c.p, uid), gid, groupName(c.p, gid))
	groups := []string{fmt.Sprintf("%d(%s)", gid, groupName(c.p, gid))}
	for _, g := range c.p.Getgroups() {
		if uint32(g) != gid {
			groups = append(groups, fmt.Sprintf("%d(%s)", g, groupName(c.p, uint32(g))))
		}
	}
	fmt.Fprintln(c.out, line+" groups="+strings.Join(groups, ","))
	return 0
}

func runBench(c *cmd, args []string) int {
	if c.sh.bench == nil {
		c.errorf("this shell was started without the bench experiments")
		return 1
	}
	return c.sh.bench(c.ctx, args, c.out, c.err)
}

// runSync fsyncs each operand; without operands, the root of every mount,
// which flushes what a file system keeps for the mount (a loop device's
// backing file), as sync(2) flushes every file system.
func runSync(c *cmd, args []string) int {
	_, ops, bad := getopt(args, "df", map[string]string{"data": "d", "file-system": "f"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	quiet := len(ops) == 0
	if quiet {
		for _, m := range c.p.Namespace().Mounts() {
			ops = append(ops, m.Target)
		}
	}
	status := 0
	for _, op := range ops {
		fd, err := c.p.Open(op, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err == nil {
			c.sh.track(fd)
			err = c.p.Fsync(fd)
			c.p.Close(fd)
		}
		if err != nil && !quiet {
			c.errorf("error opening %s: %s", quote(op), errText(err))
			status = 1
		}
	}
	return status
}
