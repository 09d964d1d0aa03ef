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
	"mvdan.cc/sh/v3/interp"
)

// A builtin is one command of the shell, written in Go. It runs in its own
// process (a fork of the shell's) whose current directory is the
// interpreter's, and returns its exit status.
type builtin struct {
	name, summary string
	run           func(c *cmd, args []string) int
	// usageStatus is the exit status for a bad option (2 for ls, as
	// coreutils' ls uses LS_FAILURE; 1 for most others).
	usageStatus int
}

// builtins is filled by init in the files that define them; see help.
var builtins = map[string]*builtin{}

func register(b *builtin) {
	if b.usageStatus == 0 {
		b.usageStatus = 1
	}
	builtins[b.name] = b
}

// Builtins returns the names of the shell's commands: the builtins written
// here and the interpreter's own (cd, echo, printf, export, exit...).
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
var interpBuiltins = []string{"cd", "echo", "printf", "export", "exit",
	"true", "false", "test", "[", "read", "set", "shift", "unset", "source", ".",
	"eval", "type", "wait", "umask", "break", "continue", "return", "local", "alias"}

var interpSummaries = map[string]string{
	"cd": "change the current directory", "pwd": "print the current directory",
	"echo": "write arguments to standard output", "printf": "format and print arguments",
	"export": "set export attribute for variables", "exit": "leave the shell with a status",
	"true": "return success", "false": "return failure", "test": "evaluate a conditional expression",
	"[": "evaluate a conditional expression", "read": "read a line into variables",
	"set": "set shell options and positional parameters", "shift": "shift positional parameters",
	"unset": "unset variables and functions", "source": "run a script in the current shell",
	".": "run a script in the current shell", "eval": "run arguments as a command",
	"type": "describe a command", "wait": "wait for background jobs", "umask": "show or set the file mode mask",
	"break": "leave a loop", "continue": "next loop iteration", "return": "return from a function",
	"local": "declare function-local variables", "alias": "define aliases",
}

// cmd is what a running builtin has: its process, streams and context.
type cmd struct {
	ctx  context.Context
	sh   *Shell
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

const pipeCmd = "__iovfs_pipeline"

// overridden maps the interpreter builtins that the shell replaces to the
// hidden names its call handler gives them, so the exec handler gets them.
var overridden = map[string]string{"help": "__iovfs_help", "pwd": "__iovfs_pwd"}

// exec is the interpreter's exec handler: it runs builtins and the
// rewritten pipelines, and refuses everything else.
func (s *Shell) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	if args[0] == pipeCmd && len(args) == 2 {
		return s.runPipeline(ctx, hc, args[1])
	}
	for name, hidden := range overridden {
		if args[0] == hidden {
			args[0] = name
		}
	}
	b := builtins[args[0]]
	if b == nil {
		fmt.Fprintf(hc.Stderr, "iovfs sh: %s: command not found\n", args[0])
		return interp.ExitStatus(127)
	}
	parent := s.procFrom(ctx)
	s.forkMu.Lock()
	p, err := parent.Fork()
	s.forkMu.Unlock()
	if err != nil {
		fmt.Fprintf(hc.Stderr, "iovfs sh: fork: %s\n", errText(err))
		return interp.ExitStatus(1)
	}
	defer s.closeAll(p)
	if err := p.Chdir(hc.Dir); err != nil {
		fmt.Fprintf(hc.Stderr, "iovfs sh: %s: %s\n", hc.Dir, errText(err))
		return interp.ExitStatus(1)
	}
	c := &cmd{ctx: ctx, sh: s, p: p, name: args[0], dir: hc.Dir, env: hc.Env,
		in: hc.Stdin, out: hc.Stdout, err: hc.Stderr}
	if f, ok := c.in.(*os.File); c.in == nil || ok && f == nil {
		// No stream from the interpreter: the command reads its own
		// descriptor 0, the read end of an iovfs pipe in a pipeline.
		c.in = p.NewFile(0, "standard input")
	}
	c.rawOut = c.out
	c.out = &cmdWriter{c: c, w: c.out}
	st := b.run(c, args[1:])
	if c.sigpipe && st == 0 {
		st = 141
	}
	if ctx.Err() != nil && st == 0 {
		st = 130
	}
	if st == 0 {
		return nil
	}
	return interp.ExitStatus(uint8(st))
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
	return builtins[c.name].usageStatus
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

// getopt parses GNU-style options: short flags may be grouped, options and
// operands may mix, "--" ends options. short lists the flags; a flag
// followed by ':' takes a value. long maps long names to their short
// equivalent (or to themselves when they have none); a long name ending
// in '=' takes a value. It returns the values by flag, the operands, and
// an error message for a bad option.
func getopt(args []string, short string, long map[string]string) (map[string][]string, []string, string) {
	opts := map[string][]string{}
	var operands []string
	takes := func(f string) (bool, bool) {
		if len(f) == 1 {
			i := strings.Index(short, f)
			if i < 0 {
				return false, false
			}
			return true, i+1 < len(short) && short[i+1] == ':'
		}
		return true, false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return opts, append(operands, args[i+1:]...), ""
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			key, ok := long[name]
			wantVal := false
			if !ok {
				key, ok = long[name+"="]
				wantVal = ok
			}
			if !ok {
				return nil, nil, fmt.Sprintf("unrecognized option '%s'", a)
			}
			if wantVal && !hasVal {
				if i+1 >= len(args) {
					return nil, nil, fmt.Sprintf("option '--%s' requires an argument", name)
				}
				i++
				val = args[i]
			}
			opts[key] = append(opts[key], val)
		case strings.HasPrefix(a, "-") && a != "-":
			for j := 1; j < len(a); j++ {
				f := a[j : j+1]
				ok, val := takes(f)
				if !ok {
					return nil, nil, fmt.Sprintf("invalid option -- '%s'", f)
				}
				if val {
					v := a[j+1:]
					if v == "" {
						if i+1 >= len(args) {
							return nil, nil, fmt.Sprintf("option requires an argument -- '%s'", f)
						}
						i++
						v = args[i]
					}
					opts[f] = append(opts[f], v)
					break
				}
				opts[f] = append(opts[f], "")
			}
		default:
			operands = append(operands, a)
		}
	}
	return opts, operands, ""
}

func has(opts map[string][]string, f string) bool { return len(opts[f]) > 0 }

func last(opts map[string][]string, f string) string {
	v := opts[f]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func init() {
	register(&builtin{name: "help", summary: "list the commands, each with one line", run: runHelp})
	register(&builtin{name: "pwd", summary: "print the current directory (-L, -P)", run: runPwd})
}

func runPwd(c *cmd, args []string) int {
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

func runHelp(c *cmd, args []string) int {
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
	s.highFd.Store(2)
	child, err := p.Fork()
	if err != nil {
		fmt.Fprintf(stderr, "%s: fork: %s\n", args[0], errText(err))
		return 1
	}
	defer s.closeAll(child)
	if err := child.Chdir(dir); err != nil {
		fmt.Fprintf(stderr, "%s: %s: %s\n", args[0], dir, errText(err))
		return 1
	}
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	c := &cmd{ctx: ctx, sh: s, p: child, name: args[0], dir: dir, env: expand.ListEnviron(),
		in: stdin, err: stderr}
	c.out = &cmdWriter{c: c, w: stdout}
	return b.run(c, args[1:])
}
