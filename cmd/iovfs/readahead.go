package main

import (
	"io"
	"runtime"
	"sync"

	"github.com/iovfs/iovfs/vfs"
)

// Reading a directory's host files ahead of the copy.
//
// Into a FAT image the walk copies every file itself (copier.inline):
// the volume serialises its writers, so workers would only wait. The
// host side of each file (open, fstat, pread, close) is then a third
// of the copy's time, spent while the volume waits. A readAhead does
// that part on a goroutine of its own, one directory at a time, in the
// walk's order, and hands the files over in batches, so the two halves
// run on two processors and the walk blocks (a thread wake-up) about
// once per batch instead of once per file.

const (
	// raArena is the size of a batch's buffer, which holds the whole
	// contents of the batch's files; raMaxFiles bounds a batch's count.
	raArena    = 256 << 10
	raMaxFiles = 64
	// raWhole is the largest file read ahead whole; a larger one is
	// handed over open, and the walk reads it.
	raWhole = 128 << 10
)

// readFile is one regular file read ahead: its status as fstat gave
// it, and either its contents (data, f nil) or, for a file larger than
// raWhole, the file open for reading (f). op names the step that
// failed ("open", "stat" or "read") when err is set; notReg says the
// name opened a file that is not regular any more.
type readFile struct {
	st     vfs.Stat
	data   []byte
	f      file
	op     string
	err    error
	notReg bool
}

type raBatch struct {
	files []readFile
	arena []byte
}

// readAhead reads the files at paths, in order, on its own goroutine.
// next returns them in the same order; close must follow the last
// next (or an abandoned walk) and closes what was not taken.
type readAhead struct {
	c     *copier
	full  chan *raBatch
	quit  chan struct{}
	done  sync.WaitGroup
	cur   *raBatch
	i     int
	taken int
}

// readAheadWorth says whether reading ahead pays: with one processor
// the two halves would only take turns.
func readAheadWorth(nfiles int) bool {
	return nfiles >= 4 && runtime.GOMAXPROCS(0) > 1
}

func (c *copier) startReadAhead(s side, paths []string) *readAhead {
	r := &readAhead{c: c, full: make(chan *raBatch, 1), quit: make(chan struct{})}
	r.done.Go(func() { r.read(s, paths) })
	return r
}

// arena takes a batch buffer from the copier's free list, or makes one.
func (c *copier) arena() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.arenas); n > 0 {
		a := c.arenas[n-1]
		c.arenas = c.arenas[:n-1]
		return a
	}
	return make([]byte, raArena)
}

func (c *copier) freeArena(a []byte) {
	c.mu.Lock()
	c.arenas = append(c.arenas, a)
	c.mu.Unlock()
}

func (r *readAhead) read(s side, paths []string) {
	defer close(r.full)
	b := &raBatch{arena: r.c.arena()[:0]}
	limit := 4 // the first batch is small, so the walk starts early
	send := func() bool {
		select {
		case r.full <- b:
		case <-r.quit:
			closeFiles(b)
			r.c.freeArena(b.arena[:cap(b.arena)])
			return false
		}
		b, limit = &raBatch{arena: r.c.arena()[:0]}, raMaxFiles
		return true
	}
	for _, p := range paths {
		rf := openOne(s, p)
		if rf.f != nil && rf.st.Size <= raWhole {
			if int64(cap(b.arena)-len(b.arena)) < rf.st.Size && !send() {
				rf.f.Close()
				return
			}
			rf.fill(&b.arena)
		}
		b.files = append(b.files, rf)
		if len(b.files) == limit && !send() {
			return
		}
	}
	if len(b.files) > 0 {
		send()
	} else {
		r.c.freeArena(b.arena[:cap(b.arena)])
	}
}

// openOne opens and stats one file; a regular one is returned open.
func openOne(s side, path string) readFile {
	f, err := s.open(path)
	if err != nil {
		return readFile{op: "open", err: err}
	}
	st, err := f.fstat()
	if err != nil {
		f.Close()
		return readFile{op: "stat", err: err}
	}
	if !st.IsRegular() {
		f.Close()
		return readFile{st: st, notReg: true}
	}
	return readFile{st: st, f: f}
}

// fill reads the open file's st.Size bytes (fewer if it shrank) to the
// end of *arena, which has room for them, and closes it.
func (rf *readFile) fill(arena *[]byte) {
	a := *arena
	buf := a[len(a) : len(a)+int(rf.st.Size)]
	n := 0
	for n < len(buf) {
		m, err := rf.f.ReadAt(buf[n:], int64(n))
		if m > 0 {
			n += m
		}
		if err != nil && err != io.EOF {
			rf.op, rf.err = "read", err
			break
		}
		if m <= 0 {
			break // the file shrank: what is there is copied
		}
	}
	rf.f.Close()
	rf.f = nil
	*arena = a[:len(a)+n]
	rf.data = buf[:n:n]
}

func closeFiles(b *raBatch) {
	for _, f := range b.files {
		if f.f != nil {
			f.f.Close()
		}
	}
}

// next returns the next file, in the order of the paths.
func (r *readAhead) next() *readFile {
	for r.cur == nil || r.i == len(r.cur.files) {
		if r.cur != nil {
			r.c.freeArena(r.cur.arena[:cap(r.cur.arena)])
		}
		b, ok := <-r.full
		if !ok {
			r.cur = nil
			return &readFile{op: "open", err: io.ErrUnexpectedEOF}
		}
		r.cur, r.i = b, 0
	}
	f := &r.cur.files[r.i]
	r.i++
	r.taken++
	return f
}

// close stops the reader and closes the files it opened that the walk
// did not take.
func (r *readAhead) close() {
	close(r.quit)
	if r.cur != nil {
		for _, f := range r.cur.files[r.i:] {
			if f.f != nil {
				f.f.Close()
			}
		}
		r.c.freeArena(r.cur.arena[:cap(r.cur.arena)])
		r.cur = nil
	}
	for b := range r.full {
		closeFiles(b)
		r.c.freeArena(b.arena[:cap(b.arena)])
	}
	r.done.Wait()
}
