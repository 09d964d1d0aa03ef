package shell

// The interpreter's exec handler: every simple command that is not a
// function or one of the interpreter's own builtins comes here. It runs
// the rewritten pipelines and background jobs, the builtins written in
// Go, and programs: files found on $PATH in the namespace (program.go).

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
)

const pipeCmd = "__iovfs_pipeline"

// overridden maps the interpreter builtins that the shell replaces to the
// hidden names its call handler gives them, so the exec handler gets
// them: help lists the builtins written here too; pwd prints the running
// code's directory (the interpreter's reads $PWD, and -P resolves
// symlinks on the host); printf has bash's conversions (the
// interpreter's lacks most); wait, jobs and kill know the shell's jobs
// (jobs.go), which the interpreter's do not.
var overridden = map[string]string{"help": "__iovfs_help", "pwd": "__iovfs_pwd",
	"wait": "__iovfs_wait", "jobs": "__iovfs_jobs", "kill": "__iovfs_kill", "printf": "__iovfs_printf"}

// shellCommands are the commands that act on the shell itself rather
// than in a process of their own.
var shellCommands = map[string]func(s *Shell, ctx context.Context, hc interp.HandlerContext, args []string) int{
	"wait": (*Shell).runWait, "jobs": (*Shell).runJobs, "kill": (*Shell).runKill,
}

// exec is the interpreter's exec handler.
func (s *Shell) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	switch {
	case args[0] == pipeCmd && len(args) == 2:
		return s.runPipeline(ctx, hc, args[1])
	case args[0] == bgCmd && len(args) == 2:
		return s.startJob(ctx, hc, args[1])
	}
	for name, hidden := range overridden {
		if args[0] == hidden {
			args[0] = name
		}
	}
	if fn := shellCommands[args[0]]; fn != nil {
		return exitError(fn(s, ctx, hc, args[1:]))
	}
	var st int
	if b := builtins[args[0]]; b != nil {
		st = s.runBuiltin(ctx, hc, b, args)
	} else {
		st = s.runFile(ctx, hc, args)
	}
	setPipestatus(ctx, hc, []int{st})
	return exitError(st)
}

// exitError is the handler's answer for a status.
func exitError(st int) error {
	if st == 0 {
		return nil
	}
	return interp.ExitStatus(uint8(st))
}

// fork returns a child of the running code's process in the command's
// directory, or prints why not.
func (s *Shell) fork(ctx context.Context, hc interp.HandlerContext) (*vfs.Proc, bool) {
	parent := s.procFrom(ctx)
	s.forkMu.Lock()
	p, err := parent.Fork()
	s.forkMu.Unlock()
	if err != nil {
		fmt.Fprintf(hc.Stderr, "iovfs sh: fork: %s\n", errText(err))
		return nil, false
	}
	if err := p.Chdir(hc.Dir); err != nil {
		exitProc(p)
		fmt.Fprintf(hc.Stderr, "iovfs sh: %s: %s\n", hc.Dir, errText(err))
		return nil, false
	}
	return p, true
}

// runBuiltin runs b in a fork of the running code's process.
func (s *Shell) runBuiltin(ctx context.Context, hc interp.HandlerContext, b *builtin, args []string) int {
	p, ok := s.fork(ctx, hc)
	if !ok {
		return 1
	}
	defer exitProc(p)
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
	if ctx.Err() != nil {
		st = statusInterrupted // as SIGINT ends a process
	}
	return st
}

// runFile runs the file args[0] names: a WebAssembly program, or a shell
// script. It reports what bash reports for a file it cannot run.
func (s *Shell) runFile(ctx context.Context, hc interp.HandlerContext, args []string) int {
	name, st := lookPath(s.procFrom(ctx), hc.Dir, hc.Env, args[0])
	if st != 0 {
		msg := "command not found"
		switch st {
		case -int(syscall.ENOENT):
			msg, st = errText(syscall.ENOENT), statusNotFound
		case -int(syscall.EACCES):
			msg, st = errText(syscall.EACCES), statusNotExecutable
		case -int(syscall.EISDIR):
			msg, st = errText(syscall.EISDIR), statusNotExecutable
		}
		s.progError(hc, name, "%s", msg)
		return st
	}
	child, ok := s.fork(ctx, hc)
	if !ok {
		return 1
	}
	fd, err := child.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		exitProc(child)
		s.progError(hc, name, "%s", errText(err))
		return statusNotExecutable
	}
	head := make([]byte, 128)
	n, _ := child.Pread(fd, head, 0)
	head = head[:n]
	pr := &progRun{child: child, fd: fd, path: name, args: args, dir: hc.Dir,
		env: exportedEnv(hc.Env, hc.Dir)}
	switch {
	case strings.HasPrefix(string(head), string(wasmMagic)):
		return s.runWasm(ctx, hc, pr)
	case strings.HasPrefix(string(head), "#!"):
		return s.runShebang(ctx, hc, pr, head)
	case binaryFile(head):
		exitProc(child)
		s.progError(hc, name, "cannot execute binary file: %s", errText(syscall.ENOEXEC))
		return statusNotExecutable
	}
	return s.runScript(ctx, hc, pr)
}

// binaryFile is bash's check_binary_file: a NUL before the first newline
// of the file's first 80 bytes.
func binaryFile(head []byte) bool {
	for _, c := range head[:min(len(head), 80)] {
		switch c {
		case '\n':
			return false
		case 0:
			return true
		}
	}
	return false
}

// lookPath finds the file for a command, as bash does: a name with a
// slash is that file; another is looked for in each directory of $PATH
// in turn ("" and "." being the current directory), taking the first
// regular file the process may execute. It returns the file's name and 0,
// or a status: a positive one for "command not found", a negative errno
// for a named file that does not exist (ENOENT), is a directory
// (EISDIR) or is not executable (EACCES), as for a file found on $PATH
// that is not executable when no other is.
func lookPath(p *vfs.Proc, dir string, env expand.Environ, name string) (string, int) {
	if name == "" {
		return name, statusNotFound
	}
	if strings.Contains(name, "/") {
		return name, checkExec(p, abs(dir, name))
	}
	denied := ""
	for _, d := range strings.Split(env.Get("PATH").String(), ":") {
		if d == "" {
			d = "."
		}
		cand := d + "/" + name
		st := checkExec(p, abs(dir, path.Clean(cand)))
		switch {
		case st == 0:
			return cand, 0
		case st == -int(syscall.EACCES) && denied == "":
			denied = cand
		}
	}
	if denied != "" {
		return denied, -int(syscall.EACCES)
	}
	return name, statusNotFound
}

// checkExec is 0 when full is a regular file the process may execute,
// else a negative errno.
func checkExec(p *vfs.Proc, full string) int {
	st, err := p.Stat(full)
	switch {
	case err != nil:
		return -int(syscall.ENOENT)
	case st.IsDir():
		return -int(syscall.EISDIR)
	case !st.IsRegular() || p.Access(full, unix.X_OK) != nil:
		return -int(syscall.EACCES)
	}
	return 0
}
