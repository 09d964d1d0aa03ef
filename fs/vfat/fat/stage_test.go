package fat_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/iovfs/iovfs/fs/vfat/fat"
)

// snapDev is a memDev that keeps a copy of its bytes after every write,
// and where each write went.
type snapDev struct {
	memDev
	snaps [][]byte
	offs  []int64
}

func (d *snapDev) WriteAt(p []byte, off int64) (int, error) {
	n, err := d.memDev.WriteAt(p, off)
	d.snaps = append(d.snaps, bytes.Clone(d.b))
	d.offs = append(d.offs, off)
	return n, err
}

// TestStagedDataBeforeMetadata writes files in a volume whose file data
// is gathered in memory, with syncs in between, and opens the device as
// it was after each of its writes: every file listed whose chain reads
// whole has its full contents, never the bytes its clusters held before
// (file data reaches the device before the entries and the FAT that
// point at it). The files written one after the other cost fewer writes
// than files.
func TestStagedDataBeforeMetadata(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)
	img := seed(t)
	// Clusters that held something else: the free clusters' bytes are
	// not zeros.
	for i := 40 << 10; i < len(img); i++ {
		img[i] = 0xa5
	}
	dev := &snapDev{memDev: memDev{img}}
	v, err := fat.Open(dev, fat.Options{Writeback: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{1, 700, 512, 3000, 2048, 5000, 100}
	const files = 21
	for i := range files {
		n, err := v.Create(v.Root(), fmt.Sprintf("file number %d", i), false, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.WriteAt(n, bytes.Repeat([]byte{byte('a' + i)}, sizes[i%len(sizes)]), 0, now); err != nil {
			t.Fatal(err)
		}
		if i%5 == 4 {
			if err := v.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	// The data region: after the FATs and the fixed root directory.
	fatStart, fatLen := geometry(img)
	dataStart := int64(fatStart + int(img[16])*fatLen + int(binary.LittleEndian.Uint16(img[17:]))*32)
	data := 0
	for _, off := range dev.offs {
		if off >= dataStart {
			data++
		}
	}
	if data > files/3 {
		t.Errorf("%d writes of file data for %d small files written one after the other, with 4 syncs", data, files)
	}
	complete := 0
	for k, snap := range dev.snaps {
		s, err := fat.Open(&memDev{snap}, fat.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("after write %d: %v", k, err)
		}
		full := 0
		for i := range files {
			n, err := s.Lookup(s.Root(), fmt.Sprintf("file number %d", i))
			if err != nil {
				continue
			}
			want := bytes.Repeat([]byte{byte('a' + i)}, sizes[i%len(sizes)])
			got := make([]byte, len(want)+1)
			c, err := s.ReadAt(n, got, 0)
			if err != nil || c != len(want) {
				continue // the entry is there, its chain or size not yet
			}
			if !bytes.Equal(got[:c], want) {
				t.Fatalf("after device write %d of %d: file number %d reads %q..., want %q...", k+1, len(dev.snaps), i, got[:min(c, 8)], want[:min(len(want), 8)])
			}
			full++
		}
		complete = full
	}
	if complete != files {
		t.Errorf("%d files whole on the device at the end, want %d", complete, files)
	}
}
