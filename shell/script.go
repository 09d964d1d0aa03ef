package shell

// Files that are not WebAssembly: shell scripts, and "#!" lines naming an
// interpreter, as execve(2) and bash treat them.

import (
	"bytes"
	"context"
	"path"
	"strings"
	"syscall"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/interp"
)

// shells are the interpreters a "#!" line may name that mean this shell:
// the namespace has no /bin/sh of its own.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true}

// runShebang runs a file that starts with "#!INTERP [ARG]" as Linux's
// binfmt_script does: INTERP [ARG] FILE ARGS... INTERP must be a
// WebAssembly program in the namespace, or a shell, which is this one.
func (s *Shell) runShebang(ctx context.Context, hc interp.HandlerContext, pr *progRun, head []byte) int {
	line, _, _ := bytes.Cut(head[2:], []byte("\n"))
	fields := strings.SplitN(strings.TrimLeft(string(line), " \t"), " ", 2)
	interpName := strings.TrimSpace(fields[0])
	if interpName == "/usr/bin/env" && len(fields) == 2 && shells[strings.TrimSpace(fields[1])] || shells[path.Base(interpName)] {
		return s.runScript(ctx, hc, pr)
	}
	full := abs(pr.dir, interpName)
	if st, err := pr.child.Stat(full); err != nil || !st.IsRegular() {
		exitProc(pr.child)
		s.progError(hc, pr.path, "cannot execute: required file not found")
		return statusNotFound
	}
	ifd, err := pr.child.Open(full, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		exitProc(pr.child)
		s.progError(hc, pr.path, "%s: bad interpreter: %s", interpName, errText(err))
		return statusNotExecutable
	}
	magic := make([]byte, 4)
	if n, _ := pr.child.Pread(ifd, magic, 0); n < 4 || !bytes.Equal(magic, wasmMagic) {
		exitProc(pr.child)
		s.progError(hc, pr.path, "%s: bad interpreter: %s", interpName, errText(syscall.ENOEXEC))
		return statusNotExecutable
	}
	pr.child.Close(pr.fd)
	args := []string{interpName}
	if len(fields) == 2 && strings.TrimSpace(fields[1]) != "" {
		args = append(args, strings.TrimSpace(fields[1]))
	}
	pr.args = append(append(args, pr.path), pr.args[1:]...)
	pr.fd = ifd
	return s.runWasm(ctx, hc, pr)
}

// runScript runs a shell script in a process of its own, as bash runs a
// file without "#!" (or with a shell's): a new shell that gets the
// exported variables, not the functions or other variables, with the
// arguments as its positional parameters.
func (s *Shell) runScript(ctx context.Context, hc interp.HandlerContext, pr *progRun) int {
	defer exitProc(pr.child)
	st, err := pr.child.Fstat(pr.fd)
	var src []byte
	if err == nil {
		src, err = readAllAt(pr.child, pr.fd, st.Size)
	}
	pr.child.Close(pr.fd)
	if err != nil {
		s.progError(hc, pr.path, "%s", errText(err))
		return statusNotExecutable
	}
	sub, err := s.subShell(pr.child, Options{Stdin: hc.Stdin, Stdout: hc.Stdout, Stderr: hc.Stderr,
		Env: pr.env, Dir: pr.dir, Params: pr.args[1:]})
	if err != nil {
		s.progError(hc, pr.path, "%s", err)
		return statusNotExecutable
	}
	return sub.RunScript(ctx, bytes.NewReader(src), pr.path)
}

// subShell is a new shell on p that shares s's programs.
func (s *Shell) subShell(p *vfs.Proc, o Options) (*Shell, error) {
	o.Bench = s.bench
	o.Interactive = false
	sub, err := newShell(p, o, s.progs)
	if err != nil {
		return nil, err
	}
	return sub, nil
}
