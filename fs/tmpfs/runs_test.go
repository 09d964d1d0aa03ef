package tmpfs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// modelPage is a page of TestPageRuns's model: the number written at the
// page's start, and the run it is in: the index after the run's last page,
// or 0 for a page alone.
type modelPage struct {
	id  uint64
	end int64
}

// checkRuns checks every index from lo to hi against model: a hole reads
// as nil; a page alone reads as its 4 KiB, and a page of a run as the
// bytes through the end of its run, each 4 KiB of them the page the model
// has at that index (by the number at its start).
func checkRuns(t *rapid.T, tree *pageTree, model map[int64]modelPage, lo, hi int64) {
	for idx := lo; idx < hi; idx++ {
		var b []byte
		if leaf := tree.leaf(idx); leaf != nil {
			b = leaf.data(idx&radixMask, maxRun)
		}
		mp, ok := model[idx]
		if !ok {
			if b != nil {
				t.Fatalf("hole %d has %d bytes", idx, len(b))
			}
			continue
		}
		want := int64(1)
		if mp.end != 0 {
			want = mp.end - idx
		}
		if int64(len(b)) != want*pageSize {
			t.Fatalf("page %d: %d bytes in a row, want %d pages", idx, len(b), want)
		}
		for k := int64(0); k < want; k++ {
			if got := binary.LittleEndian.Uint64(b[k*pageSize:]); got != model[idx+k].id {
				t.Fatalf("page %d: page %d of its run holds page %d", idx, k, got)
			}
		}
	}
}

// TestPageRuns checks runs (runs.go) against a model of pages and runs:
// runs inserted, single pages inserted, pages removed (punch hole) and the
// tree truncated, near leaf boundaries, with data checked at every index
// after every step. A run reads as one piece until a page of it leaves
// the tree; then the pages it keeps read as pages alone, with their bytes.
func TestPageRuns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tree pageTree
		model := map[int64]modelPage{}
		nextID := uint64(1)
		newID := func(pg *page) uint64 {
			binary.LittleEndian.PutUint64(pg[:], nextID)
			nextID++
			return nextID - 1
		}
		// cut marks the pages of the runs that lose page idx as alone.
		cut := func(idx int64) {
			mp, ok := model[idx]
			if !ok || mp.end == 0 {
				return
			}
			for j := idx; j >= 0 && model[j].end == mp.end; j-- {
				model[j] = modelPage{id: model[j].id}
			}
			for j := idx + 1; j < mp.end; j++ {
				model[j] = modelPage{id: model[j].id}
			}
		}
		const hi = 3 * radixSize
		index := rapid.Int64Range(0, hi-1)
		for range rapid.IntRange(1, 40).Draw(t, "ops") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0: // a run over holes, within one leaf
				idx := index.Draw(t, "idx")
				if _, ok := model[idx]; ok {
					continue
				}
				n := int64(1)
				for want := rapid.Int64Range(1, radixSize).Draw(t, "n"); n < want && (idx+n)&radixMask != 0; n++ {
					if _, ok := model[idx+n]; ok {
						break
					}
				}
				pages := make([]page, n)
				tree.insertRun(idx, pages)
				for k := range pages {
					mp := modelPage{id: newID(&pages[k])}
					if n > 1 {
						mp.end = idx + n
					}
					model[idx+int64(k)] = mp
				}
			case 1: // one page
				if idx := index.Draw(t, "idx"); model[idx].id == 0 {
					pg := new(page)
					model[idx] = modelPage{id: newID(pg)}
					tree.insert(idx, pg)
				}
			case 2: // punch one page
				idx := index.Draw(t, "idx")
				_, ok := model[idx]
				if got := tree.remove(idx); got != ok {
					t.Fatalf("remove(%d) = %v", idx, got)
				}
				cut(idx)
				delete(model, idx)
			case 3: // truncate
				first := index.Draw(t, "first")
				tree.truncate(first)
				for j := range model {
					if j >= first {
						cut(j)
						delete(model, j)
					}
				}
			}
			checkRuns(t, &tree, model, 0, hi)
		}
	})
}

// TestFileRuns checks reads, vectored reads and writes of a file whose
// pages come in runs, across leaf boundaries, against a flat byte slice,
// with holes punched and the file truncated in between.
func TestFileRuns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		_, f, h := newFile(t, Options{})
		var model []byte
		const maxOff = 3 * radixSize * pageSize
		offset := rapid.Int64Range(0, maxOff)
		length := rapid.IntRange(0, 2*radixSize*pageSize)
		for range rapid.IntRange(1, 12).Draw(t, "ops") {
			switch op := rapid.IntRange(0, 4).Draw(t, "op"); op {
			case 0, 1: // write, writev
				off, n := offset.Draw(t, "off"), length.Draw(t, "len")
				p := pattern(n, rapid.Byte().Draw(t, "seed"))
				if got, err := writeOrWritev(t, h, op == 1, p, off); got != n || err != nil {
					t.Fatalf("write %d at %d: %d, %v", n, off, got, err)
				}
				if n > 0 {
					if end := int(off) + n; end > len(model) {
						model = append(model, make([]byte, end-len(model))...)
					}
					copy(model[off:], p)
				}
			case 2: // punch a hole
				off, n := offset.Draw(t, "off"), int64(length.Draw(t, "len")+1)
				if err := h.Fallocate(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n, root0); err != nil {
					t.Fatal(err)
				}
				if off < int64(len(model)) {
					clear(model[off:min(off+n, int64(len(model)))])
				}
			case 3: // truncate
				size := offset.Draw(t, "size")
				if err := f.Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: size}, root0); err != nil {
					t.Fatal(err)
				}
				if size < int64(len(model)) {
					model = model[:size]
				} else {
					model = append(model, make([]byte, size-int64(len(model)))...)
				}
			case 4: // read, readv
				off, n := offset.Draw(t, "off"), length.Draw(t, "len")
				want := model[min(off, int64(len(model))):]
				want = want[:min(n, len(want))]
				buf := pattern(n, 0xee)
				if got, err := h.Read(buf, off); got != len(want) || err != nil || !bytes.Equal(buf[:got], want) {
					t.Fatalf("read %d at %d: %d, %v; want %d bytes", n, off, got, err, len(want))
				}
				buf = pattern(n, 0xee)
				if got, err := h.ReadIter(iov.Vec(split(t, buf)), off); got != len(want) || err != nil || !bytes.Equal(buf[:got], want) {
					t.Fatalf("readv %d at %d: %d, %v; want %d bytes", n, off, got, err, len(want))
				}
			}
		}
		buf := make([]byte, len(model))
		if n, _ := h.Read(buf, 0); n != len(model) || !bytes.Equal(buf, model) {
			t.Fatalf("final contents differ")
		}
	})
}

// TestWriteMakesRuns checks that one write over holes stores its pages as
// runs of up to a leaf, split at leaf boundaries, so a read copies a leaf's
// worth at a time; and that a later write into a run writes in place.
func TestWriteMakesRuns(t *testing.T) {
	_, f, h := newFile(t, Options{})
	const start = 10 // pages: the write starts inside the first leaf
	data := pattern(3*radixSize*pageSize, 3)
	mustWrite(t, h, data, start*pageSize)
	for idx, want := range map[int64]int{
		start:               radixSize - start,
		radixSize - 1:       1,
		radixSize:           radixSize,
		2*radixSize + 5:     radixSize - 5,
		3 * radixSize:       start,
		3*radixSize + 9:     1,
		3*radixSize + start: 0,
	} {
		var b []byte
		if leaf := f.pages.leaf(idx); leaf != nil {
			b = leaf.data(idx&radixMask, maxRun)
		}
		if len(b) != want*pageSize {
			t.Errorf("page %d: %d bytes stored in a row, want %d pages", idx, len(b), want)
		}
	}
	// Nine pages: a run of eight and one page alone, since a 36 KiB
	// allocation would take 40.
	mustWrite(t, h, pattern(9*pageSize, 5), 4*radixSize*pageSize)
	if a, b := len(f.pages.leaf(4*radixSize).data(0, maxRun)), len(f.pages.leaf(4*radixSize).data(8, maxRun)); a != 8*pageSize || b != pageSize {
		t.Errorf("nine pages written at once: %d and %d bytes in a row, want 8 pages and 1", a, b)
	}
	// A caller that wants no more than the page gets the page alone.
	if b := f.pages.leaf(radixSize).data(3, pageSize); len(b) != pageSize {
		t.Errorf("data(3, pageSize) in a run: %d bytes", len(b))
	}
	// A punch into a run copies the pages it keeps out of the run's array,
	// so that the array can be freed.
	run := f.pages.leaf(4*radixSize).data(0, maxRun)
	if err := h.Fallocate(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, (4*radixSize+2)*pageSize, pageSize, root0); err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 8; i++ {
		b := f.pages.leaf(4*radixSize).data(i, maxRun)
		if i == 2 {
			if b != nil {
				t.Errorf("punched page 2 of the run still there")
			}
			continue
		}
		if len(b) != pageSize || !bytes.Equal(b, pattern(9*pageSize, 5)[i*pageSize:(i+1)*pageSize]) {
			t.Errorf("page %d of a punched run: %d bytes, or not its own", i, len(b))
		}
		if p := uintptr(unsafe.Pointer(&b[0])); p >= uintptr(unsafe.Pointer(&run[0])) && p < uintptr(unsafe.Pointer(&run[0]))+uintptr(len(run)) {
			t.Errorf("page %d of a punched run is still in the run's array", i)
		}
	}
	before := f.pages.leaf(radixSize).data(0, maxRun)
	mustWrite(t, h, pattern(5*pageSize, 9), (radixSize+1)*pageSize+7)
	if after := f.pages.leaf(radixSize).data(0, maxRun); len(after) != len(before) || &after[0] != &before[0] {
		t.Errorf("an overwrite replaced the run")
	}
}

// TestReadSnapshotPunch is TestReadSnapshot with holes punched into runs
// while readers copy without a lock: the writer punches a random range of
// pages and then rewrites the whole file with a new byte value, so a read
// sees one value with at most one range of zeros. A read that copied a
// run after its pages left the tree, or mixed two writes, breaks that.
func TestReadSnapshotPunch(t *testing.T) {
	_, _, h := newFile(t, Options{})
	const size = 2 * radixSize * pageSize
	mustWrite(t, h, bytes.Repeat([]byte{1}, size), 0)
	iters := 1000
	if testing.Short() || raceEnabled {
		iters = 100
	}
	readersAgainst(t, h, size, iters, func(stop *atomic.Bool) {
		buf := make([]byte, size)
		r := rand.New(rand.NewPCG(1, 2))
		for v := 2; !stop.Load(); v++ {
			lo := r.Int64N(size / pageSize)
			hi := lo + 1 + r.Int64N(size/pageSize-lo)
			if err := h.Fallocate(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, lo*pageSize, (hi-lo)*pageSize, root0); err != nil {
				t.Error(err)
				return
			}
			for i := range buf {
				buf[i] = byte(v%255 + 1)
			}
			if n, err := h.Write(buf, 0); n != size || err != nil {
				t.Errorf("write: %d, %v", n, err)
				return
			}
		}
	}, func(buf []byte, n int) string {
		if n != size {
			return fmt.Sprintf("read %d bytes, want %d", n, size)
		}
		// One value, and zeros in one range at most.
		zeros := 0
		if z0 := bytes.IndexByte(buf, 0); z0 >= 0 {
			zeros = bytes.LastIndexByte(buf, 0) - z0 + 1
		}
		v := byte(0)
		if i := bytes.IndexFunc(buf, func(r rune) bool { return r != 0 }); i >= 0 {
			v = buf[i]
		}
		if v != 0 && bytes.Count(buf, []byte{v})+zeros != size {
			return fmt.Sprintf("read a mix of two writes, or of a write and a punch: byte values at (first, last) offsets %v", distinct(buf))
		}
		return ""
	})
}

// distinct returns the first and last offset of each byte value in b.
func distinct(b []byte) map[byte][2]int {
	m := map[byte][2]int{}
	for i, c := range b {
		r, ok := m[c]
		if !ok {
			r[0] = i
		}
		r[1] = i
		m[c] = r
	}
	return m
}
