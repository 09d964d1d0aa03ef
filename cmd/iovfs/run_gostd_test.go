package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
)

// TestRunGoStdTests runs the tests of the standard-library packages that
// use files most, compiled for wasip1, under iovfs run the way Go's
// lib/wasm/go_wasip1_wasm_exec runs them under wazero (the host's / as
// the guest's, the package directory as the working directory, -short as
// Go's wasip1 builders run them), with a tmpfs at /tmp and iovfs's /dev.
// Compiling them takes minutes on two cores (os/exec's alone about one),
// so they are a long test (IOVFS_LONG=1, which .ci/run sets), and not run
// under the race detector: the guest is wazero's compiled code either way.
func TestRunGoStdTests(t *testing.T) {
	if !testenv.Long() {
		t.Skip("a long test: IOVFS_LONG=1 compiles and runs os, io/fs, path/filepath, archive/tar, archive/zip and os/exec's tests for wasip1")
	}
	if raceEnabled {
		t.Skip("runs without -race (.ci/run's second go test)")
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	for _, pkg := range []string{"os", "io/fs", "path/filepath", "archive/tar", "archive/zip", "os/exec"} {
		t.Run(pkg, func(t *testing.T) {
			wasm := buildWasm(t, pkg, true)
			dir := filepath.Join(strings.TrimSpace(string(goroot)), "src", pkg)
			code, out, stderr := iovfsRun(t, "--mount", "/:/", "--tmpfs", "/tmp", "--dev", "--env", "PWD="+dir,
				"--env", "HOME="+os.Getenv("HOME"), wasm, "-test.short", "-test.v")
			if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "PASS") {
				t.Fatalf("%s: status %d\n%s\n%s", pkg, code, tail(out, 60), stderr)
			}
			t.Logf("%s: %d passed, %d skipped", pkg, strings.Count(out, "--- PASS"), strings.Count(out, "--- SKIP"))
		})
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
