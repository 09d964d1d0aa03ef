package pipe

import (
	"testing"

	"github.com/iovfs/iovfs/iov"
)

// BenchmarkPingPong is a 1-byte round trip through an echo goroutine
// over two pipes (two blocked reads woken by writes), without the
// descriptor layer, against the same over two unbuffered channels.
func BenchmarkPingPong(b *testing.B) {
	b.Run("pipe", benchPingPong)
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

func benchPingPong(b *testing.B) {
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
