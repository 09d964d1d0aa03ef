package fat_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
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

// behindDev is a memDev that counts device calls made while another is
// running (a run written behind must not overlap any other access), and
// fails the next failData writes of file data.
type behindDev struct {
	memDev
	dataStart int64
	active    atomic.Int32
	overlaps  atomic.Int32
	failData  atomic.Int32
}

func (d *behindDev) enter() {
	if d.active.Add(1) > 1 {
		d.overlaps.Add(1)
	}
}

func (d *behindDev) ReadAt(p []byte, off int64) (int, error) {
	d.enter()
	defer d.active.Add(-1)
	return d.memDev.ReadAt(p, off)
}

func (d *behindDev) WriteAt(p []byte, off int64) (int, error) {
	d.enter()
	defer d.active.Add(-1)
	if off >= d.dataStart {
		time.Sleep(200 * time.Microsecond) // widen the window for an overlap
		if d.failData.Load() > 0 {
			d.failData.Add(-1)
			return 0, syscall.EIO
		}
	}
	return d.memDev.WriteAt(p, off)
}

// TestWriteBehind writes into three files in turn, each write away
// from the run staged before it, so that every write ends the run and
// has it written behind: no device access overlaps the run's write;
// when two writes of a run fail, a call reports EIO, the run is written
// again, and after a Sync every byte the writes acknowledged is on the
// device.
func TestWriteBehind(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)
	img := seed(t)
	fatStart, fatLen := geometry(img)
	dev := &behindDev{memDev: memDev{img}}
	dev.dataStart = int64(fatStart + int(img[16])*fatLen + int(binary.LittleEndian.Uint16(img[17:]))*32)
	v, err := fat.Open(dev, fat.Options{Writeback: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var nodes [3]*fat.Node
	var want [3][]byte
	for i := range nodes {
		if nodes[i], err = v.Create(v.Root(), fmt.Sprintf("turn %d", i), false, now); err != nil {
			t.Fatal(err)
		}
		want[i] = bytes.Repeat([]byte{'0' + byte(i)}, 4000)
		if _, err := v.WriteAt(nodes[i], want[i], 0, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Sync(); err != nil {
		t.Fatal(err)
	}
	eio := 0
	for round := range 60 {
		if round == 30 {
			dev.failData.Store(2)
		}
		// Files 2, 1, 0 in turn: each write lands before the run of
		// the one before it, or (0 then 2) past its end.
		i := 2 - round%3
		off := (round / 3) * 150
		p := bytes.Repeat([]byte{byte('a' + round%26)}, 300)
		n, err := v.WriteAt(nodes[i], p, int64(off), now)
		copy(want[i][off:], p[:n])
		if errors.Is(err, syscall.EIO) {
			eio++
		} else if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	for range 3 {
		if err := v.Sync(); err == nil {
			break
		} else if !errors.Is(err, syscall.EIO) {
			t.Fatal(err)
		}
		eio++
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if eio == 0 {
		t.Error("two failed writes of file data reported no EIO")
	}
	if k := dev.overlaps.Load(); k != 0 {
		t.Errorf("%d device calls overlapped a run written behind", k)
	}
	s, err := fat.Open(&memDev{dev.b}, fat.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		n, err := s.Lookup(s.Root(), fmt.Sprintf("turn %d", i))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want[i])+1)
		c, err := s.ReadAt(n, got, 0)
		if err != nil && c == 0 {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:c], want[i]) {
			t.Errorf("turn %d: %d bytes on the device, want the %d acknowledged", i, c, len(want[i]))
		}
	}
}
