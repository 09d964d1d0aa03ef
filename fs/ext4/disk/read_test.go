package disk

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// benchImage builds a 4 KiB-block image holding one 16 MiB file and opens
// it from memory, as the DAX path will see it.
func benchImage(tb testing.TB) (*Volume, *Inode, []byte) {
	tb.Helper()
	src := tb.TempDir()
	data := randBytes(rand.New(rand.NewSource(3)), 16<<20)
	if err := os.WriteFile(filepath.Join(src, "file"), data, 0o644); err != nil {
		tb.Fatal(err)
	}
	img := mkfs(tb, src, "64M", "-t", "ext4", "-b", "4096")
	b, err := os.ReadFile(img)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := Open(BytesDevice(b), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	in, err := resolve(v, "file")
	if err != nil {
		tb.Fatal(err)
	}
	return v, in, data
}

func TestReadAtAllocs(t *testing.T) {
	v, in, data := benchImage(t)
	var c ExtentCache
	buf := make([]byte, 4096)
	if _, err := v.ReadAt(in, &c, buf, 8192); err != nil { // warms the cache
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := v.ReadAt(in, &c, buf, 8192); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadAt of 4 KiB inside a cached extent: %v allocs, want 0", allocs)
	}
	if !bytes.Equal(buf, data[8192:8192+4096]) {
		t.Error("wrong bytes")
	}
	m, _ := v.MapBlocks(in, &c, 2)
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := v.MapBlocks(in, &c, m.Logical+m.Len-1); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("MapBlocks cache hit: %v allocs, want 0", allocs)
	}
}

func TestReadAtEdges(t *testing.T) {
	v, in, data := benchImage(t)
	buf := make([]byte, 100)
	if n, err := v.ReadAt(in, nil, buf, int64(len(data))); n != 0 || err != nil {
		t.Errorf("read at EOF: %d, %v; want 0, nil", n, err)
	}
	if n, err := v.ReadAt(in, nil, buf, int64(len(data))+5000); n != 0 || err != nil {
		t.Errorf("read past EOF: %d, %v; want 0, nil", n, err)
	}
	if n, err := v.ReadAt(in, nil, buf, int64(len(data))-10); n != 10 || err != nil || !bytes.Equal(buf[:10], data[len(data)-10:]) {
		t.Errorf("short read at the end: %d, %v", n, err)
	}
	if _, err := v.ReadAt(in, nil, buf, -1); err == nil {
		t.Error("negative offset accepted")
	}
	root, _ := v.Inode(v.Root())
	if _, err := v.ReadAt(root, nil, buf, 0); err == nil {
		t.Error("ReadAt on a directory succeeded")
	}
}

// BenchmarkExt4ReadAt reads 4 KiB through ReadAt with a per-file
// ExtentCache, from an in-memory image.
func BenchmarkExt4ReadAt(b *testing.B) {
	v, in, data := benchImage(b)
	const size = 4096
	n := int64(len(data) / size)
	b.Run("4KiB/seq", func(b *testing.B) {
		var c ExtentCache
		buf := make([]byte, size)
		b.SetBytes(size)
		b.ReportAllocs()
		i := int64(0)
		for b.Loop() {
			if _, err := v.ReadAt(in, &c, buf, i*size); err != nil {
				b.Fatal(err)
			}
			if i++; i == n {
				i = 0
			}
		}
	})
	b.Run("4KiB/rand", func(b *testing.B) {
		var c ExtentCache
		buf := make([]byte, size)
		r := rand.New(rand.NewSource(1))
		offs := make([]int64, 4096)
		for i := range offs {
			offs[i] = r.Int63n(int64(len(data) - size))
		}
		b.SetBytes(size)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := v.ReadAt(in, &c, buf, offs[i&4095]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// TestConcurrentReads shares one Volume between goroutines, each with its
// own ExtentCache; run it with -race.
func TestConcurrentReads(t *testing.T) {
	v, _, data := benchImage(t)
	done := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func(seed int64) {
			r := rand.New(rand.NewSource(seed))
			var c ExtentCache
			buf := make([]byte, 5000)
			for i := 0; i < 200; i++ {
				in, err := resolve(v, "file") // shared inode cache
				if err != nil {
					done <- err
					return
				}
				off := r.Int63n(int64(len(data)))
				n, err := v.ReadAt(in, &c, buf, off)
				if err != nil || !bytes.Equal(buf[:n], data[off:off+int64(n)]) {
					done <- fmt.Errorf("read at %d: n=%d err=%v or wrong bytes", off, n, err)
					return
				}
			}
			done <- nil
		}(int64(g))
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkExt4MapBlocks: the mapping step alone, as the DAX path uses it;
// "hit" is the cached bounds check, "miss" walks the extent tree each time.
func BenchmarkExt4MapBlocks(b *testing.B) {
	v, in, _ := benchImage(b)
	b.Run("hit", func(b *testing.B) {
		var c ExtentCache
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			if _, err := v.MapBlocks(in, &c, i&1023); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			if _, err := v.MapBlocks(in, nil, i&1023); err != nil {
				b.Fatal(err)
			}
		}
	})
}
