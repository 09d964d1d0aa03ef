package wasi

import (
	"bytes"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"golang.org/x/sys/unix"
)

// TestReadvFaultKeepsBytes: a 3-iovec read of 12 bytes whose third
// segment is not addressable. Linux (checked here with a PROT_NONE page)
// never loses a byte: readv of a regular file returns the 8 it copied;
// readv of a pipe gives EFAULT and leaves all 12 in the pipe. iovfs's
// fd_read ends the vector at the bad segment, so it returns 8 for both
// (the file answer; on a pipe it differs from Linux's EFAULT, and is as
// lossless: the pipe keeps the other 4). wazero's fd_read takes the first
// two segments from the pipe, then returns EFAULT: those 8 bytes are gone
// from the pipe and the guest never sees them.
func TestReadvFaultKeepsBytes(t *testing.T) {
	data := []byte("0123456789ab")

	t.Run("linux", func(t *testing.T) {
		bad, err := unix.Mmap(-1, 0, 4096, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Munmap(bad)
		a, b := make([]byte, 4), make([]byte, 4)

		// A regular file (filemap_read): the count of what was copied.
		f, err := os.CreateTemp(t.TempDir(), "f")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.Write(data)
		f.Seek(0, 0)
		n, err := unix.Readv(int(f.Fd()), [][]byte{a, b, bad[:4]})
		if n != 8 || err != nil || string(a)+string(b) != "01234567" {
			t.Fatalf("readv of a file = %d, %v, %q%q; want 8, nil, 01234567", n, err, a, b)
		}
		if off, _ := f.Seek(0, 1); off != 8 {
			t.Fatalf("readv of a file left the offset at %d, want 8", off)
		}

		// A pipe (pipe_read): a pipe buffer is consumed whole or not at
		// all, so a copy that faults before any buffer was consumed gives
		// EFAULT, and the pipe keeps every byte.
		var fds [2]int
		if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		unix.Write(fds[1], data)
		n, err = unix.Readv(fds[0], [][]byte{a, b, bad[:4]})
		if n != -1 || err != unix.EFAULT {
			t.Fatalf("readv of a pipe = %d, %v; want EFAULT", n, err)
		}
		rest := make([]byte, 16)
		if n, _ := unix.Read(fds[0], rest); !bytes.Equal(rest[:n], data) {
			t.Fatalf("after readv's EFAULT the pipe holds %q, want all of %q", rest[:n], data)
		}
	})

	// The guest's iovecs: two of 4 bytes, then one past the end of memory.
	iovecs := func(g *guest) {
		size := g.mem.Size()
		g.iovecs(1024, [2]uint32{4096, 4}, [2]uint32{4100, 4}, [2]uint32{size, 4})
	}

	t.Run("iovfs", func(t *testing.T) {
		p := newProc(t)
		r, w, err := p.Pipe2(0)
		if err != nil {
			t.Fatal(err)
		}
		p.Write(w, data)
		g := newGuest(t, p, Config{}, nil)
		iovecs(g)
		if e := g.call("fd_read", uint64(r), 1024, 3, 2048); e != 0 || g.u32(2048) != 8 {
			t.Fatalf("fd_read = errno %d, %d bytes; want 0, 8 (as Linux readv)", e, g.u32(2048))
		}
		if got := g.bytes(4096, 8); string(got) != "01234567" {
			t.Fatalf("fd_read filled %q, want 01234567", got)
		}
		rest := make([]byte, 16)
		if n, _ := p.Read(r, rest); string(rest[:n]) != "89ab" {
			t.Fatalf("after fd_read the pipe holds %q, want 89ab", rest[:n])
		}
		// A tmpfs file: 8, and the offset moves by 8, as Linux's.
		f, _ := p.Open("/w/f", unix.O_RDWR|unix.O_CREAT, 0o644)
		p.Write(f, data)
		p.Seek(f, 0, unix.SEEK_SET)
		iovecs(g)
		if e := g.call("fd_read", uint64(f), 1024, 3, 2048); e != 0 || g.u32(2048) != 8 {
			t.Fatalf("fd_read of a file = errno %d, %d bytes; want 0, 8", e, g.u32(2048))
		}
		if off, _ := p.Seek(f, 0, unix.SEEK_CUR); off != 8 {
			t.Fatalf("fd_read of a file left the offset at %d, want 8", off)
		}
		p.Write(w, data)
		g.iovecs(1024, [2]uint32{g.mem.Size(), 4}, [2]uint32{4096, 4})
		if e := g.call("fd_read", uint64(r), 1024, 2, 2048); e != errnoFault {
			t.Fatalf("fd_read with a bad first segment: errno %d, want EFAULT (%d)", e, errnoFault)
		}
		if n, _ := p.Read(r, rest); !bytes.Equal(rest[:n], data) {
			t.Fatalf("after EFAULT the pipe holds %q, want %q", rest[:n], data)
		}
	})

	t.Run("wazero", func(t *testing.T) {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		defer pw.Close()
		pw.Write(data)
		g := newGuest(t, nil, Config{}, wazero.NewModuleConfig().WithStdin(pr))
		iovecs(g)
		e := g.call("fd_read", 0, 1024, 3, 2048)
		if e != errnoFault {
			t.Fatalf("wazero fd_read: errno %d; this test documents wazero returning EFAULT (%d)", e, errnoFault)
		}
		// The bytes the first two segments took are lost: the next read
		// starts at "8".
		g.iovecs(1024, [2]uint32{8192, 16})
		if e := g.call("fd_read", 0, 1024, 1, 2048); e != 0 {
			t.Fatalf("second fd_read: errno %d", e)
		}
		if got := g.bytes(8192, g.u32(2048)); string(got) != "89ab" {
			t.Fatalf("wazero: after EFAULT the next read got %q; the test expects 89ab (8 bytes lost)", got)
		}
		t.Logf("wazero: fd_read returned EFAULT and dropped 8 bytes it had taken from the pipe")
	})
}
