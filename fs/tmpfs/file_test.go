package tmpfs

import (
	"bytes"
	"math"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func newFile(t tb, o Options) (*FS, *File, *OpenFile) {
	t.Helper()
	fs := New(o)
	f := mustCreate(t, fs.root, "f")
	return fs, f, mustOpen(t, f, rw)
}

func pattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i*7)
	}
	return p
}

func TestReadWrite(t *testing.T) {
	_, f, h := newFile(t, Options{})
	data := pattern(10000, 1)
	mustWrite(t, h, data, 0)
	buf := make([]byte, 20000)
	cases := []struct {
		name string
		off  int64
		len  int
		want int
	}{
		{"whole file", 0, 10000, 10000},
		{"across pages", 4000, 200, 200},
		{"short at end of file", 9990, 100, 10},
		{"at end of file", 10000, 100, 0},
		{"past end of file", 20000, 100, 0},
	}
	for _, c := range cases {
		n, err := h.Read(buf[:c.len], c.off)
		if n != c.want || err != nil || !bytes.Equal(buf[:n], data[min(c.off, 10000):][:n]) {
			t.Errorf("%s: read %d, %v, want %d", c.name, n, err, c.want)
		}
		n, err = h.ReadIter(iov.Vec([][]byte{buf[:c.len/3], buf[c.len/3 : c.len]}), c.off)
		if n != c.want || err != nil || !bytes.Equal(buf[:n], data[min(c.off, 10000):][:n]) {
			t.Errorf("%s: readiter %d, %v, want %d", c.name, n, err, c.want)
		}
	}
	if n, err := h.Read(buf, -1); n != 0 || errno(err) != unix.EINVAL {
		t.Errorf("read at -1: %d, %v, want EINVAL", n, err)
	}
	if n, err := h.Write(buf, -1); n != 0 || errno(err) != unix.EINVAL {
		t.Errorf("write at -1: %d, %v, want EINVAL", n, err)
	}
	if n, err := h.Write(nil, 5); n != 0 || err != nil {
		t.Errorf("empty write: %d, %v", n, err)
	}
	if st := mustStat(t, f); st.Size != 10000 || st.Blocks != 3*8 || st.Blksize != 4096 {
		t.Errorf("stat size %d blocks %d blksize %d", st.Size, st.Blocks, st.Blksize)
	}
	// A vectored write lands where the same bytes written flat would.
	segs := [][]byte{pattern(100, 9), nil, pattern(5000, 3), pattern(1, 4)}
	if n, err := h.WriteIter(iov.Vec(segs), 4090); n != 5101 || err != nil {
		t.Fatalf("writeiter: %d, %v", n, err)
	}
	copy(data[4090:], bytes.Join(segs, nil))
	n, _ := h.Read(buf, 0)
	if n != 10000 || !bytes.Equal(buf[:n], data) {
		t.Fatalf("after writeiter: %d bytes, mismatch", n)
	}
}

func TestHoles(t *testing.T) {
	fs, f, h := newFile(t, Options{})
	mustWrite(t, h, []byte("end"), 5*pageSize+10)
	st := mustStat(t, f)
	if st.Size != 5*pageSize+13 || st.Blocks != 8 {
		t.Fatalf("sparse file size %d blocks %d", st.Size, st.Blocks)
	}
	buf := pattern(int(st.Size), 1)
	n, _ := h.ReadIter(iov.Vec([][]byte{buf[:7], buf[7:9000], buf[9000:]}), 0)
	want := make([]byte, st.Size)
	copy(want[5*pageSize+10:], "end")
	if n != len(want) || !bytes.Equal(buf, want) {
		t.Fatal("hole does not read as zeros")
	}
	// Shrinking zeroes the tail of the last page, so growing shows zeros.
	mustWrite(t, h, pattern(pageSize, 1), 0)
	f.Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: 100}, root0)
	f.Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: 2 * pageSize}, root0)
	n, _ = h.Read(buf[:2*pageSize], 0)
	if n != 2*pageSize || !bytes.Equal(buf[:100], pattern(100, 1)) || !bytes.Equal(buf[100:n], make([]byte, n-100)) {
		t.Fatal("grown file shows old bytes")
	}
	if pages, _ := fs.Usage(); pages != 1 {
		t.Fatalf("pages %d after shrink, want 1", pages)
	}
	// O_TRUNC truncates, whatever the access mode (Linux handle_truncate).
	openTrunc(t, f, unix.O_RDONLY|unix.O_TRUNC)
	if st := mustStat(t, f); st.Size != 0 || st.Blocks != 0 {
		t.Fatalf("O_TRUNC left size %d blocks %d", st.Size, st.Blocks)
	}
}

// TestSeek checks lseek against what Linux's shmem_file_llseek returns for
// the same file: data in page 0, pages 1-2 a hole, 100 bytes in page 3.
func TestSeek(t *testing.T) {
	_, f, h := newFile(t, Options{})
	mustWrite(t, h, pattern(pageSize, 1), 0)
	mustWrite(t, h, pattern(100, 2), 3*pageSize)
	const size = 3*pageSize + 100
	holey := mustCreate(t, f.fs.root, "holey")
	holey.Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: 3 * pageSize}, root0)
	hh := mustOpen(t, holey, rw)
	cases := []struct {
		name   string
		h      *OpenFile
		pos    int64
		off    int64
		whence int
		want   int64
		err    syscall.Errno
	}{
		{"SEEK_SET", h, 0, 77, unix.SEEK_SET, 77, 0},
		{"SEEK_SET past end", h, 0, 1 << 40, unix.SEEK_SET, 1 << 40, 0},
		{"SEEK_SET negative: EINVAL", h, 0, -1, unix.SEEK_SET, 0, unix.EINVAL},
		{"SEEK_CUR", h, 100, 5, unix.SEEK_CUR, 105, 0},
		{"SEEK_CUR 0 keeps position", h, 123, 0, unix.SEEK_CUR, 123, 0},
		{"SEEK_CUR negative result: EINVAL", h, 100, -101, unix.SEEK_CUR, 0, unix.EINVAL},
		{"SEEK_CUR overflow: EINVAL", h, math.MaxInt64, 1, unix.SEEK_CUR, 0, unix.EINVAL},
		{"SEEK_END", h, 0, -100, unix.SEEK_END, size - 100, 0},
		{"SEEK_END negative result: EINVAL", h, 0, -size - 1, unix.SEEK_END, 0, unix.EINVAL},
		{"SEEK_DATA in data", h, 0, 10, unix.SEEK_DATA, 10, 0},
		{"SEEK_DATA in hole", h, 0, pageSize, unix.SEEK_DATA, 3 * pageSize, 0},
		{"SEEK_DATA in last page", h, 0, 3*pageSize + 50, unix.SEEK_DATA, 3*pageSize + 50, 0},
		{"SEEK_DATA at end: ENXIO", h, 0, size, unix.SEEK_DATA, 0, unix.ENXIO},
		{"SEEK_DATA negative: ENXIO", h, 0, -1, unix.SEEK_DATA, 0, unix.ENXIO},
		{"SEEK_HOLE in data", h, 0, 0, unix.SEEK_HOLE, pageSize, 0},
		{"SEEK_HOLE in hole", h, 0, pageSize + 5, unix.SEEK_HOLE, pageSize + 5, 0},
		{"SEEK_HOLE in last page: end of file", h, 0, 3 * pageSize, unix.SEEK_HOLE, size, 0},
		{"SEEK_HOLE at end: ENXIO", h, 0, size, unix.SEEK_HOLE, 0, unix.ENXIO},
		{"SEEK_HOLE negative: ENXIO", h, 0, -5, unix.SEEK_HOLE, 0, unix.ENXIO},
		{"SEEK_DATA in all-hole file: ENXIO", hh, 0, 0, unix.SEEK_DATA, 0, unix.ENXIO},
		{"SEEK_HOLE in all-hole file", hh, 0, 10, unix.SEEK_HOLE, 10, 0},
		{"unknown whence: EINVAL", h, 0, 0, 5, 0, unix.EINVAL},
	}
	for _, c := range cases {
		got, err := c.h.Llseek(c.pos, c.off, c.whence)
		if errno(err) != c.err || (err == nil && got != c.want) {
			t.Errorf("%s: got %d, %v; want %d, %v", c.name, got, err, c.want, c.err)
		}
	}
}

// TestSeekSparseFar checks the page map over a range that needs a tall
// tree: data far apart, found without visiting the holes between.
func TestSeekSparseFar(t *testing.T) {
	_, _, h := newFile(t, Options{})
	offs := []int64{0, 1 << 30, 1<<40 + 5, 1 << 52}
	for _, off := range offs {
		mustWrite(t, h, []byte("x"), off)
	}
	pos := int64(0)
	for i, off := range offs {
		d, err := h.Llseek(0, pos, unix.SEEK_DATA)
		if err != nil || d != max(pos, off&^pageMask) {
			t.Fatalf("data %d from %d: %d, %v", i, pos, d, err)
		}
		hole, err := h.Llseek(0, d, unix.SEEK_HOLE)
		want := (off&^pageMask + pageSize)
		if i == len(offs)-1 {
			want = off + 1 // the end of the file
		}
		if err != nil || hole != want {
			t.Fatalf("hole after %d: %d, %v, want %d", d, hole, err, want)
		}
		pos = hole
	}
}

func TestSizeLimit(t *testing.T) {
	fs, f, h := newFile(t, Options{SizeLimit: 3*pageSize - 100}) // rounds up to 3 pages
	big := pattern(5*pageSize, 1)
	if n, err := h.Write(big, 10); n != 3*pageSize-10 || err != nil {
		t.Fatalf("write over the limit: %d, %v, want a short count", n, err)
	}
	if n, err := h.Write(big[:10], 4*pageSize); n != 0 || errno(err) != unix.ENOSPC {
		t.Fatalf("write into a new page: %d, %v, want ENOSPC", n, err)
	}
	if n, err := h.WriteIter(iov.Buf(big[:pageSize]), pageSize+7); n != pageSize || err != nil {
		t.Fatalf("overwrite within held pages: %d, %v", n, err)
	}
	if off, n, err := h.Append(iov.Buf(big[:10])); off != 3*pageSize || n != 0 || errno(err) != unix.ENOSPC {
		t.Fatalf("append past the limit: %d, %d, %v", off, n, err)
	}
	// A second file shares the limit; unlinking an open file frees nothing
	// until its last handle goes.
	g := mustCreate(t, fs.root, "g")
	hg := mustOpen(t, g, rw)
	if _, err := hg.Write(big[:1], 0); errno(err) != unix.ENOSPC {
		t.Fatalf("second file: %v, want ENOSPC", err)
	}
	fs.root.Unlink("f", root0)
	if _, err := hg.Write(big[:1], 0); errno(err) != unix.ENOSPC {
		t.Fatalf("after unlink of open file: %v, want ENOSPC", err)
	}
	h.Release()
	if n, err := hg.Write(big, 0); n != 3*pageSize || err != nil {
		t.Fatalf("after close: %d, %v", n, err)
	}
	if st := mustStat(t, f); st.Nlink != 0 {
		t.Fatalf("nlink %d", st.Nlink)
	}
	// Truncation gives pages back.
	g.Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: pageSize}, root0)
	if pages, _ := fs.Usage(); pages != 1 {
		t.Fatalf("pages %d after truncate, want 1", pages)
	}
}

func TestMaxFileSize(t *testing.T) {
	_, f, h := newFile(t, Options{})
	if n, err := h.Write([]byte("x"), math.MaxInt64); n != 0 || errno(err) != unix.EFBIG {
		t.Fatalf("write at the maximum: %d, %v, want EFBIG", n, err)
	}
	if n, err := h.Write([]byte("0123456789"), math.MaxInt64-4); n != 4 || err != nil {
		t.Fatalf("write across the maximum: %d, %v, want 4", n, err)
	}
	if st := mustStat(t, f); st.Size != math.MaxInt64 || st.Blocks != 8 {
		t.Fatalf("size %d blocks %d", st.Size, st.Blocks)
	}
	buf := make([]byte, 10)
	if n, _ := h.Read(buf, math.MaxInt64-6); n != 6 || string(buf[:6]) != "\x00\x000123" {
		t.Fatalf("read at the end: %d %q", n, buf[:n])
	}
	if err := f.Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: 0}, root0); err != nil {
		t.Fatal(err)
	}
	if f.pages.top.Load() != nil || f.pages.n != 0 {
		t.Fatal("truncate to 0 left the tree")
	}
}

func TestAppend(t *testing.T) {
	_, f, h := newFile(t, Options{})
	const writers, each = 4, 200
	var wg sync.WaitGroup
	offs := make([][]int64, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := bytes.Repeat([]byte{byte('a' + w)}, 37)
			for range each {
				off, n, err := h.Append(iov.Vec([][]byte{rec[:10], rec[10:]}))
				if n != len(rec) || err != nil {
					t.Errorf("append: %d, %v", n, err)
					return
				}
				offs[w] = append(offs[w], off)
			}
		}()
	}
	wg.Wait()
	if st := mustStat(t, f); st.Size != writers*each*37 {
		t.Fatalf("size %d", st.Size)
	}
	buf := make([]byte, 37)
	for w, list := range offs {
		for _, off := range list {
			h.Read(buf, off)
			if !bytes.Equal(buf, bytes.Repeat([]byte{byte('a' + w)}, 37)) {
				t.Fatalf("record at %d torn: %q", off, buf)
			}
		}
	}
}

// TestNoAllocs checks that the hot paths do not allocate: reads, and
// writes that overwrite pages the file holds.
func TestNoAllocs(t *testing.T) {
	_, _, h := newFile(t, Options{})
	mustWrite(t, h, pattern(256*pageSize, 1), 0)
	buf := make([]byte, 4096)
	segs := make([][]byte, 16)
	big := make([]byte, 16*4096)
	for i := range segs {
		segs[i] = big[i*4096 : (i+1)*4096]
	}
	cases := []struct {
		name string
		fn   func()
	}{
		{"Read 4KiB", func() { h.Read(buf, 0) }},
		{"Read 4KiB unaligned (pread)", func() { h.Read(buf, 12345) }},
		{"ReadIter 4KiB", func() { h.ReadIter(iov.Buf(buf), 8192) }},
		{"ReadIter 16x4KiB", func() { h.ReadIter(iov.Vec(segs), 3) }},
		{"Read 64KiB across runs", func() { h.Read(big, 56*pageSize+9) }},
		{"ReadIter 16x4KiB across runs", func() { h.ReadIter(iov.Vec(segs), 120*pageSize) }},
		{"Write 4KiB overwrite", func() { h.Write(buf, 4096) }},
		{"Write 4KiB unaligned overwrite", func() { h.Write(buf, 777) }},
		{"WriteIter 4KiB overwrite", func() { h.WriteIter(iov.Buf(buf), 4096) }},
		{"WriteIter 16x4KiB overwrite", func() { h.WriteIter(iov.Vec(segs), 5) }},
		{"Llseek SEEK_DATA", func() { h.Llseek(0, 100, unix.SEEK_DATA) }},
		{"Llseek SEEK_HOLE", func() { h.Llseek(0, 100, unix.SEEK_HOLE) }},
		{"Read past end", func() { h.Read(buf, 1<<30) }},
	}
	for _, c := range cases {
		if a := testing.AllocsPerRun(100, c.fn); a != 0 {
			t.Errorf("%s: %v allocs per run", c.name, a)
		}
	}
}

// openTrunc opens f with O_TRUNC as the VFS does it: Open, then Setattr
// with size 0 (Linux's handle_truncate).
func openTrunc(t testing.TB, f *File, flags int) *OpenFile {
	t.Helper()
	h := mustOpen(t, f, flags)
	if err := f.Setattr(vfs.SetAttr{Valid: vfs.SetSize | vfs.SetMtime, Mtime: time.Now()}, root0); err != nil {
		t.Fatal(err)
	}
	return h
}
