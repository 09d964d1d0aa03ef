package shell

import (
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "env", summary: "print the exported environment", synopsis: "", style: raw, run: runEnv})
	register(&builtin{name: "id", summary: "print user and group ids", synopsis: "[-ugn]", maxOps: -1, run: runId,
		options: []option{
			{short: 'u', long: "user", help: "print only the effective user id"},
			{short: 'g', long: "group", help: "print only the effective group id"},
			{short: 'n', long: "name", help: "print a name instead of a number, with -u or -g"},
		}})
	register(&builtin{name: "sync", summary: "flush files (fsync) or, without operands, every mount", run: runSync,
		options: []option{
			{short: 'd', long: "data", help: "accepted (fsync)"},
			{short: 'f', long: "file-system", help: "accepted (fsync)"},
		}})
	register(&builtin{name: "bench", summary: "run iovfs bench experiments (bench --help)", synopsis: "[EXPERIMENT]...",
		style: raw, run: runBench})
}

func runEnv(c *cmd, _ flags, args []string) int {
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

func runId(c *cmd, f flags, _ []string) int {
	uid, gid := uint32(c.p.Geteuid()), uint32(c.p.Getegid())
	switch {
	case f.has("u"):
		if f.has("n") {
			fmt.Fprintln(c.out, userName(c.p, uid))
		} else {
			fmt.Fprintln(c.out, uid)
		}
		return 0
	case f.has("g"):
		if f.has("n") {
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

func runBench(c *cmd, _ flags, args []string) int {
	if c.sh.bench == nil {
		c.errorf("this shell was started without the bench experiments")
		return 1
	}
	return c.sh.bench(c.ctx, args, c.out, c.err)
}

// runSync fsyncs each operand; without operands, the root of every mount,
// which flushes what a file system keeps for the mount (a loop device's
// backing file), as sync(2) flushes every file system.
func runSync(c *cmd, _ flags, ops []string) int {
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
