package shell

import (
	"fmt"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "ln", summary: "make links (-s -f)", synopsis: "[OPTION]... TARGET... [LINK_NAME]",
		minOps: 1, missing: "missing file operand", run: runLn,
		options: []option{
			{short: 's', long: "symbolic", help: "make symbolic links instead of hard links"},
			{short: 'f', long: "force", help: "remove existing destination files"},
			{short: 'n', long: "no-dereference", help: "accepted"},
			{short: 'v', long: "verbose", help: "accepted"},
		}})
	register(&builtin{name: "readlink", summary: "print a symbolic link's target (-f)", minOps: 1, run: runReadlink,
		options: []option{
			{short: 'f', long: "canonicalize", help: "follow every symbolic link; all but the last component must exist"},
			{short: 'e', long: "canonicalize-existing", help: "as -f, and every component must exist"},
			{short: 'n', long: "no-newline", help: "do not print the newline"},
			{short: 'q', long: "quiet", help: "print no errors (the default)"},
			{short: 's', long: "silent", key: "q", help: "same as -q"},
			{short: 'v', long: "verbose", help: "print errors"},
		}})
}

func runLn(c *cmd, f flags, ops []string) int {
	if len(ops) == 1 {
		ops = append(ops, baseName(ops[0]))
	}
	dst := ops[len(ops)-1]
	srcs := ops[:len(ops)-1]
	dstDir := isDirPath(c.p, dst)
	if len(srcs) > 1 && !dstDir {
		c.errorf("target %s is not a directory", quote(dst))
		return 1
	}
	kind := "hard link"
	if f.has("s") {
		kind = "symbolic link"
	}
	status := 0
	for _, src := range srcs {
		to := dst
		if dstDir {
			to = path.Join(dst, baseName(src))
		}
		if f.has("f") {
			if st, err := c.p.Lstat(to); err == nil && !st.IsDir() {
				c.p.Unlink(to)
			}
		}
		var err error
		if f.has("s") {
			err = c.p.Symlink(src, to)
		} else {
			err = c.p.Link(src, to)
		}
		if err != nil {
			if !f.has("s") && isErrno(err, syscall.ENOENT) {
				if _, serr := c.p.Lstat(src); serr != nil {
					c.errorf("failed to access %s: %s", quote(src), errText(serr))
					status = 1
					continue
				}
			}
			c.errorf("failed to create %s %s: %s", kind, quote(to), errText(err))
			status = 1
		}
	}
	return status
}

// canonicalize resolves every symlink of name, as readlink -f does: all
// components but the last must exist.
func (c *cmd) canonicalize(name string) (string, error) {
	parts := strings.Split(c.abs(name), "/")
	cur := "/"
	for hops, i := 0, 0; i < len(parts); i++ {
		part := parts[i]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, part)
		st, err := c.p.Lstat(next)
		if err != nil {
			if i == len(parts)-1 && isErrno(err, syscall.ENOENT) {
				return next, nil
			}
			return "", err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if hops++; hops > 40 {
				return "", syscall.ELOOP
			}
			t, err := c.p.Readlink(next)
			if err != nil {
				return "", err
			}
			if path.IsAbs(t) {
				cur = "/"
			}
			parts = append(strings.Split(t, "/"), parts[i+1:]...)
			i = -1
			continue
		}
		if i < len(parts)-1 && !st.IsDir() {
			return "", syscall.ENOTDIR
		}
		cur = next
	}
	return cur, nil
}

func runReadlink(c *cmd, f flags, ops []string) int {
	status := 0
	for _, op := range ops {
		var t string
		var err error
		if f.has("f") || f.has("e") {
			t, err = c.canonicalize(op)
			if err == nil && f.has("e") {
				_, err = c.p.Stat(t)
			}
		} else {
			t, err = c.p.Readlink(op)
		}
		if err != nil {
			if f.has("v") {
				c.errorf("%s: %s", op, errText(err))
			}
			status = 1
			continue
		}
		fmt.Fprint(c.out, t)
		if !f.has("n") {
			fmt.Fprintln(c.out)
		}
	}
	return status
}
