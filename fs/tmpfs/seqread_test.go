package tmpfs

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
)

// TestReadSnapshot checks that a read without a lock (the seqcount path;
// under -race the shared-lock path) sees one state of the file, never a
// mix of two: a writer overwrites the whole file with one byte value in
// a single write, a new value each time, and every eighth time truncates
// it to 0 first, so every read of the whole file must return either 0
// bytes or all of them, every byte the same. A torn copy across pages, or a read that used one size and
// another write's pages, breaks that.
func TestReadSnapshot(t *testing.T) {
	_, f, h := newFile(t, Options{})
	const size = 40 * pageSize
	mustWrite(t, h, bytes.Repeat([]byte{1}, size), 0)
	iters := 2000
	if testing.Short() || raceEnabled {
		iters = 200
	}
	readersAgainst(t, h, size, iters, func(stop *atomic.Bool) {
		buf := make([]byte, size)
		for v := 2; !stop.Load(); v++ {
			if v%8 == 0 {
				if err := f.Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: 0}, root0); err != nil {
					t.Error(err)
					return
				}
			}
			for i := range buf {
				buf[i] = byte(v)
			}
			if n, err := h.Write(buf, 0); n != size || err != nil {
				t.Errorf("write: %d, %v", n, err)
				return
			}
		}
	}, func(buf []byte, n int) string {
		if n != 0 && n != size {
			return fmt.Sprintf("read %d bytes, want 0 or %d", n, size)
		}
		if n == size && bytes.Count(buf, buf[:1]) != size {
			return "read a mix of two writes"
		}
		return ""
	})
}

// readersAgainst runs writer, a loop of changes to h's file until stop is
// set, against two readers that each read the file's first size bytes
// iters times, alternately with Read and with a two-segment ReadIter, and
// give each read to check, which says what is wrong with it, or "".
func readersAgainst(t *testing.T, h *OpenFile, size, iters int, writer func(stop *atomic.Bool), check func(buf []byte, n int) string) {
	var stop atomic.Bool
	var w, readers sync.WaitGroup
	w.Add(1)
	go func() {
		defer w.Done()
		writer(&stop)
	}()
	for r := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			buf := make([]byte, size)
			a, b := buf[:size/3+5], buf[size/3+5:]
			for i := range iters {
				var n int
				if (i+r)%2 == 0 {
					n, _ = h.Read(buf, 0)
				} else {
					n, _ = h.ReadIter(iov.Vec([][]byte{a, b}), 0)
				}
				if msg := check(buf, n); msg != "" {
					t.Error(msg)
					return
				}
			}
		}()
	}
	readers.Wait()
	stop.Store(true)
	w.Wait()
}
