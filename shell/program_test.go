package shell

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// buildGo compiles the wasip1 program in testdata/DIR once per source and
// Go version, into the user's cache directory, and returns its bytes.
func buildGo(t testing.TB, dir string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", dir, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	key := sha256.Sum256(append([]byte(runtime.Version()+dir), src...))
	return buildCached(t, hex.EncodeToString(key[:8])+".wasm", func(out string) *exec.Cmd {
		cmd := exec.Command("go", "build", "-o", out, ".")
		cmd.Dir = filepath.Join("testdata", dir)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		return cmd
	})
}

var buildMu sync.Mutex

// buildCached runs build (which writes its output to the path given) once
// for name, keeping the result in the user's cache directory.
func buildCached(t testing.TB, name string, build func(out string) *exec.Cmd) []byte {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "iovfs", "shell-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	if b, err := os.ReadFile(out); err == nil {
		return b
	}
	tmp := out + ".tmp"
	cmd := build(tmp)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// install writes data as an executable file at name in p's namespace.
func install(t testing.TB, p *vfs.Proc, name string, data []byte, mode uint32) {
	t.Helper()
	for i := 1; i < len(name); i++ {
		if name[i] == '/' {
			p.Mkdir(name[:i], 0o755)
		}
	}
	f, err := p.OpenFile(name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// buildC compiles testdata/c/NAME.c with clang and wasi-libc (Debian's
// clang-14, lld-14, wasi-libc and libclang-rt-14-dev-wasm32, which
// .ci/run installs), once per source, and returns the module.
func buildC(t testing.TB, name string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "c", name+".c"))
	if err != nil {
		t.Fatal(err)
	}
	clang := ""
	for _, c := range []string{"clang-14", "clang", "clang-16", "clang-19"} {
		if p, err := exec.LookPath(c); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		testenv.SkipPrivileged(t, "no clang: apt-get install clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32")
	}
	key := sha256.Sum256(append([]byte(clang+name), src...))
	return buildCached(t, hex.EncodeToString(key[:8])+".wasm", func(out string) *exec.Cmd {
		return exec.Command(clang, "--target=wasm32-wasi", "-O2", "-fuse-ld=lld", "-o", out, filepath.Join("testdata", "c", name+".c"))
	})
}

// testCacheDir is the compilation cache the tests' shells share, in the
// user's cache directory, so that a program is compiled once per
// version of it rather than once per test.
var testCacheDir = sync.OnceValue(func() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "iovfs", "shell-test", "wazero")
})

// lockedBuffer is a bytes.Buffer for a shell's output that background
// jobs write to as well.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

// progShell is a shell whose namespace has the test tool at /bin/tool,
// with the options o (at most one) besides its streams and cache.
func progShell(t testing.TB, o ...Options) (*Shell, *vfs.Proc, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	install(t, p, "/bin/tool", buildGo(t, "tool"), 0o755)
	var out, errb lockedBuffer
	var opts Options
	if len(o) > 0 {
		opts = o[0]
	}
	opts.Stdout, opts.Stderr, opts.CacheDir = &out, &errb, testCacheDir()
	sh, err := New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	return sh, p, &out, &errb
}

func runSh(t testing.TB, sh *Shell, out, errb *lockedBuffer, script string) (string, string, int) {
	t.Helper()
	out.Reset()
	errb.Reset()
	st := sh.RunScript(context.Background(), strings.NewReader(script), "")
	return out.String(), errb.String(), st
}

// TestProgramBasics: a program found on PATH gets its arguments (spaces
// kept), the exported environment with PWD, the shell's directory as its
// own, and its exit status becomes $?.
func TestProgramBasics(t *testing.T) {
	sh, _, out, errb := progShell(t)
	o, e, st := runSh(t, sh, out, errb, `tool args a 'b c' "" 'd  e'; echo $?
export EXP=1; LOCAL=2; tool env EXP LOCAL PWD HOME; mkdir -p /tmp/w/x; cd /tmp/w/x; tool pwd
tool exit 3; echo $?; tool exit 256; echo $?; /bin/tool argv0; tool argv0`)
	want := "[a]\n[b c]\n[]\n[d  e]\n0\nEXP=1\nLOCAL=-\nPWD=/\nHOME=/\n/tmp/w/x\n3\n0\n/bin/tool\ntool\n"
	if o != want || e != "" || st != 0 {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr: %s", st, o, want, e)
	}
}

// TestProgramPipelines: programs and builtins in pipelines, in every
// order and with more than two sides, programs reading files given as
// arguments, and command substitution.
func TestProgramPipelines(t *testing.T) {
	sh, p, out, errb := progShell(t)
	install(t, p, "/bin/ctool", buildC(t, "ctool"), 0o755)
	o, e, st := runSh(t, sh, out, errb, `printf 'one\ntwo\nthree\n' > /tmp/f
cat /tmp/f | tool upper
tool cat /tmp/f | wc -l
tool cat /tmp/f | tool upper | ctool rot13 | tool cat | head -n 2
cat /tmp/f | ctool rot13 | ctool rot13 | tool lines
tool args 'a b' | tool upper | cat | tool cat - | wc -c
x=$(tool cat /tmp/f | tool upper | tail -n 1); echo "[$x]"
echo "$(ctool args 'sp ace' q)"
cd /tmp && ctool cat f | head -n 1`)
	want := "ONE\nTWO\nTHREE\n3\nBAR\nGJB\n3\n6\n[THREE]\n<sp ace>\n<q>\none\n"
	if o != want || e != "" || st != 0 {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr: %s", st, o, want, e)
	}
}

// TestProgramXargs: xargs runs programs from PATH with the items as
// arguments, and the text builtins take a program's output and feed one.
func TestProgramXargs(t *testing.T) {
	sh, _, out, errb := progShell(t)
	o, e, st := runSh(t, sh, out, errb, `printf 'a b\n"c d"\n' | xargs tool args
printf 'x y' | xargs -n1 tool args; echo $?
printf '1\n' | xargs tool exit; echo $?
printf '0\n' | xargs -I{} tool exit {}; echo $?
printf 'ab\ncd\n' | tool upper | sed 's/A/x/' | sort -r | tr C z
seq 3 | tool upper | grep -c .`)
	want := "[a]\n[b]\n[c d]\n[x]\n[y]\n0\n123\n0\nxB\nzD\n3\n"
	if o != want || e != "" || st != 0 {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr: %s", st, o, want, e)
	}
}
