package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
)

// TestRunGoStdOsOverlay runs the os package's tests for wasip1 on a
// writable root that is an overlay over an ext4 image: the image holds
// $GOROOT/src/os at its own path (the working directory, with its
// testdata), the files at $GOROOT's top that the tests list (go.env,
// LICENSE...), and empty /tmp and /dev, over which iovfs run mounts a tmpfs
// and its /dev; the overlay's upper layer is in memory. A long test, as
// TestRunGoStdTests.
func TestRunGoStdOsOverlay(t *testing.T) {
	if !testenv.Long() {
		t.Skip("a long test: IOVFS_LONG=1 compiles and runs os's tests for wasip1 on an overlay root")
	}
	if raceEnabled {
		t.Skip("runs without -race (.ci/run's second go test)")
	}
	testenv.RequireTool(t, "mke2fs", "cp")
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(goroot)), "src", "os")
	wasm := buildWasm(t, "os", true)
	stage := t.TempDir()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(stage, dir)), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("cp", "-a", dir, filepath.Join(stage, dir)).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, b)
	}
	top := filepath.Dir(filepath.Dir(dir))
	tops, err := os.ReadDir(top)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tops {
		if e.Type().IsRegular() {
			if b, err := exec.Command("cp", "-a", filepath.Join(top, e.Name()), filepath.Join(stage, top)).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, b)
			}
		}
	}
	for _, d := range []string{"tmp", "dev"} {
		if err := os.Mkdir(filepath.Join(stage, d), 0o1777); err != nil {
			t.Fatal(err)
		}
	}
	img := filepath.Join(t.TempDir(), "os.img")
	if b, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-d", stage, img, "128M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, b)
	}
	code, out, stderr := iovfsRun(t, "--image", img+":/", "--overlay", "--tmpfs", "/tmp", "--dev",
		"--env", "PWD="+dir, "--env", "HOME=/tmp", wasm, "-test.short", "-test.v")
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "PASS") {
		t.Fatalf("os on an overlay root: status %d\n%s\n%s", code, tail(out, 60), stderr)
	}
	t.Logf("os on an overlay root over ext4: %d passed, %d skipped", strings.Count(out, "--- PASS"), strings.Count(out, "--- SKIP"))
}
