package shell

import (
	"fmt"
	"strings"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "stat", summary: "display file status (GNU's format; -L)", minOps: 1, run: runStat,
		options: []option{{short: 'L', long: "dereference", help: "follow symbolic links"}}})
}

func runStat(c *cmd, f flags, ops []string) int {
	status := 0
	for _, op := range ops {
		var st vfs.Stat
		var err error
		if f.has("L") {
			st, err = c.p.Stat(op)
		} else {
			st, err = c.p.Lstat(op)
		}
		if err != nil {
			c.errorf("cannot statx %s: %s", quote(op), errText(err))
			status = 1
			continue
		}
		fmt.Fprint(c.out, statText(c.p, op, st))
	}
	return status
}

// statText is GNU stat's default output (Birth is "-": the VFS's stat
// has no birth time).
func statText(p *vfs.Proc, name string, st vfs.Stat) string {
	var b strings.Builder
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		t, _ := p.Readlink(name)
		fmt.Fprintf(&b, "  File: %s -> %s\n", name, t)
	} else {
		fmt.Fprintf(&b, "  File: %s\n", name)
	}
	fmt.Fprintf(&b, "  Size: %-10d\tBlocks: %-10d IO Block: %-6d %s\n", st.Size, st.Blocks, st.Blksize, fileType(st))
	dev := fmt.Sprintf("%d,%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	if t := st.Mode & unix.S_IFMT; t == unix.S_IFCHR || t == unix.S_IFBLK {
		fmt.Fprintf(&b, "Device: %s\tInode: %-11d Links: %-5d Device type: %d,%d\n", dev, st.Ino, st.Nlink, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	} else {
		fmt.Fprintf(&b, "Device: %s\tInode: %-11d Links: %d\n", dev, st.Ino, st.Nlink)
	}
	fmt.Fprintf(&b, "Access: (%04o/%s)  Uid: (%5d/%8s)   Gid: (%5d/%8s)\n", st.Mode&0o7777, modeString(st.Mode),
		st.Uid, statName(p, "/etc/passwd", st.Uid), st.Gid, statName(p, "/etc/group", st.Gid))
	tf := "2006-01-02 15:04:05.000000000 -0700"
	fmt.Fprintf(&b, "Access: %s\nModify: %s\nChange: %s\n Birth: -\n", st.Atime.Local().Format(tf), st.Mtime.Local().Format(tf), st.Ctime.Local().Format(tf))
	return b.String()
}
