package shell

// Programs: a command that is neither a function nor a builtin is a file
// found on $PATH in the shell's namespace (or named with a slash). A
// WebAssembly module runs as a wasip1 program in a process of its own, a
// fork of the running code's: descriptors 0, 1 and 2 are the command's
// streams, every other descriptor marked close-on-exec is gone, its
// current directory and environment are the shell's, and its root and
// current directory are its preopens (the root resolved as
// RESOLVE_IN_ROOT, so "/" in the program is the shell's "/"). Go's
// wasip1 runtime starts in $PWD; wasi-libc starts in "/" and a C program
// that wants the shell's directory calls chdir(getenv("PWD")).
//
// One wazero runtime serves every program of a shell, with one wasi
// module that finds each program's process in its context
// (wasi.InstantiateShared). Compiled modules are kept for the life of
// the shell, by the file's identity (device, inode, size, times), and in
// a host directory across shells when Options.CacheDir is set. A program
// whose context is done (Ctrl-C, kill) ends at its next WASI call, and
// anywhere in its code when the shell is interruptible (wazero's
// CloseOnContextDone: a call out of the program's code at every loop,
// which makes a tight loop about three times slower, so only interactive
// shells pay it unless asked). A write to a pipe without readers ends
// the program as SIGPIPE would.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/iovfs/iovfs/internal/sysmem"
	"github.com/iovfs/iovfs/vfs"
	"github.com/iovfs/iovfs/wasi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
)

// Exit statuses of programs the shell could not run, as bash gives them.
const (
	statusNotExecutable = 126
	statusNotFound      = 127
	// statusTrap is a program that trapped: 128 + SIGABRT, as a C program
	// that calls abort() ends.
	statusTrap = 128 + 6
	// statusInterrupted is a program stopped by Ctrl-C.
	statusInterrupted = 128 + 2
)

// wasmMagic starts every WebAssembly binary.
var wasmMagic = []byte("\x00asm")

// programs is a shell's runtime and its compiled modules.
type programs struct {
	cacheDir      string
	interruptible bool // Options.Interruptible

	// once makes the runtime on first use; rt and err are set by it.
	once sync.Once
	rt   wazero.Runtime
	err  error

	// mu protects modules: the latest version of each file run.
	mu      sync.Mutex
	modules map[[2]uint64]*compiled
}

// fileID identifies one version of a file: a changed file has another
// size, mtime or ctime, and so another compiled module.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

// compiled is one module, compiled once, however many programs start it
// at the same time: the first starts the compile, all wait for ready.
type compiled struct {
	id    fileID
	ready chan struct{}
	mod   wazero.CompiledModule // set before ready closes
	err   error
}

// runtime returns the shell's wazero runtime, making it on first use.
func (ps *programs) runtime() (wazero.Runtime, error) {
	ps.once.Do(func() {
		ctx := context.Background()
		rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(ps.interruptible)
		// A program may grow its memory up to half of what the machine has
		// available now, so that no program can make the Go runtime fail
		// to allocate (a fatal error for the whole shell).
		if pages := sysmem.Available() / 2 / 65536; pages > 0 && pages < 65536 {
			rc = rc.WithMemoryLimitPages(uint32(pages))
		}
		if ps.cacheDir != "" {
			cache, err := wazero.NewCompilationCacheWithDir(ps.cacheDir)
			if err != nil {
				ps.err = fmt.Errorf("compilation cache %s: %w", ps.cacheDir, err)
				return
			}
			rc = rc.WithCompilationCache(cache)
		}
		rt := wazero.NewRuntimeWithConfig(ctx, rc)
		if _, err := wasi.InstantiateShared(ctx, rt); err != nil {
			rt.Close(ctx)
			ps.err = err
			return
		}
		ps.rt = rt
	})
	return ps.rt, ps.err
}

// close frees the runtime and every compiled module.
func (ps *programs) close() error {
	ps.once.Do(func() {}) // no runtime is made after close
	if ps.rt == nil {
		return nil
	}
	return ps.rt.Close(context.Background())
}

// compile returns the compiled module of the program open as fd in p.
func (ps *programs) compile(ctx context.Context, p *vfs.Proc, fd int) (wazero.CompiledModule, error) {
	rt, err := ps.runtime()
	if err != nil {
		return nil, err
	}
	st, err := p.Fstat(fd)
	if err != nil {
		return nil, err
	}
	id := fileID{st.Dev, st.Ino, st.Size, st.Mtime.UnixNano(), st.Ctime.UnixNano()}
	key := [2]uint64{st.Dev, st.Ino}
	ps.mu.Lock()
	if ps.modules == nil {
		ps.modules = map[[2]uint64]*compiled{}
	}
	c := ps.modules[key]
	var old *compiled
	start := false
	if c == nil || c.id != id {
		old, c, start = c, &compiled{id: id, ready: make(chan struct{})}, true
		ps.modules[key] = c
	}
	ps.mu.Unlock()
	if old != nil {
		// The file changed: its old code goes (wazero lets programs
		// still running it finish).
		go func() {
			<-old.ready
			if old.mod != nil {
				old.mod.Close(context.Background())
			}
		}()
	}
	if start {
		// Compiled in a goroutine of its own: a program interrupted
		// while it waits stops waiting, and the compile goes on for
		// the next run.
		bin, err := readAllAt(p, fd, st.Size)
		go func() {
			defer close(c.ready)
			if c.err = err; err == nil {
				c.mod, c.err = rt.CompileModule(context.Background(), coalesceData(bin))
			}
			if c.err != nil {
				// Not kept: a later run tries again.
				ps.mu.Lock()
				if ps.modules[key] == c {
					delete(ps.modules, key)
				}
				ps.mu.Unlock()
			}
		}()
	}
	select {
	case <-c.ready:
		return c.mod, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readAllAt reads the whole file open as fd, refusing one the memory
// cannot hold.
func readAllAt(p *vfs.Proc, fd int, size int64) ([]byte, error) {
	if err := sysmem.Check(size, "the program"); err != nil {
		return nil, unix.ENOMEM
	}
	b := make([]byte, size)
	n, err := p.NewFile(fd, "").ReadAt(b, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return nil, err
	}
	return b, nil
}

// progRun is one program to start: its file, already open in child.
type progRun struct {
	child *vfs.Proc
	fd    int
	path  string // the file, absolute, for messages
	args  []string
	env   []string
	dir   string
}

// run runs the program and returns its exit status, printing a one-line
// message for a trap.
func (s *Shell) runWasm(ctx context.Context, hc interp.HandlerContext, pr *progRun) int {
	mod, err := s.progs.compile(ctx, pr.child, pr.fd)
	pr.child.Close(pr.fd)
	if err != nil {
		if ctx.Err() != nil {
			return statusInterrupted
		}
		s.progError(hc, pr.args[0], "cannot execute: %s", oneLine(err.Error()))
		return statusNotExecutable
	}
	preopens := []wasi.Preopen{{Path: "/", Guest: "/"}}
	if pr.dir != "/" {
		preopens = append(preopens, wasi.Preopen{Path: pr.dir, Guest: pr.dir})
	}
	sio, err := setupStdio(ctx, pr.child, hc.Stdin, hc.Stdout, hc.Stderr)
	if err != nil {
		s.progError(hc, pr.args[0], "%s", errText(err))
		return statusNotExecutable
	}
	defer sio.finish()
	defer exitProc(pr.child)
	pr.child.CloseOnExec()
	gctx, err := wasi.Bind(ctx, pr.child, wasi.Config{Preopens: preopens, SigPipe: true})
	if err != nil {
		s.progError(hc, pr.args[0], "%s", errText(err))
		return statusNotExecutable
	}
	mc := wazero.NewModuleConfig().WithName("").WithArgs(pr.args...).
		WithRandSource(rand.Reader).WithSysNanosleep().WithSysNanotime().WithSysWalltime()
	for _, kv := range pr.env {
		k, v, _ := strings.Cut(kv, "=")
		mc = mc.WithEnv(k, v)
	}
	gctx = experimental.WithMemoryAllocator(gctx, experimental.MemoryAllocatorFunc(allocMemory))
	m, err := s.progs.rt.InstantiateModule(gctx, mod, mc)
	if m != nil {
		m.Close(context.Background())
	}
	var exit *sys.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		switch exit.ExitCode() {
		case sys.ExitCodeContextCanceled, sys.ExitCodeDeadlineExceeded:
			return statusInterrupted
		}
		return int(uint8(exit.ExitCode()))
	case ctx.Err() != nil:
		return statusInterrupted
	}
	s.progError(hc, pr.args[0], "wasm trap: %s", trapText(err))
	return statusTrap
}

// progError prints "iovfs sh: line N: NAME: message", as bash reports a
// command that could not run or was killed (an interactive bash leaves
// out the line).
func (s *Shell) progError(hc interp.HandlerContext, name, format string, a ...any) {
	line := ""
	if hc.Pos.IsValid() && !s.interactive {
		line = fmt.Sprintf("line %d: ", hc.Pos.Line())
	}
	fmt.Fprintf(hc.Stderr, "iovfs sh: %s%s: %s\n", line, name, fmt.Sprintf(format, a...))
}

// trapText is the first line of a trap's error, without wazero's prefix:
// "unreachable", "integer divide by zero", "out of bounds memory access".
func trapText(err error) string {
	msg := oneLine(err.Error())
	if _, after, ok := strings.Cut(msg, "wasm error: "); ok {
		return after
	}
	return msg
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// exportedEnv is the environment a program gets: the exported variables,
// with PWD the running code's directory.
func exportedEnv(env expand.Environ, dir string) []string {
	var out []string
	for name, v := range env.Each {
		if v.Exported && v.IsSet() && name != "PWD" {
			out = append(out, name+"="+v.String())
		}
	}
	return append(out, "PWD="+dir)
}
