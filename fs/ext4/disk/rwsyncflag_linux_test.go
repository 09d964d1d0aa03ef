package disk

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSyncFlagCommits cuts the power after changes in batch mode (one
// long transaction): a write to a file with the sync flag (chattr +S) and
// a create in a directory with dirsync (chattr +D) are on the device
// after the journal's replay, as ext4_handle_sync makes them; the same
// changes to a plain file and in a plain directory are not. The image
// stays e2fsck-clean.
func TestSyncFlagCommits(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	mkfsRW(t, img, 16, "")
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	dev := memWDev(b)
	w, err := OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Batch, w.CommitInterval = true, time.Hour
	root := w.Volume().Root()
	inos := map[string]uint32{}
	for _, name := range []string{"plain", "sync", "pdir", "ddir"} {
		var ino uint32
		if name[1:] == "dir" {
			ino, err = w.Mkdir(root, name, 0o755, 0, 0)
		} else {
			ino, err = w.Create(root, name, 0o644, 0, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		inos[name] = ino
	}
	if err := w.SetFlagsAs(nil, inos["sync"], flSync|FlagExtents, 0, true); err != nil {
		t.Fatal(err)
	}
	if err := w.SetFlagsAs(nil, inos["ddir"], flDirsync|FlagExtents, 0, true); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	// The sync changes first: a commit takes the whole running
	// transaction, so the plain changes after them stay uncommitted.
	for _, name := range []string{"sync", "plain"} {
		if _, err := w.WriteAt(inos[name], []byte("data"), 0); err != nil {
			t.Fatal(err)
		}
		d := "ddir"
		if name == "plain" {
			d = "pdir"
		}
		if _, err := w.Create(inos[d], "f", 0o644, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	// The power goes: the device as it is, the Writer never closed.
	cut := memWDev(bytes.Clone(dev))
	w2, err := OpenWriter(cut, Options{}) // replays the journal
	if err != nil {
		t.Fatal(err)
	}
	v := w2.Volume()
	size := func(ino uint32) uint64 {
		in, err := v.Inode(ino)
		if err != nil {
			t.Fatal(err)
		}
		return in.Size
	}
	found := func(d uint32) bool {
		in, err := v.Inode(d)
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Lookup(in, "f")
		return err == nil
	}
	if got := size(inos["sync"]); got != 4 {
		t.Errorf("the sync file's size after the cut: %d, want 4", got)
	}
	if got := size(inos["plain"]); got != 0 {
		t.Errorf("the plain file's size after the cut: %d, want 0 (its write was not committed)", got)
	}
	if !found(inos["ddir"]) {
		t.Error("the file made in the dirsync directory is gone after the cut")
	}
	if found(inos["pdir"]) {
		t.Error("the file made in the plain directory survived the cut, though not committed")
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	wimg := filepath.Join(dir, "cut.img")
	os.WriteFile(wimg, cut, 0o600)
	e2fsckClean(t, wimg)
	w.Close()
}
