package iov_test

import (
	"bytes"
	"testing"

	"github.com/iovfs/iovfs/iov"
	"pgregory.net/rapid"
)

// TestChunkedMatchesFlat drives one iterator through a random sequence of
// CopyOut, CopyIn, Zero and Advance calls of random sizes, after an
// optional Truncate, and checks after every call that the bytes moved,
// the count and Len match a flat model of the concatenated segments. It
// catches a cursor left in the wrong place between calls, which a single
// call cannot show.
func TestChunkedMatchesFlat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lens := rapid.SliceOfN(rapid.IntRange(0, 40), 0, 12).Draw(t, "lens")
		segs := make([][]byte, len(lens))
		total := 0
		for i, n := range lens {
			segs[i] = bytes.Repeat([]byte{0xee}, n)
			total += n
		}
		model := bytes.Repeat([]byte{0xee}, total)
		it := iov.Vec(segs)
		if rapid.Bool().Draw(t, "import") { // Import builds the iterator itself
			var n int
			it, n, _ = iov.Import(segs)
			nonEmpty := 0
			for _, l := range lens {
				if l > 0 {
					nonEmpty++
				}
			}
			if n != nonEmpty {
				t.Fatalf("Import: %d segments, want %d", n, nonEmpty)
			}
		}
		limit := total
		if rapid.Bool().Draw(t, "truncate") {
			limit = rapid.IntRange(0, total).Draw(t, "limit")
			it.Truncate(limit)
		}
		pos := 0
		for step := 0; it.Len() > 0 && step < 40; step++ {
			k := rapid.IntRange(0, 30).Draw(t, "k")
			want := min(k, limit-pos)
			var got int
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); op {
			case 0:
				src := make([]byte, k)
				for i := range src {
					src[i] = byte(pos + i + 1)
				}
				got = it.CopyOut(src)
				copy(model[pos:pos+want], src)
			case 1:
				dst := make([]byte, k)
				got = it.CopyIn(dst)
				if !bytes.Equal(dst[:want], model[pos:pos+want]) {
					t.Fatalf("step %d: CopyIn read %v, want %v", step, dst[:want], model[pos:pos+want])
				}
			case 2:
				got = it.Zero(k)
				clear(model[pos : pos+want])
			case 3:
				it.Advance(k)
				got = want
			}
			if got != want {
				t.Fatalf("step %d: moved %d, want %d", step, got, want)
			}
			pos += want
			if it.Len() != limit-pos {
				t.Fatalf("step %d: Len %d, want %d", step, it.Len(), limit-pos)
			}
			if !bytes.Equal(flatten(segs), model) {
				t.Fatalf("step %d: segments %v, want %v", step, flatten(segs), model)
			}
		}
	})
}
