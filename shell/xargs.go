package shell

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/interp"
)

func init() {
	register(&builtin{name: "xargs", summary: "build and run commands from standard input (-n -0 -I -d -r -t)",
		synopsis: "[OPTION]... COMMAND [INITIAL-ARGS]...", style: inOrder, run: runXargs, options: []option{
			{short: '0', long: "null", help: "items are separated by a null, not whitespace; quotes and backslash are not special"},
			{short: 'd', long: "delimiter", arg: needArg, help: "items are separated by CHARACTER, not by whitespace"},
			{short: 'I', arg: needArg, help: "replace R in INITIAL-ARGS with names read from standard input, one a line"},
			{short: 'n', long: "max-args", arg: needArg, help: "use at most MAX-ARGS arguments per command line"},
			{short: 'r', long: "no-run-if-empty", help: "if there are no arguments, then do not run COMMAND"},
			{short: 't', long: "verbose", help: "print commands before executing them"},
		}})
}

// xargsItems splits input as GNU xargs does by default: items separated
// by blanks and newlines, with '...' and "..." quoting (no newline inside)
// and backslash escaping one character.
func xargsItems(data string) ([]string, string) {
	var items []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(data); i++ {
		ch := data[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if in {
				items = append(items, cur.String())
				cur.Reset()
				in = false
			}
		case ch == '\\' && i+1 < len(data):
			i++
			cur.WriteByte(data[i])
			in = true
		case ch == '\'' || ch == '"':
			end := strings.IndexAny(data[i+1:], string(ch)+"\n")
			if end < 0 || data[i+1+end] == '\n' {
				kind := "single"
				if ch == '"' {
					kind = "double"
				}
				return items, fmt.Sprintf("unmatched %s quote; by default quotes are special to xargs unless you use the -0 option", kind)
			}
			cur.WriteString(data[i+1 : i+1+end])
			i += end + 1
			in = true
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if in {
		items = append(items, cur.String())
	}
	return items, ""
}

func runXargs(c *cmd, f flags, ops []string) int {
	maxArgs := 0
	if v, ok := f.last("n"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			if err == nil {
				return c.usage("value %s for -n option should be >= 1", v)
			}
			return c.usage("invalid number \"%s\" for -n option", v)
		}
		maxArgs = n
	}
	repl, replace := f.last("I")
	if replace && maxArgs > 0 {
		c.errorf("warning: options --max-args and --replace/-I/-i are mutually exclusive, ignoring previous --max-args value")
		maxArgs = 0
	}
	if len(ops) == 0 {
		ops = []string{"echo"}
	}
	data, err := c.readAll(c.in)
	if err != nil {
		c.errorf("read error: %s", errText(err))
		return 1
	}
	var items []string
	msg := ""
	switch {
	case f.has("0"):
		items = strings.Split(string(data), "\x00")
	case f.has("d"):
		d := f.value("d")
		if len(d) != 1 {
			c.errorf("invalid input delimiter specification %s: the delimiter must be either a single character or an escape sequence starting with \\", d)
			return 1
		}
		items = strings.Split(string(data), d)
	case replace:
		// -I: one item a line, its leading blanks removed.
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimLeft(l, " \t"); l != "" {
				items = append(items, l)
			}
		}
	default:
		items, msg = xargsItems(string(data))
	}
	if (f.has("0") || f.has("d")) && len(items) > 0 && items[len(items)-1] == "" {
		items = items[:len(items)-1]
	}
	var lines [][]string
	switch {
	case replace:
		for _, it := range items {
			args := make([]string, len(ops))
			for i, op := range ops {
				args[i] = strings.ReplaceAll(op, repl, it)
			}
			lines = append(lines, args)
		}
	case maxArgs > 0:
		for i := 0; i < len(items); i += maxArgs {
			lines = append(lines, append(append([]string(nil), ops...), items[i:min(i+maxArgs, len(items))]...))
		}
	case len(items) > 0:
		lines = append(lines, append(append([]string(nil), ops...), items...))
	}
	if len(lines) == 0 && !f.has("r") && !replace && msg == "" {
		lines = append(lines, ops)
	}
	status := 0
	for _, args := range lines {
		if c.stopped() {
			return statusInterrupted
		}
		if f.has("t") {
			fmt.Fprintln(c.err, strings.Join(args, " "))
		}
		st := c.runChild(args)
		switch {
		case st == 255:
			c.errorf("%s: exited with status 255; aborting", args[0])
			return 124
		case st == statusNotFound || st == statusNotExecutable:
			return st
		case st > 128:
			c.errorf("%s: terminated by signal %d", args[0], st-128)
			return 125
		case st != 0:
			status = 123
		}
	}
	if msg != "" {
		c.errorf("%s", msg)
		return 1
	}
	return status
}

// runChild runs args as a command of its own, as xargs execs it: a
// builtin written in Go, echo, true or false (coreutils programs), or a
// program or script on $PATH, with standard input empty (GNU xargs gives
// it /dev/null) and the command's output streams.
func (c *cmd) runChild(args []string) int {
	hc, inShell := handlerCtx(c.ctx)
	hc.Dir, hc.Env = c.dir, c.env
	hc.Stdin = strings.NewReader("")
	hc.Stdout, hc.Stderr = c.rawOut, c.err
	if hc.Stdout == nil {
		hc.Stdout = c.out
	}
	switch args[0] {
	case "echo":
		return c.coreEcho(args[1:], hc.Stdout)
	case "true":
		return 0
	case "false":
		return 1
	}
	if b := builtins[args[0]]; b != nil {
		return c.sh.runBuiltin(c.ctx, hc, b, args)
	}
	// Programs need the shell's runtime: not for RunCommand's builtins.
	if inShell && (strings.Contains(args[0], "/") || lookPathFound(c, args[0])) {
		return c.sh.runFile(c.ctx, hc, args)
	}
	c.errorf("%s: No such file or directory", args[0])
	return statusNotFound
}

// handlerCtx is interp.HandlerCtx, or false when ctx has none (a
// builtin run by RunCommand, outside the interpreter).
func handlerCtx(ctx context.Context) (hc interp.HandlerContext, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return interp.HandlerCtx(ctx), true
}

// lookPathFound reports whether name is on $PATH.
func lookPathFound(c *cmd, name string) bool {
	_, st := lookPath(c.p, c.dir, c.env, name)
	return st == 0
}

// coreEcho is coreutils' echo: -n, -e and -E as leading options.
func (c *cmd) coreEcho(args []string, out io.Writer) int {
	newline, escapes := true, false
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && strings.Trim(args[0][1:], "neE") == "" {
		for _, o := range args[0][1:] {
			switch o {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	s := strings.Join(args, " ")
	if escapes {
		if i := strings.Index(s, `\c`); i >= 0 {
			s, newline = s[:i], false
		}
		s = statEscapes(s)
	}
	if newline {
		s += "\n"
	}
	w := bufio.NewWriter(out)
	w.WriteString(s)
	if w.Flush() != nil {
		return 1
	}
	return 0
}
