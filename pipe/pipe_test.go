package pipe

import (
	"bytes"
	"testing"

	"github.com/iovfs/iovfs/iov"
)

// TestSetSizeKeepsBytes resizes a pipe whose ring has wrapped, in both
// directions, and checks that the bytes come out whole and in order.
func TestSetSizeKeepsBytes(t *testing.T) {
	for _, sizes := range [][]int{{65536, 16384, 1 << 20, 4096 * 4}, {16384, 65536}, {32768, 16384, 16384}} {
		p := NewPair()
		var want []byte
		seq := byte(0)
		write := func(n int) {
			b := make([]byte, n)
			for i := range b {
				seq++
				b[i] = seq
			}
			if m, err := p.Write(iov.Buf(b), true, false); err != nil || m != n {
				t.Fatalf("write %d = %d, %v", n, m, err)
			}
			want = append(want, b...)
		}
		read := func(n int) {
			b := make([]byte, n)
			m, err := p.Read(iov.Buf(b), true)
			if err != nil || m != n || !bytes.Equal(b, want[:n]) {
				t.Fatalf("read %d = %d, %v; bytes match: %v", n, m, err, bytes.Equal(b[:m], want[:m]))
			}
			want = want[n:]
		}
		// Move head and tail round the ring, leaving three pages in use.
		for range 5 {
			write(4096 * 3)
			read(4096 * 3)
		}
		write(4096*2 + 100)
		for _, sz := range sizes {
			if got, err := p.SetSize(sz, true); err != nil || got != sz {
				t.Fatalf("SetSize(%d) = %d, %v", sz, got, err)
			}
			if p.Size() != sz || p.Len() != len(want) {
				t.Fatalf("after SetSize(%d): Size %d, Len %d, want %d queued", sz, p.Size(), p.Len(), len(want))
			}
			write(50) // merges into the last page
		}
		read(len(want))
	}
}

func TestRoundSize(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want int
	}{{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 8192}, {65535, 65536}, {1 << 31, 1 << 31}, {1<<31 + 1, 0}, {^uint32(0), 0}} {
		if got := roundSize(c.in); got != c.want {
			t.Errorf("roundSize(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}
