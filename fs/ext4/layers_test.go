package ext4_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// The three layers of ext4, as Linux keeps fs/jbd2 apart from fs/ext4:
// fs/jbd2 (the journal, which knows device blocks), fs/ext4/disk (the
// on-disk volume: reader and Writer) and fs/ext4 (the VFS glue). Each
// imports only layers below it: jbd2 nothing of iovfs, disk jbd2 and the
// block layer but not vfs, the glue all of them.

// layerRules are, for each package, the iovfs packages its files may not
// import directly (tests included) and those it may not depend on at all.
var layerRules = map[string]struct{ direct, deps []string }{
	"fs/jbd2": {
		direct: []string{"vfs", "block", "fs/ext4", "fs/ext4/disk"},
		deps:   []string{"vfs", "block", "fs/ext4", "fs/ext4/disk"},
	},
	"fs/ext4/disk": {
		direct: []string{"vfs", "fs/ext4", "iofs", "fuse", "wasi", "shell", "bench", "cmd/iovfs", ""},
		deps:   []string{"fs/ext4", "iofs", "fuse", "wasi", "shell", "bench", "cmd/iovfs", ""},
	},
}

// TestLayers fails when a file of the disk layer or of jbd2 imports vfs
// or a layer above it, as go list reports the packages' imports.
func TestLayers(t *testing.T) {
	const mod = "github.com/iovfs/iovfs"
	cmd := exec.Command("go", "list", "-json", mod+"/fs/jbd2", mod+"/fs/ext4/disk")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
			Deps                               []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, mod+"/")
		r, ok := layerRules[rel]
		if !ok {
			t.Fatalf("go list gave %s", p.ImportPath)
		}
		seen++
		banned := func(list []string) map[string]bool {
			m := map[string]bool{}
			for _, b := range list {
				m[strings.TrimSuffix(mod+"/"+b, "/")] = true
			}
			return m
		}
		direct, deps := banned(r.direct), banned(r.deps)
		for _, imps := range [][]string{p.Imports, p.TestImports, p.XTestImports} {
			for _, imp := range imps {
				if direct[imp] {
					t.Errorf("%s imports %s, a layer it must not import", rel, imp)
				}
			}
		}
		for _, d := range p.Deps {
			if deps[d] {
				t.Errorf("%s depends on %s, a layer above it", rel, d)
			}
		}
	}
	if seen != len(layerRules) {
		t.Errorf("go list reported %d of the %d packages", seen, len(layerRules))
	}
}
