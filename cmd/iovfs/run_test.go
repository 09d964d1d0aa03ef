package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/iovfs/iovfs/internal/testenv"
)

// iovfsRun runs "iovfs run args..." in process and returns the status,
// stdout and stderr.
func iovfsRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"run", "--cachedir", wasmCacheDir(t)}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// wasmCacheDir is the compilation cache the tests' iovfs run share, in
// the user's cache directory: compiling a Go test binary for wasm takes
// seconds, and iovfs run caches nothing unless told.
func wasmCacheDir(t *testing.T) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "iovfs", "wazero-test")
}

func TestRunExitStatus(t *testing.T) {
	cat := buildWasm(t, "testdata/cat/main.go", false)
	if code, _, _ := iovfsRun(t, cat, "-exit", "3"); code != 3 {
		t.Errorf("proc_exit(3): status %d", code)
	}
	if code, _, _ := iovfsRun(t, cat, "-exit", "0"); code != 0 {
		t.Errorf("proc_exit(0): status %d", code)
	}
	// A Go panic: the Go runtime prints it and exits 2.
	if code, _, stderr := iovfsRun(t, cat, "-trap"); code != 2 || !strings.Contains(stderr, "nil pointer dereference") {
		t.Errorf("nil dereference: status %d, stderr %q; want 2 and the panic", code, stderr)
	}
	if code, _, stderr := iovfsRun(t, filepath.Join(t.TempDir(), "missing.wasm")); code != 1 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("missing file: status %d, stderr %q; want 1 and one line", code, stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.wasm")
	os.WriteFile(bad, []byte("\x00asm\x01\x00\x00\x00\x99garbage"), 0o644)
	if code, _, stderr := iovfsRun(t, bad); code != 1 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("invalid module: status %d, stderr %q; want 1 and one line", code, stderr)
	}
	// A trap in the wasm itself (unreachable) prints the stack trace.
	trap := filepath.Join(t.TempDir(), "trap.wasm")
	os.WriteFile(trap, []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // type () -> ()
		3, 2, 1, 0, // one function
		7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 0, // export _start
		10, 5, 1, 3, 0, 0, 0x0b, // body: unreachable
	}, 0o644)
	code, out, stderr := iovfsRun(t, trap)
	if code != 1 || !strings.Contains(stderr, "wasm stack trace") {
		t.Errorf("trap: status %d, stdout %q, stderr %q; want 1 and a wasm stack trace", code, out, stderr)
	}
}

// TestRunPreopens: a hostfs mount (read-only too), a tmpfs, --dev and an
// ext4 image (plain and dax) are each preopened where the flags say.
func TestRunPreopens(t *testing.T) {
	cat := buildWasm(t, "testdata/cat/main.go", false)
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "hello"), []byte("from hostfs\n"), 0o644)
	code, out, stderr := iovfsRun(t, "--mount", host+":/h:ro", "--dev", "--tmpfs", "/t:size=1m", cat, "/h/hello", "/dev/null")
	if code != 0 || out != "from hostfs\n" {
		t.Fatalf("cat /h/hello: status %d, out %q, stderr %q", code, out, stderr)
	}
	if _, err := exec.LookPath("mke2fs"); err != nil {
		t.Skip("mke2fs (e2fsprogs) is not installed")
	}
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "inside"), bytes.Repeat([]byte("ext4 "), 2000), 0o644)
	img := filepath.Join(t.TempDir(), "img")
	if b, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-d", src, img, "4M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, b)
	}
	for _, opt := range []string{"", ":dax"} {
		code, out, stderr = iovfsRun(t, "--image", img+":/img"+opt, cat, "/img/inside")
		if code != 0 || out != strings.Repeat("ext4 ", 2000) {
			t.Fatalf("--image%s: status %d, %d bytes out, stderr %q", opt, code, len(out), stderr)
		}
	}
}

// TestRunStdin: the host's stdin reaches the guest as fd 0.
func TestRunStdin(t *testing.T) {
	cat := buildWasm(t, "testdata/cat/main.go", false)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestRunHelper$")
	cmd.Env = append(os.Environ(), "IOVFS_RUN_HELPER="+cat)
	cmd.Stdin = strings.NewReader("through a pipe\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "through a pipe\n" {
		t.Fatalf("cat -stdin: %v, %q", err, out)
	}
}

// TestRunStdoutOffset: a guest's stdout that is a regular file shares its
// offset with the host's descriptors, as a dup does, so a write after the
// run (a shell's next redirect to the same open file) lands after the
// guest's output, not on it.
func TestRunStdoutOffset(t *testing.T) {
	cat := buildWasm(t, "testdata/cat/main.go", false)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	out.WriteString("before\n")
	cmd := exec.Command(exe, "-test.run=^TestRunHelper$")
	cmd.Env = append(os.Environ(), "IOVFS_RUN_HELPER="+cat)
	cmd.Stdin = strings.NewReader("from the guest\n")
	cmd.Stdout = out
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	out.WriteString("after\n")
	got, _ := os.ReadFile(out.Name())
	if string(got) != "before\nfrom the guest\nafter\n" {
		t.Errorf("stdout file %q", got)
	}
}

// TestRunHelper is iovfs run with the process's own stdio, for TestRunStdin.
func TestRunHelper(t *testing.T) {
	wasm := os.Getenv("IOVFS_RUN_HELPER")
	if wasm == "" {
		t.Skip("helper for TestRunStdin")
	}
	os.Exit(run([]string{"run", "--cachedir", wasmCacheDir(nil), wasm, "-stdin"}, os.Stdout, os.Stderr))
}

// TestRunGoStdlib runs two of Go's own standard-library test programs,
// compiled for wasip1, under iovfs run the way Go's
// misc/wasm/go_wasip1_wasm_exec runs them under wazero (the host's / as
// the guest's, its environment, the package directory as the working
// directory), with a tmpfs at /tmp and iovfs's /dev. The README lists
// the full table of packages against wazero's CLI.
func TestRunGoStdlib(t *testing.T) {
	if testenv.Quick() {
		t.Skip("compiles standard-library tests for wasip1")
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	for _, pkg := range []string{"testing/fstest", "path/filepath"} {
		t.Run(pkg, func(t *testing.T) {
			wasm := buildWasm(t, pkg, true)
			dir := filepath.Join(strings.TrimSpace(string(goroot)), "src", pkg)
			code, out, stderr := iovfsRun(t, "--mount", "/:/", "--tmpfs", "/tmp", "--dev", "--env", "PWD="+dir,
				"--env", "HOME="+os.Getenv("HOME"), wasm, "-test.short")
			if code != 0 || !strings.Contains(out, "PASS") {
				t.Fatalf("%s: status %d\n%s\n%s", pkg, code, out, stderr)
			}
		})
	}
}

// TestRunDifferential runs testdata/fsops, a fixed script of file
// operations, three ways: natively on Linux (the oracle), under wazero's
// built-in WASI over a host directory, and under iovfs run --mount over a
// copy of it. iovfs must print what Linux prints, step by step, and leave
// the same tree; where wazero differs from Linux the test logs it.
func TestRunDifferential(t *testing.T) {
	wasm := buildWasm(t, "testdata/fsops/main.go", false)
	native := filepath.Join(t.TempDir(), "fsops")
	if b, err := exec.Command("go", "build", "-o", native, "testdata/fsops/main.go").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	linuxDir, wazeroDir, iovfsDir := t.TempDir(), t.TempDir(), t.TempDir()

	linuxOut, err := exec.Command(native, linuxDir).Output()
	if err != nil {
		t.Fatalf("native fsops: %v", err)
	}

	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	bin, _ := os.ReadFile(wasm)
	var wazeroOut bytes.Buffer
	_, err = r.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithArgs("fsops", "/").
		WithStdout(&wazeroOut).WithStderr(os.Stderr).WithSysWalltime().WithSysNanotime().
		WithFSConfig(wazero.NewFSConfig().WithDirMount(wazeroDir, "/")))
	if ee, ok := err.(*sys.ExitError); err != nil && (!ok || ee.ExitCode() != 0) {
		t.Fatalf("wazero: %v", err)
	}

	code, iovfsOut, stderr := iovfsRun(t, "--mount", iovfsDir+":/", wasm, "/")
	if code != 0 {
		t.Fatalf("iovfs run: status %d\n%s", code, stderr)
	}

	// The same script on an iovfs tmpfs, nested in a hostfs root: the
	// tmpfs is reached through the "/" preopen, and the host directory
	// under it stays empty.
	hostRoot := t.TempDir()
	os.Mkdir(filepath.Join(hostRoot, "t"), 0o755)
	code, tmpfsOut, stderr := iovfsRun(t, "--mount", hostRoot+":/", "--tmpfs", "/t", wasm, "/t")
	if code != 0 {
		t.Fatalf("iovfs run on tmpfs: status %d\n%s", code, stderr)
	}
	if ents, _ := os.ReadDir(filepath.Join(hostRoot, "t")); len(ents) != 0 {
		t.Fatalf("the tmpfs run wrote %d entries to the host directory under it", len(ents))
	}
	// Steps where Go's wasip1 syscall package changes the request before
	// any runtime sees it: it cleans "nd/." to "nd", so rmdir succeeds
	// where Linux's rmdir of a path ending in "." gives EINVAL, and the
	// next step finds nd gone. There iovfs must answer as wazero does.
	goCleans := map[string]bool{"rmdir with a trailing dot": true, "remove nd": true}
	lin, waz := lines(string(linuxOut)), lines(wazeroOut.String())
	if len(waz) != len(lin) {
		t.Fatalf("linux printed %d steps, wazero %d:\n%s\n---\n%s", len(lin), len(waz), linuxOut, wazeroOut.String())
	}
	compare := func(name string, out string) {
		got := lines(out)
		if len(got) != len(lin) {
			t.Fatalf("linux printed %d steps, %s %d:\n%s\n---\n%s", len(lin), name, len(got), linuxOut, out)
		}
		for i := range lin {
			step, _, _ := strings.Cut(lin[i], ":")
			want := lin[i]
			if goCleans[step] {
				want = waz[i]
			}
			if got[i] != want {
				t.Errorf("%s differs from Linux:\n  want: %s\n  got:  %s", name, want, got[i])
			}
		}
	}
	compare("iovfs on hostfs", iovfsOut)
	compare("iovfs on tmpfs", tmpfsOut)
	wazeroDiffs := 0
	for i := range lin {
		step, _, _ := strings.Cut(lin[i], ":")
		if waz[i] != lin[i] && !goCleans[step] {
			wazeroDiffs++
			t.Logf("wazero differs from Linux:\n  linux:  %s\n  wazero: %s", lin[i], waz[i])
		}
	}
	t.Logf("%d steps compared (%d changed by Go's wasip1 syscall package); wazero differs from Linux in %d", len(lin), len(goCleans), wazeroDiffs)
	if lt, it := tree(t, linuxDir), tree(t, iovfsDir); lt != it {
		t.Errorf("final trees differ:\nlinux:\n%s\niovfs:\n%s", lt, it)
	}
	if lt, wt := tree(t, linuxDir), tree(t, wazeroDir); lt != wt {
		t.Logf("wazero's final tree differs from Linux's:\nlinux:\n%s\nwazero:\n%s", lt, wt)
	}
}

func lines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

// tree describes dir: each entry's path, type, size, contents or target,
// and permission bits.
func tree(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, path)
		info, _ := d.Info()
		b.WriteString(rel + " " + info.Mode().String())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			b.WriteString(" -> " + target)
		case info.Mode().IsRegular():
			data, _ := os.ReadFile(path)
			fmt.Fprintf(&b, " %d %x", len(data), sha256.Sum256(data))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// TestRunC builds testdata/c/fsops.c with wasi-libc (Debian's clang,
// lld, wasi-libc and libclang-rt-dev-wasm32) and for the host, and
// checks that iovfs run prints what the host build prints.
func TestRunC(t *testing.T) {
	clang := ""
	for _, c := range []string{"clang", "clang-14", "clang-16", "clang-19"} {
		if p, err := exec.LookPath(c); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		t.Skip("no clang: apt-get install clang lld wasi-libc libclang-rt-dev-wasm32")
	}
	dir := t.TempDir()
	wasm := filepath.Join(dir, "fsops.wasm")
	if b, err := exec.Command(clang, "--target=wasm32-wasi", "-O2", "-fuse-ld=lld", "-o", wasm, "testdata/c/fsops.c").CombinedOutput(); err != nil {
		t.Skipf("no wasi-libc toolchain: %v\n%s", err, b)
	}
	native := filepath.Join(dir, "fsops")
	if b, err := exec.Command("cc", "-o", native, "testdata/c/fsops.c").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, b)
	}
	hostDir, iovfsDir := t.TempDir(), t.TempDir()
	want, err := exec.Command(native, hostDir).Output()
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := iovfsRun(t, "--mount", iovfsDir+":/d", wasm, "/d")
	if code != 0 || out != string(want) {
		t.Fatalf("status %d, stderr %q\niovfs:\n%s\nhost:\n%s", code, stderr, out, want)
	}
}

// TestRunConfined: symlinks in a mounted host directory that point out of
// it (absolute, and relative with "..") lead nowhere, whether the mount
// is a preopen of its own or the guest's root. The canary outside is only
// read if confinement fails, so a failure damages nothing.
func TestRunConfined(t *testing.T) {
	cat := buildWasm(t, "testdata/cat/main.go", false)
	outer := t.TempDir()
	inner := filepath.Join(outer, "inner")
	os.Mkdir(inner, 0o755)
	canary := filepath.Join(outer, "canary")
	os.WriteFile(canary, []byte("SECRET"), 0o644)
	os.Symlink(canary, filepath.Join(inner, "abs"))
	os.Symlink("../canary", filepath.Join(inner, "rel"))
	os.Symlink("../../../../../../../../"+canary, filepath.Join(inner, "deep"))
	for _, c := range []struct{ mount, path string }{
		{inner + ":/d", "/d/abs"}, {inner + ":/d", "/d/rel"}, {inner + ":/d", "/d/deep"}, {inner + ":/d", "/d/../canary"},
		{inner + ":/", "/abs"}, {inner + ":/", "/rel"}, {inner + ":/", "/deep"}, {inner + ":/", "/../canary"},
	} {
		code, out, stderr := iovfsRun(t, "--mount", c.mount, cat, c.path)
		if strings.Contains(out, "SECRET") || code == 0 {
			t.Errorf("--mount %s, cat %s: status %d, out %q, stderr %q: read outside the mount", c.mount, c.path, code, out, stderr)
		}
	}
}
