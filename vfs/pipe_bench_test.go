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

// BenchmarkPipePingPong is a 1-byte round trip through an echo goroutine
// over two pipes, and the same over two unbuffered channels of []byte:
// the cost of a blocked read woken by a write, twice.
func BenchmarkPipePingPong(b *testing.B) {
	b.Run("iovfs", func(b *testing.B) {
		p := newPipeProc(b)
		r1, w1 := pipe2(b, p, 0)
		r2, w2 := pipe2(b, p, 0)
		go func() {
			buf := make([]byte, 1)
			for {
				n, err := p.Read(r1, buf)
				if n == 0 || err != nil {
					p.Close(w2)
					return
				}
				p.Write(w2, buf[:n])
			}
		}()
		buf := make([]byte, 1)
		b.ReportAllocs()
		for b.Loop() {
			p.Write(w1, buf)
			p.Read(r2, buf)
		}
		p.Close(w1)
		p.Read(r2, buf)
		p.Close(r1)
		p.Close(r2)
	})
	b.Run("chan", func(b *testing.B) {
		there, back := make(chan []byte), make(chan []byte)
		go func() {
			for m := range there {
				back <- m
			}
			close(back)
		}()
		buf := make([]byte, 1)
		b.ReportAllocs()
		for b.Loop() {
			there <- buf
			buf = <-back
		}
		close(there)
		<-back
	})
}
