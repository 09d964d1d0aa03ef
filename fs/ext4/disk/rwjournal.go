package disk

// Transactions and the jbd2 journal for the Writer (fs/jbd2 holds the
// journal itself: the log format, commit, checkpoint and recovery).
//
// Every Writer operation is one transaction or part of one. Its metadata
// writes collect in the running jbd2.Transaction (reads through it see
// them); file data goes straight to the device first (data=ordered; with
// dax, into device memory, rwdax.go), or into the transaction with the
// metadata (data=journal: logged, then checkpointed like metadata). A
// commit logs the transaction (on a volume with a journal), checkpoints
// it in place and marks the log empty; a crash at any write leaves either
// the old state, or a committed transaction that recovery (at
// OpenWriter, as the kernel's jbd2_journal_recover) replays. Without a
// journal the blocks are written in place only.
//
// Read-only mounts replay through RecoverJournal (rwrecover.go). With
// Batch, a transaction also commits CommitInterval after the last commit
// without another operation (StartCommitter, commit=N).

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iovfs/iovfs/fs/jbd2"
)

// journalDev is the Writer's device as the journal and the transaction
// see it: Flush syncs the device when it can (a device without a cache
// answers EINVAL, which is no error), and the bytes written are counted
// in written (s_kbytes_written, rwsuper.go) unless uncounted.
type journalDev struct {
	dev       WriteDevice
	uncounted bool
	written   atomic.Uint64
}

func (d *journalDev) ReadAt(p []byte, off int64) (int, error) { return d.dev.ReadAt(p, off) }

func (d *journalDev) WriteAt(p []byte, off int64) (int, error) {
	n, err := d.dev.WriteAt(p, off)
	if !d.uncounted {
		d.written.Add(uint64(n))
	}
	return n, err
}

func (d *journalDev) Size() int64 { return d.dev.Size() }

func (d *journalDev) Flush() error {
	if s, ok := d.dev.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
			return err
		}
	}
	return nil
}

// txDevice is the running transaction as the Writer's volume reads it.
type txDevice struct {
	*jbd2.Transaction
	size int64
}

func (d txDevice) Size() int64 { return d.size }

// writeDirect writes file data straight to the device (or into its
// memory under dax), dropping the transaction's copies of the same
// blocks (a block freed and reused in one transaction).
func (w *Writer) writeDirect(p []byte, off int64) error {
	w.tx.Forget(off, int64(len(p)))
	if w.dax != nil {
		return w.copyDax(p, off)
	}
	n, err := w.jdev.WriteAt(p, off)
	if err == nil && n < len(p) {
		err = syscall.EIO
	}
	return err
}

// writeDataAt writes file data: in place before the commit (data=ordered,
// data=writeback), or into the running transaction with the metadata
// (data=journal, on a volume with a journal), so that it is logged and
// checkpointed with it.
func (w *Writer) writeDataAt(p []byte, off int64) error {
	if w.Data == DataJournal && w.j != nil {
		_, err := w.tx.WriteAt(p, off)
		return err
	}
	return w.writeDirect(p, off)
}

// journalChunk is the most bytes one WriteAt logs in one transaction under
// data=journal: half a transaction's size, so that a write of any length
// is split into transactions the log holds.
func (w *Writer) journalChunk() int {
	return w.commitBlocks() / 2 << w.v.bsBits
}

// writeChunks writes p at off as WriteAt does, in transactions of at most
// chunk bytes each (data=journal): a crash keeps a prefix of the chunks,
// as it may keep a prefix of the pages of a large write(2) on Linux.
func (w *Writer) writeChunks(c *Caller, ino uint32, p []byte, off int64, chunk int) (int, error) {
	done := 0
	for done < len(p) {
		n, err := w.WriteAtAs(c, ino, p[done:min(len(p), done+chunk)], off+int64(done))
		done += n
		if err != nil || n < min(len(p)-done+n, chunk) {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
	}
	return done, nil
}

// unlock ends an operation and releases mu. The running transaction is
// committed when it has grown past commitBlocks, when CommitInterval has
// passed since the last commit, or always when Batch is off; Sync and
// Close commit too. A failed commit makes the Writer refuse further
// changes (errors=remount-ro).
func (w *Writer) unlock() {
	w.endOps() // live.go
	w.aclass, w.tclass = allocNormal, allocNormal
	w.cur = nil
	sync := w.syncOp
	w.syncOp = false
	if sync || !w.Batch || w.tx.Len() >= w.commitBlocks() || w.Now().Sub(w.lastCommit) >= w.CommitInterval {
		w.commitOrFail()
	}
	if sync && w.err == nil {
		if err := w.jdev.Flush(); err != nil {
			w.v.opt.Logf("ext4: flush after a change of a sync inode: %v", err)
		}
	}
	w.mu.Unlock()
}

func (w *Writer) commitOrFail() {
	if err := w.commit(); err != nil && w.err == nil {
		w.err = err
		w.v.opt.Logf("ext4: commit failed, no more writes: %v", err)
	}
}

// commitBlocks is the size at which a transaction commits: a quarter of
// the log, at most 1024 blocks (jbd2's j_max_transaction_buffers idea).
func (w *Writer) commitBlocks() int {
	if w.j == nil {
		return 1024
	}
	return min(1024, w.j.Capacity()/4)
}

// StartCommitter commits the running transaction once CommitInterval has
// passed since the last commit even when no operation follows, as jbd2's
// commit timer does for commit=N: a goroutine looks every quarter
// interval (at least every 10 ms) until Close. Batch mode only; calling
// it again does nothing.
func (w *Writer) StartCommitter() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopCommits != nil || w.closed {
		return
	}
	stop := make(chan struct{})
	w.stopCommits = stop
	tick := time.NewTicker(max(w.CommitInterval/4, 10*time.Millisecond))
	go func() {
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				w.intervalCommit()
			}
		}
	}()
}

// intervalCommit commits the running transaction if it holds changes and
// CommitInterval has passed since the last commit.
func (w *Writer) intervalCommit() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.err != nil || w.tx.Len() == 0 || w.Now().Sub(w.lastCommit) < w.CommitInterval {
		return
	}
	w.commitOrFail()
}

// Sync commits the running transaction, as fsync(2) and syncfs(2) do,
// and flushes the device.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.commitOrFail()
	if w.err != nil {
		return w.err
	}
	return w.jdev.Flush()
}

// Pending reports how many metadata blocks the running transaction holds.
func (w *Writer) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tx.Len()
}

// commit makes the running transaction durable (see the file comment).
func (w *Writer) commit() error {
	if w.tx.Len() == 0 {
		clear(w.pendingFree)
		return nil
	}
	if err := w.tx.Commit(w.j, w.Now()); err != nil {
		return fmt.Errorf("ext4: commit: %w", err)
	}
	// Blocks freed by the transaction may be reused now that their
	// release is durable.
	clear(w.pendingFree)
	w.lastCommit = w.Now()
	return nil
}

func nonNilErr(err error) error {
	if err == nil {
		return syscall.EIO
	}
	return err
}

// rawWrite writes p at off on the device, around the transaction.
func (w *Writer) rawWrite(p []byte, off int64) error {
	n, err := w.jdev.WriteAt(p, off)
	if err == nil && n < len(p) {
		err = syscall.EIO
	}
	return err
}

// openJournal opens the journal of v (inode s_journal_inum, superblock
// sb) on dev; nil without has_journal. An external journal, or a log the
// jbd2 package cannot write or replay, gives a *FeatureError; damage a
// *CorruptError of the journal inode.
func openJournal(v *Volume, dev jbd2.Device, sb []byte) (*jbd2.Journal, error) {
	if v.compat&compatHasJournal == 0 {
		return nil, nil
	}
	if le32(sb, 0xE4) != 0 || le32(sb, 0xE0) == 0 {
		return nil, &FeatureError{Feature: "external journal (read-write)"}
	}
	in, err := v.Inode(le32(sb, 0xE0))
	if err != nil {
		return nil, err
	}
	n := in.Size >> v.bsBits
	if n < 4 || n > 1<<24 {
		return nil, corrupt(in.Ino, "journal of %d blocks", n)
	}
	var ext []jbd2.Extent
	var c ExtentCache
	for i := uint64(0); i < n; {
		m, err := v.MapBlocks(in, &c, i)
		if err != nil {
			return nil, err
		}
		if m.Hole || m.Unwritten {
			return nil, corrupt(in.Ino, "journal has a hole at %d", i)
		}
		k := min(m.Len-(i-m.Logical), n-i)
		ext = append(ext, jbd2.Extent{Logical: i, Physical: m.Physical + (i - m.Logical), Len: k})
		i += k
	}
	j, err := jbd2.Open(dev, int(v.bs), ext)
	return j, journalErr(in.Ino, err)
}

// journalErr gives the jbd2 package's errors this package's types: a
// *FeatureError for a log it cannot use, a *CorruptError of the journal
// inode ino for damage.
func journalErr(ino uint32, err error) error {
	var fe *jbd2.FeatureError
	var ce *jbd2.CorruptError
	switch {
	case errors.As(err, &fe):
		return &FeatureError{Feature: fe.Feature + " (read-write)"}
	case errors.As(err, &ce):
		return &CorruptError{Errno: ce.Errno, What: ce.Error(), Ino: ino}
	}
	return err
}
