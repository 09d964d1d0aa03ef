package vfs_test

import (
	"bytes"
	"errors"
	"sync"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// pipeSide is how one goroutine moves bytes through a pipe end: its
// sizes, whether calls are vectored, and whether the end is O_NONBLOCK
// (the goroutine then waits in poll).
type pipeSide struct {
	sizes    []int
	vectored bool
	nonblock bool
}

func drawSide(t *rapid.T, name string, max int) pipeSide {
	return pipeSide{
		sizes:    rapid.SliceOfN(rapid.IntRange(1, max), 1, 20).Draw(t, name+" sizes"),
		vectored: rapid.Bool().Draw(t, name+" vectored"),
		nonblock: rapid.Bool().Draw(t, name+" nonblock"),
	}
}

// segs cuts b into up to 3 segments, one of them possibly empty.
func segs(b []byte) [][]byte {
	a, c := len(b)/3, 2*len(b)/3
	return [][]byte{b[:a], b[a:a], b[a:c], b[c:]}
}

// waitFor polls fd for ev, as a program with an O_NONBLOCK end does
// before retrying after EAGAIN.
func waitFor(p *vfs.Proc, fd int, ev int16) {
	p.Poll([]unix.PollFd{{Fd: int32(fd), Events: ev}}, -1)
}

// writeAll writes data to w in the side's sizes, round and round, and
// returns how many bytes the pipe took before it stopped (all, or up to
// an EPIPE). A blocking write may fall short only when the reader went
// away: the next one then gives EPIPE.
func writeAll(p *vfs.Proc, w int, s pipeSide, data []byte) (int, error) {
	done := 0
	short := false
	for i := 0; done < len(data); i++ {
		if short {
			if _, err := p.Write(w, data[done:done+1]); err != syscall.EPIPE {
				return done, errors.New("short blocking write without EPIPE")
			}
			return done, syscall.EPIPE
		}
		b := data[done:min(len(data), done+s.sizes[i%len(s.sizes)])]
		var n int
		var err error
		if s.vectored {
			n, err = p.Writev(w, segs(b))
		} else {
			n, err = p.Write(w, b)
		}
		done += n
		if err == syscall.EAGAIN && s.nonblock {
			waitFor(p, w, unix.POLLOUT)
			continue
		}
		if err != nil {
			return done, err
		}
		short = n != len(b) && !s.nonblock
	}
	return done, nil
}

// readSome reads from r in the side's sizes until limit bytes (or end
// of file) and returns them.
func readSome(p *vfs.Proc, r int, s pipeSide, limit int) ([]byte, error) {
	var out []byte
	for i := 0; len(out) < limit; i++ {
		b := make([]byte, min(s.sizes[i%len(s.sizes)], limit-len(out)))
		var n int
		var err error
		if s.vectored {
			n, err = p.Readv(r, segs(b))
		} else {
			n, err = p.Read(r, b)
		}
		if err == syscall.EAGAIN && s.nonblock {
			waitFor(p, r, unix.POLLIN)
			continue
		}
		if err != nil {
			return out, err
		}
		if n == 0 {
			break
		}
		out = append(out, b[:n]...)
	}
	return out, nil
}

func setNonblock(t *rapid.T, p *vfs.Proc, fd int, on bool) {
	fl := 0
	if on {
		fl = unix.O_NONBLOCK
	}
	if _, err := p.Fcntl(fd, unix.F_SETFL, fl); err != nil {
		t.Fatal(err)
	}
}

// TestPipeBytesInOut: whatever the write sizes, read sizes, vectors,
// blocking modes and pipe size, the bytes read are the bytes written,
// in order, when one goroutine writes and two read in turn: the first
// stops part way, and the second reads to the end. Neither loses nor
// duplicates a byte, including those a write hands straight to a
// waiting reader.
func TestPipeBytesInOut(t *testing.T) {
	p := newPipeProc(t)
	rapid.Check(t, func(t *rapid.T) {
		ws := drawSide(t, "writer", 70000)
		r1 := drawSide(t, "first reader", 70000)
		r2 := drawSide(t, "second reader", 70000)
		total := rapid.IntRange(1, 300000).Draw(t, "total")
		stop := rapid.IntRange(0, total).Draw(t, "first reader stops after")
		size := rapid.SampledFrom([]int{4096, 16384, 65536, 1 << 20}).Draw(t, "pipe size")
		r, w, err := p.Pipe2(unix.O_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(r)
		if _, err := p.Fcntl(w, unix.F_SETPIPE_SZ, size); err != nil {
			t.Fatal(err)
		}
		data := make([]byte, total)
		for i := range data {
			data[i] = byte(i * 7 / 3)
		}
		setNonblock(t, p, w, ws.nonblock)
		var wg sync.WaitGroup
		var wn int
		var werr error
		wg.Go(func() {
			wn, werr = writeAll(p, w, ws, data)
			p.Close(w)
		})
		setNonblock(t, p, r, r1.nonblock)
		first, err := readSome(p, r, r1, stop)
		if err != nil {
			t.Fatalf("first reader: %v", err)
		}
		setNonblock(t, p, r, r2.nonblock)
		rest, err := readSome(p, r, r2, total+1)
		if err != nil {
			t.Fatalf("second reader: %v", err)
		}
		wg.Wait()
		if werr != nil || wn != total {
			t.Fatalf("writer: %d of %d, %v", wn, total, werr)
		}
		if len(first) != stop {
			t.Fatalf("first reader got %d bytes, wanted to stop at %d", len(first), stop)
		}
		if got := append(first, rest...); !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes, wrote %d; first difference at %d", len(got), len(data), firstDiff(got, data))
		}
	})
}

// TestPipeReaderGoneBytes: a reader that reads part of the stream and
// closes its end: what it read is a prefix of what was written, and the
// writer learns of the close (EPIPE) having had no more bytes taken than
// were written.
func TestPipeReaderGoneBytes(t *testing.T) {
	p := newPipeProc(t)
	rapid.Check(t, func(t *rapid.T) {
		ws := drawSide(t, "writer", 70000)
		rs := drawSide(t, "reader", 70000)
		total := rapid.IntRange(1, 300000).Draw(t, "total")
		stop := rapid.IntRange(0, total).Draw(t, "reader stops after")
		r, w, err := p.Pipe2(unix.O_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, total)
		for i := range data {
			data[i] = byte(i * 5 / 3)
		}
		setNonblock(t, p, w, ws.nonblock)
		setNonblock(t, p, r, rs.nonblock)
		var wg sync.WaitGroup
		var wn int
		var werr error
		wg.Go(func() {
			wn, werr = writeAll(p, w, ws, data)
			p.Close(w)
		})
		got, err := readSome(p, r, rs, stop)
		p.Close(r)
		wg.Wait()
		if err != nil {
			t.Fatalf("reader: %v", err)
		}
		if !bytes.Equal(got, data[:len(got)]) || len(got) != stop {
			t.Fatalf("reader got %d bytes (wanted %d), first difference at %d", len(got), stop, firstDiff(got, data))
		}
		if wn < len(got) || werr != nil && werr != syscall.EPIPE || werr == nil && wn != total {
			t.Fatalf("writer: %d of %d, %v; the reader took %d", wn, total, werr, len(got))
		}
	})
}

// TestSpliceRelayBytes: bytes written into one pipe, moved into a second
// by splice or tee (whole buffers, parts of one) and read from there,
// arrive whole and in order, and a tee leaves the first pipe's bytes in
// place.
func TestSpliceRelayBytes(t *testing.T) {
	p := newPipeProc(t)
	rapid.Check(t, func(t *rapid.T) {
		ws := drawSide(t, "writer", 20000)
		rs := drawSide(t, "reader", 20000)
		moves := rapid.SliceOfN(rapid.IntRange(1, 70000), 1, 10).Draw(t, "splice lengths")
		tee := rapid.Bool().Draw(t, "tee then drain")
		total := rapid.IntRange(1, 200000).Draw(t, "total")
		r1, w1, _ := p.Pipe2(unix.O_CLOEXEC)
		r2, w2, _ := p.Pipe2(unix.O_CLOEXEC)
		defer p.Close(r1)
		defer p.Close(r2)
		data := make([]byte, total)
		for i := range data {
			data[i] = byte(i * 11 / 7)
		}
		setNonblock(t, p, w1, ws.nonblock)
		setNonblock(t, p, r2, rs.nonblock)
		var wg sync.WaitGroup
		var werr error
		wg.Go(func() {
			_, werr = writeAll(p, w1, ws, data)
			p.Close(w1)
		})
		var rerr error
		wg.Go(func() {
			defer p.Close(w2)
			for i := 0; ; i++ {
				n := moves[i%len(moves)]
				var k int64
				var err error
				if tee {
					if k, err = p.Tee(r1, w2, n, 0); k > 0 {
						// Drop what was teed from the first pipe.
						if d, _ := p.Splice(r1, nil, mustNull(p), nil, int(k), 0); d != k {
							rerr = errors.New("drain after tee fell short")
							return
						}
					}
				} else {
					k, err = p.Splice(r1, nil, w2, nil, n, 0)
				}
				if err != nil {
					rerr = err
					return
				}
				if k == 0 {
					return
				}
			}
		})
		got, err := readSome(p, r2, rs, total+1)
		wg.Wait()
		if err != nil || werr != nil || rerr != nil {
			t.Fatalf("reader %v, writer %v, relay %v", err, werr, rerr)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes, wrote %d; first difference at %d", len(got), len(data), firstDiff(got, data))
		}
	})
}

var nullFds sync.Map

// mustNull returns a descriptor of /dev/null in p, opened once.
func mustNull(p *vfs.Proc) int {
	if fd, ok := nullFds.Load(p); ok {
		return fd.(int)
	}
	fd, err := p.Open("/dev/null", unix.O_WRONLY, 0)
	if err != nil {
		panic(err)
	}
	nullFds.Store(p, fd)
	return fd
}
