package shell

import (
	"path"
	"syscall"
)

func init() {
	register(&builtin{name: "rm", summary: "remove files or directories (-r -f)", run: runRm,
		options: []option{
			{short: 'r', long: "recursive", help: "remove directories and their contents"},
			{short: 'R', key: "r", help: "same as -r"},
			{short: 'f', long: "force", help: "ignore missing files, never fail for them"},
			{short: 'd', long: "dir", help: "remove empty directories"},
			{short: 'v', long: "verbose", help: "accepted"},
		}})
	register(&builtin{name: "rmdir", summary: "remove empty directories", synopsis: "[OPTION]... DIRECTORY...",
		minOps: 1, run: runRmdir,
		options: []option{
			{short: 'p', long: "parents", help: "remove DIRECTORY and its ancestors"},
			{short: 'v', long: "verbose", help: "accepted"},
		}})
}

func runRm(c *cmd, f flags, ops []string) int {
	force := f.has("f")
	rec := f.has("r")
	if len(ops) == 0 && !force {
		return c.usage("missing operand")
	}
	status := 0
	for _, op := range ops {
		if b := baseName(op); b == "." || b == ".." {
			c.errorf("refusing to remove '.' or '..' directory: skipping %s", quote(op))
			status = 1
			continue
		}
		st, err := c.p.Lstat(op)
		if err != nil {
			if !(force && isErrno(err, syscall.ENOENT)) {
				c.errorf("cannot remove %s: %s", quote(op), errText(err))
				status = 1
			}
			continue
		}
		if st.IsDir() {
			if !rec {
				if f.has("d") {
					if err := c.p.Rmdir(op); err != nil {
						c.errorf("cannot remove %s: %s", quote(op), errText(err))
						status = 1
					}
					continue
				}
				c.errorf("cannot remove %s: Is a directory", quote(op))
				status = 1
				continue
			}
			if c.rmTree(op, false) != nil {
				status = 1
			}
			continue
		}
		if err := c.p.Unlink(op); err != nil {
			c.errorf("cannot remove %s: %s", quote(op), errText(err))
			status = 1
		}
	}
	return status
}

// rmTree removes a directory and everything below it.
func (c *cmd) rmTree(p string, quiet bool) error {
	st, err := c.p.Lstat(p)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		err := c.p.Unlink(p)
		if err != nil && !quiet {
			c.errorf("cannot remove %s: %s", quote(p), errText(err))
		}
		return err
	}
	ents, err := readDirents(c.p, p)
	if err != nil {
		c.errorf("cannot remove %s: %s", quote(p), errText(err))
		return err
	}
	var first error
	for _, d := range ents {
		if err := c.rmTree(path.Join(p, d.Name), quiet); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	if err := c.p.Rmdir(p); err != nil {
		if !quiet {
			c.errorf("cannot remove %s: %s", quote(p), errText(err))
		}
		return err
	}
	return nil
}

func runRmdir(c *cmd, f flags, ops []string) int {
	status := 0
	for _, op := range ops {
		for p := op; ; {
			if err := c.p.Rmdir(p); err != nil {
				c.errorf("failed to remove %s: %s", quote(p), errText(err))
				status = 1
				break
			}
			if !f.has("p") {
				break
			}
			p = path.Dir(p)
			if p == "." || p == "/" {
				break
			}
		}
	}
	return status
}
