package ext4

// Transactions and the jbd2 journal for the Writer.
//
// Every Writer operation is one transaction. Its metadata writes collect
// in txDev's overlay (reads see them); file data goes straight to the
// device first (data=ordered; with dax, into device memory, rwdax.go), or
// into the overlay with the metadata (data=journal: logged, then
// checkpointed like metadata). At the end of the operation commit writes,
// on a volume with a journal: the transaction into the log (descriptor
// blocks with jbd2 tags, v3 with checksums under metadata_csum, the
// blocks, a commit block), then the journal superblock pointing at it,
// then the blocks in place (checkpoint), then the journal superblock
// marked empty. A crash at any write leaves either the old state, or a
// committed transaction that recovery (at OpenWriter, as the kernel's
// jbd2_journal_recover) replays. Without a journal the blocks are written
// in place only.
//
// Recovery reads what the kernel writes too: descriptor, commit and
// revoke blocks, v2/v3 tags, 32- and 64-bit block numbers, wrapping logs.
// Read-only mounts replay through RecoverJournal (rwrecover.go). With
// Batch, a transaction also commits CommitInterval after the last commit
// without another operation (StartCommitter, commit=N).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iovfs/iovfs/block"
)

// jbd2 constants (include/linux/jbd2.h).
const (
	jMagic      = 0xC03B3998
	jDescriptor = 1
	jCommit     = 2
	jSuperV1    = 3
	jSuperV2    = 4
	jRevoke     = 5

	jFlagEscape   = 1
	jFlagSameUUID = 2
	jFlagLastTag  = 8

	jIncRevoke      = 0x1
	jInc64bit       = 0x2
	jIncAsyncCommit = 0x4
	jIncCsumV2      = 0x8
	jIncCsumV3      = 0x10
	jIncFastCommit  = 0x20
)

var be = binary.BigEndian

// txDev is the Writer's view of the device: metadata writes are held in
// the overlay until commit; reads see them.
type txDev struct {
	dev   WriteDevice
	bs    int64
	over  map[uint64][]byte
	order []uint64
	// dax, if set, is the device's direct access (a dax mount): file
	// data is copied into device memory (rwdax.go); mem is the whole
	// device's view when one could be taken.
	dax block.DirectAccessor
	mem []byte
	// daxRead is the read-only dax mount's copier (FS.readBuf and
	// FS.copyDax, dax.go) over the same device memory: file data reads
	// of a dax mount (rwdax.go).
	daxRead *FS
	// written counts the bytes sent to dev (s_kbytes_written, rwsuper.go).
	written atomic.Uint64
}

// devWrite is dev.WriteAt, counted in written.
func (d *txDev) devWrite(p []byte, off int64) (int, error) {
	n, err := d.dev.WriteAt(p, off)
	d.written.Add(uint64(n))
	return n, err
}

func (d *txDev) Size() int64 { return d.dev.Size() }

func (d *txDev) ReadAt(p []byte, off int64) (int, error) {
	n, err := d.dev.ReadAt(p, off)
	if err != nil {
		return n, err
	}
	if len(d.over) == 0 || d.bs == 0 {
		return n, nil
	}
	for b := uint64(off / d.bs); int64(b)*d.bs < off+int64(len(p)); b++ {
		if blk, ok := d.over[b]; ok {
			bo := int64(b) * d.bs
			s, e := max(bo, off), min(bo+d.bs, off+int64(len(p)))
			copy(p[s-off:e-off], blk[s-bo:e-bo])
		}
	}
	return n, nil
}

// WriteAt is a metadata write: into the overlay, block by block.
func (d *txDev) WriteAt(p []byte, off int64) (int, error) {
	if d.bs == 0 {
		return d.devWrite(p, off)
	}
	for b := uint64(off / d.bs); int64(b)*d.bs < off+int64(len(p)); b++ {
		blk, ok := d.over[b]
		bo := int64(b) * d.bs
		if !ok {
			blk = make([]byte, d.bs)
			// A block written whole need not be read first.
			if off > bo || off+int64(len(p)) < bo+d.bs {
				if err := readFull(d.dev, blk, bo); err != nil {
					return 0, err
				}
			}
			d.over[b] = blk
			d.order = append(d.order, b)
		}
		s, e := max(bo, off), min(bo+d.bs, off+int64(len(p)))
		copy(blk[s-bo:e-bo], p[s-off:e-off])
	}
	return len(p), nil
}

// writeData writes file data straight to the device; an overlay copy of
// the same blocks (a block freed and reused in one transaction) is dropped.
func (d *txDev) writeData(p []byte, off int64) error {
	for b := uint64(off / d.bs); int64(b)*d.bs < off+int64(len(p)); b++ {
		delete(d.over, b)
	}
	if d.dax != nil {
		return d.copyDax(p, off)
	}
	n, err := d.devWrite(p, off)
	if err == nil && n < len(p) {
		err = syscall.EIO
	}
	return err
}

func (d *txDev) flush() error {
	if s, ok := d.dev.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
			return err
		}
	}
	return nil
}

// journal is the open jbd2 log.
type journal struct {
	phys     []uint64 // physical block of each journal block
	sb       []byte   // journal superblock
	first    uint32
	maxlen   uint32
	seq      uint32 // next transaction id
	incompat uint32
	csumV3   bool
	tagSize  int
	seed     uint32
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
	return w.tx.writeData(p, off)
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
		n, err := w.writeAtAs(c, ino, p[done:min(len(p), done+chunk)], off+int64(done))
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
	w.aclass, w.tclass = allocNormal, allocNormal
	w.cur = nil
	if !w.Batch || len(w.tx.over) >= w.commitBlocks() || w.Now().Sub(w.lastCommit) >= w.CommitInterval {
		w.commitOrFail()
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
	return min(1024, int(w.j.maxlen-w.j.first)/4)
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
	if w.closed || w.err != nil || len(w.tx.over) == 0 || w.Now().Sub(w.lastCommit) < w.CommitInterval {
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
	return w.tx.flush()
}

// Pending reports how many metadata blocks the running transaction holds.
func (w *Writer) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.tx.over)
}

// commit makes the overlay durable (see the file comment).
func (w *Writer) commit() error {
	d := w.tx
	if len(d.over) == 0 {
		clear(w.pendingFree)
		return nil
	}
	blocks := make([]uint64, 0, len(d.over))
	for _, b := range d.order {
		if _, ok := d.over[b]; ok {
			blocks = append(blocks, b)
		}
	}
	if w.j != nil {
		if err := w.logTransaction(blocks); err != nil {
			return err
		}
	}
	for _, b := range blocks {
		if n, err := d.devWrite(d.over[b], int64(b)*d.bs); err != nil || n < int(d.bs) {
			return fmt.Errorf("ext4: checkpoint of block %d: %w", b, nonNilErr(err))
		}
	}
	if err := d.flush(); err != nil {
		return err
	}
	d.over, d.order = map[uint64][]byte{}, d.order[:0]
	// Blocks freed by the transaction may be reused now that their
	// release is durable.
	clear(w.pendingFree)
	w.lastCommit = w.Now()
	if w.j != nil {
		return w.writeJSuper(0)
	}
	return nil
}

func nonNilErr(err error) error {
	if err == nil {
		return syscall.EIO
	}
	return err
}

// writeJSuper writes the journal superblock with s_start = start and
// s_sequence = the next transaction id, and flushes.
func (w *Writer) writeJSuper(start uint32) error {
	j := w.j
	be.PutUint32(j.sb[0x18:], j.seq)
	be.PutUint32(j.sb[0x1C:], start)
	if j.csumV3 {
		be.PutUint32(j.sb[0xFC:], 0)
		be.PutUint32(j.sb[0xFC:], crc32c(^uint32(0), j.sb[:1024]))
	}
	if err := w.rawWrite(j.sb, int64(j.phys[0]<<w.v.bsBits)); err != nil {
		return err
	}
	return w.tx.flush()
}

func (w *Writer) rawWrite(p []byte, off int64) error {
	n, err := w.tx.devWrite(p, off)
	if err == nil && n < len(p) {
		err = syscall.EIO
	}
	return err
}

// logTransaction writes blocks as transaction j.seq at the start of the
// log, then points the journal superblock at it.
func (w *Writer) logTransaction(blocks []uint64) error {
	j, bs := w.j, int(w.v.bs)
	tid := j.seq
	pos := j.first
	tail := 0
	if j.csumV3 {
		tail = 4
	}
	put := func(b []byte) error {
		if pos >= j.maxlen {
			return fmt.Errorf("ext4: transaction of %d blocks does not fit the journal: %w", len(blocks), syscall.ENOSPC)
		}
		err := w.rawWrite(b, int64(j.phys[pos]<<w.v.bsBits))
		pos++
		return err
	}
	for len(blocks) > 0 {
		desc := make([]byte, bs)
		be.PutUint32(desc[0:], jMagic)
		be.PutUint32(desc[4:], jDescriptor)
		be.PutUint32(desc[8:], tid)
		off := 12
		var logged [][]byte
		for i := 0; len(blocks) > 0; i++ {
			need := j.tagSize
			if i == 0 {
				need += 16
			}
			if off+need > bs-tail {
				break
			}
			b := blocks[0]
			data := w.tx.over[b]
			flags := uint32(0)
			if be.Uint32(data) == jMagic {
				data = append([]byte(nil), data...)
				be.PutUint32(data, 0)
				flags |= jFlagEscape
			}
			if i > 0 {
				flags |= jFlagSameUUID
			}
			blocks = blocks[1:]
			if len(blocks) == 0 || off+need+j.tagSize > bs-tail {
				flags |= jFlagLastTag
			}
			t := desc[off:]
			be.PutUint32(t[0:], uint32(b))
			if j.csumV3 {
				be.PutUint32(t[4:], flags)
				be.PutUint32(t[8:], uint32(b>>32))
				var s [4]byte
				be.PutUint32(s[:], tid)
				be.PutUint32(t[12:], crc32c(crc32c(j.seed, s[:]), data))
			} else {
				be.PutUint16(t[6:], uint16(flags))
				if j.tagSize >= 12 {
					be.PutUint32(t[8:], uint32(b>>32))
				}
			}
			off += j.tagSize
			if i == 0 {
				copy(desc[off:], j.sb[0x30:0x40])
				off += 16
			}
			logged = append(logged, data)
		}
		if j.csumV3 {
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
	if err := w.tx.flush(); err != nil { // the blocks before their commit
		return err
	}
	c := make([]byte, bs)
	be.PutUint32(c[0:], jMagic)
	be.PutUint32(c[4:], jCommit)
	be.PutUint32(c[8:], tid)
	now := w.Now()
	be.PutUint64(c[0x30:], uint64(now.Unix()))
	be.PutUint32(c[0x38:], uint32(now.Nanosecond()))
	if j.csumV3 {
		be.PutUint32(c[0x10:], crc32c(j.seed, c))
	}
	if err := put(c); err != nil {
		return err
	}
	if err := w.tx.flush(); err != nil {
		return err
	}
	if err := w.writeJSuper(j.first); err != nil {
		return err
	}
	j.seq = tid + 1
	return nil
}

// openJournal loads the journal of v (inode s_journal_inum); nil without
// has_journal. Unsupported journal features give a *FeatureError.
func openJournal(v *Volume, dev Device, sb []byte) (*journal, error) {
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
	j := &journal{phys: make([]uint64, n)}
	var c ExtentCache
	for i := uint64(0); i < n; {
		m, err := v.MapBlocks(in, &c, i)
		if err != nil {
			return nil, err
		}
		if m.Hole || m.Unwritten {
			return nil, corrupt(in.Ino, "journal has a hole at %d", i)
		}
		for k := i - m.Logical; k < m.Len && i < n; k, i = k+1, i+1 {
			j.phys[i] = m.Physical + k
		}
	}
	j.sb = make([]byte, v.bs)
	if err := readFull(dev, j.sb, int64(j.phys[0]<<v.bsBits)); err != nil {
		return nil, err
	}
	if be.Uint32(j.sb) != jMagic || (be.Uint32(j.sb[4:]) != jSuperV1 && be.Uint32(j.sb[4:]) != jSuperV2) {
		return nil, corrupt(in.Ino, "bad journal superblock")
	}
	if be.Uint32(j.sb[0xC:]) != uint32(v.bs) {
		return nil, corrupt(in.Ino, "journal block size %d", be.Uint32(j.sb[0xC:]))
	}
	j.maxlen = min(be.Uint32(j.sb[0x10:]), uint32(n))
	j.first = be.Uint32(j.sb[0x14:])
	j.seq = be.Uint32(j.sb[0x18:])
	if j.first == 0 || j.first >= j.maxlen {
		return nil, corrupt(in.Ino, "journal first block %d of %d", j.first, j.maxlen)
	}
	if be.Uint32(j.sb[4:]) == jSuperV2 {
		j.incompat = be.Uint32(j.sb[0x28:])
	}
	if bad := j.incompat &^ (jIncRevoke | jInc64bit | jIncCsumV3); bad != 0 {
		return nil, &FeatureError{Feature: fmt.Sprintf("journal incompat %#x (read-write)", bad)}
	}
	j.setIncompat(j.incompat)
	j.seed = crc32c(^uint32(0), j.sb[0x30:0x40])
	return j, nil
}

// setIncompat sets the journal's incompatible features and the log
// format that follows from them.
func (j *journal) setIncompat(incompat uint32) {
	j.incompat = incompat
	j.csumV3 = incompat&jIncCsumV3 != 0
	switch {
	case j.csumV3:
		j.tagSize = 16
	case incompat&jInc64bit != 0:
		j.tagSize = 12
	default:
		j.tagSize = 8
	}
}

// recover replays the committed transactions of j from s_start, as
// jbd2_journal_recover's three passes (scan, revoke, replay), writing
// straight to dev, and marks the log empty. It reports how many
// transactions it replayed.
func (j *journal) recover(v *Volume, dev WriteDevice) (int, error) {
	start := be.Uint32(j.sb[0x1C:])
	if start == 0 {
		return 0, nil
	}
	bs := int(v.bs)
	type txn struct {
		tid  uint32
		tags []struct {
			blk uint64
			pos uint32
			esc bool
		}
	}
	var txns []txn
	revoked := map[uint64]uint32{}
	next := func(p uint32) uint32 {
		p++
		if p >= j.maxlen {
			p = j.first
		}
		return p
	}
	buf := make([]byte, bs)
	read := func(p uint32) error { return readFull(dev, buf, int64(j.phys[p]<<v.bsBits)) }
	pos, seq := start, j.seq
	var cur *txn
	for steps := uint32(0); steps < j.maxlen; steps++ {
		if err := read(pos); err != nil {
			return 0, err
		}
		if be.Uint32(buf) != jMagic || be.Uint32(buf[8:]) != seq {
			break
		}
		switch be.Uint32(buf[4:]) {
		case jDescriptor:
			if j.csumV3 && crc32c(j.seed, append(append([]byte(nil), buf[:bs-4]...), 0, 0, 0, 0)) != be.Uint32(buf[bs-4:]) {
				goto done
			}
			if cur == nil {
				txns = append(txns, txn{tid: seq})
				cur = &txns[len(txns)-1]
			}
			tail := 0
			if j.csumV3 {
				tail = 4
			}
			off := 12
			dpos := pos
			for off+j.tagSize <= bs-tail {
				t := buf[off:]
				blk := uint64(be.Uint32(t))
				var flags uint32
				if j.csumV3 {
					flags = be.Uint32(t[4:])
					blk |= uint64(be.Uint32(t[8:])) << 32
				} else {
					flags = uint32(be.Uint16(t[6:]))
					if j.tagSize >= 12 {
						blk |= uint64(be.Uint32(t[8:])) << 32
					}
				}
				dpos = next(dpos)
				cur.tags = append(cur.tags, struct {
					blk uint64
					pos uint32
					esc bool
				}{blk, dpos, flags&jFlagEscape != 0})
				off += j.tagSize
				if flags&jFlagSameUUID == 0 {
					off += 16
				}
				if flags&jFlagLastTag != 0 {
					break
				}
			}
			pos = dpos
		case jCommit:
			if j.csumV3 {
				c := append([]byte(nil), buf...)
				sum := be.Uint32(c[0x10:])
				be.PutUint32(c[0x10:], 0)
				if crc32c(j.seed, c) != sum {
					goto done
				}
			}
			if cur == nil {
				txns = append(txns, txn{tid: seq})
			}
			cur = nil
			seq++
		case jRevoke:
			if cur == nil {
				txns = append(txns, txn{tid: seq})
				cur = &txns[len(txns)-1]
			}
			count := int(be.Uint32(buf[12:]))
			rsz := 4
			if j.incompat&jInc64bit != 0 {
				rsz = 8
			}
			for o := 16; o+rsz <= min(count, bs); o += rsz {
				var b uint64
				if rsz == 8 {
					b = be.Uint64(buf[o:])
				} else {
					b = uint64(be.Uint32(buf[o:]))
				}
				if t, ok := revoked[b]; !ok || int32(seq-t) > 0 {
					revoked[b] = seq
				}
			}
		default:
			goto done
		}
		pos = next(pos)
	}
done:
	if cur != nil {
		txns = txns[:len(txns)-1] // no commit: not replayed
	}
	// Revokes count only from committed transactions.
	committed := map[uint32]bool{}
	for _, t := range txns {
		committed[t.tid] = true
	}
	for b, t := range revoked {
		if !committed[t] {
			delete(revoked, b)
		}
	}
	// Check every target before the first write: a log found corrupt
	// leaves the device untouched.
	for _, t := range txns {
		for _, tag := range t.tags {
			if tag.blk >= v.blocks {
				return 0, corrupt(0, "journal block %d outside the volume", tag.blk)
			}
		}
	}
	for _, t := range txns {
		for _, tag := range t.tags {
			if r, ok := revoked[tag.blk]; ok && int32(r-t.tid) >= 0 {
				continue
			}
			if err := read(tag.pos); err != nil {
				return 0, err
			}
			if tag.esc {
				be.PutUint32(buf, jMagic)
			}
			if n, err := dev.WriteAt(buf, int64(tag.blk<<v.bsBits)); err != nil || n < bs {
				return 0, nonNilErr(err)
			}
		}
	}
	// The next transaction id skips one past the end of the log, as
	// jbd2_journal_recover's ++info.end_transaction.
	j.seq = seq + 1
	return len(txns), nil
}

var _ = sort.Ints
