package iovfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// historyRefs match what belongs in git log, not in the tree: references
// to issue numbers ("issue N", "issues N and M", "#N") and to development
// branches ("branch iN-name", "this" + "branch").
var historyRefs = regexp.MustCompile(`(?i)\bissues?\s+#?[0-9]+|(^|[\s(])#[1-9][0-9]*\b|\bbranch(es)?\s+[a-z][0-9]+-[a-z-]+|\bthis branch\b`)

// TestNoHistoryInTree: no Go file and no Markdown file of the module refers
// to an issue number or a development branch. Docs and comments state what
// is; git log holds how it came to be.
func TestNoHistoryInTree(t *testing.T) {
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for i, line := range strings.Split(string(b), "\n") {
			if m := historyRefs.FindString(line); m != "" {
				t.Errorf("%s:%d: %q refers to history: %s", path, i+1, strings.TrimSpace(m), strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("checked %d files: not the module's tree", n)
	}
}

func TestHistoryRefs(t *testing.T) {
	for s, want := range map[string]bool{
		"the rw driver (issue " + "15)": true, "issues " + "16 and 17": true, "see " + "#17": true, "Issue " + "#3": true,
		"branch " + "i16-walk": true, "on this " + "branch's code": true,
		"seed#28": false, `printf flags "-+ #0"`: false, "issued 15 times": false, "the nojournal branch of the parser": false, "## Read-write": false,
	} {
		if got := historyRefs.MatchString(s); got != want {
			t.Errorf("%q: match %v, want %v", s, got, want)
		}
	}
}
