package fuse

import (
	"bytes"
	"testing"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/iovfs/iovfs"
	"golang.org/x/sys/unix"
)

// TestReadWriteNoAlloc checks that serving READ and WRITE allocates
// nothing in this package: the handle lookup, the pread into go-fuse's
// buffer and the pooled reply. (go-fuse's own request handling is not
// counted here.)
func TestReadWriteNoAlloc(t *testing.T) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := p.Open("/tmp/f", unix.O_CREAT|unix.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("abcdefgh"), 8192)
	if _, err := p.Write(fd, data); err != nil {
		t.Fatal(err)
	}
	s := &Server{base: p, handles: map[uint64]*handle{}}
	fh := s.addHandle(&handle{fd: fd})
	r := &rawFS{s: s}
	buf := make([]byte, 1<<17)
	in := &gofuse.ReadIn{Fh: fh, Offset: 4096, Size: 32768}
	win := &gofuse.WriteIn{Fh: fh, Offset: 100}
	var got []byte
	read := func() {
		rr, st := r.Read(nil, in, buf)
		if !st.Ok() {
			t.Fatal(st)
		}
		got, _ = rr.Bytes(nil)
		rr.Done()
	}
	read()
	if !bytes.Equal(got, data[4096:4096+32768]) {
		t.Fatalf("READ returned %d bytes, not the file's", len(got))
	}
	if a := testing.AllocsPerRun(200, read); a != 0 && !raceEnabled {
		t.Errorf("READ: %v allocations, want 0", a)
	}
	w := data[:4096]
	write := func() {
		if n, st := r.Write(nil, win, w); n != 4096 || !st.Ok() {
			t.Fatal(n, st)
		}
	}
	if a := testing.AllocsPerRun(200, write); a != 0 && !raceEnabled {
		t.Errorf("WRITE: %v allocations, want 0", a)
	}
	// A handle that is gone gives EBADF.
	if _, st := r.Read(nil, &gofuse.ReadIn{Fh: fh + 1, Size: 10}, buf); st != gofuse.EBADF {
		t.Errorf("READ of an unknown handle: %v, want EBADF", st)
	}
}
