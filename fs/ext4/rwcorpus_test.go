package ext4

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// countDev counts writes.
type countDev struct {
	memWDev
	writes int
}

func (d *countDev) WriteAt(p []byte, off int64) (int, error) {
	d.writes++
	return d.memWDev.WriteAt(p, off)
}

// TestWriterCorpus opens every e2fsprogs test image read-write
// (IOVFS_E2FS_CORPUS names the directory): no panic, no hang, and not one
// write to an image OpenWriter refuses. On the images it accepts, a few
// operations run and Close must return.
func TestWriterCorpus(t *testing.T) {
	dir := os.Getenv("IOVFS_E2FS_CORPUS")
	if dir == "" {
		t.Skip("IOVFS_E2FS_CORPUS not set")
	}
	f, err := os.Open(filepath.Join(dir, "INDEX.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	refused, accepted := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) < 2 {
			continue
		}
		hint, _ := strconv.Atoi(fields[1])
		img, err := loadCorpusImage(filepath.Join(dir, fields[0]), hint)
		if err != nil || len(img) > 64<<20 {
			continue
		}
		done := make(chan struct{})
		var d *countDev
		var openErr error
		go func() {
			defer close(done)
			d = &countDev{memWDev: memWDev(img)}
			w, err := OpenWriter(d, Options{})
			openErr = err
			if err != nil {
				return
			}
			ino, err := w.Create(rootIno, "iovfs-new", 0o644, 0, 0)
			if err == nil {
				w.WriteAt(ino, []byte("data"), 0)
				w.Truncate(ino, 1)
				w.Unlink(rootIno, "iovfs-new")
			}
			w.Mkdir(rootIno, "iovfs-dir", 0o755, 0, 0)
			w.Close()
		}()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: hangs", fields[0])
		}
		if openErr != nil {
			refused++
			if d.writes != 0 {
				t.Errorf("%s: refused (%v) after %d writes", fields[0], openErr, d.writes)
			}
		} else {
			accepted++
		}
	}
	t.Logf("%d images refused without a write, %d accepted; no panic, no hang", refused, accepted)
}
