package shell

// Pipelines. The interpreter would run "a | b" over a host os.Pipe, with
// the left side in a goroutine of the same process; it has no hook for
// the pipe itself. So before a script runs, rewrite replaces every
// pipeline statement in its syntax tree (in function bodies, loops and
// command substitutions too) by a call of the hidden command pipeCmd,
// whose argument names the pipeline's sides. runPipeline then makes an
// iovfs pipe between each pair of sides (Pipe2), forks one process per
// side with the pipe ends on its descriptors 0 and 1, and runs each side
// in its own goroutine on a subshell of the interpreter, so the sides run
// concurrently and a full pipe blocks its writer (back-pressure). A side
// ends as a process exits: its descriptors are closed, so the next side
// reads end of file, and a writer whose reader has gone gets EPIPE.
//
// The subshell of each side is made from the runner that runs the
// enclosing code as far as the shell knows it: the top-level runner or a
// pipeline side's. Inside "( ... )" or "$( ... )" the interpreter makes
// runners of its own that a handler cannot see; the directory and the
// string variables are taken from the HandlerContext, which is the
// subshell's (varPrelude), but functions defined inside such a subshell
// are not seen by a pipeline in it. Background jobs are not rewritten (see
// rewrite).

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// pipeline is one rewritten pipeline: its sides in order, and for each
// pipe whether it also takes the left side's standard error ("|&").
type pipeline struct {
	sides []*syntax.Stmt
	all   []bool
}

func isPipe(c syntax.Command) (*syntax.BinaryCmd, bool) {
	b, ok := c.(*syntax.BinaryCmd)
	if !ok || b.Op != syntax.Pipe && b.Op != syntax.PipeAll {
		return nil, false
	}
	return b, true
}

// flatten appends the sides of the pipeline b to pl.
func (pl *pipeline) flatten(b *syntax.BinaryCmd) {
	for _, side := range []*syntax.Stmt{b.X, b.Y} {
		if inner, ok := isPipe(side.Cmd); ok && !side.Negated && !side.Background && len(side.Redirs) == 0 {
			pl.flatten(inner)
		} else {
			pl.sides = append(pl.sides, side)
		}
		if side == b.X {
			pl.all = append(pl.all, b.Op == syntax.PipeAll)
		}
	}
}

// rewrite replaces every pipeline under node by a call of pipeCmd.
func (s *Shell) rewrite(node syntax.Node) {
	syntax.Walk(node, func(n syntax.Node) bool {
		if pe, ok := n.(*syntax.ParamExp); ok && pe.Param != nil && pe.Param.Value == "!" && !pe.Excl {
			pe.Param = &syntax.Lit{ValuePos: pe.Param.ValuePos, ValueEnd: pe.Param.ValueEnd, Value: bgPidVar}
			pe.Short = false
			return true
		}
		st, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		if st.Background {
			// The job's statement, its redirections and pipelines with
			// it, runs in startJob (jobs.go).
			job := *st
			job.Background, job.Disown = false, false
			s.rewrite(&job)
			key := s.jobs.addStmt(&job)
			*st = syntax.Stmt{Position: st.Position, Semicolon: st.Semicolon, Comments: st.Comments,
				Cmd: &syntax.CallExpr{Args: []*syntax.Word{litWord(st.Pos(), bgCmd), litWord(st.Pos(), key)}}}
			return false
		}
		b, ok := isPipe(st.Cmd)
		if !ok {
			return true
		}
		pl := &pipeline{}
		pl.flatten(b)
		for _, side := range pl.sides {
			s.rewrite(side)
		}
		s.mu.Lock()
		s.nextPipe++
		id := strconv.Itoa(s.nextPipe)
		s.pipelines[id] = pl
		s.mu.Unlock()
		st.Cmd = &syntax.CallExpr{Args: []*syntax.Word{litWord(b.OpPos, pipeCmd), litWord(b.OpPos, id)}}
		for _, r := range st.Redirs {
			s.rewrite(r)
		}
		return false
	})
}

// readsStdin reports whether a side uses one of the interpreter's own
// readers of standard input (read, mapfile), which need an os.File.
func readsStdin(st *syntax.Stmt) bool {
	found := false
	syntax.Walk(st, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 {
			switch c.Args[0].Lit() {
			case "read", "mapfile", "readarray":
				found = true
			}
		}
		return !found
	})
	return found
}

func (s *Shell) runPipeline(ctx context.Context, hc interp.HandlerContext, id string) error {
	s.mu.Lock()
	pl := s.pipelines[id]
	s.mu.Unlock()
	if pl == nil {
		return fmt.Errorf("unknown pipeline %s", id)
	}
	parent := s.procFrom(ctx)
	runner := s.runnerFrom(ctx)
	n := len(pl.sides)
	procs := make([]*vfs.Proc, n)
	subs := make([]*interp.Runner, n)

	s.forkMu.Lock()
	type pipeFds struct{ r, w int }
	pipes := make([]pipeFds, n-1)
	var err error
	for i := range pipes {
		var r, w int
		r, w, err = parent.Pipe2(unix.O_CLOEXEC)
		if err != nil {
			pipes = pipes[:i]
			break
		}
		pipes[i] = pipeFds{r, w}
	}
	for i := 0; err == nil && i < n; i++ {
		var c *vfs.Proc
		c, err = parent.Fork()
		if err != nil {
			break
		}
		procs[i] = c
		if i > 0 {
			_, err = c.Dup2(pipes[i-1].r, 0)
		}
		if err == nil && i < n-1 {
			_, err = c.Dup2(pipes[i].w, 1)
		}
		for _, p := range pipes {
			c.Close(p.r)
			c.Close(p.w)
		}
		subs[i] = runner.Subshell()
		// The directory and variables are the running code's own, even
		// inside a subshell the handler cannot see: "(cd d; ls | wc -l)",
		// "$(x=1; echo $x | cat)".
		subs[i].Dir = hc.Dir
	}
	for _, p := range pipes {
		parent.Close(p.r)
		parent.Close(p.w)
	}
	s.forkMu.Unlock()
	if err != nil {
		for _, c := range procs {
			if c != nil {
				exitProc(c)
			}
		}
		fmt.Fprintf(hc.Stderr, "iovfs sh: pipe: %s\n", errText(err))
		return interp.ExitStatus(1)
	}

	prelude := varPrelude(hc.Env)
	status := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		c, sub := procs[i], subs[i]
		var in = hc.Stdin
		if i > 0 {
			in = nil
			if readsStdin(pl.sides[i]) {
				in = &procFile{c, c.NewFile(0, "pipe")}
			}
		}
		out := hc.Stdout
		if i < n-1 {
			out = &procFile{c, c.NewFile(1, "pipe")}
		}
		errw := hc.Stderr
		if i < n-1 && pl.all[i] {
			errw = out
		}
		if err := interp.StdIO(in, out, errw)(sub); err != nil {
			status[i] = 1
			exitProc(c)
			continue
		}
		wg.Go(func() {
			defer exitProc(c)
			sctx := context.WithValue(context.WithValue(ctx, procKey, c), runnerKey, sub)
			sub.Run(sctx, prelude)
			status[i] = s.status(sctx, sub.Run(sctx, pl.sides[i]))
		})
	}
	wg.Wait()
	setPipestatus(ctx, hc, status)
	st := status[n-1]
	if pipefail(ctx, hc) {
		for _, x := range status {
			if x != 0 {
				st = x
			}
		}
	}
	return exitError(st)
}

// computed are variables the interpreter sets itself; the prelude leaves
// them alone.
var computed = map[string]bool{"PPID": true, "UID": true, "EUID": true, "GID": true,
	"RANDOM": true, "SRANDOM": true, "SECONDS": true, "LINENO": true, "OPTIND": true,
	"EPOCHSECONDS": true, "EPOCHREALTIME": true, "BASHPID": true, "DIRSTACK": true}

// varPrelude is a statement that sets, in a side's subshell, the string
// variables of the code running the pipeline as HandlerContext shows
// them (exported ones with export), so that a pipeline inside "( ... )"
// or "$( ... )" sees what that subshell set. The values are single-quoted
// words in the syntax tree, taken literally.
func varPrelude(env expand.Environ) *syntax.Stmt {
	var plain, exported []*syntax.Assign
	for name, v := range env.Each {
		if !v.IsSet() || v.Kind != expand.String || v.ReadOnly || computed[name] || !syntax.ValidName(name) {
			continue
		}
		a := &syntax.Assign{Name: &syntax.Lit{Value: name},
			Value: &syntax.Word{Parts: []syntax.WordPart{&syntax.SglQuoted{Value: v.Str}}}}
		if v.Exported {
			exported = append(exported, a)
		} else {
			plain = append(plain, a)
		}
	}
	var stmts []*syntax.Stmt
	if len(plain) > 0 {
		stmts = append(stmts, &syntax.Stmt{Cmd: &syntax.CallExpr{Assigns: plain}})
	}
	if len(exported) > 0 {
		stmts = append(stmts, &syntax.Stmt{Cmd: &syntax.DeclClause{Variant: &syntax.Lit{Value: "export"}, Args: exported}})
	}
	return &syntax.Stmt{Cmd: &syntax.Block{Stmts: stmts}}
}

func litWord(pos syntax.Pos, v string) *syntax.Word {
	return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{ValuePos: pos, Value: v}}}
}
