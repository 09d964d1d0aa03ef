package pipe

import (
	"testing"

	"github.com/iovfs/iovfs/iov"
)

// BenchmarkPingPong is a 1-byte round trip through an echo goroutine
// over two pipes: two blocked reads woken by writes.
func BenchmarkPingPong(b *testing.B) {
	there, back := NewPair(), NewPair()
	go func() {
		buf := make([]byte, 1)
		for {
			n, _ := there.Read(iov.Buf(buf), false)
			if n == 0 {
				back.Close(false, true)
				return
			}
			back.Write(iov.Buf(buf[:n]), false, false)
		}
	}()
	buf := make([]byte, 1)
	b.ReportAllocs()
	for b.Loop() {
		there.Write(iov.Buf(buf), false, false)
		back.Read(iov.Buf(buf), false)
	}
	there.Close(false, true)
	back.Read(iov.Buf(buf), false)
}
