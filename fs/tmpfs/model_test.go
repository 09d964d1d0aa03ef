package tmpfs

import (
	"bytes"
	"slices"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// fileModel is a regular file as a flat byte slice plus the set of pages
// that hold data, with a page limit.
type fileModel struct {
	data  []byte
	pages map[int64]bool
	limit int // pages; 0 is unlimited
}

// write applies a write of p at off, page by page, stopping at the first
// page the limit refuses, as tmpfs does.
func (m *fileModel) write(p []byte, off int64) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	pos, end := off, off+int64(len(p))
	for pos < end {
		idx := pos / pageSize
		if !m.pages[idx] {
			if m.limit > 0 && len(m.pages) >= m.limit {
				break
			}
			m.pages[idx] = true
		}
		pos = min(end, (idx+1)*pageSize)
	}
	n := int(pos - off)
	if n == 0 {
		return 0, unix.ENOSPC
	}
	if need := off + int64(n); need > int64(len(m.data)) {
		m.data = append(m.data, make([]byte, need-int64(len(m.data)))...)
	}
	copy(m.data[off:], p[:n])
	return n, 0
}

func (m *fileModel) truncate(size int64) {
	if size < int64(len(m.data)) {
		m.data = m.data[:size]
		for idx := range m.pages {
			if idx >= (size+pageMask)/pageSize {
				delete(m.pages, idx)
			}
		}
	} else {
		m.data = append(m.data, make([]byte, size-int64(len(m.data)))...)
	}
}

// seek is Linux's SEEK_DATA/SEEK_HOLE over the model's pages.
func (m *fileModel) seek(off int64, whence int) (int64, syscall.Errno) {
	size := int64(len(m.data))
	if off < 0 || off >= size {
		return 0, unix.ENXIO
	}
	idx := off / pageSize
	if whence == unix.SEEK_DATA {
		for ; idx*pageSize < size; idx++ {
			if m.pages[idx] {
				return max(off, idx*pageSize), 0
			}
		}
		return 0, unix.ENXIO
	}
	for m.pages[idx] {
		idx++
	}
	return min(size, max(off, idx*pageSize)), 0
}

// split cuts p into segments at random points, some empty.
func split(t *rapid.T, p []byte) [][]byte {
	cuts := rapid.SliceOfN(rapid.IntRange(0, len(p)), 0, 4).Draw(t, "cuts")
	slices.Sort(cuts)
	var segs [][]byte
	prev := 0
	for _, c := range cuts {
		segs = append(segs, p[prev:c])
		prev = c
	}
	return append(segs, p[prev:])
}

// writeOrWritev writes p at off through Write, or through WriteIter with
// p split into segments at random points.
func writeOrWritev(t *rapid.T, h *OpenFile, vectored bool, p []byte, off int64) (int, error) {
	if vectored {
		return h.WriteIter(iov.Vec(split(t, p)), off)
	}
	return h.Write(p, off)
}

// TestModel checks random writes, vectored writes, appends, truncations,
// reads and seeks against fileModel.
func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.SampledFrom([]int{0, 0, 3, 9}).Draw(t, "limit")
		fs := New(Options{SizeLimit: int64(limit) * pageSize})
		f := mustCreate(t, fs.root, "f")
		h := mustOpen(t, f, rw)
		m := &fileModel{pages: map[int64]bool{}, limit: limit}
		offset := rapid.Int64Range(0, 12*pageSize)
		length := rapid.IntRange(0, 3*pageSize)
		for range rapid.IntRange(1, 40).Draw(t, "ops") {
			switch op := rapid.IntRange(0, 5).Draw(t, "op"); op {
			case 0, 1: // write, writev
				off, n := offset.Draw(t, "off"), length.Draw(t, "len")
				p := pattern(n, rapid.Byte().Draw(t, "seed"))
				got, err := writeOrWritev(t, h, op == 1, p, off)
				want, werr := m.write(p, off)
				if got != want || errno(err) != werr {
					t.Fatalf("write %d at %d: %d, %v; model %d, %v", n, off, got, err, want, werr)
				}
			case 2: // append
				p := pattern(length.Draw(t, "len"), rapid.Byte().Draw(t, "seed"))
				wantOff := int64(len(m.data))
				off, got, err := h.Append(iov.Vec(split(t, p)))
				want, werr := m.write(p, wantOff)
				if off != wantOff || got != want || errno(err) != werr {
					t.Fatalf("append %d: at %d, %d, %v; model at %d, %d, %v", len(p), off, got, err, wantOff, want, werr)
				}
			case 3: // truncate
				size := offset.Draw(t, "size")
				if err := f.Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: size}, root0); err != nil {
					t.Fatal(err)
				}
				m.truncate(size)
			case 4: // read, readv
				off, n := offset.Draw(t, "off"), length.Draw(t, "len")
				want := m.data[min(off, int64(len(m.data))):]
				want = want[:min(n, len(want))]
				buf := pattern(n, 0xee)
				got, err := h.Read(buf, off)
				if got != len(want) || err != nil || !bytes.Equal(buf[:got], want) {
					t.Fatalf("read %d at %d: %d, %v; want %d bytes", n, off, got, err, len(want))
				}
				buf = pattern(n, 0xee)
				got, err = h.ReadIter(iov.Vec(split(t, buf)), off)
				if got != len(want) || err != nil || !bytes.Equal(buf[:got], want) {
					t.Fatalf("readv %d at %d: %d, %v; want %d bytes", n, off, got, err, len(want))
				}
			case 5: // SEEK_DATA, SEEK_HOLE
				off := rapid.Int64Range(-1, int64(len(m.data))+pageSize).Draw(t, "off")
				whence := rapid.SampledFrom([]int{unix.SEEK_DATA, unix.SEEK_HOLE}).Draw(t, "whence")
				got, err := h.Llseek(0, off, whence)
				want, werr := m.seek(off, whence)
				if errno(err) != werr || (err == nil && got != want) {
					t.Fatalf("seek %d whence %d: %d, %v; model %d, %v", off, whence, got, err, want, werr)
				}
			}
			st := mustStat(t, f)
			if st.Size != int64(len(m.data)) || st.Blocks != int64(len(m.pages))*8 {
				t.Fatalf("stat size %d blocks %d; model %d, %d pages", st.Size, st.Blocks, len(m.data), len(m.pages))
			}
			if pages, _ := fs.Usage(); pages != int64(len(m.pages)) {
				t.Fatalf("fs pages %d; model %d", pages, len(m.pages))
			}
		}
		buf := make([]byte, len(m.data))
		if n, _ := h.Read(buf, 0); n != len(m.data) || !bytes.Equal(buf, m.data) {
			t.Fatalf("final contents differ")
		}
	})
}
