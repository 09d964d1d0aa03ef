package shell

import (
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "mkdir", summary: "make directories (-p -m)", synopsis: "[OPTION]... DIRECTORY...",
		minOps: 1, run: runMkdir,
		options: []option{
			{short: 'p', long: "parents", help: "make parent directories as needed, no error if existing"},
			{short: 'm', long: "mode", arg: needArg, help: "set the mode (as chmod), not a=rwx - umask"},
			{short: 'v', long: "verbose", help: "accepted"},
		}})
	register(&builtin{name: "mkfifo", summary: "make FIFOs (named pipes)", synopsis: "[OPTION]... NAME...",
		minOps: 1, run: runMkfifo,
		options: []option{{short: 'm', long: "mode", arg: needArg, help: "set the mode (as chmod), not a=rw - umask"}}})
}

func runMkdir(c *cmd, f flags, ops []string) int {
	mode, explicit := uint32(0o777), false
	if m := f.value("m"); m != "" {
		v, ok := parseMode(m, 0o777&^c.umask(), true, 0)
		if !ok {
			c.errorf("invalid mode %s", quote(m))
			return 1
		}
		mode, explicit = v, true
	}
	status := 0
	for _, op := range ops {
		if f.has("p") {
			parts := strings.Split(op, "/")
			cur := ""
			if strings.HasPrefix(op, "/") {
				cur = "/"
			}
			for i, part := range parts {
				if part == "" {
					continue
				}
				cur = path.Join(cur, part)
				m := uint32(0o777)
				if i == len(parts)-1 || strings.Trim(strings.Join(parts[i+1:], ""), "") == "" {
					m = mode
				}
				err := c.p.Mkdir(cur, m)
				if err != nil && !(isErrno(err, syscall.EEXIST) && isDirPath(c.p, cur)) {
					c.errorf("cannot create directory %s: %s", quote(op), errText(err))
					status = 1
					break
				}
				if err == nil && explicit && m == mode {
					c.p.Chmod(cur, mode)
				}
			}
			continue
		}
		if err := c.p.Mkdir(op, mode); err != nil {
			c.errorf("cannot create directory %s: %s", quote(op), errText(err))
			status = 1
			continue
		}
		if explicit {
			c.p.Chmod(op, mode)
		}
	}
	return status
}

func runMkfifo(c *cmd, f flags, ops []string) int {
	mode := uint32(0o666)
	if m := f.value("m"); m != "" {
		v, ok := parseMode(m, 0o666, false, 0)
		if !ok {
			c.errorf("invalid mode")
			return 1
		}
		mode = v
	}
	status := 0
	for _, op := range ops {
		if err := c.p.Mknod(op, unix.S_IFIFO|mode, 0); err != nil {
			c.errorf("cannot create fifo %s: %s", quote(op), errText(err))
			status = 1
			continue
		}
		if f.has("m") {
			c.p.Chmod(op, mode)
		}
	}
	return status
}
