package pipe

import (
	"bytes"
	"fmt"
	"runtime"
	"syscall"
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

// holder counts Hold calls and answers ok.
type holder struct {
	ok    bool
	calls int
}

func (h *holder) Hold() bool { h.calls++; return h.ok }

// TestWriteHold checks WriteHold's reference: none for a write that does
// not wait, one taken before it waits, EBADF when the end is gone or the
// reference cannot be had, and the count written when some was.
func TestWriteHold(t *testing.T) {
	buf := make([]byte, DefaultSize)

	p := NewPair()
	h := &holder{ok: true}
	if n, held, err := p.WriteHold(iov.Buf(buf[:DefaultSize-PageSize]), false, false, h); n != DefaultSize-PageSize || held || err != nil || h.calls != 0 {
		t.Fatalf("write that fits = %d, %v, %v after %d Holds; want %d, false, nil, 0", n, held, err, h.calls, DefaultSize-PageSize)
	}
	// The ring is full after this, its last page 96 bytes short.
	if n, _, err := p.WriteHold(iov.Buf(buf[:4000]), false, false, h); n != 4000 || err != nil {
		t.Fatalf("filling write = %d, %v", n, err)
	}
	refused := &holder{}
	if n, held, err := p.WriteHold(iov.Buf(buf[:100]), false, false, refused); n != 0 || held || err != syscall.EBADF || refused.calls != 1 {
		t.Fatalf("write that must wait, Hold refused = %d, %v, %v after %d Holds; want 0, false, EBADF, 1", n, held, err, refused.calls)
	}
	// A write past PIPE_BUF takes what fits (its tail, merged into the
	// last page), then stops where it would wait.
	if n, held, err := p.WriteHold(iov.Buf(buf[:2*Buf+50]), false, false, refused); n != 50 || held || err != nil {
		t.Fatalf("large write, Hold refused = %d, %v, %v; want 50, false, nil", n, held, err)
	}
	queued := DefaultSize - PageSize + 4000 + 50
	done := make(chan error)
	go func() {
		n, held, err := p.WriteHold(iov.Buf(buf[:100]), false, false, h)
		if n != 100 || !held || err != nil {
			err = fmt.Errorf("write that waited = %d, %v, %v; want 100, true, nil", n, held, err)
		}
		done <- err
	}()
	for { // until the write waits
		p.mu.Lock()
		waiting := p.wrq.head != nil
		p.mu.Unlock()
		if waiting {
			break
		}
		runtime.Gosched()
	}
	for got := 0; got < queued+100; {
		n, err := p.Read(iov.Buf(buf), false)
		if err != nil || n == 0 {
			t.Fatalf("read = %d, %v", n, err)
		}
		got += n
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if h.calls != 1 {
		t.Fatalf("%d Holds for one wait, want 1", h.calls)
	}

	// The write end is gone: EBADF, before EPIPE and without a Hold.
	p.Close(false, true)
	h = &holder{ok: true}
	if n, held, err := p.WriteHold(iov.Buf(buf[:1]), false, false, h); n != 0 || held || err != syscall.EBADF || h.calls != 0 {
		t.Fatalf("write with no write end = %d, %v, %v after %d Holds; want 0, false, EBADF, 0", n, held, err, h.calls)
	}
}
