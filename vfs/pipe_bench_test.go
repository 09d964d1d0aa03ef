package vfs_test

import "testing"

// BenchmarkPipeWriteRead is the cost of a write and a read that do not
// block, in one goroutine: the pipe's share of every transfer.
func BenchmarkPipeWriteRead(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
	}{{"1B", 1}, {"4KiB", 4096}, {"64KiB", 65536}} {
		b.Run(c.name, func(b *testing.B) {
			p := newPipeProc(b)
			r, w := pipe2(b, p, 0)
			buf := make([]byte, c.size)
			b.SetBytes(int64(c.size))
			b.ReportAllocs()
			for b.Loop() {
				p.Write(w, buf)
				p.Read(r, buf)
			}
		})
	}
}
