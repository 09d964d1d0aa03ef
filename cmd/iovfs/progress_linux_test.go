package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/creack/pty"

	"github.com/iovfs/iovfs/internal/testenv"
)

// TestCpProgress: a copy shows one progress line (bytes, files, rate,
// time left) on a terminal, redrawn in place and left with the final
// figures, and
// prints nothing when standard error is not a terminal.
func TestCpProgress(t *testing.T) {
	testenv.RequireTool(t, "mke2fs")
	src := t.TempDir()
	for i := range 40 {
		os.WriteFile(filepath.Join(src, "f"+strings.Repeat("x", i%5)+string(rune('a'+i%26))+string(rune('a'+i/26))), bytes.Repeat([]byte{byte(i + 1)}, 256<<10), 0o644)
	}
	for _, tty := range []bool{true, false} {
		img := filepath.Join(t.TempDir(), "disk.img")
		if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", img, "64M").CombinedOutput(); err != nil {
			t.Fatalf("mke2fs: %v\n%s", err, out)
		}
		cmd := exec.Command(os.Args[0], "cp", "-r", src, img+":/src")
		cmd.Env = append(os.Environ(), "IOVFS_TEST_AS_COMMAND=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout = &stdout
		var mu sync.Mutex
		var wg sync.WaitGroup
		if tty {
			ptm, pts, err := pty.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer ptm.Close()
			cmd.Stderr = pts
			wg.Go(func() {
				buf := make([]byte, 4096)
				for {
					n, err := ptm.Read(buf)
					mu.Lock()
					stderr.Write(buf[:n])
					mu.Unlock()
					if err != nil {
						return
					}
				}
			})
			err = cmd.Run()
			pts.Close()
			ptm.Close()
			wg.Wait()
			if err != nil {
				t.Fatalf("cp on a terminal: %v\n%s", err, stderr.String())
			}
			out := stderr.String()
			for _, want := range []string{"copied", "40 files", "/s", "10.0 MiB copied"} {
				if !strings.Contains(out, want) {
					t.Errorf("terminal output lacks %q: %q", want, out)
				}
			}
			if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
				t.Errorf("not one progress line: %q", out)
			}
			continue
		}
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("cp: %v\n%s", err, stderr.String())
		}
		if stderr.Len() != 0 || stdout.Len() != 0 {
			t.Errorf("cp printed %q %q without a terminal", stdout.String(), stderr.String())
		}
	}
}
