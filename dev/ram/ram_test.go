package ram

import (
	"errors"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/internal/sysmem"
	"github.com/iovfs/iovfs/iov"
)

// TestSizes: sizes and sector sizes outside what a RAM disk can be are
// refused with EINVAL, and sizes beyond the process's memory with ENOMEM,
// before any memory is taken.
func TestSizes(t *testing.T) {
	for _, c := range []struct {
		size int64
		sect int
		want error
	}{
		{0, 512, syscall.EINVAL},
		{-4096, 512, syscall.EINVAL},
		{4097, 512, syscall.EINVAL},
		{4096, 3, syscall.EINVAL},
		{4096, 256, syscall.EINVAL},
		{4096, 8192, syscall.EINVAL},
		{4096, 1000, syscall.EINVAL},
		{(sysmem.Total() + 1<<30) &^ 4095, 512, syscall.ENOMEM},
		{1 << 62, 4096, syscall.ENOMEM},
		{1 << 20, 512, nil},
		{1 << 20, 4096, nil},
	} {
		d, err := NewSectorSize(0, c.size, c.sect)
		if !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("NewSectorSize(%d, %d): %v, want %v", c.size, c.sect, err, c.want)
		}
		if err == nil && d.SectorSize() != c.sect {
			t.Errorf("NewSectorSize(%d, %d): sector size %d", c.size, c.sect, d.SectorSize())
		}
	}
}

// TestSectorSize: a disk with 4096-byte sectors refuses I/O not aligned
// to them (EINVAL), as the block layer does, and does what is.
func TestSectorSize(t *testing.T) {
	d, err := NewSectorSize(0, 1<<20, 4096)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if _, err := d.ReadIter(iov.Buf(buf[:512]), 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("512-byte read of a 4096-byte-sector disk: %v, want EINVAL", err)
	}
	buf[0] = 7
	if n, err := d.WriteIter(iov.Buf(buf), 4096); n != 4096 || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	got := make([]byte, 4096)
	if n, err := d.ReadIter(iov.Buf(got), 4096); n != 4096 || err != nil || got[0] != 7 {
		t.Errorf("read back: %d, %v, %d", n, err, got[0])
	}
}
