package disk

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
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
// operations run under errors=remount-ro with every error reported
// (ReportError, as the mount does) and Close must return; once damage is
// found, nothing but the error record (the superblock and the journal
// superblock) is written.
func TestWriterCorpus(t *testing.T) {
	refused, accepted, damaged := 0, 0, 0
	forEachCorpusImage(t, func(name string, img []byte) {
		done := make(chan struct{})
		var d *countDev
		var openErr error
		atErr := -1 // writes when the first damage was found
		go func() {
			defer close(done)
			d = &countDev{memWDev: memWDev(img)}
			w, err := OpenWriter(d, Options{})
			openErr = err
			if err != nil {
				return
			}
			w.Errors = ErrorsRemountRO
			report := func(op string, err error) {
				var ce *CorruptError
				if errors.As(err, &ce) && atErr < 0 {
					atErr = d.writes
				}
				w.ReportError(op, err)
			}
			// Look up every entry of the root, as a walk would.
			var inos []uint32
			report("readdir", w.View(func(v *Volume) error {
				in, err := v.Inode(rootIno)
				if err != nil {
					return err
				}
				return v.ReadDir(in, func(_ []byte, ino uint32, _ uint8) bool {
					inos = append(inos, ino)
					return len(inos) < 1000
				})
			}))
			for _, ino := range inos {
				report("lookup", w.View(func(v *Volume) error {
					_, err := w.getInode(ino)
					return err
				}))
			}
			ino, err := w.Create(rootIno, "iovfs-new", 0o644, 0, 0)
			report("create", err)
			if err == nil {
				_, err = w.WriteAt(ino, []byte("data"), 0)
				report("write", err)
				report("truncate", w.Truncate(ino, 1))
				report("unlink", w.Unlink(rootIno, "iovfs-new"))
			}
			_, err = w.Mkdir(rootIno, "iovfs-dir", 0o755, 0, 0)
			report("mkdir", err)
			w.Close()
		}()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: hangs", name)
		}
		if openErr != nil {
			refused++
			if d.writes != 0 {
				t.Errorf("%s: refused (%v) after %d writes", name, openErr, d.writes)
			}
		} else {
			accepted++
		}
		if atErr >= 0 {
			damaged++
			if d.writes-atErr > 2 {
				t.Errorf("%s: %d writes after damage was found (the error record is 2)", name, d.writes-atErr)
			}
		}
	})
	t.Logf("%d images refused without a write, %d accepted (%d found damaged by an operation, then only the error record written); no panic, no hang", refused, accepted, damaged)
}

// TestReplayCorpus replays, as a read-only mount does (RecoverJournal),
// the journal of every e2fsprogs test image that needs recovery
// (IOVFS_E2FS_CORPUS): no panic, no hang, and not one write to an image
// whose replay is refused or finds the log corrupt.
func TestReplayCorpus(t *testing.T) {
	replayed, refused := 0, 0
	forEachCorpusImage(t, func(name string, img []byte) {
		if need, err := NeedsRecovery(memWDev(img)); err != nil || !need {
			return
		}
		d := &countDev{memWDev: memWDev(img)}
		done := make(chan error)
		go func() {
			_, err := RecoverJournal(d, Options{})
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: replay hangs", name)
		}
		if err != nil {
			refused++
			t.Logf("%s: refused: %v", name, err)
			if d.writes != 0 {
				t.Errorf("%s: replay failed (%v) after %d writes", name, err, d.writes)
			}
			return
		}
		replayed++
	})
	if replayed+refused == 0 {
		t.Fatal("no corpus image needs recovery")
	}
	t.Logf("%d images needing recovery replayed, %d refused without a write", replayed, refused)
}

// forEachCorpusImage calls fn with every e2fsprogs test image of at most
// 64 MiB listed in IOVFS_E2FS_CORPUS's INDEX.tsv; the test is skipped
// without it.
func forEachCorpusImage(t *testing.T, fn func(name string, img []byte)) {
	dir := os.Getenv("IOVFS_E2FS_CORPUS")
	if dir == "" {
		t.Skip("IOVFS_E2FS_CORPUS not set")
	}
	f, err := os.Open(filepath.Join(dir, "INDEX.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) < 2 {
			continue
		}
		hint, _ := strconv.Atoi(fields[1])
		img, err := testenv.LoadCorpusImage(filepath.Join(dir, fields[0]), hint)
		if err != nil || len(img) > 64<<20 {
			continue
		}
		fn(fields[0], img)
	}
}
