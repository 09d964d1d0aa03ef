package vfs_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func openFileT(t *testing.T, p *vfs.Proc, name string, flags int) *vfs.File {
	t.Helper()
	f, err := p.OpenFile(name, flags, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13/5 + i>>12)
	}
	return b
}

// TestFileCopy runs io.Copy and io.CopyN between iovfs files of every
// kind the copy treats apart, and with other readers and writers, and
// checks the bytes, the counts and the file positions.
func TestFileCopy(t *testing.T) {
	p := newPipeProc(t)
	data := pattern(300000)
	src := openFileT(t, p, "/tmp/src", unix.O_RDWR|unix.O_CREAT)
	if _, err := src.Write(data); err != nil {
		t.Fatal(err)
	}
	check := func(what string, f *vfs.File, want []byte) {
		t.Helper()
		got, err := readAll(p, f.Name())
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; want %d (first difference at %d)", what, len(got), err, len(want), firstDiff(got, want))
		}
	}

	// tmpfs to tmpfs, from the middle: one copy through a private pipe.
	src.Seek(1000, io.SeekStart)
	dst := openFileT(t, p, "/tmp/dst", unix.O_RDWR|unix.O_CREAT)
	if n, err := io.Copy(dst, src); n != int64(len(data)-1000) || err != nil {
		t.Fatalf("io.Copy file to file = %d, %v", n, err)
	}
	check("file to file", dst, data[1000:])
	if pos, _ := src.Seek(0, io.SeekCurrent); pos != int64(len(data)) {
		t.Errorf("source position %d after the copy, want %d", pos, len(data))
	}

	// io.CopyN: an io.LimitedReader of a File.
	src.Seek(0, io.SeekStart)
	dst2 := openFileT(t, p, "/tmp/dst2", unix.O_RDWR|unix.O_CREAT)
	if n, err := io.CopyN(dst2, src, 5000); n != 5000 || err != nil {
		t.Fatalf("io.CopyN = %d, %v", n, err)
	}
	check("CopyN", dst2, data[:5000])

	// An O_APPEND destination cannot be spliced into: one buffer.
	app := openFileT(t, p, "/tmp/dst2", unix.O_WRONLY|unix.O_APPEND)
	src.Seek(0, io.SeekStart)
	if n, err := io.Copy(app, io.LimitReader(src, 100)); n != 100 || err != nil {
		t.Fatalf("io.Copy to O_APPEND = %d, %v", n, err)
	}
	check("O_APPEND", dst2, append(append([]byte{}, data[:5000]...), data[:100]...))

	// file to pipe to pipe to file, and file to an io.Writer.
	r1, w1, _ := p.Pipe2(0)
	r2, w2, _ := p.Pipe2(0)
	pr1, pw1 := p.NewFile(r1, "pipe1 r"), p.NewFile(w1, "pipe1 w")
	pr2, pw2 := p.NewFile(r2, "pipe2 r"), p.NewFile(w2, "pipe2 w")
	dst3 := openFileT(t, p, "/tmp/dst3", unix.O_RDWR|unix.O_CREAT)
	done := make(chan error, 3)
	go func() {
		src.Seek(0, io.SeekStart)
		_, err := io.Copy(pw1, src)
		pw1.Close()
		done <- err
	}()
	go func() {
		_, err := io.Copy(pw2, pr1)
		pw2.Close()
		pr1.Close()
		done <- err
	}()
	go func() {
		_, err := io.Copy(dst3, pr2)
		pr2.Close()
		done <- err
	}()
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	check("file to pipe to pipe to file", dst3, data)

	var buf bytes.Buffer
	src.Seek(0, io.SeekStart)
	if n, err := io.Copy(&buf, src); n != int64(len(data)) || err != nil || !bytes.Equal(buf.Bytes(), data) {
		t.Errorf("io.Copy to a bytes.Buffer = %d, %v", n, err)
	}
	dst4 := openFileT(t, p, "/tmp/dst4", unix.O_RDWR|unix.O_CREAT)
	if n, err := io.Copy(dst4, strings.NewReader(string(data))); n != int64(len(data)) || err != nil {
		t.Errorf("io.Copy from a strings.Reader = %d, %v", n, err)
	}
	check("from a strings.Reader", dst4, data)

	// /dev/zero is endless: io.CopyN takes what it asks.
	zero := openFileT(t, p, "/dev/zero", unix.O_RDONLY)
	dst5 := openFileT(t, p, "/tmp/dst5", unix.O_RDWR|unix.O_CREAT)
	if n, err := io.CopyN(dst5, zero, 70000); n != 70000 || err != nil {
		t.Errorf("io.CopyN from /dev/zero = %d, %v", n, err)
	}
	check("from /dev/zero", dst5, make([]byte, 70000))
}

// TestFileCopyAllocs: io.Copy between two tmpfs files allocates nothing.
func TestFileCopyAllocs(t *testing.T) {
	p := newPipeProc(t)
	src := openFileT(t, p, "/tmp/src", unix.O_RDWR|unix.O_CREAT)
	src.Write(pattern(100000))
	dst := openFileT(t, p, "/tmp/dst", unix.O_RDWR|unix.O_CREAT)
	a := testing.AllocsPerRun(50, func() {
		src.Seek(0, io.SeekStart)
		dst.Seek(0, io.SeekStart)
		if n, err := io.Copy(dst, src); n != 100000 || err != nil {
			t.Fatalf("io.Copy = %d, %v", n, err)
		}
	})
	if a != 0 {
		t.Errorf("io.Copy: %v allocs/op, want 0", a)
	}
}

// readAll returns the bytes of the file at name.
func readAll(p *vfs.Proc, name string) ([]byte, error) {
	f, err := p.OpenFile(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}

// BenchmarkFileCopy is io.Copy of a 64 MiB tmpfs file into another as
// large, against copy() of one slice into another.
func BenchmarkFileCopy(b *testing.B) {
	const size = 64 << 20
	b.Run("io.Copy", func(b *testing.B) {
		p := newPipeProc(b)
		src, _ := p.OpenFile("/tmp/src", unix.O_RDWR|unix.O_CREAT, 0o644)
		src.Write(pattern(size))
		dst, _ := p.OpenFile("/tmp/dst", unix.O_RDWR|unix.O_CREAT, 0o644)
		b.SetBytes(size)
		for b.Loop() {
			src.Seek(0, io.SeekStart)
			dst.Seek(0, io.SeekStart)
			io.Copy(dst, src)
		}
	})
	b.Run("memmove", func(b *testing.B) {
		src, dst := pattern(size), make([]byte, size)
		b.SetBytes(size)
		for b.Loop() {
			copy(dst, src)
		}
	})
}
