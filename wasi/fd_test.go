package wasi

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFdFlagsRenumberAllocate: fd_fdstat_set_flags(append) makes the next
// fd_write land at the end (F_SETFL) and fd_fdstat_get reports it;
// fd_allocate grows the file (fallocate); fd_renumber moves the
// descriptor with its rights and closes the old number.
func TestFdFlagsRenumberAllocate(t *testing.T) {
	p := procWithFile(t)
	g := newGuest(t, p, Config{Preopens: []Preopen{{Path: "/w", Guest: "/"}}}, nil)
	e, fd := g.open(3, "f", 0, fileRights, 0)
	if e != 0 {
		t.Fatal(e)
	}
	if e := g.call("fd_fdstat_set_flags", uint64(fd), fdflagAppend); e != 0 {
		t.Fatalf("fd_fdstat_set_flags: errno %d", e)
	}
	g.call("fd_fdstat_get", uint64(fd), 3000)
	if fl := binary.LittleEndian.Uint16(g.bytes(3002, 2)); fl != fdflagAppend {
		t.Fatalf("fdstat flags %#x, want append", fl)
	}
	g.mem.WriteString(5000, "END")
	g.iovecs(1024, [2]uint32{5000, 3})
	if e := g.call("fd_write", uint64(fd), 1024, 1, 2048); e != 0 {
		t.Fatal(e)
	}
	if st, _ := p.Stat("/w/f"); st.Size != 4099 {
		t.Fatalf("size after an append write: %d, want 4099", st.Size)
	}
	if e := g.call("fd_allocate", uint64(fd), 0, 8192); e != 0 {
		t.Fatalf("fd_allocate: errno %d", e)
	}
	if e := g.call("fd_filestat_get", uint64(fd), 3000); e != 0 || binary.LittleEndian.Uint64(g.bytes(3032, 8)) != 8192 {
		t.Fatalf("fd_filestat_get after fd_allocate: errno %d, size %d", e, binary.LittleEndian.Uint64(g.bytes(3032, 8)))
	}
	if e := g.call("fd_allocate", uint64(fd), 0, 0); e != errnoInval {
		t.Fatalf("fd_allocate of 0 bytes: errno %d, want EINVAL (fallocate's)", e)
	}
	// Renumber onto the preopen's number 3.
	if e := g.call("fd_renumber", uint64(fd), 3); e != 0 {
		t.Fatalf("fd_renumber: errno %d", e)
	}
	if _, err := p.Fstat(int(fd)); err != unix.EBADF {
		t.Fatalf("old descriptor after fd_renumber: %v, want EBADF", err)
	}
	if e := g.call("fd_prestat_get", 3, 100); e != errnoBadf {
		t.Fatalf("fd 3 is still a preopen after fd_renumber: errno %d", e)
	}
	if e := g.call("fd_filestat_get", 3, 3000); e != 0 || binary.LittleEndian.Uint64(g.bytes(3032, 8)) != 8192 {
		t.Fatalf("fd_filestat_get on the new number: errno %d", e)
	}
	if e := g.call("fd_renumber", 3, 77); e != errnoBadf {
		t.Fatalf("fd_renumber to a closed number: errno %d, want EBADF", e)
	}
}
