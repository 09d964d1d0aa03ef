package shell

// Background jobs. The interpreter would run "cmd &" in a goroutine of
// its own, over host pipes, with "$!" a name of its own ("g1") that no
// other command understands. Instead rewrite (pipeline.go) makes every
// background statement a call of the hidden command bgCmd, and the
// statement runs here: a subshell of the running code in a forked
// process, with standard input from /dev/null (POSIX, for a shell
// without job control), on a context of its own, so that it outlives the
// command line that started it and is stopped only by kill. "$!" is the
// job's process id (rewrite reads it from bgPidVar), and wait, jobs and
// kill know the jobs by that id or by %N.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

const (
	bgCmd = "__iovfs_background"
	// bgPidVar holds "$!": rewrite reads every $! from it.
	bgPidVar = "__iovfs_bgpid"
)

// A job is a background statement that was started.
type job struct {
	id    int
	pid   int
	text  string
	owner *interp.Runner // the runner that started it: wait waits for its own
	// cancel stops the job with a cause: errSignal for kill.
	cancel context.CancelCauseFunc
	done   chan struct{}
	status int // set before done closes
}

// errSignal is the cause of a job's context when kill stopped it.
type errSignal syscall.Signal

func (e errSignal) Error() string { return syscall.Signal(e).String() }

// jobTable is a shell's jobs.
type jobTable struct {
	// mu protects list and stmts.
	mu    sync.Mutex
	list  []*job
	stmts map[string]*syntax.Stmt
	next  int
}

// addStmt records a background statement for bgCmd and returns its key.
func (t *jobTable) addStmt(st *syntax.Stmt) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stmts == nil {
		t.stmts = map[string]*syntax.Stmt{}
	}
	t.next++
	key := strconv.Itoa(t.next)
	t.stmts[key] = st
	return key
}

// startJob runs the background statement key.
func (s *Shell) startJob(ctx context.Context, hc interp.HandlerContext, key string) error {
	s.jobs.mu.Lock()
	st := s.jobs.stmts[key]
	s.jobs.mu.Unlock()
	if st == nil {
		return fmt.Errorf("unknown background statement %s", key)
	}
	parent := s.procFrom(ctx)
	runner := s.runnerFrom(ctx)
	s.forkMu.Lock()
	jp, err := parent.Fork()
	s.forkMu.Unlock()
	if err == nil {
		err = jobStdin(jp)
	}
	if err != nil {
		if jp != nil {
			exitProc(jp)
		}
		fmt.Fprintf(hc.Stderr, "iovfs sh: fork: %s\n", errText(err))
		return interp.ExitStatus(1)
	}
	sub := runner.Subshell()
	sub.Dir = hc.Dir
	out, errw := ownStream(jp, hc.Stdout), ownStream(jp, hc.Stderr)
	if err := interp.StdIO(nil, out, errw)(sub); err != nil {
		exitProc(jp)
		return err
	}
	jctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	jctx = context.WithValue(context.WithValue(jctx, procKey, jp), runnerKey, sub)
	j := &job{pid: jp.Pid(), text: stmtText(st) + " &", owner: runner, cancel: cancel, done: make(chan struct{})}
	s.jobs.mu.Lock()
	for _, o := range s.jobs.list {
		j.id = max(j.id, o.id)
	}
	j.id++
	s.jobs.list = append(s.jobs.list, j)
	s.jobs.mu.Unlock()
	prelude := varPrelude(hc.Env)
	go func() {
		sub.Run(jctx, prelude)
		status := s.status(jctx, sub.Run(jctx, st))
		if sig, ok := context.Cause(jctx).(errSignal); ok {
			status = 128 + int(sig)
		}
		exitProc(jp)
		cancel(nil)
		j.status = status
		close(j.done)
	}()
	if s.interactive {
		fmt.Fprintf(hc.Stderr, "[%d] %d\n", j.id, j.pid)
	}
	hc.Builtin(context.WithoutCancel(ctx), []string{"eval", bgPidVar + "=" + strconv.Itoa(j.pid)})
	return nil
}

// jobStdin gives a job's process /dev/null as its standard input.
func jobStdin(p *vfs.Proc) error {
	fd, err := p.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer p.Close(fd)
	_, err = p.Dup2(fd, 0)
	return err
}

// ownStream gives the job a descriptor of its own for a stream that is a
// file of a process: the redirection that opened it ends with the
// statement that started the job.
func ownStream(jp *vfs.Proc, w io.Writer) io.Writer {
	pf, ok := w.(*procFile)
	if !ok {
		return w
	}
	fd, err := jp.Getfd(pf.p, pf.Fd())
	if err != nil {
		return pf
	}
	return &procFile{jp, jp.NewFile(fd, pf.Name())}
}

// stmtText is a statement as jobs prints it.
func stmtText(st *syntax.Stmt) string {
	var b strings.Builder
	syntax.NewPrinter(syntax.SingleLine(true)).Print(&b, st)
	return strings.TrimSpace(b.String())
}

// current returns the jobs an owner may see, in order.
func (t *jobTable) current(owner *interp.Runner) []*job {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*job
	for _, j := range t.list {
		if j.owner == owner {
			out = append(out, j)
		}
	}
	return out
}

// forget drops a job whose end has been reported.
func (t *jobTable) forget(j *job) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.list = slices.DeleteFunc(t.list, func(o *job) bool { return o == j })
}

// find returns the job named by spec (%N, %%, %+, %-, or a process id)
// among js, or nil.
func findJob(js []*job, spec string) *job {
	if n, ok := strings.CutPrefix(spec, "%"); ok {
		switch n {
		case "%", "+", "":
			if len(js) > 0 {
				return js[len(js)-1]
			}
			return nil
		case "-":
			if len(js) > 1 {
				return js[len(js)-2]
			}
			return nil
		}
		id, err := strconv.Atoi(n)
		for _, j := range js {
			if err == nil && j.id == id || err != nil && strings.HasPrefix(j.text, n) {
				return j
			}
		}
		return nil
	}
	pid, err := strconv.Atoi(spec)
	for _, j := range js {
		if err == nil && j.pid == pid {
			return j
		}
	}
	return nil
}

// runWait is bash's wait: for every job, the jobs named, or (-n) the
// next job to end; its status is the last job's, 127 for one that is
// not a child of this shell.
func (s *Shell) runWait(ctx context.Context, hc interp.HandlerContext, args []string) int {
	next := false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		switch args[0] {
		case "-n":
			next = true
		case "-f":
		case "--":
			args = args[1:]
			goto operands
		default:
			s.progError(hc, "wait", "%s: invalid option", args[0])
			fmt.Fprintln(hc.Stderr, "wait: usage: wait [-fn] [id ...]")
			return 2
		}
		args = args[1:]
	}
operands:
	owner := s.runnerFrom(ctx)
	js := s.jobs.current(owner)
	var want []*job
	status := 0
	for _, a := range args {
		j := findJob(js, a)
		if j == nil {
			if strings.HasPrefix(a, "%") {
				s.progError(hc, "wait", "%s: no such job", a)
			} else if _, err := strconv.Atoi(a); err != nil {
				s.progError(hc, "wait", "`%s': not a pid or valid job spec", a)
			} else {
				s.progError(hc, "wait", "pid %s is not a child of this shell", a)
			}
			status = 127
			if !next {
				continue
			}
		}
		want = append(want, j)
	}
	if len(args) == 0 {
		want = js
	}
	want = slices.DeleteFunc(want, func(j *job) bool { return j == nil })
	if next {
		if len(want) == 0 {
			return 127
		}
		cases := make(chan *job, len(want))
		for _, j := range want {
			go func() {
				select {
				case <-j.done:
					cases <- j
				case <-ctx.Done():
				}
			}()
		}
		select {
		case j := <-cases:
			s.jobs.forget(j)
			return j.status
		case <-ctx.Done():
			return statusInterrupted
		}
	}
	for _, j := range want {
		select {
		case <-j.done:
		case <-ctx.Done():
			return statusInterrupted
		}
		s.jobs.forget(j)
		if len(args) > 0 {
			status = j.status
		}
	}
	return status
}

// runJobs is bash's jobs: each job with its state, "+" for the current
// one and "-" for the previous; -l adds the process id, -p prints only
// that. A job that ended is listed once more as Done (or Exit N), then
// forgotten.
func (s *Shell) runJobs(ctx context.Context, hc interp.HandlerContext, args []string) int {
	long, pids := false, false
	for _, a := range args {
		switch a {
		case "-l":
			long = true
		case "-p":
			pids = true
		default:
			s.progError(hc, "jobs", "%s: invalid option", a)
			fmt.Fprintln(hc.Stderr, "jobs: usage: jobs [-lp]")
			return 2
		}
	}
	js := s.jobs.current(s.runnerFrom(ctx))
	for i, j := range js {
		if pids {
			fmt.Fprintln(hc.Stdout, j.pid)
			continue
		}
		fmt.Fprintln(hc.Stdout, jobLine(j, i, len(js), long))
		select {
		case <-j.done:
			s.jobs.forget(j)
		default:
		}
	}
	return 0
}

// jobLine is one line of jobs: "[1]+  Running                 cmd &".
func jobLine(j *job, i, n int, long bool) string {
	mark := " "
	switch i {
	case n - 1:
		mark = "+"
	case n - 2:
		mark = "-"
	}
	state, text := "Running", j.text
	select {
	case <-j.done:
		state = "Done"
		if j.status != 0 {
			state = "Exit " + strconv.Itoa(j.status)
		}
		text = strings.TrimSuffix(text, " &")
	default:
	}
	pid := ""
	if long {
		pid = strconv.Itoa(j.pid) + " "
	}
	return fmt.Sprintf("[%d]%s  %s%-24s%s", j.id, mark, pid, state, text)
}

// Notify writes, as an interactive bash does before a prompt, a line for
// each job that ended since the last report, and forgets those jobs.
func (s *Shell) Notify() {
	js := s.jobs.current(s.runner)
	for i, j := range js {
		select {
		case <-j.done:
			fmt.Fprintln(s.stderr, jobLine(j, i, len(js), false))
			s.jobs.forget(j)
		default:
		}
	}
}

// signals are the names kill takes.
var signals = map[string]syscall.Signal{"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT,
	"KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
	"PIPE": syscall.SIGPIPE, "ALRM": syscall.SIGALRM, "ABRT": syscall.SIGABRT}

// runKill stops jobs, as a signal with the default action ends a
// process: the job's context is cancelled (a program stops at its next
// check, a builtin at its next read or write), and its status is 128 +
// the signal's number (TERM by default).
func (s *Shell) runKill(ctx context.Context, hc interp.HandlerContext, args []string) int {
	sig := syscall.SIGTERM
	if len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		name := strings.TrimPrefix(strings.TrimPrefix(args[0][1:], "s "), "SIG")
		if args[0] == "-s" && len(args) > 1 {
			name, args = strings.TrimPrefix(args[1], "SIG"), args[1:]
		}
		if n, err := strconv.Atoi(name); err == nil {
			sig = syscall.Signal(n)
		} else if sg, ok := signals[strings.ToUpper(name)]; ok {
			sig = sg
		} else {
			s.progError(hc, "kill", "%s: invalid signal specification", name)
			return 1
		}
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(hc.Stderr, "kill: usage: kill [-s sigspec | -sigspec] pid | jobspec ...")
		return 2
	}
	status := 0
	js := s.jobs.current(s.runnerFrom(ctx))
	for _, a := range args {
		j := findJob(js, a)
		if j == nil {
			if strings.HasPrefix(a, "%") {
				s.progError(hc, "kill", "%s: no such job", a)
			} else {
				s.progError(hc, "kill", "(%s) - %s", a, errText(syscall.ESRCH))
			}
			status = 1
			continue
		}
		if sig != 0 {
			j.cancel(errSignal(sig))
		}
	}
	return status
}

// setPipestatus sets PIPESTATUS in the running code's shell, as bash does
// after every pipeline and simple command it runs.
func setPipestatus(ctx context.Context, hc interp.HandlerContext, statuses []int) {
	var b strings.Builder
	b.WriteString("PIPESTATUS=(")
	for i, st := range statuses {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(st))
	}
	b.WriteString(")")
	code := b.String()
	if strings.Contains(hc.Env.Get("-").String(), "x") {
		// Not traced: bash sets it without a word.
		code = "{ set +x; " + code + "; set -x; } 2>/dev/null"
	}
	// Not cancelled: the interpreter would take a cancelled context as a
	// fatal error of the shell itself.
	hc.Builtin(context.WithoutCancel(ctx), []string{"eval", code})
}

// pipefail reports whether set -o pipefail is on in the running code.
func pipefail(ctx context.Context, hc interp.HandlerContext) bool {
	return hc.Builtin(context.WithoutCancel(ctx), []string{"test", "-o", "pipefail"}) == nil
}
