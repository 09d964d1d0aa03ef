package jbd2

// Commit and checkpoint (jbd2_journal_commit_transaction, then the
// checkpoint at once): a transaction is logged at the start of the log,
// so the log holds at most one transaction, the one being committed.

import (
	"fmt"
	"syscall"
	"time"
)

// Commit makes the transaction durable and empties it.
//
// With a journal the blocks are logged from the log's first block:
// descriptor blocks with a tag per block (a block that begins with the
// jbd2 magic is logged with it zeroed and the tag marked escaped), the
// blocks, then, after a flush, the commit block, and after another
// flush the superblock pointing at the transaction. The blocks are then
// written in place (the checkpoint), the device flushed, and the
// superblock marked empty with the next transaction's id. A transaction
// that does not fit the log gives ENOSPC (the file system commits
// before it grows that large: Capacity).
//
// With a nil journal the blocks are written in place and the device
// flushed.
//
// After an error the transaction keeps its blocks; the device may hold
// some of the log or some blocks in place.
func (t *Transaction) Commit(j *Journal, now time.Time) error {
	if t.count.Load() == 0 {
		return nil
	}
	blocks := t.list()
	if j != nil {
		if err := j.log(t, blocks, now); err != nil {
			return err
		}
	}
	for _, b := range blocks {
		if err := writeFull(t.dev, t.blocks[b], int64(b)*t.bs); err != nil {
			return fmt.Errorf("jbd2: checkpoint of block %d: %w", b, err)
		}
	}
	if err := t.dev.Flush(); err != nil {
		return err
	}
	// Only now, with every block in place, may readers stop finding
	// them here.
	t.Reset()
	if j != nil {
		return j.WriteSuper(0)
	}
	return nil
}

// log writes blocks of t as transaction j.seq from the start of the log
// and points the superblock at it.
func (j *Journal) log(t *Transaction, blocks []uint64, now time.Time) error {
	bs := j.bs
	tid := j.seq
	pos := uint64(j.first)
	tail := 0 // struct jbd2_journal_block_tail
	if j.csum != 0 {
		tail = 4
	}
	put := func(b []byte) error {
		if pos >= uint64(j.maxlen) {
			return fmt.Errorf("jbd2: transaction of %d blocks does not fit the log: %w", len(blocks), syscall.ENOSPC)
		}
		err := j.writeBlock(pos, b)
		pos++
		return err
	}
	desc := make([]byte, bs)
	var logged [][]byte
	for len(blocks) > 0 {
		clear(desc)
		be.PutUint32(desc[0:], magic)
		be.PutUint32(desc[4:], typeDescriptor)
		be.PutUint32(desc[8:], tid)
		off := 12
		logged = logged[:0]
		for i := 0; len(blocks) > 0; i++ {
			need := j.tagSize
			if i == 0 {
				need += 16 // the UUID after the first tag
			}
			if off+need > bs-tail {
				break
			}
			b := blocks[0]
			data := t.blocks[b]
			flags := uint32(0)
			if be.Uint32(data) == magic {
				data = append([]byte(nil), data...)
				be.PutUint32(data, 0)
				flags |= flagEscape
			}
			if i > 0 {
				flags |= flagSameUUID
			}
			blocks = blocks[1:]
			if len(blocks) == 0 || off+need+j.tagSize > bs-tail {
				flags |= flagLastTag
			}
			j.putTag(desc[off:], b, flags, tid, data)
			off += j.tagSize
			if i == 0 {
				copy(desc[off:], j.sb[sbUUID:sbUUID+16])
				off += 16
			}
			logged = append(logged, data)
		}
		if j.csum != 0 {
			be.PutUint32(desc[bs-4:], crc32c(j.seed, desc))
		}
		if err := put(desc); err != nil {
			return err
		}
		for _, data := range logged {
			if err := put(data); err != nil {
				return err
			}
		}
	}
	if err := j.dev.Flush(); err != nil { // the blocks before their commit
		return err
	}
	c := make([]byte, bs)
	be.PutUint32(c[0:], magic)
	be.PutUint32(c[4:], typeCommit)
	be.PutUint32(c[8:], tid)
	be.PutUint64(c[0x30:], uint64(now.Unix()))
	be.PutUint32(c[0x38:], uint32(now.Nanosecond()))
	if j.csum != 0 {
		be.PutUint32(c[0x10:], crc32c(j.seed, c))
	}
	if err := put(c); err != nil {
		return err
	}
	if err := j.dev.Flush(); err != nil {
		return err
	}
	if err := j.WriteSuper(j.first); err != nil {
		return err
	}
	j.seq = tid + 1
	return nil
}

// putTag writes the tag of block b, logged as data in transaction tid,
// at t in the journal's tag format.
func (j *Journal) putTag(t []byte, b uint64, flags, tid uint32, data []byte) {
	be.PutUint32(t[0:], uint32(b))
	var sum uint32
	if j.csum != 0 {
		sum = crc32c(crc32cBE32(j.seed, tid), data[:j.bs])
	}
	switch j.csum {
	case 3: // journal_block_tag3_t
		be.PutUint32(t[4:], flags)
		be.PutUint32(t[8:], uint32(b>>32))
		be.PutUint32(t[12:], sum)
	default: // journal_block_tag_t
		be.PutUint16(t[4:], uint16(sum))
		be.PutUint16(t[6:], uint16(flags))
		if j.incompat&Incompat64bit != 0 {
			be.PutUint32(t[8:], uint32(b>>32))
		}
	}
}
