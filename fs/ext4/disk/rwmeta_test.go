package disk

// Robustness of the xattr setters on damaged xattr space: no panic, and
// only errors that say so.

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
)

// TestWriterXattrCorrupt damages one byte of a file's in-inode xattr
// space or of its xattr block (on a volume without metadata_csum, so the
// damage reaches the xattr code) and then sets, replaces and removes
// attributes: every call must return nil or an errno, never panic, and a
// refusal of the damage must be a corruption error (EUCLEAN).
func TestWriterXattrCorrupt(t *testing.T) {
	needMke2fs(t)
	img := filepath.Join(t.TempDir(), "x.img")
	mkfsRW(t, img, 8, "^metadata_csum,^has_journal")
	orig, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	dev := memWDev(bytes.Clone(orig))
	w, err := OpenWriter(dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ino, err := w.Create(rootIno, "f", 0o644, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range [][]byte{[]byte("in the inode"), bytes.Repeat([]byte("b"), 1500), bytes.Repeat([]byte("c"), 700)} {
		if err := w.Setxattr(ino, "user.a"+string(rune('0'+i)), v, 0); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := w.getInode(ino)
	if err != nil {
		t.Fatal(err)
	}
	bodyOff, blk := w.inodeOff(ino)+int64(extraEnd(raw)), fileACL(raw)
	if err := w.Close(); err != nil || blk == 0 {
		t.Fatalf("close: %v, block %d", err, blk)
	}
	good := bytes.Clone(dev)
	r := rand.New(rand.NewSource(1))
	trials := 400
	if testenv.Quick() || rwRace {
		trials = 100
	}
	refused := 0
	for trial := 0; trial < trials; trial++ {
		d := memWDev(bytes.Clone(good))
		if trial%2 == 0 {
			d[bodyOff+int64(r.Intn(int(w.v.inodeSize)-extraEnd(raw)))] ^= byte(1 + r.Intn(255))
		} else {
			d[int64(blk)*int64(w.v.bs)+int64(r.Intn(256))] ^= byte(1 + r.Intn(255))
		}
		w2, err := OpenWriter(d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 4; k++ {
			name := "user.a" + string(rune('0'+r.Intn(4)))
			var err error
			switch r.Intn(3) {
			case 0:
				err = w2.Setxattr(ino, name, bytes.Repeat([]byte("n"), r.Intn(2000)), 0)
			case 1:
				err = w2.Removexattr(ino, name)
			default:
				_, err = w2.Getxattr(ino, name)
			}
			var e syscall.Errno
			if err != nil && !errors.As(err, &e) {
				t.Fatalf("trial %d: %v is not an errno", trial, err)
			}
			if errors.Is(err, syscall.EUCLEAN) {
				refused++
			}
		}
		w2.Close()
	}
	if refused == 0 {
		t.Fatal("no damage was detected")
	}
	t.Logf("%d damaged volumes, %d calls refused the damage (EUCLEAN), no panic", trials, refused)
}
