package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// buildWasm compiles a wasip1 program once per source and Go version into
// the user's cache directory and returns its path: src is a file in
// testdata, or a standard-library package whose tests are compiled (test
// true). The compiles are slow, so later runs reuse them.
func buildWasm(t *testing.T, src string, test bool) string {
	t.Helper()
	key := sha256.New()
	key.Write([]byte(runtime.Version() + src))
	if !test {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		key.Write(b)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "iovfs", "wasm-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, hex.EncodeToString(key.Sum(nil))[:16]+".wasm")
	if _, err := os.Stat(out); err == nil {
		return out
	}
	tmp := out + ".tmp"
	args := []string{"build", "-o", tmp, src}
	if test {
		args = []string{"test", "-c", "-o", tmp, src}
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	return out
}
