package disk

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFolioChunk: the lengths one write_begin takes (generic_perform_write
// and __filemap_get_folio with fgf_set_order).
func TestFolioChunk(t *testing.T) {
	for _, c := range []struct {
		pos, rest, want int64
		maxOrder        int
	}{
		{0, 64 << 20, 2 << 20, maxFolioOrder},        // one 2 MiB folio
		{0, 1347552, 1 << 20, maxFolioOrder},         // order 8
		{2928, 1347552, 1<<20 - 2928, maxFolioOrder}, // inside page 0: still order 8
		{4096, 1347552, 4096, maxFolioOrder},         // index 1: order 0
		{8192, 1347552, 8192, maxFolioOrder},         // index 2: order 1
		{131072, 1347552, 131072, maxFolioOrder},     // index 32: order 5
		{0, 7332, 4096, maxFolioOrder},               // below 8 KiB: one page
		{100, 40000, 32768 - 100, maxFolioOrder},     // order 3
		{2<<20 - 4096, 1 << 20, 4096, maxFolioOrder},
		{0, 64 << 20, 256 << 10, 6}, // capped
	} {
		if got, _ := folioChunk(c.pos, c.rest, c.maxOrder); got != c.want {
			t.Errorf("folioChunk(%d, %d, %d) = %d, want %d", c.pos, c.rest, c.maxOrder, got, c.want)
		}
	}
}

// TestWriterENOSPCKernelFigures: single writes to a new file of a 4 MiB
// ext4 volume with 1 KiB blocks filled to a given number of blocks above
// s_resv_clusters, and the counts the kernel here gave for them (6.18,
// measured with a loop mount: root, delalloc, the file's pages never
// cached). They pin the folio rules: a folio fails whole, a page-aligned
// retry gets the same folio, one inside a page gets one of half the size
// (up to three times).
func TestWriterENOSPCKernelFigures(t *testing.T) {
	needMke2fs(t)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.img")
	mkfsRWBlock(t, base, 4, "", 1024)
	orig, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		avail  uint64 // blocks root may take
		off, n int64
		want   int // the kernel's count; 0 is ENOSPC
	}{
		{219, 0, 262144, 0},
		{219, 4096, 1347552, 126976},
		{219, 8192, 1347552, 122880},
		{219, 131072, 1347552, 131072},
		{219, 2928, 1347552, 128144},
		{219, 100, 300000, 130972},
		{219, 3000, 140000, 140000},
		{300, 0, 600000, 0},
		{300, 100, 600000, 262044},
		{256, 100, 600000, 262044},
		{250, 100, 600000, 130972},
		{200, 262244, 600000, 130972},
		{100, 0, 600000, 0},
		{100, 100, 600000, 65436},
		{100, 512, 600000, 65024},
		{100, 1024, 600000, 64512},
		{100, 4000, 600000, 61536},
		{100, 8192, 600000, 57344},
		{100, 100, 40000, 40000},
		{30, 100, 600000, 0},
		{30, 100, 40000, 16284},
	} {
		dev := memWDev(append([]byte(nil), orig...))
		w, err := OpenWriter(dev, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Fill to resv + avail free blocks with one file.
		fill, err := w.Create(rootIno, "fill", 0o644, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		target := w.resvClusters() + c.avail
		if n := int64(w.sbFreeBlocks()-target) << 10; n > 0 {
			if got, err := w.WriteAt(fill, make([]byte, n), 0); int64(got) != n {
				t.Fatalf("fill: %d, %v", got, err)
			}
		}
		if free := w.sbFreeBlocks(); free != target {
			t.Fatalf("filled to %d free blocks, want %d", free, target)
		}
		f, err := w.Create(rootIno, "f", 0o644, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.WriteAt(f, make([]byte, c.n), c.off)
		if c.want == 0 {
			if got != 0 || !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("avail %d: write %d+%d: %d, %v; the kernel's ENOSPC", c.avail, c.off, c.n, got, err)
			}
		} else if got != c.want || err != nil {
			t.Errorf("avail %d: write %d+%d: %d, %v; the kernel's %d", c.avail, c.off, c.n, got, err, c.want)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNextZero: nextZero finds the first clear bit from i as a bit-by-bit
// scan does, across whole words, partial words and the end.
func TestNextZero(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		b := make([]byte, 8*(1+r.IntN(4)))
		for i := range b {
			b[i] = 0xff
		}
		for range r.IntN(4) {
			k := r.IntN(len(b) * 8)
			b[k/8] &^= 1 << (k % 8)
		}
		end := uint32(r.IntN(len(b)*8 + 1))
		i := uint32(r.IntN(int(end) + 1))
		want := i
		for want < end && bit(b, want) {
			want++
		}
		if got := nextZero(b, i, end); got != want {
			t.Fatalf("nextZero(%x, %d, %d) = %d, want %d", b, i, end, got, want)
		}
	}
}
