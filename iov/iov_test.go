package iov_test

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/iov"
	"pgregory.net/rapid"
)

func TestImportLimits(t *testing.T) {
	seg := make([]byte, 3)
	many := func(n int) [][]byte {
		v := make([][]byte, n)
		for i := range v {
			v[i] = seg
		}
		return v
	}
	cases := []struct {
		name          string
		segs          [][]byte
		total, nonEmp int
		err           error
	}{
		{"no segments: zero-byte transfer", nil, 0, 0, nil},
		{"one empty segment is skipped", [][]byte{{}}, 0, 0, nil},
		{"empty segments around one", [][]byte{{}, seg, {}}, 3, 1, nil},
		{"UIO_MAXIOV segments are allowed", many(1024), 3 * 1024, 1024, nil},
		{"UIO_MAXIOV+1 segments give EINVAL", many(1025), 0, 0, syscall.EINVAL},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it, n, err := iov.Import(c.segs)
			if !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if err != nil {
				return
			}
			if it.Len() != c.total || n != c.nonEmp {
				t.Fatalf("Len = %d, segments = %d; want %d, %d", it.Len(), n, c.total, c.nonEmp)
			}
		})
	}
}

func TestClampToMaxRWCount(t *testing.T) {
	// Slices that claim more than MAX_RW_COUNT bytes without backing memory
	// are not possible in Go, so clamp a vector whose total passes the limit
	// through repeated views of one large buffer.
	if testing.Short() {
		t.Skip("allocates 1 GiB")
	}
	big := make([]byte, 1<<30)
	segs := [][]byte{big, big, big}
	it, n, err := iov.Import(segs)
	if err != nil || n != 3 {
		t.Fatal(err, n)
	}
	if it.Len() != iov.MaxCount {
		t.Fatalf("Len = %#x, want %#x", it.Len(), iov.MaxCount)
	}
	b := iov.Buf(big)
	if b.Len() != 1<<30 {
		t.Fatalf("Buf Len = %d", b.Len())
	}
	d := iov.Discard(1 << 40)
	if d.Len() != iov.MaxCount {
		t.Fatalf("Discard Len = %d", d.Len())
	}
}

func TestTruncateAndAdvance(t *testing.T) {
	a, b := []byte("abcd"), []byte("efgh")
	it := iov.Vec([][]byte{a, {}, b})
	it.Truncate(6)
	if it.Len() != 6 {
		t.Fatal(it.Len())
	}
	it.Advance(3)
	if got := string(it.Segment()); got != "d" {
		t.Fatalf("Segment = %q, want d", got)
	}
	dst := make([]byte, 10)
	if n := it.CopyIn(dst); n != 3 || string(dst[:n]) != "def" {
		t.Fatalf("CopyIn = %d %q", n, dst[:n])
	}
	if it.Len() != 0 {
		t.Fatal(it.Len())
	}
}

func TestDiscard(t *testing.T) {
	it := iov.Discard(5)
	if n := it.CopyOut(make([]byte, 8)); n != 5 {
		t.Fatalf("CopyOut = %d, want 5", n)
	}
	if n := it.Zero(1); n != 0 {
		t.Fatalf("Zero after full = %d", n)
	}
	it = iov.Discard(4)
	dst := []byte{1, 2, 3}
	if n := it.CopyIn(dst); n != 3 || !bytes.Equal(dst, []byte{0, 0, 0}) {
		t.Fatalf("CopyIn = %d %v", n, dst)
	}
}

// segsGen draws a vector of up to 12 segments, some empty.
func segsGen(t *rapid.T) [][]byte {
	lens := rapid.SliceOfN(rapid.IntRange(0, 9), 0, 12).Draw(t, "lens")
	segs := make([][]byte, len(lens))
	for i, n := range lens {
		segs[i] = make([]byte, n)
	}
	return segs
}

func flatten(segs [][]byte) []byte {
	var out []byte
	for _, s := range segs {
		out = append(out, s...)
	}
	return out
}

// TestCopyMatchesFlat checks that CopyOut, CopyIn and Zero over a vector
// move exactly the bytes a flat copy over the concatenation would.
func TestCopyMatchesFlat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		segs := segsGen(t)
		total := len(flatten(segs))
		src := rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "src")
		skip := rapid.IntRange(0, total).Draw(t, "skip")

		it, _, err := iov.Import(segs)
		if err != nil {
			t.Fatal(err)
		}
		it.Advance(skip)
		n := it.CopyOut(src)
		want := min(len(src), total-skip)
		if n != want || it.Len() != total-skip-n {
			t.Fatalf("CopyOut = %d (Len %d), want %d", n, it.Len(), want)
		}
		flat := flatten(segs)
		if !bytes.Equal(flat[skip:skip+n], src[:n]) {
			t.Fatalf("CopyOut bytes %v, want %v", flat[skip:skip+n], src[:n])
		}
		if !bytes.Equal(flat[:skip], make([]byte, skip)) {
			t.Fatal("CopyOut wrote before the cursor")
		}

		it2 := iov.Vec(segs)
		it2.Advance(skip)
		dst := make([]byte, len(src))
		m := it2.CopyIn(dst)
		if m != want || !bytes.Equal(dst[:m], flat[skip:skip+m]) {
			t.Fatalf("CopyIn = %d %v", m, dst[:m])
		}

		it3 := iov.Vec(segs)
		z := it3.Zero(total)
		if z != total || !bytes.Equal(flatten(segs), make([]byte, total)) {
			t.Fatalf("Zero = %d, bytes %v", z, flatten(segs))
		}
	})
}

// fillAndWindow fills segs with 0xa5 and draws the window of their bytes
// a test leaves in its iterator: skip bytes consumed, then keep bytes.
func fillAndWindow(t *rapid.T, segs [][]byte) (skip, keep int) {
	for _, s := range segs {
		for i := range s {
			s[i] = 0xa5
		}
	}
	total := len(flatten(segs))
	skip = rapid.IntRange(0, total).Draw(t, "skip")
	keep = rapid.IntRange(0, total-skip).Draw(t, "keep")
	return skip, keep
}

// TestZeroAll checks that ZeroAll zeroes exactly what is left of an
// iterator, after Advance and Truncate, and nothing around it.
func TestZeroAll(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		segs := segsGen(t)
		skip, keep := fillAndWindow(t, segs)
		it, _, err := iov.Import(segs)
		if err != nil {
			t.Fatal(err)
		}
		it.Advance(skip)
		it.Truncate(keep)
		if n := iov.ZeroAll(it); n != keep {
			t.Fatalf("ZeroAll = %d, want %d", n, keep)
		}
		for i, b := range flatten(segs) {
			want := byte(0xa5)
			if i >= skip && i < skip+keep {
				want = 0
			}
			if b != want {
				t.Fatalf("byte %d = %#x, want %#x", i, b, want)
			}
		}
		if n := iov.ZeroAll(iov.Discard(keep)); n != keep {
			t.Fatalf("ZeroAll of a discard iterator = %d, want %d", n, keep)
		}
	})
}

// TestCopyAll checks that CopyAll copies the head of src over exactly
// what is left of an iterator, after Advance and Truncate, and nothing
// around it, with the count CopyOut gives; whether src is shorter or
// longer than what is left, and for single buffers as for vectors.
func TestCopyAll(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		segs := segsGen(t)
		if rapid.Bool().Draw(t, "one buffer") {
			segs = [][]byte{make([]byte, rapid.IntRange(0, 40).Draw(t, "len"))}
		}
		skip, keep := fillAndWindow(t, segs)
		src := rapid.SliceOfN(rapid.ByteRange(0, 0xa4), 0, 64).Draw(t, "src")
		it := iov.Vec(segs)
		if len(segs) == 1 {
			it = iov.Buf(segs[0])
		}
		it.Advance(skip)
		it.Truncate(keep)
		want := min(keep, len(src))
		if n := iov.CopyAll(it, src); n != want {
			t.Fatalf("CopyAll = %d, want %d", n, want)
		}
		for i, b := range flatten(segs) {
			w := byte(0xa5)
			if i >= skip && i < skip+want {
				w = src[i-skip]
			}
			if b != w {
				t.Fatalf("byte %d = %#x, want %#x", i, b, w)
			}
		}
		if n := iov.CopyAll(iov.Discard(keep), src); n != want {
			t.Fatalf("CopyAll to a discard iterator = %d, want %d", n, want)
		}
	})
}
