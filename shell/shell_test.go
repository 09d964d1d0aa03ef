package shell

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/iovfs/iovfs"
)

// run runs script in a fresh namespace and returns stdout, stderr and the
// exit status.
func run(t *testing.T, script string) (string, string, int) {
	t.Helper()
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	return runIn(t, p, script)
}

func runIn(t *testing.T, p interface{}, script string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	sh, err := New(p.(procT), Options{Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	st := sh.RunScript(context.Background(), strings.NewReader(script), "")
	return out.String(), errb.String(), st
}
