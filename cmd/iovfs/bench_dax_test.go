package main

import (
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
)

func TestBenchDax(t *testing.T) {
	testenv.RequireTool(t, "mke2fs")
	code, out, errOut := runArgs("bench", "dax", "--file-size", "1M", "--loops", "2", "--reads", "200", "--pattern", "rand")
	if code != 0 {
		t.Fatalf("status %d\n%s", code, errOut)
	}
	for _, s := range []string{"== dax:", "iomap", "iter-wrap", "iter-1seg", "memcpy", "the seed's table", "36.477 s"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}
