package shell

import (
	"strings"
)

func init() {
	register(&builtin{name: "basename", summary: "strip directory and suffix from file names (-a -s -z)",
		synopsis: "NAME [SUFFIX]\n  or:  basename OPTION... NAME...", minOps: 1, run: runBasename, options: []option{
			{short: 'a', long: "multiple", help: "support multiple arguments and treat each as a NAME"},
			{short: 's', long: "suffix", arg: needArg, help: "remove a trailing SUFFIX; implies -a"},
			{short: 'z', long: "zero", help: "end each output line with NUL, not newline"},
		}})
	register(&builtin{name: "dirname", summary: "strip the last component from file names (-z)", synopsis: "[OPTION] NAME...",
		minOps: 1, run: runDirname, options: []option{
			{short: 'z', long: "zero", help: "end each output line with NUL, not newline"},
		}})
}

// posixBasename is POSIX basename's steps 1-6 (no suffix).
func posixBasename(s string) string {
	if s == "" {
		return ""
	}
	t := strings.TrimRight(s, "/")
	if t == "" {
		return "/"
	}
	if i := strings.LastIndexByte(t, '/'); i >= 0 {
		t = t[i+1:]
	}
	return t
}

func runBasename(c *cmd, f flags, ops []string) int {
	end := "\n"
	if f.has("z") {
		end = "\x00"
	}
	suffix, multiple := f.value("s"), f.has("a") || f.has("s")
	if !multiple {
		if len(ops) > 2 {
			return c.usage("extra operand %s", quote(ops[2]))
		}
		if len(ops) == 2 {
			suffix = ops[1]
		}
		ops = ops[:1]
	}
	var b strings.Builder
	for _, op := range ops {
		name := posixBasename(op)
		// POSIX: the suffix goes only when something remains.
		if suffix != "" && name != suffix && strings.HasSuffix(name, suffix) && name != "/" {
			name = strings.TrimSuffix(name, suffix)
		}
		b.WriteString(name + end)
	}
	c.out.Write([]byte(b.String()))
	return 0
}

// posixDirname is POSIX dirname.
func posixDirname(s string) string {
	t := strings.TrimRight(s, "/")
	if t == "" {
		if strings.HasPrefix(s, "/") {
			return "/"
		}
		return "."
	}
	i := strings.LastIndexByte(t, '/')
	if i < 0 {
		return "."
	}
	t = strings.TrimRight(t[:i], "/")
	if t == "" {
		return "/"
	}
	return t
}

func runDirname(c *cmd, f flags, ops []string) int {
	end := "\n"
	if f.has("z") {
		end = "\x00"
	}
	var b strings.Builder
	for _, op := range ops {
		b.WriteString(posixDirname(op) + end)
	}
	c.out.Write([]byte(b.String()))
	return 0
}
