package jbd2

// The running transaction: the metadata blocks written since the last
// commit, kept in memory until Commit logs and checkpoints them.

import (
	"sync"
	"sync/atomic"
)

// Transaction collects metadata writes to a device until Commit. Reads
// through it see them. Its methods may be called concurrently (see the
// package comment); the one writer (WriteAt, Forget, Commit, Reset) is
// the file system's, one call at a time.
type Transaction struct {
	dev Device
	bs  int64

	// mu protects blocks and order: the writer holds it exclusively while
	// it changes a block, readers share it while they copy one out.
	mu     sync.RWMutex
	blocks map[uint64][]byte
	order  []uint64 // blocks in the order they were first written
	// count is len(blocks), for readers that find the transaction empty
	// without the lock.
	count atomic.Int64
}

// NewTransaction returns an empty transaction over dev, whose blocks
// are blockSize bytes.
func NewTransaction(dev Device, blockSize int) *Transaction {
	return &Transaction{dev: dev, bs: int64(blockSize), blocks: map[uint64][]byte{}}
}

// BlockSize is the transaction's block size.
func (t *Transaction) BlockSize() int { return int(t.bs) }

// Len is the number of blocks the transaction holds.
func (t *Transaction) Len() int { return int(t.count.Load()) }

// Device is the device under the transaction.
func (t *Transaction) Device() Device { return t.dev }

// ReadAt reads len(p) bytes at off with io.ReaderAt's contract: from the
// device, then the blocks the transaction holds over them. It is the
// writer's read: a read from another goroutine uses ReadBlock, since a
// Commit between the two steps would leave it the device's old bytes.
// An error of the device is returned even where the transaction holds
// the bytes, as the device is read first.
func (t *Transaction) ReadAt(p []byte, off int64) (int, error) {
	n, err := t.dev.ReadAt(p, off)
	if err != nil || t.count.Load() == 0 {
		return n, err
	}
	t.mu.RLock()
	for b := uint64(off / t.bs); int64(b)*t.bs < off+int64(len(p)); b++ {
		if blk, ok := t.blocks[b]; ok {
			bo := int64(b) * t.bs
			s, e := max(bo, off), min(bo+t.bs, off+int64(len(p)))
			copy(p[s-off:e-off], blk[s-bo:e-bo])
		}
	}
	t.mu.RUnlock()
	return n, nil
}

// ReadBlock copies block blk of the transaction into p and reports
// whether the transaction holds it; p is left alone when it does not.
// A reader running beside the writer reads a block here first and from
// the device only when this reports false: Commit writes a block in
// place before it drops it.
func (t *Transaction) ReadBlock(blk uint64, p []byte) bool {
	if t.count.Load() == 0 {
		return false
	}
	return t.copyOut(blk, 0, p[:t.bs])
}

// copyOut copies bytes of block b from within into p under the read
// lock, if the transaction holds b.
func (t *Transaction) copyOut(b uint64, within int64, p []byte) bool {
	t.mu.RLock()
	blk, ok := t.blocks[b]
	if ok {
		copy(p, blk[within:])
	}
	t.mu.RUnlock()
	return ok
}

// WriteAt writes p at off into the transaction, block by block; a block
// written in part is read from the device first. It returns len(p) or
// the device's read error.
func (t *Transaction) WriteAt(p []byte, off int64) (int, error) {
	for b := uint64(off / t.bs); int64(b)*t.bs < off+int64(len(p)); b++ {
		bo := int64(b) * t.bs
		s, e := max(bo, off), min(bo+t.bs, off+int64(len(p)))
		t.mu.RLock()
		blk, ok := t.blocks[b]
		t.mu.RUnlock()
		if !ok {
			blk = make([]byte, t.bs)
			if e-s < t.bs { // a block written whole need not be read first
				if err := readFull(t.dev, blk, bo); err != nil {
					return 0, err
				}
			}
		}
		t.mu.Lock()
		copy(blk[s-bo:e-bo], p[s-off:e-off])
		if !ok {
			t.blocks[b] = blk
			t.order = append(t.order, b)
			t.count.Add(1)
		}
		t.mu.Unlock()
	}
	return len(p), nil
}

// Forget drops the transaction's copies of the blocks that bytes [off,
// off+n) touch: data is about to be written there in place (a block freed
// and reused as file data in one transaction).
func (t *Transaction) Forget(off, n int64) {
	if t.count.Load() == 0 || n <= 0 {
		return
	}
	t.mu.Lock()
	for b := uint64(off / t.bs); int64(b)*t.bs < off+n; b++ {
		if _, ok := t.blocks[b]; ok {
			delete(t.blocks, b)
			t.count.Add(-1)
		}
	}
	t.mu.Unlock()
}

// Reset drops every block of the transaction without writing it (an
// aborted transaction).
func (t *Transaction) Reset() {
	t.mu.Lock()
	clear(t.blocks)
	t.order = t.order[:0]
	t.count.Store(0)
	t.mu.Unlock()
}

// list returns the blocks to commit, in the order they were first
// written; the writer calls it, so the blocks cannot change meanwhile.
func (t *Transaction) list() []uint64 {
	out := make([]uint64, 0, len(t.blocks))
	for _, b := range t.order {
		if _, ok := t.blocks[b]; ok {
			out = append(out, b)
		}
	}
	return out
}
