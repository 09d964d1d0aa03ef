package vfs_test

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestCopyFileRangeAllocs: a copy goes through a pooled buffer and
// allocates nothing, with given offsets and with the file positions.
func TestCopyFileRangeAllocs(t *testing.T) {
	s := newProc(t)
	in := mustOpen(t, s.p, "/both", unix.O_RDONLY)
	out := mustOpen(t, s.p, "/scalar", unix.O_RDWR)
	var roff, woff int64
	allocs := testing.AllocsPerRun(100, func() {
		roff, woff = 0, 0
		if n, err := s.p.CopyFileRange(in, &roff, out, &woff, 10, 0); n != 10 || err != nil {
			t.Fatalf("copy: %d, %v", n, err)
		}
		s.p.Seek(in, 0, unix.SEEK_SET)
		if n, err := s.p.CopyFileRange(in, nil, out, nil, 4, 0); n != 4 || err != nil {
			t.Fatalf("copy at the positions: %d, %v", n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("CopyFileRange: %v allocations per call, want 0", allocs)
	}
	// 101 runs (AllocsPerRun warms up once): the last 10-byte copy is at
	// 0, and the position-based copies moved the output position to 404.
	if got := string(s.scalar.data[:10]); got != "ABCDEFGHIJ" || len(s.scalar.data) != 404 {
		t.Errorf("after the copies: %q..., %d bytes; want ABCDEFGHIJ..., 404", got, len(s.scalar.data))
	}
}
