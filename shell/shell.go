// Package shell is iovfs sh: a POSIX shell (mvdan.cc/sh/v3's parser and
// interpreter) whose every file operation goes to a *vfs.Proc, whose
// commands are builtins written in Go, and whose programs are
// WebAssembly (wasip1) files in the namespace, each run in a process of
// its own (program.go). No host program is ever run.
//
// The interpreter's handlers are the joints: the open, stat, read-dir and
// access handlers turn redirections, globs, cd and test into calls on the
// process (handlers.go); the exec handler runs a builtin in a fork of the
// process (builtin.go); and pipelines are taken out of the interpreter's
// hands before a script runs, so that each side runs as its own forked
// process connected to the next by an iovfs pipe (pipeline.go).
package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Options configure a Shell.
type Options struct {
	// Stdin, Stdout and Stderr are the shell's standard streams. Stdin
	// may be nil (commands then read the process's descriptor 0).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Env is the initial environment, as "NAME=value" strings. HOME,
	// PWD and PATH get defaults when missing.
	Env []string
	// Dir is the initial current directory in the namespace ("/" if empty).
	Dir string
	// Params are the positional parameters ($1...).
	Params []string
	// Bench, if set, runs "iovfs bench" with args (the bench builtin).
	Bench func(ctx context.Context, args []string, stdout, stderr io.Writer) int
	// Interactive turns on alias expansion and the interactive behaviour
	// of the interpreter.
	Interactive bool
	// CacheDir, if set, is a host directory where compiled programs are
	// kept across shells (wazero's compilation cache); without it they
	// are kept for the life of the shell only.
	CacheDir string
	// Interruptible makes a program stop as soon as its context is done
	// (Run's context cancelled, kill), even in a loop that makes no
	// call; otherwise it stops at its next WASI call. It costs a check
	// at every loop of the program's code. Interactive shells are
	// interruptible (Ctrl-C).
	Interruptible bool
}

// A Shell runs scripts on one process. Run may be called again and again
// (an interactive session), but not concurrently.
type Shell struct {
	proc        *vfs.Proc
	runner      *interp.Runner
	stderr      io.Writer
	interactive bool
	progs       *programs

	bench func(ctx context.Context, args []string, stdout, stderr io.Writer) int

	// forkMu serialises making a pipeline's pipes and forking its
	// processes, so that no fork made meanwhile (another pipeline, in a
	// background job) inherits pipe ends that are not its own and keeps a
	// reader from seeing end of file.
	forkMu sync.Mutex
	jobs   jobTable

	// mu protects pipelines.
	mu        sync.Mutex
	pipelines map[string]*pipeline
	nextPipe  int
}

type ctxKey int

const (
	procKey ctxKey = iota
	runnerKey
)

// procFrom returns the process that the interpreter code running with ctx
// belongs to.
func (s *Shell) procFrom(ctx context.Context) *vfs.Proc {
	if p, ok := ctx.Value(procKey).(*vfs.Proc); ok {
		return p
	}
	return s.proc
}

func (s *Shell) runnerFrom(ctx context.Context) *interp.Runner {
	if r, ok := ctx.Value(runnerKey).(*interp.Runner); ok {
		return r
	}
	return s.runner
}

// New returns a shell on process p. Close frees what its programs hold.
func New(p *vfs.Proc, o Options) (*Shell, error) {
	return newShell(p, o, &programs{cacheDir: o.CacheDir, interruptible: o.Interruptible || o.Interactive})
}

// Close frees the compiled programs and the runtime that runs them. The
// shell must not run anything after.
func (s *Shell) Close() error { return s.progs.close() }

func newShell(p *vfs.Proc, o Options, progs *programs) (*Shell, error) {
	s := &Shell{proc: p, pipelines: map[string]*pipeline{}, stderr: o.Stderr, bench: o.Bench,
		interactive: o.Interactive, progs: progs}
	if s.stderr == nil {
		s.stderr = io.Discard
	}
	dir := o.Dir
	if dir == "" {
		dir = "/"
	}
	env := append([]string(nil), o.Env...)
	have := map[string]bool{}
	for _, kv := range env {
		have[strings.SplitN(kv, "=", 2)[0]] = true
	}
	for _, d := range []string{"HOME=/", "PATH=/bin", "PWD=" + dir} {
		if !have[strings.SplitN(d, "=", 2)[0]] {
			env = append(env, d)
		}
	}
	opts := []interp.RunnerOption{
		interp.Env(expand.ListEnviron(env...)),
		func(r *interp.Runner) error { r.Dir = dir; return nil },
		interp.StdIO(o.Stdin, o.Stdout, o.Stderr),
		interp.OpenHandler(s.open),
		interp.StatHandler(s.stat),
		interp.ReadDirHandler2(s.readDir),
		interp.AccessHandler(s.access),
		interp.CallHandler(func(ctx context.Context, args []string) ([]string, error) {
			// The interpreter's own builtins of these names would
			// answer first (exec.go's overridden); a function of the
			// name still does.
			if args[0] == "printf" && len(args) > 1 && args[1] == "-v" && s.runnerFrom(ctx).Funcs["printf"] == nil {
				return printfV(ctx, args), nil
			}
			if hidden, ok := overridden[args[0]]; ok && s.runnerFrom(ctx).Funcs[args[0]] == nil {
				args[0] = hidden
			}
			return args, nil
		}),
		interp.ExecHandlers(func(next interp.ExecHandlerFunc) interp.ExecHandlerFunc { return s.exec }),
		interp.Interactive(o.Interactive),
	}
	if o.Params != nil {
		opts = append(opts, interp.Params(append([]string{"--"}, o.Params...)...))
	}
	r, err := interp.New(opts...)
	if err != nil {
		return nil, err
	}
	if st, err := p.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("iovfs sh: %s: not a directory in the namespace", dir)
	}
	// Descriptors 0, 1 and 2 of a process are taken, as init's are: a
	// free one would be handed out by Pipe2 or Open and then closed
	// under the command that owns it. Free ones get /dev/null.
	for fd := 0; fd <= 2; fd++ {
		if _, err := p.Fstat(fd); err == nil {
			continue
		}
		nfd, err := p.Open("/dev/null", unix.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("iovfs sh: /dev/null: %w", err)
		}
		if nfd != fd {
			p.Dup2(nfd, fd)
			p.Close(nfd)
		}
	}
	s.runner = r
	return s, nil
}

// Proc returns the shell's process.
func (s *Shell) Proc() *vfs.Proc { return s.proc }

// Dir returns the shell's current directory.
func (s *Shell) Dir() string { return s.runner.Dir }

// Parse parses src as a script called name and prepares it to run:
// pipelines are rewritten to run on iovfs pipes.
func (s *Shell) Parse(src io.Reader, name string) (*syntax.File, error) {
	f, err := syntax.NewParser().Parse(src, name)
	if err != nil {
		return nil, err
	}
	s.rewrite(f)
	return f, nil
}

// Run runs the parsed script f and returns its exit status, and whether
// the script ran "exit". An error other than a status is printed to the
// shell's standard error and gives status 1; a cancelled ctx gives 130,
// as an interrupted command does in bash.
func (s *Shell) Run(ctx context.Context, f *syntax.File) (status int, exited bool) {
	ctx = context.WithValue(context.WithValue(ctx, procKey, s.proc), runnerKey, s.runner)
	err := s.runner.Run(ctx, f)
	return s.status(ctx, err), s.runner.Exited()
}

func (s *Shell) status(ctx context.Context, err error) int {
	if err == nil {
		return 0
	}
	if st, ok := errors.AsType[interp.ExitStatus](err); ok {
		return int(st)
	}
	if ctx.Err() != nil {
		return 130
	}
	fmt.Fprintf(s.stderr, "iovfs sh: %v\n", err)
	return 1
}

// RunScript parses and runs src, as "iovfs sh FILE" and "iovfs sh -c" do,
// and returns the exit status: 2 for a syntax error, as bash gives.
func (s *Shell) RunScript(ctx context.Context, src io.Reader, name string) int {
	f, err := s.Parse(src, name)
	if err != nil {
		fmt.Fprintf(s.stderr, "iovfs sh: %v\n", err)
		return 2
	}
	st, _ := s.Run(ctx, f)
	return st
}

// exitProc ends a process the shell made: every descriptor it holds is
// closed, as at exit(2), so that pipe readers see end of file.
func exitProc(p *vfs.Proc) { p.CloseRange(0, ^uint(0), 0) }

// errText is strerror(3)'s text for err's errno, as GNU tools print it.
func errText(err error) string {
	var e interface{ Unwrap() error }
	for errors.As(err, &e) {
		if u := e.Unwrap(); u != nil {
			err = u
		} else {
			break
		}
	}
	msg := err.Error()
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}

// errDetail is errText that keeps what a file system says about the
// error (a bad option, a size too large) before the errno's text:
// "tmpfs: bad option "size=abc": Invalid argument".
func errDetail(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var en syscall.Errno
	if msg := err.Error(); errors.As(err, &en) && msg != en.Error() && strings.HasSuffix(msg, ": "+en.Error()) {
		return strings.TrimSuffix(msg, en.Error()) + errText(en)
	}
	return errText(err)
}

// isTerminal reports whether w is a host terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
