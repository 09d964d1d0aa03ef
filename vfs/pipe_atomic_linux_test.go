package vfs_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// atomicRecords is the records each writer sends: the 100,000 in
// a normal run, fewer with -short and under -race (README, Testing).
func atomicRecords() int {
	switch {
	case raceEnabled:
		return 2000
	case testing.Short():
		return 10000
	}
	return 100000
}

const atomicWriters = 16

// atomicPattern is the bytes each writer's records are cut from.
var atomicPattern = func() [atomicWriters][]byte {
	var p [atomicWriters][]byte
	r := rand.New(rand.NewPCG(7, 7))
	for w := range p {
		p[w] = make([]byte, 8192)
		for i := range p[w] {
			p[w][i] = byte(r.Uint32())
		}
	}
	return p
}()

// record s of writer w: its length (1 to 4096, from the writer's own
// length stream) and its bytes: w, then a slice of the writer's pattern.
func recordOffset(s int) int { return s * 61 % 4096 }

// runAtomicity has 16 goroutines each writev records of 1 to 4096 bytes
// split into 1 to 8 segments into one pipe, and one reader check that
// every record arrives whole and in its writer's order.
func runAtomicity(t *testing.T, records int, writev func([][]byte) (int, error), read func([]byte) (int, error), closeW func()) {
	var wg sync.WaitGroup
	errs := make(chan string, atomicWriters)
	for w := range atomicWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lens := rand.New(rand.NewPCG(uint64(w), 1))
			cuts := rand.New(rand.NewPCG(uint64(w), 2))
			rec := make([]byte, 4096)
			segs := make([][]byte, 0, 8)
			var at [8]int
			for s := range records {
				l := 1 + lens.IntN(4096)
				rec[0] = byte(w)
				copy(rec[1:l], atomicPattern[w][recordOffset(s):])
				k := 1 + cuts.IntN(8)
				for i := range k - 1 {
					at[i] = cuts.IntN(l + 1)
				}
				c := at[:k-1]
				sortInts(c)
				segs = segs[:0]
				prev := 0
				for _, x := range c {
					segs = append(segs, rec[prev:x])
					prev = x
				}
				segs = append(segs, rec[prev:l])
				if n, err := writev(segs); n != l || err != nil {
					errs <- fmt.Sprintf("writev of a record returned %d of %d: %v", n, l, err)
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		closeW()
	}()

	var seq [atomicWriters]int
	var next [atomicWriters]int // length of the writer's next record, 0 if not drawn
	var lens [atomicWriters]*rand.Rand
	for w := range lens {
		lens[w] = rand.New(rand.NewPCG(uint64(w), 1))
	}
	buf := make([]byte, 256<<10)
	start, end := 0, 0
	total := 0
	for {
		if start == end {
			start, end = 0, 0
		} else if len(buf)-end < 8192 {
			end = copy(buf, buf[start:end])
			start = 0
		}
		n, err := read(buf[end:])
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if n == 0 {
			break
		}
		end += n
		total += n
		for start < end {
			w := int(buf[start])
			if w >= atomicWriters {
				t.Fatalf("byte %d of the stream starts no record (%#x): a record was split", total-(end-start), w)
			}
			if next[w] == 0 {
				if seq[w] == records {
					t.Fatalf("writer %d: more than %d records", w, records)
				}
				next[w] = 1 + lens[w].IntN(4096)
			}
			l := next[w]
			if end-start < l {
				break
			}
			want := atomicPattern[w][recordOffset(seq[w]) : recordOffset(seq[w])+l-1]
			if !bytes.Equal(buf[start+1:start+l], want) {
				t.Fatalf("writer %d record %d (%d bytes) arrived mixed with other bytes", w, seq[w], l)
			}
			start += l
			seq[w]++
			next[w] = 0
		}
	}
	select {
	case e := <-errs:
		t.Fatal(e)
	default:
	}
	if start != end {
		t.Fatalf("%d bytes left after the last record", end-start)
	}
	for w, s := range seq {
		if s != records {
			t.Fatalf("writer %d: %d records arrived, want %d", w, s, records)
		}
	}
	t.Logf("%d writers x %d records, %d bytes: every record whole", atomicWriters, records, total)
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// TestPipeAtomicity: PIPE_BUF atomicity of vectored writes on an iovfs
// pipe.
func TestPipeAtomicity(t *testing.T) {
	checkGoroutines(t)
	p := newPipeProc(t)
	r, w := pipe2(t, p, 0)
	defer p.Close(r)
	runAtomicity(t, atomicRecords(),
		func(v [][]byte) (int, error) { return p.Writev(w, v) },
		func(b []byte) (int, error) { return p.Read(r, b) },
		func() { p.Close(w) })
}

// TestPipeAtomicityHost runs the same test on a host pipe: the oracle for
// the test itself (Linux's pipe_write keeps such writes whole).
func TestPipeAtomicityHost(t *testing.T) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	runAtomicity(t, atomicRecords(),
		func(v [][]byte) (int, error) { return fixHost(unix.Writev(fds[1], v)) },
		func(b []byte) (int, error) { return fixHost(unix.Read(fds[0], b)) },
		func() { unix.Close(fds[1]) })
}
