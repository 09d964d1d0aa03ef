package iov

import (
	"bytes"
	"testing"
)

// TestStreamCopyIn: a Stream iterator copies in the bytes a Vec would,
// whatever the alignment of the pieces and however the driver cuts its
// copies, and leaves what it did not copy for the next call; with the
// AVX stores and with the SSE2 ones.
func TestStreamCopyIn(t *testing.T) {
	avx := haveAVX
	defer func() { haveAVX = avx }()
	for _, use := range []bool{false, avx} {
		haveAVX = use
		testStreamCopyIn(t)
	}
}

func testStreamCopyIn(t *testing.T) {
	src := make([]byte, 300000)
	for i := range src {
		src[i] = byte(i*7 + i>>9)
	}
	for _, c := range []struct {
		segs  []int // lengths of the source's segments
		at    int   // offset of the destination in its buffer
		chunk int   // the driver's copies
	}{
		{[]int{300000}, 0, 300000},
		{[]int{262144, 4096, 33760}, 3, 65536},
		{[]int{1, 4095, 70000, 5, 100000}, 17, 4096},
		{[]int{100000, 100000, 100000}, 64, 99999},
		{[]int{63, 64, 65, 4096, 8191}, 1, 7},
	} {
		var segs [][]byte
		off := 0
		for _, n := range c.segs {
			segs = append(segs, src[off:off+n])
			off += n
		}
		it := Stream(segs)
		if it.Kind() != KindStream || it.Len() != off {
			t.Fatalf("Stream: kind %d, Len %d; want %d, %d", it.Kind(), it.Len(), KindStream, off)
		}
		buf := make([]byte, off+c.at)
		dst := buf[c.at:]
		done := 0
		for it.Len() > 0 {
			n := it.CopyIn(dst[done:min(done+c.chunk, len(dst))])
			if n == 0 {
				t.Fatalf("%v: CopyIn copied nothing at %d", c, done)
			}
			done += n
		}
		if !bytes.Equal(dst, src[:off]) {
			t.Errorf("%v: bytes differ", c)
		}
	}
}
