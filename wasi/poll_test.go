package wasi

import (
	"encoding/binary"
	"testing"
	"time"
)

// sub writes a subscription at at: a clock (relative timeout ns) or an
// fd_read/fd_write on fd.
func (g *guest) sub(at uint32, userdata uint64, typ uint8, fdOrClock uint32, timeout uint64) {
	b := make([]byte, subscriptionSize)
	binary.LittleEndian.PutUint64(b, userdata)
	b[8] = typ
	binary.LittleEndian.PutUint32(b[16:], fdOrClock)
	if typ == eventClock {
		binary.LittleEndian.PutUint64(b[24:], timeout)
	}
	g.mem.Write(at, b)
}

// TestPollOneoff: a clock alone sleeps its timeout; an empty pipe is not
// readable, so the clock fires; a pipe with bytes is readable and the
// clock has not fired; a pipe is writable; a closed descriptor reports
// EBADF in its event; no subscriptions is EINVAL.
func TestPollOneoff(t *testing.T) {
	p := newProc(t)
	r, w, err := p.Pipe2(0)
	if err != nil {
		t.Fatal(err)
	}
	g := newGuest(t, p, Config{}, nil)
	const in, out, nev = 1000, 2000, 3000
	event := func(i uint32) (ud uint64, errno uint16, typ uint8) {
		b := g.bytes(out+i*eventSize, eventSize)
		return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint16(b[8:]), b[10]
	}

	g.sub(in, 7, eventClock, clockMonotonic, uint64(20*time.Millisecond))
	start := time.Now()
	if e := g.call("poll_oneoff", in, out, 1, nev); e != 0 || g.u32(nev) != 1 {
		t.Fatalf("clock: errno %d, %d events", e, g.u32(nev))
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("clock of 20ms returned after %v", d)
	}
	if ud, e, typ := event(0); ud != 7 || e != 0 || typ != eventClock {
		t.Fatalf("clock event: userdata %d errno %d type %d", ud, e, typ)
	}

	g.sub(in, 1, eventFdRead, uint32(r), 0)
	g.sub(in+subscriptionSize, 2, eventClock, clockMonotonic, uint64(10*time.Millisecond))
	if e := g.call("poll_oneoff", in, out, 2, nev); e != 0 || g.u32(nev) != 1 {
		t.Fatalf("empty pipe: errno %d, %d events", e, g.u32(nev))
	}
	if ud, _, typ := event(0); ud != 2 || typ != eventClock {
		t.Fatalf("empty pipe: event %d type %d, want the clock", ud, typ)
	}

	p.Write(w, []byte("x"))
	g.sub(in+subscriptionSize, 2, eventClock, clockMonotonic, uint64(10*time.Second))
	start = time.Now()
	if e := g.call("poll_oneoff", in, out, 2, nev); e != 0 || g.u32(nev) != 1 {
		t.Fatalf("readable pipe: errno %d, %d events", e, g.u32(nev))
	}
	if ud, e, typ := event(0); ud != 1 || e != 0 || typ != eventFdRead {
		t.Fatalf("readable pipe: event %d errno %d type %d", ud, e, typ)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("a readable pipe waited for the clock")
	}

	g.sub(in, 3, eventFdWrite, uint32(w), 0)
	g.sub(in+subscriptionSize, 4, eventFdRead, 99, 0)
	if e := g.call("poll_oneoff", in, out, 2, nev); e != 0 || g.u32(nev) != 2 {
		t.Fatalf("writable pipe and bad fd: errno %d, %d events", e, g.u32(nev))
	}
	if ud, e, typ := event(0); ud != 3 || e != 0 || typ != eventFdWrite {
		t.Fatalf("writable pipe: event %d errno %d type %d", ud, e, typ)
	}
	if ud, e, _ := event(1); ud != 4 || uint32(e) != errnoBadf {
		t.Fatalf("closed fd: event %d errno %d, want EBADF", ud, e)
	}

	if e := g.call("poll_oneoff", in, out, 0, nev); e != errnoInval {
		t.Fatalf("no subscriptions: errno %d, want EINVAL", e)
	}
}
