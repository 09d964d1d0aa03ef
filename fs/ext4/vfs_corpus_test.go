package ext4_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
)

// TestVFSCorpus mounts every e2fsprogs test image (IOVFS_E2FS_CORPUS)
// from a RAM disk through Proc.Mount, with and without dax, and walks it
// through the descriptor API: getdents, lstat, pread of every file,
// readlink, listxattr. An image must mount or be refused with an error,
// never panic, and finish each mount's walk in 10 s (under -race each
// walk stops after 1 s and is not timed). It logs the images refused and
// why.
func TestVFSCorpus(t *testing.T) {
	dir := os.Getenv("IOVFS_E2FS_CORPUS")
	if dir == "" {
		t.Skip("IOVFS_E2FS_CORPUS not set; it names shared/testdata/e2fsprogs")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{} // uncompressed, from INDEX.tsv
	if idx, err := os.ReadFile(filepath.Join(dir, "INDEX.tsv")); err == nil {
		for _, line := range strings.Split(string(idx), "\n") {
			if f := strings.Split(line, "\t"); len(f) > 1 {
				sizes[f[0]], _ = strconv.Atoi(f[1])
			}
		}
	}
	reasons := map[string][]string{}
	mounted := 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if raceEnabled && sizes[name] > 8<<20 {
			t.Logf("%s: skipped under -race (%d MiB image)", name, sizes[name]>>20)
			continue
		}
		runtime.GC()
		img, err := corpusImage(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		p, err := iovfs.New(iovfs.WithRAMDisks(1, max(4096, (int64(len(img))+4095)&^4095)))
		if err != nil {
			t.Fatal(err)
		}
		fd, err := p.Open("/dev/ram0", unix.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		p.Pwrite(fd, img, 0)
		p.Close(fd)
		for _, opts := range []string{"", "dax"} {
			err = p.Mount("/dev/ram0", "/mnt", "ext4", unix.MS_RDONLY, opts+",noload")
			if err != nil {
				if opts == "" {
					var en syscall.Errno
					errors.As(err, &en)
					reasons[en.Error()] = append(reasons[en.Error()], name)
				}
				continue
			}
			if opts == "" {
				mounted++
			}
			start := time.Now()
			var w corpusWalk
			budget := 10 * time.Second
			if raceEnabled {
				budget = time.Second // a sample: the walk is not timed under -race
			}
			w.walk(p, "/mnt", start.Add(budget))
			if el := time.Since(start); el > 10*time.Second && !raceEnabled {
				t.Errorf("%s (%q): walk took %v", name, opts, el)
			}
			if err := p.Unmount("/mnt", 0); err != nil {
				t.Errorf("%s: unmount: %v", name, err)
			}
			if opts == "dax" {
				t.Logf("%s: %d entries, %d bytes read, %d errors %q", name, w.entries, w.bytes, len(w.errs), w.errs[:min(2, len(w.errs))])
			}
		}
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("corpus through the VFS: %d images mounted", mounted)
	for _, k := range keys {
		t.Logf("refused with %s (%d): %s", k, len(reasons[k]), strings.Join(reasons[k], " "))
	}
}

// corpusImage decompresses dir's image (testenv.LoadCorpusImage without a size
// hint).
func corpusImage(dir string) ([]byte, error) { return testenv.LoadCorpusImage(dir, 0) }

type corpusWalk struct {
	seen           map[uint64]bool
	buf            []byte
	entries, bytes int
	errs           []string
}

func (w *corpusWalk) fail(path string, err error) {
	w.errs = append(w.errs, path+": "+err.Error())
}

func (w *corpusWalk) walk(p *vfs.Proc, path string, deadline time.Time) {
	if w.seen == nil {
		w.seen = map[uint64]bool{}
	}
	if time.Now().After(deadline) {
		return
	}
	st, err := p.Lstat(path)
	if err != nil {
		w.fail(path, err)
		return
	}
	w.entries++
	p.Listxattr(path)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		if _, err := p.Readlink(path); err != nil {
			w.fail(path, err)
		}
	case unix.S_IFREG:
		fd, err := p.Open(path, unix.O_RDONLY, 0)
		if err != nil {
			w.fail(path, err)
			return
		}
		if w.buf == nil {
			w.buf = make([]byte, 256<<10)
		}
		buf := w.buf
		for off := int64(0); off < st.Size && time.Now().Before(deadline); {
			n, err := p.Pread(fd, buf, off)
			if err != nil {
				w.fail(path, err)
				break
			}
			if n == 0 {
				break
			}
			w.bytes += n
			off += int64(n)
		}
		p.Close(fd)
	case unix.S_IFDIR:
		if w.seen[st.Ino] {
			return
		}
		w.seen[st.Ino] = true
		fd, err := p.Open(path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			w.fail(path, err)
			return
		}
		var names []string
		for len(names) < 100000 {
			ds, err := p.Getdents(fd)
			if err != nil {
				w.fail(path, err)
				break
			}
			if len(ds) == 0 {
				break
			}
			for _, d := range ds {
				if d.Name != "." && d.Name != ".." {
					names = append(names, d.Name)
				}
			}
		}
		p.Close(fd)
		for _, n := range names {
			w.walk(p, path+"/"+n, deadline)
		}
	}
}
