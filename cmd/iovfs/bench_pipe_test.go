package main

import (
	"strings"
	"testing"
)

func TestBenchPipe(t *testing.T) {
	code, out, errOut := runArgs("bench", "pipe", "pipe-pingpong", "--loops", "2", "--reads", "200")
	if code != 0 {
		t.Fatalf("status %d\n%s", code, errOut)
	}
	for _, s := range []string{"== pipe:", "== pipe-pingpong:", "os-pipe", "io-pipe", "chan", "MB/s", "round trips/s", "x iovfs's time"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}
