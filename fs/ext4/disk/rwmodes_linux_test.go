package disk

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDataJournalNoTornBlocks overwrites a synced file in place and cuts
// the device off at every write of the overwrite and its fsync. Under
// data=journal the recovered file holds the old bytes or the new ones,
// never a mix; under data=ordered the overwrite reaches the blocks before
// the commit (as on Linux), so some cut shows a mix, which proves the cut
// points reach the data writes.
func TestDataJournalNoTornBlocks(t *testing.T) {
	needMke2fs(t)
	base := filepath.Join(t.TempDir(), "base.img")
	mkfsRW(t, base, 16, "")
	orig, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	const size = 96 << 10 // 24 blocks: less than one data=journal chunk
	old, new := bytes.Repeat([]byte{'a'}, size), bytes.Repeat([]byte{'b'}, size)
	run := func(dev WriteDevice, data DataMode, cutAt func() int) (ino uint32, start, end int) {
		w, err := OpenWriter(dev, Options{})
		if err != nil {
			t.Fatal(err)
		}
		w.Batch, w.CommitInterval, w.Data = true, time.Hour, data
		ino, err = w.Create(rootIno, "f", 0o644, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := w.WriteAt(ino, old, 0); n != size {
			t.Fatal(n, err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		start = cutAt()
		// Two writes in one transaction: a contiguous run of whole
		// blocks goes to the device in one call, so a single write
		// could not be cut in the middle under data=ordered.
		w.WriteAt(ino, new[:size/2], 0)
		w.WriteAt(ino, new[size/2:], size/2)
		w.Sync()
		return ino, start, cutAt()
	}
	for _, mode := range []struct {
		name string
		data DataMode
	}{{"journal", DataJournal}, {"ordered", DataOrdered}} {
		t.Run(mode.name, func(t *testing.T) {
			ref := &cutDev{memWDev: memWDev(bytes.Clone(orig)), limit: -1}
			_, start, end := run(ref, mode.data, func() int { return ref.count })
			torn, olds, news := 0, 0, 0
			for cut := start; cut <= end; cut++ {
				cd := &cutDev{memWDev: memWDev(bytes.Clone(orig)), limit: cut}
				ino, _, _ := run(cd, mode.data, func() int { return cd.count })
				w, err := OpenWriter(memWDev(cd.memWDev), Options{})
				if err != nil {
					t.Fatalf("cut at %d: recovery: %v", cut, err)
				}
				got := make([]byte, size)
				if n, err := w.ReadAt(ino, got, 0); n != size {
					t.Fatalf("cut at %d: read %d, %v", cut, n, err)
				}
				switch {
				case bytes.Equal(got, old):
					olds++
				case bytes.Equal(got, new):
					news++
				default:
					torn++
				}
				w.Close()
			}
			t.Logf("data=%s: %d cut points: %d old, %d new, %d torn", mode.name, end-start+1, olds, news, torn)
			if mode.data == DataJournal && torn != 0 {
				t.Errorf("data=journal: %d of %d cuts left the file torn", torn, end-start+1)
			}
			if mode.data == DataOrdered && torn == 0 {
				t.Errorf("data=ordered: no cut tore the overwrite; the cut points miss the data writes")
			}
			if olds == 0 || news == 0 {
				t.Errorf("cuts gave %d old and %d new: both must occur", olds, news)
			}
		})
	}
}

// TestDataJournalLargeWrite writes more than a transaction holds under
// data=journal: the write is split into transactions, every one fits the
// log, and the file reads back whole, e2fsck-clean.
func TestDataJournalLargeWrite(t *testing.T) {
	img, dev, w := memWriter(t, 64)
	w.Batch, w.Data = true, DataJournal
	ino, err := w.Create(rootIno, "big", 0o644, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 24<<20)
	for i := range data {
		data[i] = byte(i * 7 / 4096)
	}
	if w.journalChunk() >= len(data) {
		t.Fatalf("chunk %d: the write fits one transaction", w.journalChunk())
	}
	if n, err := w.WriteAt(ino, data, 0); n != len(data) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	w2, err := OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w2.ReadAt(ino, got, 0); n != len(data) || !bytes.Equal(got, data) {
		t.Fatalf("read back: %d, %v, equal %v", n, err, bytes.Equal(got, data))
	}
	w2.Close()
	if err := os.WriteFile(img, dev, 0o600); err != nil {
		t.Fatal(err)
	}
	e2fsckClean(t, img)
}

// TestCommitInterval: in batch mode a transaction commits once
// CommitInterval has passed since the last commit, with no operation or
// fsync after it (StartCommitter's check, run here by hand on a fake
// clock), and what it committed survives a crash right after.
func TestCommitInterval(t *testing.T) {
	_, dev, w := memWriter(t, 16)
	t0 := time.Now().Add(time.Hour) // after OpenWriter's own commit
	now := t0
	w.Now = func() time.Time { return now }
	w.Batch, w.CommitInterval = true, 5*time.Second
	ino, err := w.Create(rootIno, "f", 0o644, 0, 0) // commits: nothing committed before
	if err != nil {
		t.Fatal(err)
	}
	if w.Pending() != 0 {
		t.Fatalf("first operation: %d blocks pending, want a commit", w.Pending())
	}
	now = t0.Add(time.Second)
	if n, err := w.WriteAt(ino, []byte("interval"), 0); n != 8 {
		t.Fatal(n, err)
	}
	if w.Pending() == 0 {
		t.Fatal("the write committed at once: no interval to test")
	}
	now = t0.Add(4 * time.Second)
	w.intervalCommit()
	if w.Pending() == 0 {
		t.Fatal("committed before the interval")
	}
	now = t0.Add(5 * time.Second)
	w.intervalCommit()
	if p := w.Pending(); p != 0 {
		t.Fatalf("%d blocks pending after the interval", p)
	}
	// Crash now: the copy recovers with the write.
	crash := memWDev(bytes.Clone(dev))
	w2, err := OpenWriter(crash, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 16)
	if n, _ := w2.ReadAt(ino, got, 0); string(got[:n]) != "interval" {
		t.Fatalf("after the crash: %q", got[:n])
	}
	w2.Close()
	w.Close()
}

// rwModeSets are the feature sets TestWriterKernelDifferential runs in a
// data= mode of its own, on both sides (rwModeOpts, rwModeData).
var rwModeSets = []struct{ name, opts string }{
	{"ext4-data=journal", ""},
	{"ext4-nocsum-data=journal", "^metadata_csum,uninit_bg"},
}

// rwModeOpts is the kernel mount options of the set named name.
func rwModeOpts(name string) string {
	if strings.HasSuffix(name, "data=journal") {
		return ",data=journal"
	}
	return ""
}

// rwModeData is the Writer's data mode of the set named name.
func rwModeData(name string) DataMode {
	if strings.HasSuffix(name, "data=journal") {
		return DataJournal
	}
	return DataOrdered
}

// openMemWriter opens a Writer on a copy in memory of the image at img.
func openMemWriter(t *testing.T, img string) (memWDev, *Writer) {
	t.Helper()
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	dev := memWDev(b)
	w, err := OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dev, w
}

// memWriter makes a default mke2fs ext4 image of sizeMiB and opens a
// Writer on a copy of it in memory; it returns the image's path too.
func memWriter(t *testing.T, sizeMiB int) (string, memWDev, *Writer) {
	t.Helper()
	needMke2fs(t)
	img := filepath.Join(t.TempDir(), "img")
	mkfsRW(t, img, sizeMiB, "")
	dev, w := openMemWriter(t, img)
	return img, dev, w
}

// TestDataJournalKernelReplay: journals the Writer left committed but not
// checkpointed under data=journal (file data logged with the metadata)
// replay in the kernel to the same blocks as in iovfs (replayDiff).
func TestDataJournalKernelReplay(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	base := filepath.Join(t.TempDir(), "base.img")
	mkfsRW(t, base, 16, "")
	orig, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for seed := int64(0); seed < 200 && found < 5; seed++ {
		run := func(cd *cutDev) {
			w, err := OpenWriter(cd, Options{})
			if err != nil {
				t.Fatal(err)
			}
			w.Batch, w.CommitInterval, w.Data = true, time.Hour, DataJournal
			r := rand.New(rand.NewSource(seed))
			for i := 0; i < 30 && (cd.limit < 0 || cd.count <= cd.limit); i++ {
				randomOp(r, writerTarget{w, 0})
				if i%5 == 4 {
					w.Sync()
				}
			}
		}
		ref := &cutDev{memWDev: memWDev(bytes.Clone(orig)), limit: -1}
		run(ref)
		cd := &cutDev{memWDev: memWDev(bytes.Clone(orig)), limit: rand.New(rand.NewSource(seed)).Intn(ref.count)}
		run(cd)
		n := 0
		probe := memWDev(bytes.Clone(cd.memWDev))
		pw, err := OpenWriter(probe, Options{Logf: func(f string, a ...any) { fmt.Sscanf(fmt.Sprintf(f, a...), "ext4: recovered %d", &n) }})
		if err != nil || n == 0 {
			continue
		}
		pw.Close()
		found++
		if diff, rec := replayDiff(t, cd.memWDev); len(diff) != 0 {
			t.Errorf("seed %d: %d transactions replayed; blocks differing from the kernel's replay: %v", seed, rec, diff)
		}
	}
	if found == 0 {
		t.Fatal("no cut left a committed transaction")
	}
	t.Logf("%d data=journal images with a committed transaction: the kernel's replay gives the same blocks", found)
}
