package shell

import (
	"io"
	"path"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() {
	// chmod reads its own words: a mode such as -w looks like an option.
	register(&builtin{name: "chmod", summary: "change file mode bits (octal or symbolic; -R)",
		synopsis: "[-R] MODE FILE...", style: raw, run: runChmod})
	register(&builtin{name: "chown", summary: "change file owner and group (UID[:GID])",
		synopsis: "[OPTION]... OWNER[:[GROUP]] FILE...", minOps: 2, run: runChown,
		options: []option{
			{short: 'R', long: "recursive", help: "change directories and their contents"},
			{short: 'h', long: "no-dereference", help: "change symbolic links, not what they point to"},
		}})
}

// parseMode applies a chmod mode (octal, or symbolic clauses such as
// u+x,go-w,a=r) to old; dir enables X.
func parseMode(spec string, old uint32, dir bool, umask uint32) (uint32, bool) {
	if v, err := strconv.ParseUint(spec, 8, 32); err == nil {
		if v > 0o7777 {
			return 0, false
		}
		return uint32(v), true
	}
	mode := old & 0o7777
	for _, clause := range strings.Split(spec, ",") {
		i := 0
		var who uint32
		for i < len(clause) && strings.IndexByte("ugoa", clause[i]) >= 0 {
			switch clause[i] {
			case 'u':
				who |= 0o4700
			case 'g':
				who |= 0o2070
			case 'o':
				who |= 0o1007
			case 'a':
				who |= 0o7777
			}
			i++
		}
		masked := who == 0
		if masked {
			who = 0o7777
		}
		if i >= len(clause) {
			return 0, false
		}
		for i < len(clause) {
			op := clause[i]
			if op != '+' && op != '-' && op != '=' {
				return 0, false
			}
			i++
			var bits uint32
			for i < len(clause) && strings.IndexByte("rwxXst", clause[i]) >= 0 {
				switch clause[i] {
				case 'r':
					bits |= 0o444
				case 'w':
					bits |= 0o222
				case 'x':
					bits |= 0o111
				case 'X':
					if dir || old&0o111 != 0 {
						bits |= 0o111
					}
				case 's':
					bits |= 0o6000
				case 't':
					bits |= 0o1000
				}
				i++
			}
			bits &= who
			if masked {
				bits &^= umask
			}
			switch op {
			case '+':
				mode |= bits
			case '-':
				mode &^= bits
			case '=':
				mode = mode&^(who&0o777|who&0o7000&^0o1000) | bits
			}
		}
	}
	return mode, true
}

func runChmod(c *cmd, _ flags, args []string) int {
	// A mode like -w looks like an option; take the first non-option
	// operand, or a leading -rwx mode, as the mode.
	var rec bool
	var ops []string
	for i, a := range args {
		if a == "-R" || a == "--recursive" {
			rec = true
			continue
		}
		if a == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		ops = append(ops, a)
	}
	if len(ops) == 0 {
		return c.usage("missing operand")
	}
	if len(ops) == 1 {
		return c.usage("missing operand after %s", quote(ops[0]))
	}
	spec := ops[0]
	status := 0
	var walk func(p string)
	walk = func(p string) {
		st, err := c.p.Stat(p)
		if err != nil {
			c.errorf("cannot access %s: %s", quote(p), errText(err))
			status = 1
			return
		}
		m, ok := parseMode(spec, st.Mode, st.IsDir(), c.umask())
		if !ok {
			c.usage("invalid mode: %s", quote(spec))
			status = 1
			return
		}
		if err := c.p.Chmod(p, m); err != nil {
			c.errorf("changing permissions of %s: %s", quote(p), errText(err))
			status = 1
		}
		if rec && st.IsDir() {
			ents, _ := readDirents(c.p, p)
			for _, d := range ents {
				walk(path.Join(p, d.Name))
			}
		}
	}
	for _, p := range ops[1:] {
		walk(p)
	}
	return status
}

// parseID reads a user or group: a number, or a name from the
// namespace's /etc/passwd or /etc/group.
func parseID(c *cmd, file, s string) (uint32, bool) {
	if v, err := strconv.ParseUint(s, 10, 32); err == nil {
		return uint32(v), true
	}
	for id := uint32(0); id < 1; id++ {
		if idName(c.p, file, id) == s {
			return id, true
		}
	}
	data, err := c.readFile(file)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) > 2 && f[0] == s {
			v, err := strconv.ParseUint(f[2], 10, 32)
			return uint32(v), err == nil
		}
	}
	return 0, false
}

func (c *cmd) readFile(name string) ([]byte, error) {
	f, err := c.p.OpenFile(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func runChown(c *cmd, f flags, ops []string) int {
	u, g, hasG := strings.Cut(ops[0], ":")
	uid, gid := -1, -1
	if u != "" {
		v, ok := parseID(c, "/etc/passwd", u)
		if !ok {
			c.errorf("invalid user: %s", quote(ops[0]))
			return 1
		}
		uid = int(v)
	}
	if hasG && g != "" {
		v, ok := parseID(c, "/etc/group", g)
		if !ok {
			c.errorf("invalid group: %s", quote(ops[0]))
			return 1
		}
		gid = int(v)
	}
	status := 0
	var walk func(p string)
	walk = func(p string) {
		err := c.p.Fchownat(unix.AT_FDCWD, p, uid, gid, map[bool]int{true: unix.AT_SYMLINK_NOFOLLOW}[f.has("h")])
		if err != nil {
			if isErrno(err, syscall.ENOENT) {
				c.errorf("cannot access %s: %s", quote(p), errText(err))
			} else {
				c.errorf("changing ownership of %s: %s", quote(p), errText(err))
			}
			status = 1
			return
		}
		if f.has("R") && isDirPath(c.p, p) {
			ents, _ := readDirents(c.p, p)
			for _, d := range ents {
				walk(path.Join(p, d.Name))
			}
		}
	}
	for _, p := range ops[1:] {
		walk(p)
	}
	return status
}
