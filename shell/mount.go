package shell

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "mount", summary: "mount a file system (-t -o), or list mounts",
		synopsis: "[-t TYPE] [-o OPTIONS] [-r] [--bind] SOURCE TARGET", run: runMount,
		options: []option{
			{short: 't', long: "types", arg: needArg, help: "the file system type"},
			{short: 'o', long: "options", arg: needArg, help: "comma-separated options (ro, bind, nosuid, nodev, noexec; others go to the file system)"},
			{short: 'r', long: "read-only", help: "mount read-only"},
			{short: 'B', long: "bind", help: "bind a directory elsewhere"},
		}})
	register(&builtin{name: "umount", summary: "unmount a file system (-l)", synopsis: "[-lf] TARGET...", run: runUmount,
		options: []option{
			{short: 'l', long: "lazy", help: "detach now, clean up when no longer busy"},
			{short: 'f', long: "force", help: "force the unmount"},
		}})
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

func runMount(c *cmd, f flags, ops []string) int {
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
	flags, data := mountFlags(strings.Join(f.all("o"), ","))
	if f.has("r") {
		flags |= unix.MS_RDONLY
	}
	if f.has("B") {
		flags |= unix.MS_BIND
	}
	fstype := f.value("t")
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

func runUmount(c *cmd, f flags, ops []string) int {
	if len(ops) == 0 {
		c.errorf("bad usage")
		fmt.Fprintf(c.err, "Try 'umount --help' for more information.\n")
		return 1
	}
	flags := 0
	if f.has("l") {
		flags |= unix.MNT_DETACH
	}
	if f.has("f") {
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
