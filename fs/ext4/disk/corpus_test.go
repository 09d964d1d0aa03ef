package disk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
)

// walkStats counts what walkVolume saw.
type walkStats struct {
	files, dirs, links, other, bytes int
	errs                             []string
}

// walkVolume stats, lists and reads everything reachable from the root.
// Errors on damaged objects are recorded, not fatal: the corpus is made of
// damaged images. Each directory is visited once (cycles via corrupt
// entries are cut by the seen set).
// Reads stop after maxRead bytes per file.
func walkVolume(v *Volume, deadline time.Time, maxRead int64, st *walkStats) {
	seen := map[uint32]bool{}
	var buf [65536]byte
	type item struct {
		ino  uint32
		path string
	}
	queue := []item{{v.Root(), "/"}}
	note := func(path string, err error) {
		if len(st.errs) < 20 {
			st.errs = append(st.errs, path+": "+err.Error())
		}
	}
	for len(queue) > 0 && time.Now().Before(deadline) {
		it := queue[0]
		queue = queue[1:]
		if seen[it.ino] {
			continue
		}
		seen[it.ino] = true
		in, err := v.Inode(it.ino)
		if err != nil {
			note(it.path, err)
			continue
		}
		_, _ = v.ListXattr(in)
		for _, n := range []string{"user.a", "security.selinux", "system.posix_acl_access"} {
			_, _ = v.GetXattr(in, n)
		}
		switch {
		case in.IsDir():
			st.dirs++
			var names []string
			err := v.ReadDir(in, func(name []byte, ino uint32, ft uint8) bool {
				names = append(names, string(name))
				queue = append(queue, item{ino, it.path + string(name) + "/"})
				return len(names) < 100000
			})
			if err != nil {
				note(it.path, err)
			}
			for _, n := range names {
				if _, err := v.Lookup(in, n); err != nil {
					note(it.path+n, fmt.Errorf("lookup: %w", err))
				}
			}
			_, _ = v.Lookup(in, "..")
			_, _ = v.Lookup(in, "no such name")
		case in.IsSymlink():
			st.links++
			if _, err := v.Readlink(in); err != nil {
				note(it.path, err)
			}
		case in.IsRegular():
			st.files++
			var c ExtentCache
			for off := int64(0); off < maxRead && time.Now().Before(deadline); {
				n, err := v.ReadAt(in, &c, buf[:], off)
				if err != nil {
					note(it.path, err)
					break
				}
				if n == 0 {
					break
				}
				st.bytes += n
				off += int64(n)
			}
		default:
			st.other++
		}
	}
}

// TestE2fsprogsCorpus opens every image of e2fsprogs' test suite, walks it,
// and reads everything. It runs when IOVFS_E2FS_CORPUS names the corpus
// directory. A panic fails the test (nothing recovers it).
func TestE2fsprogsCorpus(t *testing.T) {
	dir := os.Getenv("IOVFS_E2FS_CORPUS")
	if dir == "" {
		t.Skip("IOVFS_E2FS_CORPUS not set; it names shared/testdata/e2fsprogs")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	if idx, err := os.ReadFile(filepath.Join(dir, "INDEX.tsv")); err == nil {
		for _, line := range strings.Split(string(idx), "\n") {
			f := strings.Split(line, "\t")
			if len(f) > 1 {
				sizes[f[0]], _ = strconv.Atoi(f[1])
			}
		}
	}
	var mounted, refused []string
	reasons := map[string][]string{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		runtime.GC() // the last image is garbage now; measure this one alone
		img, err := testenv.LoadCorpusImage(filepath.Join(dir, name), sizes[name])
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		start := time.Now()
		var warnings []string
		v, err := Open(BytesDevice(img), Options{Logf: func(f string, a ...any) {
			warnings = append(warnings, fmt.Sprintf(f, a...))
		}})
		if err != nil {
			refused = append(refused, name)
			reasons[err.Error()] = append(reasons[err.Error()], name)
			continue
		}
		mounted = append(mounted, name)
		var st walkStats
		walkVolume(v, start.Add(10*time.Second), 1<<40, &st)
		el := time.Since(start)
		// A hang guard, not a timing: the walk itself stops at 10 s, so
		// only a single step that never returns can exceed the bound.
		bound := 10 * time.Second
		if raceDetector {
			bound = 60 * time.Second
		}
		if el > bound {
			t.Errorf("%s: walk took %v", name, el)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > 512<<20 {
			t.Errorf("%s: heap %d MiB", name, ms.HeapAlloc>>20)
		}
		t.Logf("%s: mounted; %d dirs %d files %d symlinks %d other, %d bytes read, %v; warnings %d; errors: %d %q",
			name, st.dirs, st.files, st.links, st.other, st.bytes, el.Round(time.Millisecond), len(warnings), len(st.errs), first(st.errs, 3))
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("corpus: %d images mounted, %d refused", len(mounted), len(refused))
	for _, k := range keys {
		t.Logf("refused (%d): %s: %s", len(reasons[k]), k, strings.Join(reasons[k], " "))
	}
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
