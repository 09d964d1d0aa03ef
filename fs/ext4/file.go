package ext4

// Open regular files: the read methods of the handle, under the hot-path
// rules of ARCHITECTURE.md. A read inside a known extent costs a lock-free
// mapping-cache hit, a bounds check and one copy (dax) or one vectored
// device read (default) per contiguous run, straight into the caller's
// buffers: no intermediate buffer and no allocation.
//
// Concurrency: the VFS may call a handle from many goroutines at once
// (pread on a shared descriptor). The only mutable state of a handle is
// its mapping cache, a seqlock (mapCache), so readers never block each
// other and never see a torn Mapping.
//
// On a read-write mount the same path reads beside the Writer without its
// lock: it takes the inode's snapshot and sequence count
// (disk.Volume.Snapshot), reads (a cached mapping counts only if it was
// found at that count), and checks the count (disk.Ref.Valid); if the
// inode changed meanwhile (a write, a truncate, a free of the blocks it
// mapped) the bytes are read again through disk.Volume.Read, so a read
// never returns bytes of a block another file took over. File data is
// copied from device memory when the device can be mapped (mem), as dax
// does, and otherwise read from the device; a mount with data=journal,
// whose data may sit in the running transaction, reads it through the
// volume (viaVol).

import (
	"runtime/debug"
	"sync/atomic"
	"syscall"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/iov"
)

var errEINVAL error = syscall.EINVAL

// handle is an open regular file.
type handle struct {
	fs  *FS
	ref *disk.Ref
	c   mapCache
	// On a read-write mount: as is who writes act for, &caller, the
	// opener (both set at open and never changed); the handle holds the
	// inode from Open to Release.
	as     *disk.Caller
	caller disk.Caller
	// atimeState is the open file's atime policy and O_NOATIME (atime.go).
	atimeState
}

// mapCache holds the last Mapping a handle used, like ExtentCache, but
// safe for concurrent use without a lock: a sequence counter, odd while a
// writer is storing, guards three words. A reader that sees the counter
// move does not retry; it misses and walks the extent tree. Every field is
// atomic, so the race detector sees no race, and on amd64 the loads are
// plain moves. The hit path (lookup) inlines into the read methods:
// measured against a sync.Mutex around the same fields, single-goroutine
// 4 KiB dax preads cost the same (~110 ns) and two goroutines sharing one
// descriptor ~10% less.
type mapCache struct {
	seq      atomic.Uint64
	logical  atomic.Uint64
	length   atomic.Uint64 // 0: empty
	physical atomic.Uint64 // or cacheZeros
	// iseq is the inode's sequence count the mapping was found at: it
	// holds while the count has not moved (always, read-only).
	iseq atomic.Uint64
}

// cacheZeros, in mapCache.physical, marks a run that reads as zeros: a
// hole or an unwritten extent, which a read treats alike (a cached
// unwritten run comes back as a Hole). Block numbers have at most 48 bits
// (64bit feature).
const cacheZeros = 1 << 63

// run is a cached mapping in the shape the read path uses: three words,
// which the compiler keeps in registers. Mapping has five fields, so it
// went through the stack: lookup's narrow stores were read back by one
// wide load, which cannot be forwarded from the store buffer and stalled;
// in a profile of 4 KiB dax preads that copy was half of handle.Read's
// own time.
type run struct {
	logical, length uint64
	physical        uint64 // the first device block, or cacheZeros
}

// zeros reports whether the run reads as zeros (a hole or unwritten).
func (r run) zeros() bool { return r.physical&cacheZeros != 0 }

// lookup returns the cached run if it holds logical block lblk and was
// found at the inode's sequence count iseq.
func (c *mapCache) lookup(lblk, iseq uint64) (run, bool) {
	s := c.seq.Load()
	r := run{logical: c.logical.Load(), length: c.length.Load(), physical: c.physical.Load()}
	is := c.iseq.Load()
	// s&^1 != s while a store is under way, so an odd s never matches.
	return r, c.seq.Load() == s&^1 && lblk-r.logical < r.length && is == iseq
}

func (c *mapCache) store(m disk.Mapping, iseq uint64) {
	s := c.seq.Load()
	if s&1 != 0 || !c.seq.CompareAndSwap(s, s+1) {
		return // another goroutine is storing; its mapping is as good
	}
	p := m.Physical
	if m.Hole || m.Unwritten {
		p = cacheZeros
	}
	c.logical.Store(m.Logical)
	c.length.Store(m.Len)
	c.physical.Store(p)
	c.iseq.Store(iseq)
	c.seq.Store(s + 2)
}

// mapSlow finds the run of inode in (read at count iseq) that holds
// logical block lblk by walking the extent tree, on a cache miss, and
// caches it.
func (h *handle) mapSlow(in *disk.Inode, iseq, lblk uint64) (run, error) {
	m, err := h.fs.vol.MapBlocks(in, nil, lblk)
	if err != nil {
		return run{}, err
	}
	h.c.store(m, iseq)
	return runOf(m), nil
}

func runOf(m disk.Mapping) run {
	p := m.Physical
	if m.Hole || m.Unwritten {
		p = cacheZeros
	}
	return run{logical: m.Logical, length: m.Len, physical: p}
}

// clip returns the bytes of run m from file position pos, at most max.
func (fs *FS) clip(m disk.Mapping, pos uint64, max int) int { return fs.clipRun(runOf(m), pos, max) }

// devOff is the device byte offset of file position pos inside run m.
func (fs *FS) devOff(m disk.Mapping, pos uint64) int64 { return fs.devOffRun(runOf(m), pos) }

// clipRun returns the bytes of run r from file position pos, at most
// max. Blocks are compared before shifting to bytes: a hole past the last
// mapped block can be ~2^48 blocks long.
func (fs *FS) clipRun(r run, pos uint64, max int) int {
	left := r.logical + r.length - pos>>fs.bsBits
	if left > uint64(max)>>fs.bsBits+1 {
		return max
	}
	if want := left<<fs.bsBits - pos&(fs.bs-1); want < uint64(max) {
		return int(want)
	}
	return max
}

// devOffRun is the device byte offset of file position pos inside run r,
// which does not read as zeros.
func (fs *FS) devOffRun(r run, pos uint64) int64 {
	return int64(r.physical<<fs.bsBits + (pos - r.logical<<fs.bsBits))
}

// limit applies pread's end-of-file rule to inode in: the bytes readable
// at off, at most want; 0 at or past the end.
func limit(in *disk.Inode, off int64, want int) int {
	size := in.Size
	if uint64(off) >= size {
		return 0
	}
	if rem := size - uint64(off); uint64(want) > rem {
		return int(rem)
	}
	return want
}

// partial applies the driver contract: a partial transfer is a success.
func partial(done int, err error) (int, error) {
	if done > 0 {
		return done, nil
	}
	return 0, err
}

// Read implements vfs.Reader, the scalar read (Linux's .read).
func (h *handle) Read(p []byte, off int64) (n int, err error) {
	if off < 0 {
		return 0, errEINVAL
	}
	in, s, ok := h.fs.vol.Snapshot(h.ref)
	if !ok || len(p) == 0 {
		return h.readRetry(p, off)
	}
	p = p[:limit(in, off, len(p))]
	// dax, the whole read inside the cached run: one copy, guarded here
	// as block.Copy guards it (a fault gives EIO), which saves a call. An
	// empty cache misses, and so does an inline_data file (never cached).
	if fs := h.fs; fs.mem != nil && len(p) > 0 {
		bits := fs.bsBits & 63 // 10 to 16; masked, the shifts skip Go's test for counts of 64 or more
		pos := uint64(off)
		r, ok := h.c.lookup(pos>>bits, s)
		if ok && (pos+uint64(len(p)-1))>>bits-r.logical < r.length && !r.zeros() {
			dev := int64(r.physical<<bits + (pos - r.logical<<bits))
			src := fs.mem[dev : dev+int64(len(p))]
			old := debug.SetPanicOnFault(true)
			n = -1
			defer func() {
				if n < 0 { // the copy faulted
					debug.SetPanicOnFault(old)
					n, err = 0, block.Fault(recover())
				}
			}()
			n = copy(p, src)
			debug.SetPanicOnFault(old)
			if h.ref.Valid(s) {
				h.accessed(in)
				return n, nil
			}
			return h.readRetry(p, off)
		}
	}
	n, err = h.read(in, s, p, off)
	if h.ref.Valid(s) {
		h.accessed(in)
		return n, h.fs.check("ext4_file_read_iter", err)
	}
	return h.readRetry(p, off)
}

// readRetry is Read through disk.Volume.Read: for a read that met a
// change of the inode, or could not start without the lock, and one of
// no bytes (which leaves atime alone, as ext4_file_read_iter).
func (h *handle) readRetry(p []byte, off int64) (n int, err error) {
	err = h.fs.vol.Read(h.ref, func(in *disk.Inode) error {
		var rerr error
		n, rerr = h.read(in, h.ref.Seq(), p[:limit(in, off, len(p))], off)
		return rerr
	})
	if len(p) > 0 && h.fs.w != nil {
		h.fs.accessRef(h.ref, h.atimeMode(false))
	}
	return n, h.fs.check("ext4_file_read_iter", err)
}

// read is Read of inode in, read at count s, past the end-of-file clip,
// for every case the dax fast path does not take: one copy, device read
// or clear per run.
func (h *handle) read(in *disk.Inode, s uint64, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if in.Flags&disk.FlagInlineData != 0 || h.fs.viaVol {
		return h.fs.vol.ReadAt(in, nil, p, off)
	}
	done := 0
	for done < len(p) {
		pos := uint64(off) + uint64(done)
		r, ok := h.c.lookup(pos>>h.fs.bsBits, s)
		var err error
		if !ok {
			if r, err = h.mapSlow(in, s, pos>>h.fs.bsBits); err != nil {
				return partial(done, err)
			}
		}
		chunk := p[done : done+h.fs.clipRun(r, pos, len(p)-done)]
		k := len(chunk)
		if r.zeros() {
			clear(chunk) // holes and unwritten extents read as zeros
		} else if mem := h.fs.mem; mem != nil { // the whole device mapped: one guarded copy
			dev := h.fs.devOffRun(r, pos)
			if dev < 0 || dev > int64(len(mem))-int64(k) {
				return partial(done, syscall.EIO) // a mapping past the device: a corrupt extent
			}
			if k, err = block.Copy(chunk, mem[dev:dev+int64(k)]); err != nil {
				return partial(done, err)
			}
		} else if k, err = h.fs.readBuf(chunk, h.fs.devOffRun(r, pos)); err != nil || k == 0 {
			return partial(done+k, nonNil(err))
		}
		done += k
	}
	return done, nil
}

// ReadIter implements vfs.IterReader, the vectored read (.read_iter): one
// device read or one copy per contiguous run, into dst's segments.
func (h *handle) ReadIter(dst iov.Iter, off int64) (n int, err error) {
	if off < 0 {
		return 0, errEINVAL
	}
	in, s, ok := h.fs.vol.Snapshot(h.ref)
	if !ok || dst.Len() == 0 {
		return h.readIterRetry(dst, off)
	}
	d := dst
	d.Truncate(limit(in, off, d.Len()))
	if d.Len() == 0 {
		h.accessed(in) // at end of file
		return 0, nil
	}
	// dax, the whole read inside the cached run: one copy into the
	// segments, guarded here as Read's fast path guards its copy, without
	// the loop's calls.
	if fs := h.fs; fs.mem != nil && in.Flags&disk.FlagInlineData == 0 {
		bits := fs.bsBits & 63
		pos, want := uint64(off), d.Len()
		r, ok := h.c.lookup(pos>>bits, s)
		if ok && (pos+uint64(want-1))>>bits-r.logical < r.length && !r.zeros() {
			dev := int64(r.physical<<bits + (pos - r.logical<<bits))
			src := fs.mem[dev : dev+int64(want)]
			old := debug.SetPanicOnFault(true)
			n = -1
			defer func() {
				if n < 0 { // the copy faulted
					debug.SetPanicOnFault(old)
					n, err = 0, block.Fault(recover())
				}
			}()
			n = iov.CopyAll(d, src)
			debug.SetPanicOnFault(old)
			if h.ref.Valid(s) {
				h.accessed(in)
				return n, nil
			}
			return h.readIterRetry(dst, off)
		}
	}
	n, err = h.readIter(in, s, d, off)
	if h.ref.Valid(s) {
		h.accessed(in)
		return n, h.fs.check("ext4_file_read_iter", err)
	}
	return h.readIterRetry(dst, off)
}

// readIterRetry is ReadIter through disk.Volume.Read (see readRetry).
// dst is a copy each run starts afresh from.
func (h *handle) readIterRetry(dst iov.Iter, off int64) (n int, err error) {
	err = h.fs.vol.Read(h.ref, func(in *disk.Inode) error {
		d := dst
		d.Truncate(limit(in, off, d.Len()))
		if d.Len() == 0 {
			n = 0
			return nil
		}
		var rerr error
		n, rerr = h.readIter(in, h.ref.Seq(), d, off)
		return rerr
	})
	if dst.Len() > 0 && h.fs.w != nil {
		h.fs.accessRef(h.ref, h.atimeMode(false))
	}
	return n, h.fs.check("ext4_file_read_iter", err)
}

// readIter is ReadIter of inode in, read at count s, past the end-of-file
// clip (dst is not empty).
func (h *handle) readIter(in *disk.Inode, s uint64, dst iov.Iter, off int64) (n int, err error) {
	if in.Flags&disk.FlagInlineData != 0 || h.fs.viaVol {
		return h.readVolIter(in, dst, off)
	}
	done := 0
	for dst.Len() > 0 {
		pos := uint64(off) + uint64(done)
		r, ok := h.c.lookup(pos>>h.fs.bsBits, s)
		if !ok {
			if r, err = h.mapSlow(in, s, pos>>h.fs.bsBits); err != nil {
				return partial(done, err)
			}
		}
		piece := h.fs.clipRun(r, pos, dst.Len())
		k := 0
		if r.zeros() {
			k = dst.Zero(piece)
		} else if k, err = h.fs.readIter(&dst, piece, h.fs.devOffRun(r, pos)); err != nil || k < piece {
			return partial(done+k, nonNil(err))
		}
		done += k
	}
	return done, nil
}

// readVolIter reads through the volume, into a temporary buffer: an
// inline_data file, at most a few hundred bytes kept in the inode, or a
// data=journal mount's file. Not a hot path.
func (h *handle) readVolIter(in *disk.Inode, dst iov.Iter, off int64) (int, error) {
	tmp := make([]byte, dst.Len())
	n, err := h.fs.vol.ReadAt(in, nil, tmp, off)
	if n > 0 {
		return dst.CopyOut(tmp[:n]), nil
	}
	return 0, err
}

func nonNil(err error) error {
	if err == nil {
		return syscall.EIO
	}
	return err
}

// readBuf reads len(p) bytes of file data at device offset dev into p.
func (fs *FS) readBuf(p []byte, dev int64) (int, error) {
	if fs.dax != nil {
		it := iov.Buf(p)
		return fs.copyDax(&it, len(p), dev)
	}
	done := 0
	for done < len(p) {
		k, err := fs.b.ReadAt(p[done:], dev+int64(done))
		done += k
		if err != nil || k == 0 {
			return partial(done, nonNil(err))
		}
	}
	return done, nil
}

// readIter reads n bytes of file data at device offset dev into dst and
// consumes them: the default path hands the caller's vector, cut to n
// bytes, to the device's vectored read (block.File does the sector
// alignment without allocating); dax copies from device memory.
func (fs *FS) readIter(dst *iov.Iter, n int, dev int64) (int, error) {
	if fs.dax != nil {
		return fs.copyDax(dst, n, dev)
	}
	done := 0
	for done < n {
		sub := *dst
		sub.Truncate(n - done)
		k, err := fs.b.ReadIter(sub, dev+int64(done))
		dst.Advance(k)
		done += k
		if err != nil || k == 0 {
			return partial(done, nonNil(err))
		}
	}
	return done, nil
}
