package shell

// The interpreter's exec handler: every simple command that is not a
// function or one of the interpreter's own builtins comes here. It runs
// the rewritten pipelines, the builtins written in Go, and programs.

import (
	"context"
	"fmt"
	"os"

	"mvdan.cc/sh/v3/interp"
)

const pipeCmd = "__iovfs_pipeline"

// overridden maps the interpreter builtins that the shell replaces to the
// hidden names its call handler gives them, so the exec handler gets them.
var overridden = map[string]string{"help": "__iovfs_help", "pwd": "__iovfs_pwd"}

// exec is the interpreter's exec handler.
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
	return exitError(s.runBuiltin(ctx, hc, b, args))
}

// exitError is the handler's answer for a status.
func exitError(st int) error {
	if st == 0 {
		return nil
	}
	return interp.ExitStatus(uint8(st))
}

// runBuiltin runs b in a fork of the running code's process.
func (s *Shell) runBuiltin(ctx context.Context, hc interp.HandlerContext, b *builtin, args []string) int {
	parent := s.procFrom(ctx)
	s.forkMu.Lock()
	p, err := parent.Fork()
	s.forkMu.Unlock()
	if err != nil {
		fmt.Fprintf(hc.Stderr, "iovfs sh: fork: %s\n", errText(err))
		return 1
	}
	defer exitProc(p)
	if err := p.Chdir(hc.Dir); err != nil {
		fmt.Fprintf(hc.Stderr, "iovfs sh: %s: %s\n", hc.Dir, errText(err))
		return 1
	}
	c := &cmd{ctx: ctx, sh: s, b: b, p: p, name: args[0], dir: hc.Dir, env: hc.Env,
		in: hc.Stdin, out: hc.Stdout, err: hc.Stderr}
	if f, ok := c.in.(*os.File); c.in == nil || ok && f == nil {
		// No stream from the interpreter: the command reads its own
		// descriptor 0, the read end of an iovfs pipe in a pipeline.
		c.in = p.NewFile(0, "standard input")
	}
	c.rawOut = c.out
	c.out = &cmdWriter{c: c, w: c.out}
	st := c.runBuiltin(args[1:])
	if c.sigpipe && st == 0 {
		st = 141
	}
	if ctx.Err() != nil && st == 0 {
		st = 130
	}
	return st
}
