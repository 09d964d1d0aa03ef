package disk

// Reads beside a Writer: the read-write mount's reads take no lock.
//
// A Ref is an inode as its readers hold it: its current parsed state and
// a sequence count, odd while the Writer's running operation changes the
// inode or anything it maps (its inode bytes, extent tree or block map,
// directory blocks, xattr block, file data). A reader (Volume.Read) loads
// the count, reads, and loads it again: if it was odd or moved, the read
// may have met a change half made, and it runs again, and after a few
// tries under the Writer's lock held shared, where no change runs. So a
// reader never keeps bytes of a block that was freed and given to another
// file meanwhile (the free and any reuse happen in operations that move
// the count of the inode that held the block: blocks freed by a
// transaction are not reused before it commits), nor a torn structure.
//
// The Writer's side (begin, endOps, rw.go's lock and unlock): before it
// changes anything of an inode it begins it, which makes the count of its
// Ref odd and records the inode as busy; when the operation ends, before
// the lock is released, every inode begun gets its count made even again.
// A Ref made during the operation for a busy inode starts odd and is ended
// with the others, so a reader never sees an even count over a change.
// Freeing an inode marks its Ref dead and drops it from the table: the
// number may name another inode later, under a new Ref.
//
// Blocks are read overlay first (liveDev, readMetaLive): the running
// transaction's copy if it holds the block, else the buffer cache or the
// device; the commit writes a block in place before it drops it, so a
// reader that misses it in the transaction finds its new bytes there.
//
// Memory ordering: the count's increments are atomic read-modify-writes,
// sequentially consistent in Go, so a reader that loads an even count s
// sees every change made before the increment that produced s. Its reads
// must not pass its second load of the count: on amd64 loads are not
// reordered with loads and an atomic load is a compiler barrier; elsewhere
// the check is a CompareAndSwap, a full barrier (seqCheck). Under the race
// detector readers take the lock instead: the copies a retry throws away
// are races by design (a RAM disk's bytes are Go memory the Writer writes).
//
// Locks: the Writer's mu (held shared by a reader's fallback), then
// Volume.refMu, a leaf lock protecting refs, busy and began.

import (
	"runtime"
	"sync/atomic"
	"syscall"
)

// A Ref is an inode of a volume as its readers hold it (see the file
// comment). A Ref of a volume no Writer changes never moves.
type Ref struct {
	ino  uint32
	seq  atomic.Uint64
	cur  atomic.Pointer[inodeSnap]
	dead atomic.Bool
}

// inodeSnap is a parsed inode and the count it was read at.
type inodeSnap struct {
	in  *Inode
	seq uint64
}

// Ino returns the inode number.
func (r *Ref) Ino() uint32 { return r.ino }

// Dead reports whether the Writer freed the inode: its number may name
// another inode since, under another Ref.
func (r *Ref) Dead() bool { return r.dead.Load() }

// Seq returns the inode's sequence count: inside Volume.Read, the count
// the read runs at, a version of the inode and of what it maps (a
// directory's entries, say).
func (r *Ref) Seq() uint64 { return r.seq.Load() }

// tso is true on architectures whose loads are not reordered with other
// loads, where a plain atomic load closes a sequence-count read.
const tso = runtime.GOARCH == "amd64" || runtime.GOARCH == "386" || runtime.GOARCH == "s390x"

// seqCheck reports whether a lock-free read that began at count s saw no
// change.
func (r *Ref) seqCheck(s uint64) bool {
	if tso {
		return r.seq.Load() == s
	}
	return r.seq.CompareAndSwap(s, s)
}

// Ref returns the Ref of inode ino, the same one while the inode lives.
func (v *Volume) Ref(ino uint32) (*Ref, error) {
	if ino == 0 || ino > v.inodes {
		return nil, corrupt(ino, "inode number out of range (1..%d)", v.inodes)
	}
	v.refMu.Lock()
	defer v.refMu.Unlock()
	r := v.refs[ino]
	if r == nil {
		r = &Ref{ino: ino}
		if _, busy := v.busy[ino]; busy {
			// The Writer's running operation has begun the inode:
			// odd until it ends.
			r.seq.Store(1)
			v.began = append(v.began, r)
		}
		if v.refs == nil {
			v.refs = map[uint32]*Ref{}
		}
		v.refs[ino] = r
	}
	return r, nil
}

// refAlive is a live volume's openUnlinked: an inode without links is
// valid while its Ref lives (an unlinked file still open, an orphan).
func (v *Volume) refAlive(ino uint32) bool {
	v.refMu.Lock()
	r := v.refs[ino]
	v.refMu.Unlock()
	return r != nil && !r.dead.Load()
}

// errBusy is current's answer while the inode is being changed.
var errBusy = syscall.EAGAIN

// current returns r's inode as it is, and the count it was read at: the
// snapshot loaded last if the count has not moved since, else the inode
// read afresh (and kept if the count held still meanwhile). errBusy while
// the count is odd.
func (v *Volume) current(r *Ref) (*Inode, uint64, error) {
	s := r.seq.Load()
	if s&1 != 0 {
		return nil, s, errBusy
	}
	if p := r.cur.Load(); p != nil && p.seq == s {
		return p.in, s, nil
	}
	if r.dead.Load() {
		return nil, s, syscall.ENOENT
	}
	in, err := v.loadInode(r.ino)
	if err != nil {
		return nil, s, err
	}
	if r.seq.Load() == s {
		r.cur.Store(&inodeSnap{in: in, seq: s})
	}
	return in, s, nil
}

// Read runs fn with r's inode as it is now and returns fn's error
// (ENOENT for an inode the Writer freed). On a volume a Writer changes
// (Writer.Reader), fn runs without the Writer's lock: if the inode
// changed meanwhile it runs again, and after a few tries, or under the
// race detector, under the Writer's lock held shared. fn must only read
// (through v), may run more than once, and must not keep what a run that
// is retried gave it: only the last run's results count.
func (v *Volume) Read(r *Ref, fn func(in *Inode) error) error {
	if v.live == nil {
		in, _, err := v.current(r)
		if err != nil {
			return err
		}
		return fn(in)
	}
	if !raceEnabled {
		for try := 0; try < 3; try++ {
			in, s, err := v.current(r)
			if err == errBusy {
				break // a change is under way: wait for it under the lock
			}
			if err == nil {
				err = fn(in)
			}
			if r.seqCheck(s) {
				return err
			}
		}
	}
	return v.readLocked(r, fn)
}

// readLocked is Read under the Writer's lock held shared: no operation
// runs, so the count is even and still.
func (v *Volume) readLocked(r *Ref, fn func(in *Inode) error) error {
	w := v.live
	w.mu.RLock()
	defer w.mu.RUnlock()
	in, _, err := v.current(r)
	if err != nil {
		return err
	}
	return fn(in)
}

// Current returns r's inode as it is now, on its own (ENOENT for an inode
// the Writer freed). Reads that need the inode and what it maps to agree
// use Read.
func (v *Volume) Current(r *Ref) (*Inode, error) {
	var out *Inode
	err := v.Read(r, func(in *Inode) error { out = in; return nil })
	return out, err
}

// Live reports whether a Writer changes the volume (Writer.Reader): its
// reads then go through Read's retries.
func (v *Volume) Live() bool { return v.live != nil }

// liveDev is a live volume's device: each block from the running
// transaction when it holds it, else from the Writer's device.
type liveDev struct{ w *Writer }

func (d liveDev) Size() int64 { return d.w.jdev.Size() }

func (d liveDev) ReadAt(p []byte, off int64) (int, error) {
	tx := d.w.tx
	if tx.Len() == 0 {
		return d.w.jdev.ReadAt(p, off)
	}
	bs := int64(tx.BlockSize())
	var tmp []byte
	done := 0
	for done < len(p) {
		pos := off + int64(done)
		blk, within := uint64(pos/bs), pos%bs
		n := int(min(int64(len(p)-done), bs-within))
		if within == 0 && n == int(bs) {
			if tx.ReadBlock(blk, p[done:done+n]) {
				done += n
				continue
			}
		} else {
			if tmp == nil {
				tmp = make([]byte, bs)
			}
			if tx.ReadBlock(blk, tmp) {
				copy(p[done:done+n], tmp[within:])
				done += n
				continue
			}
		}
		if err := readFull(d.w.jdev, p[done:done+n], pos); err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// readMetaLive is readMeta for a live volume with a buffer cache: block
// by block, the running transaction's copy first.
func (v *Volume) readMetaLive(p []byte, off int64) error {
	tx := v.live.tx
	bp := v.getBuf()
	defer v.putBuf(bp)
	buf := *bp
	for len(p) > 0 {
		blk, within := uint64(off)>>v.bsBits, uint64(off)&(v.bs-1)
		n := int(min(uint64(len(p)), v.bs-within))
		if tx.ReadBlock(blk, buf) {
			copy(p[:n], buf[within:])
		} else {
			b, err := v.meta.Get(blk)
			if err != nil {
				return err
			}
			copy(p[:n], b.Data()[within:])
			b.Release()
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}

// Reader returns a Volume that reads what w has written, beside it and
// without its lock (see the file comment): through the running
// transaction, then opt.Cache when set (a buffer cache, whose blocks the
// device's writes invalidate), then the device. Its Refs are the ones
// w's operations move. One per Writer; call it before serving readers.
func (w *Writer) Reader(opt Options) (*Volume, error) {
	if opt.Logf == nil {
		opt.Logf = w.v.opt.Logf
	}
	opt.NoLoad, opt.unreplayed, opt.readOnlyMount, opt.beside = false, false, false, true
	v, err := Open(liveDev{w}, opt)
	if err != nil {
		return nil, err
	}
	v.live = w
	v.openUnlinked = v.refAlive
	w.mu.Lock()
	w.rv = v
	w.mu.Unlock()
	return v, nil
}

// begin marks inode ino as changed by the running operation (see the file
// comment); w.mu is held.
func (w *Writer) begin(ino uint32) {
	v := w.rv
	if v == nil {
		return
	}
	v.refMu.Lock()
	if _, ok := v.busy[ino]; !ok {
		if v.busy == nil {
			v.busy = map[uint32]struct{}{}
		}
		v.busy[ino] = struct{}{}
		if r := v.refs[ino]; r != nil {
			r.seq.Add(1)
			v.began = append(v.began, r)
		}
	}
	v.refMu.Unlock()
}

// forgetRef marks inode ino's Ref dead, after begin: the Writer frees it.
func (w *Writer) forgetRef(ino uint32) {
	v := w.rv
	if v == nil {
		return
	}
	v.refMu.Lock()
	if r := v.refs[ino]; r != nil {
		r.dead.Store(true)
		delete(v.refs, ino)
	}
	v.refMu.Unlock()
}

// endOps ends the running operation's changes for readers; w.mu is held.
func (w *Writer) endOps() {
	v := w.rv
	if v == nil {
		return
	}
	v.refMu.Lock()
	for i, r := range v.began {
		r.seq.Add(1)
		v.began[i] = nil
	}
	v.began = v.began[:0]
	clear(v.busy)
	v.refMu.Unlock()
}

// ReadOnce runs fn once with r's inode as it is, as Read does, but under
// the Writer's lock held shared on a volume a Writer changes, so fn may
// have effects (pass what it reads on as it reads it) that a retry would
// repeat: for reads that cannot be run again, and that may wait for a
// change to end.
func (v *Volume) ReadOnce(r *Ref, fn func(in *Inode) error) error {
	if v.live == nil {
		return v.Read(r, fn)
	}
	return v.readLocked(r, fn)
}

// Snapshot returns r's inode as it is now and the sequence count it was
// read at, for a lock-free read that checks the count after it
// (Ref.Valid). ok is false while a change of the inode is under way,
// under the race detector on a volume a Writer changes, or when the
// inode could not be read: use Read then.
func (v *Volume) Snapshot(r *Ref) (in *Inode, seq uint64, ok bool) {
	if raceEnabled && v.live != nil {
		return nil, 0, false
	}
	in, s, err := v.current(r)
	return in, s, err == nil
}

// Valid reports whether r's inode has not changed since Snapshot gave
// seq: a read made between them saw no change half made.
func (r *Ref) Valid(seq uint64) bool { return r.seqCheck(seq) }
