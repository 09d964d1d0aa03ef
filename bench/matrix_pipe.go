package bench

// The pipe driver of the matrix experiment. pread and pwrite on a pipe are
// ESPIPE, so a pipe cell compares one readv of N segments with N reads
// (writev with N writes) of the same sizes, and the offsets the matrix
// passes are ignored. Two pipes of one process are measured: the matrix
// reads from the first, which a feeder goroutine keeps full with
// pipeFeedChunk-byte writes, and writes into the second, which a drainer
// goroutine empties with pipeFeedChunk-byte reads. Both peers block in the
// pipe when they are ahead (the feeder on a full pipe, the drainer on an
// empty one), so they cost the measured goroutine nothing then; when a
// cell moves bytes faster than its peer, both of its variants wait for it
// alike.
//
// A pipe read returns what the pipe holds, not what was asked for, so when
// the feeder has fallen behind a read can be short. Each variant then
// reads on until its call's bytes are complete (the vectored variant with
// readv over the segments still to fill), so both variants always move
// the same bytes of the stream; the extra calls are counted in neither
// variant's favour.

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/vfs"
)

const (
	// pipeFeedChunk is the size of the feeder's writes and the drainer's
	// reads; the feeder's stream repeats matrixData(pipeFeedChunk).
	pipeFeedChunk = 64 << 10
	// pipeMatrixSize is the capacity of both pipes: Linux's default
	// pipe-max-size, the largest an unprivileged process may set.
	pipeMatrixSize = 1 << 20
)

// pipeMatrix is the state behind the pipe target.
type pipeMatrix struct {
	p *vfs.Proc
	// rd is the read end of the fed pipe, wr the write end of the drained
	// one; feedW and drainR are their peers' ends, used only by the
	// goroutines.
	rd, feedW, drainR, wr int
	// drain is called by the drainer with every piece it reads, in order
	// (tests record the stream); it must not keep the slice.
	drain func([]byte)
	wg    sync.WaitGroup
	// feedErr and drainErr are the goroutines' last errors, read after
	// wg.Wait.
	feedErr, drainErr error
}

func matrixPipe(*matrixEnv) (*matrixTarget, error) { return newPipeTarget(nil) }

// newPipeTarget starts the two pipes and their peers; drain, if not nil,
// sees the bytes the drainer reads.
func newPipeTarget(drain func([]byte)) (*matrixTarget, error) {
	p, err := iovfs.New()
	if err != nil {
		return nil, err
	}
	m := &pipeMatrix{p: p, drain: drain}
	if m.rd, m.feedW, err = p.Pipe2(unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	if m.drainR, m.wr, err = p.Pipe2(unix.O_CLOEXEC); err != nil {
		return nil, errors.Join(err, p.Close(m.rd), p.Close(m.feedW))
	}
	for _, fd := range []int{m.rd, m.wr} {
		if _, err := p.Fcntl(fd, unix.F_SETPIPE_SZ, pipeMatrixSize); err != nil {
			return nil, errors.Join(fmt.Errorf("F_SETPIPE_SZ: %w", err), m.closeAll())
		}
	}
	// Fill both pipes once before the peers start, so that every page of
	// their rings is allocated now rather than in the first measured
	// calls (a pipe keeps its pages; Pipe.Write allocates a slot's page on
	// its first use).
	chunk := matrixData(pipeFeedChunk)
	for _, fd := range []int{m.feedW, m.wr} {
		for range pipeMatrixSize / pipeFeedChunk {
			if n, err := p.Write(fd, chunk); n != len(chunk) {
				return nil, errors.Join(fmt.Errorf("pipe: fill: %d of %d bytes: %v", n, len(chunk), err), m.closeAll())
			}
		}
	}
	m.wg.Add(2)
	go m.feed()
	go m.drainLoop()
	return &matrixTarget{
		preadv:  func(v [][]byte, _ int64) (int, error) { return m.readv(v) },
		pread:   func(b []byte, _ int64) (int, error) { return m.read(b) },
		pwritev: func(v [][]byte, _ int64) (int, error) { return p.Writev(m.wr, v) },
		pwrite:  func(b []byte, _ int64) (int, error) { return p.Write(m.wr, b) },
		native:  true,
		close:   m.close,
	}, nil
}

// feed writes the repeating stream into the fed pipe until its reader
// closes (EPIPE).
func (m *pipeMatrix) feed() {
	defer m.wg.Done()
	chunk := matrixData(pipeFeedChunk)
	for {
		if _, err := m.p.Write(m.feedW, chunk); err != nil {
			if !errors.Is(err, unix.EPIPE) {
				m.feedErr = err
			}
			return
		}
	}
}

// drainLoop reads the drained pipe until its writer closes (end of file).
func (m *pipeMatrix) drainLoop() {
	defer m.wg.Done()
	buf := make([]byte, pipeFeedChunk)
	for {
		n, err := m.p.Read(m.drainR, buf)
		if err != nil {
			m.drainErr = err
			return
		}
		if n == 0 {
			return
		}
		if m.drain != nil {
			m.drain(buf[:n])
		}
	}
}

// read fills b from the fed pipe: one read, and more only if the pipe ran
// short.
func (m *pipeMatrix) read(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := m.p.Read(m.rd, b[done:])
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, nil
		}
		done += n
	}
	return done, nil
}

// readv fills the segments of v from the fed pipe: one readv, and, if the
// pipe ran short, the rest of a segment it stopped inside with read and
// the segments after it with readv again.
func (m *pipeMatrix) readv(v [][]byte) (int, error) {
	done := 0
	for len(v) > 0 {
		n, err := m.p.Readv(m.rd, v)
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, nil
		}
		done += n
		for len(v) > 0 && n >= len(v[0]) {
			n -= len(v[0])
			v = v[1:]
		}
		if n > 0 {
			k, err := m.read(v[0][n:])
			done += k
			if err != nil || k < len(v[0])-n {
				return done, err
			}
			v = v[1:]
		}
	}
	return done, nil
}

// close closes the measured ends, which ends both peers, waits for them
// and closes theirs.
func (m *pipeMatrix) close() error {
	err := errors.Join(m.p.Close(m.rd), m.p.Close(m.wr))
	m.wg.Wait()
	return errors.Join(err, m.p.Close(m.feedW), m.p.Close(m.drainR), m.feedErr, m.drainErr)
}

// closeAll closes the four ends before the peers have started.
func (m *pipeMatrix) closeAll() error {
	return errors.Join(m.p.Close(m.rd), m.p.Close(m.feedW), m.p.Close(m.drainR), m.p.Close(m.wr))
}
