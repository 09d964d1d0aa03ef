package vfs_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs"
	"golang.org/x/sys/unix"
)

func TestImportFile(t *testing.T) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "f")
	data := bytes.Repeat([]byte("0123456789"), 1000)
	os.WriteFile(path, data, 0o640)
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	f.Seek(100, 0)
	fd, err := p.ImportFile(f)
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // the import holds its own duplicate
	buf := make([]byte, 10)
	if n, err := p.Read(fd, buf); n != 10 || err != nil || string(buf) != "0123456789" {
		t.Fatalf("read at the host offset: %d %v %q", n, err, buf)
	}
	if pos, _ := p.Seek(fd, 0, unix.SEEK_CUR); pos != 110 {
		t.Errorf("position %d, want 110", pos)
	}
	if n, err := p.Pread(fd, buf, int64(len(data))); n != 0 || err != nil {
		t.Errorf("pread at EOF: %d, %v", n, err)
	}
	a, b := make([]byte, 3), make([]byte, 5)
	if n, err := p.Preadv(fd, [][]byte{a, b}, 9997); n != 3 || err != nil || string(a) != "789" {
		t.Errorf("preadv across EOF: %d %v %q", n, err, a)
	}
	if n, err := p.Pwritev(fd, [][]byte{[]byte("ab"), []byte("cd")}, 20000); n != 4 || err != nil {
		t.Errorf("pwritev: %d, %v", n, err)
	}
	var hst unix.Stat_t
	unix.Stat(path, &hst)
	st, err := p.Fstat(fd)
	if err != nil || st.Ino != hst.Ino || st.Size != 20004 || st.Mode != hst.Mode || st.Dev != hst.Dev {
		t.Errorf("fstat %+v, %v; host %+v", st, err, hst)
	}
	if end, _ := p.Seek(fd, 0, unix.SEEK_END); end != 20004 {
		t.Errorf("SEEK_END %d", end)
	}
	if hole, err := p.Seek(fd, 0, unix.SEEK_HOLE); err != nil || hole > 20004 {
		t.Errorf("SEEK_HOLE %d, %v", hole, err)
	}
	got, _ := os.ReadFile(path)
	if string(got[20000:]) != "abcd" {
		t.Errorf("host file tail %q", got[20000:])
	}
	// Access mode from F_GETFL.
	ro, _ := os.Open(path)
	rfd, _ := p.ImportFile(ro)
	ro.Close()
	if _, err := p.Pwrite(rfd, buf, 0); !errors.Is(err, syscall.EBADF) {
		t.Errorf("write on O_RDONLY import: %v", err)
	}
	// A backing reference outlives the descriptor.
	bk, err := p.Backing(rfd)
	if err != nil {
		t.Fatal(err)
	}
	p.Close(rfd)
	if n, err := bk.ReadAt(buf, 0); n != 10 || err != nil || bk.Writable() || bk.HostFile() == nil {
		t.Errorf("backing after close: %d, %v", n, err)
	}
	bk.Release()
	if _, err := p.Backing(rfd); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Backing of a closed fd: %v", err)
	}
	// No allocation on the host read paths.
	buf = make([]byte, 4096)
	two := [][]byte{buf[:100], buf[100:]}
	for name, f := range map[string]func(){
		"pread":  func() { p.Pread(fd, buf, 0) },
		"preadv": func() { p.Preadv(fd, two, 0) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
	p.Close(fd)
}

func TestImportPipe(t *testing.T) {
	p, _ := iovfs.New()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rfd, _ := p.ImportFile(r)
	wfd, _ := p.ImportFile(w)
	if _, err := p.Pread(rfd, make([]byte, 1), 0); !errors.Is(err, syscall.ESPIPE) {
		t.Errorf("pread on a pipe: %v", err)
	}
	if n, err := p.Writev(wfd, [][]byte{[]byte("he"), []byte("llo")}); n != 5 || err != nil {
		t.Fatalf("writev: %d, %v", n, err)
	}
	buf := make([]byte, 5)
	if n, err := p.Read(rfd, buf); n != 5 || err != nil || string(buf) != "hello" {
		t.Fatalf("read: %d %v %q", n, err, buf)
	}
}
