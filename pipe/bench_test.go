package pipe

import (
	"sync"
	"testing"

	"github.com/iovfs/iovfs/iov"
)

// BenchmarkPingPong is a 1-byte round trip through an echo goroutine
// over two pipes (two blocked reads woken by writes), without the
// descriptor layer, against the same over two unbuffered channels.
func BenchmarkPingPong(b *testing.B) {
	b.Run("pipe", benchPingPong)
	b.Run("chan", benchPingPongChan)
}

func benchPingPongChan(b *testing.B) {
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

// floorPipe is the floor of the pipe's design for a round trip: a bare
// mutex and one parked reader to hand the bytes to, and nothing else (no
// ring, no ends, no flags, no atomicity rules). A read waits only while
// nothing is held; a write copies into the waiting reader's buffer and
// wakes it, or holds its bytes (at most len(held)) for the next read.
type floorPipe struct {
	mu   sync.Mutex
	dst  []byte // the waiting reader's buffer, if waiting
	wait bool
	n    int // bytes held
	held [64]byte
	ch   chan int
}

func newFloorPipe() *floorPipe { return &floorPipe{ch: make(chan int, 1)} }

func (f *floorPipe) read(b []byte) int {
	f.mu.Lock()
	if f.n > 0 {
		n := copy(b, f.held[:f.n])
		f.n = 0
		f.mu.Unlock()
		return n
	}
	f.dst, f.wait = b, true
	f.mu.Unlock()
	return <-f.ch
}

func (f *floorPipe) write(b []byte) {
	f.mu.Lock()
	if f.wait {
		n := copy(f.dst, b)
		f.dst, f.wait = nil, false
		f.ch <- n
		f.mu.Unlock()
		return
	}
	f.n = copy(f.held[:], b)
	f.mu.Unlock()
}

// BenchmarkPingPongFloor sets the pipe's 1-byte round trip (pipe)
// beside the floor of its design (floor: floorPipe, a mutex and a parked
// reader) and two unbuffered channels (chan), in one benchmark so that
// benchstat compares the three from one run.
func BenchmarkPingPongFloor(b *testing.B) {
	b.Run("pipe", benchPingPong)
	b.Run("floor", func(b *testing.B) {
		there, back := newFloorPipe(), newFloorPipe()
		done := make(chan struct{})
		go func() {
			buf := make([]byte, 1)
			for {
				n := there.read(buf)
				if buf[0] == 0xff {
					close(done)
					return
				}
				back.write(buf[:n])
			}
		}()
		buf := make([]byte, 1)
		b.ReportAllocs()
		for b.Loop() {
			there.write(buf)
			back.read(buf)
		}
		there.write([]byte{0xff})
		<-done
	})
	b.Run("chan", benchPingPongChan)
}
