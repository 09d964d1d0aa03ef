package fat_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/fs/vfat/fat"
)

// countDev is a fileDev that counts the bytes read from [lo, hi) (the
// first FAT) and fails reads that overlap [badLo, badHi).
type countDev struct {
	fileDev
	lo, hi       int64
	badLo, badHi int64
	fatRead      int64
}

func (d *countDev) ReadAt(p []byte, off int64) (int, error) {
	if off < d.badHi && off+int64(len(p)) > d.badLo {
		return 0, syscall.EIO
	}
	if s, e := max(off, d.lo), min(off+int64(len(p)), d.hi); e > s {
		d.fatRead += e - s
	}
	return d.fileDev.ReadAt(p, off)
}

// fatGeometry returns the first FAT's offset and length, and FSInfo's
// offset, from a FAT32 boot sector.
func fatGeometry(t *testing.T, img string) (fatStart, fatLen, fsinfo int64) {
	b := make([]byte, 512)
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	bps := int64(binary.LittleEndian.Uint16(b[11:]))
	return int64(binary.LittleEndian.Uint16(b[14:])) * bps, int64(binary.LittleEndian.Uint32(b[36:])) * bps, int64(binary.LittleEndian.Uint16(b[48:])) * bps
}

// freeOnDevice counts the free entries of the first FAT on the device.
func freeOnDevice(t *testing.T, img string, clusters uint32) uint32 {
	fatStart, fatLen, _ := fatGeometry(t, img)
	fatb := readRange(t, img, fatStart, fatLen)
	var free uint32
	for c := uint32(2); c < clusters+2; c++ {
		if binary.LittleEndian.Uint32(fatb[c*4:])&0x0fffffff == 0 {
			free++
		}
	}
	return free
}

func readRange(t *testing.T, img string, off, n int64) []byte {
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLazyFAT: a 256 MiB FAT32 volume (a 2 MiB FAT) reads only the
// chunks of its FAT that its work touches; statfs's free count is exact,
// FSInfo's count is kept, a low FSInfo count does not refuse a write,
// and a FAT chunk that cannot be read gives EIO without any of the
// table reaching the device.
func TestLazyFAT(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)
	img := mkfs(t, 256<<20, "-F", "32")
	fatStart, fatLen, fsinfo := fatGeometry(t, img)
	if fatLen < 1<<20 {
		t.Fatalf("mkfs.fat made a FAT of %d bytes; the test wants a large one", fatLen)
	}
	open := func(badLo, badHi int64) (*fat.Volume, *countDev, *os.File) {
		f, err := os.OpenFile(img, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		d := &countDev{fileDev: fileDev{f}, lo: fatStart, hi: fatStart + fatLen, badLo: badLo, badHi: badHi}
		v, err := fat.Open(d, fat.Options{Writeback: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return v, d, f
	}

	v, d, f := open(0, 0)
	var n *fat.Node
	var err error
	for i, size := range []int{100, 5000, 300 << 10} {
		n, err = v.Create(v.Root(), "file "+string(rune('a'+i)), false, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.WriteAt(n, bytes.Repeat([]byte{'x'}, size), 0, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Sync(); err != nil {
		t.Fatal(err)
	}
	if d.fatRead > 128<<10 {
		t.Errorf("opening the volume and writing 3 files read %d bytes of a %d-byte FAT", d.fatRead, fatLen)
	}
	info := v.Info()
	if want := freeOnDevice(t, img, info.Clusters); info.Free != want {
		t.Errorf("Info().Free = %d; the FAT on the device has %d free", info.Free, want)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fsck(t, img) // FSInfo's free count included

	// FSInfo's count says the volume is full: a write still finds the
	// free clusters, as Linux's vfat, which does not trust it, does.
	f, err = os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0, 0, 0, 0}, fsinfo+488); err != nil {
		t.Fatal(err)
	}
	f.Close()
	v, _, f = open(0, 0)
	n, err = v.Create(v.Root(), "after a low count", false, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.WriteAt(n, []byte("data"), 0, now); err != nil {
		t.Fatalf("write with FSInfo's free count 0: %v", err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fsck(t, img) // and the count written back is the true one

	// The FAT's second 64 KiB cannot be read: a file that grows into
	// the clusters it maps (past the first 16,384) finds no free ones
	// there, and no write of the table happens.
	before := readRange(t, img, fatStart, 2*fatLen)
	v, _, f = open(fatStart+64<<10, fatStart+128<<10)
	defer f.Close()
	n, err = v.Create(v.Root(), "big", false, now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.WriteAt(n, make([]byte, 9<<20), 0, now)
	if err == nil {
		err = v.Sync()
	}
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("a 9 MiB write and Sync over an unreadable part of the FAT: %v; want EIO", err)
	}
	after := readRange(t, img, fatStart, 2*fatLen)
	for c := int64(0); c < 2; c++ {
		o := c * fatLen
		if !bytes.Equal(before[o:o+fatLen], after[o:o+fatLen]) {
			t.Errorf("FAT copy %d changed on the device after a part of it could not be read", c+1)
		}
	}
	v.Close()
}
