package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/iovfs/iovfs/vfs"
	"mvdan.cc/sh/v3/expand"
)

// A builtin is one command of the shell, written in Go. It runs in its own
// process (a fork of the shell's) whose current directory is the
// interpreter's, and returns its exit status. Its options are a table
// (opts.go), so that every builtin parses, reports a bad option and
// answers --help alike.
type builtin struct {
	name, summary string
	// synopsis is what follows the name in the usage line:
	// "[OPTION]... [FILE]...".
	synopsis string
	options  []option
	style    parseStyle
	// minOps is the least number of operands, maxOps the most (0: no
	// limit; -1: none). missing is the message for too few ("missing
	// operand" when empty).
	minOps, maxOps int
	missing        string
	run            func(c *cmd, f flags, ops []string) int
	// obsolete, if set, rewrites the words before parsing: the historical
	// forms a tool still accepts ("head -5" for "head -n 5").
	obsolete func(args []string) []string
	// usageStatus is the exit status for a bad option or operand count
	// (2 for ls, as coreutils' ls uses LS_FAILURE; 1 for most others).
	usageStatus int
}

// builtins is filled by init in the files that define them; see help.
var builtins = map[string]*builtin{}

func register(b *builtin) {
	if b.usageStatus == 0 {
		b.usageStatus = 1
	}
	if b.synopsis == "" {
		b.synopsis = "[OPTION]... [FILE]..."
	}
	builtins[b.name] = b
}

// Builtins returns the names of the shell's commands: the builtins written
// here and the interpreter's own (cd, echo, export, exit...).
func Builtins() []string {
	var out []string
	for n := range builtins {
		out = append(out, n)
	}
	for _, n := range interpBuiltins {
		if builtins[n] == nil {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// interpBuiltins are the interpreter's builtins that the help lists.
var interpBuiltins = []string{"cd", "echo", "export", "exit",
	"true", "false", "test", "[", "read", "set", "shift", "unset", "source", ".",
	"eval", "type", "umask", "break", "continue", "return", "local", "alias", "exec", "trap"}

var interpSummaries = map[string]string{
	"cd":   "change the current directory",
	"echo": "write arguments to standard output", "exec": "replace the shell with a command",
	"export": "set export attribute for variables", "exit": "leave the shell with a status",
	"true": "return success", "false": "return failure", "test": "evaluate a conditional expression",
	"[": "evaluate a conditional expression", "read": "read a line into variables",
	"set": "set shell options and positional parameters", "shift": "shift positional parameters",
	"unset": "unset variables and functions", "source": "run a script in the current shell",
	".": "run a script in the current shell", "eval": "run arguments as a command",
	"type": "describe a command", "umask": "show or set the file mode mask",
	"break": "leave a loop", "continue": "next loop iteration", "return": "return from a function",
	"local": "declare function-local variables", "alias": "define aliases", "trap": "run commands on signals and exit",
}

// cmd is what a running builtin has: its process, streams and context.
type cmd struct {
	ctx  context.Context
	sh   *Shell
	b    *builtin
	p    *vfs.Proc
	name string
	dir  string
	env  expand.Environ
	in   io.Reader
	out  io.Writer
	err  io.Writer
	// rawOut is the interpreter's standard output, unwrapped (ls asks
	// whether it is a terminal).
	rawOut io.Writer
	// sigpipe is set when a write found the reading end of a pipe
	// closed; the command then ends with 141, as one killed by SIGPIPE.
	sigpipe bool
}

// runBuiltin parses args by b's table and runs b: --help prints the
// table, a bad option or operand count the usage hint.
func (c *cmd) runBuiltin(args []string) int {
	b := c.b
	if b.obsolete != nil {
		args = b.obsolete(args)
	}
	f, ops, msg := b.parse(args)
	switch {
	case msg == errHelp:
		b.printHelp(c.out)
		return 0
	case msg != "":
		return c.usage("%s", msg)
	case len(ops) < b.minOps:
		m := b.missing
		if m == "" {
			m = "missing operand"
		}
		if len(ops) > 0 {
			m += " after " + quote(ops[len(ops)-1])
		}
		return c.usage("%s", m)
	case b.maxOps < 0 && len(ops) > 0 || b.maxOps > 0 && len(ops) > b.maxOps:
		return c.usage("extra operand %s", quote(ops[max(b.maxOps, 0)]))
	}
	return b.run(c, f, ops)
}

// cmdWriter notes EPIPE, so the command can end as if SIGPIPE killed it.
type cmdWriter struct {
	c *cmd
	w io.Writer
}

func (w *cmdWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	if err != nil && (isErrno(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)) {
		w.c.sigpipe = true
	}
	return n, err
}

// stopped reports whether the command should stop: cancelled (Ctrl-C) or
// its output pipe has no reader.
func (c *cmd) stopped() bool { return c.sigpipe || c.ctx.Err() != nil }

// errorf prints "name: message" on standard error.
func (c *cmd) errorf(format string, a ...any) {
	fmt.Fprintf(c.err, c.name+": "+format+"\n", a...)
}

// usage prints GNU's hint after a bad option and returns the status.
func (c *cmd) usage(format string, a ...any) int {
	c.errorf(format, a...)
	fmt.Fprintf(c.err, "Try '%s --help' for more information.\n", c.name)
	return c.b.usageStatus
}

// abs makes a path absolute against the command's directory (for
// messages and for walking; the process's cwd is the same directory).
func (c *cmd) abs(name string) string { return abs(c.dir, name) }

// quote is GNU's quote(): the name in single quotes (C locale), with a
// single quote inside written as '\”.
func quote(s string) string {
	if strings.ContainsAny(s, "'") {
		return "\"" + s + "\""
	}
	return "'" + s + "'"
}

// quotef is GNU's quotef(): quoted only when the name has characters a
// shell would treat specially.
func quotef(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return s
	}
	return quote(s)
}

func init() {
	register(&builtin{name: "help", summary: "list the commands, each with one line", synopsis: "[COMMAND]",
		maxOps: 1, run: runHelp})
	// pwd is a shell builtin in bash, with bash's messages rather than
	// getopt's.
	register(&builtin{name: "pwd", summary: "print the current directory (-L, -P)", synopsis: "[-LP]",
		style: raw, run: runPwd})
}

func runPwd(c *cmd, _ flags, args []string) int {
	physical := false
	for _, a := range args {
		switch a {
		case "-L":
			physical = false
		case "-P":
			physical = true
		default:
			c.errorf("%s: invalid option", a)
			fmt.Fprintln(c.err, "pwd: usage: pwd [-LP]")
			return 2
		}
	}
	dir := c.dir
	if physical {
		d, err := c.canonicalize(dir)
		if err != nil {
			c.errorf("error retrieving current directory: %s", errText(err))
			return 1
		}
		dir = d
	}
	fmt.Fprintln(c.out, dir)
	return 0
}

func runHelp(c *cmd, _ flags, ops []string) int {
	if len(ops) == 1 {
		b := builtins[ops[0]]
		if b == nil {
			c.errorf("no help topics match %s", quote(ops[0]))
			return 1
		}
		b.printHelp(c.out)
		return 0
	}
	for _, n := range Builtins() {
		sum := interpSummaries[n]
		if b := builtins[n]; b != nil {
			sum = b.summary
		}
		fmt.Fprintf(c.out, "%-9s %s\n", n, sum)
	}
	return 0
}

// baseName is basename(3) for messages and copies.
func baseName(p string) string {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "/"
	}
	return path.Base(p)
}

// RunCommand runs the builtin args[0] with args[1:] directly, without the
// interpreter, in a fork of p whose current directory is dir, and returns
// its exit status (127 for an unknown command). The image tools of
// cmd/iovfs use it.
func RunCommand(ctx context.Context, p *vfs.Proc, dir string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	b := builtins[args[0]]
	if b == nil {
		fmt.Fprintf(stderr, "iovfs sh: %s: command not found\n", args[0])
		return 127
	}
	s := &Shell{proc: p, stderr: stderr}
	child, err := p.Fork()
	if err != nil {
		fmt.Fprintf(stderr, "%s: fork: %s\n", args[0], errText(err))
		return 1
	}
	defer exitProc(child)
	if err := child.Chdir(dir); err != nil {
		fmt.Fprintf(stderr, "%s: %s: %s\n", args[0], dir, errText(err))
		return 1
	}
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	c := &cmd{ctx: ctx, sh: s, b: b, p: child, name: args[0], dir: dir, env: expand.ListEnviron(),
		in: stdin, err: stderr}
	c.out = &cmdWriter{c: c, w: stdout}
	return c.runBuiltin(args[1:])
}
