package tmpfs

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// File is a regular file.
type File struct {
	inode

	// opens counts the handles not yet released; with nlink it decides
	// when the pages go back to the file system, as Linux frees an
	// unlinked file's pages at its last close.
	opens atomic.Int32

	// linkable says the file, made unnamed (tmpfile.go), may still take
	// its first link.
	linkable atomic.Bool

	// mu is the data lock: it protects the fields below. Writes,
	// truncation and freeing hold it exclusively (Linux holds i_rwsem
	// for a write), and change the data only between lockData and
	// unlockData. Stat and lseek hold it shared.
	//
	// Reads take no lock (Linux's filemap_read takes none either): seq
	// is a sequence count, odd while a writer is changing size, the page
	// map or page bytes. A reader loads seq, copies, and loads seq
	// again; if it changed, or was odd, the copy may be torn and is
	// thrown away and done again under mu shared. Memory
	// ordering: the writer's increments are atomic read-modify-writes,
	// sequentially consistent in Go, so a reader that loads an even seq
	// s sees every change made before the increment that produced s.
	// The reader's plain loads of size and page bytes must not pass its
	// second load of seq: on amd64 (TSO) loads are not reordered with
	// loads, and Go's atomic Load is a compiler barrier, so that second
	// load suffices; elsewhere the check is a CompareAndSwap, a full
	// barrier (seqCheck). Page pointers are loaded atomically (see
	// pages.go), so a torn read copies wrong bytes, never from a wrong
	// place. Under the race detector readers hold mu shared instead.
	// Stat reads size and pages.n the same way, but with atomic loads
	// of both (they are stored atomically), so its second load of seq
	// orders after them on every architecture and the race detector
	// has nothing to report.
	mu    sync.RWMutex
	seq   atomic.Uint64
	size  int64 // stored under mu with atomic.StoreInt64, loaded atomically by lock-free readers and Stat
	pages pageTree
	freed bool // the inode went back at the last unlink and close
	// unwritten are the pages fallocate made that no write has reached
	// (fallocate.go).
	unwritten pageRanges
}

// lockData takes mu for a change to size, the page map or page bytes,
// and marks the change as under way for lock-free readers.
func (f *File) lockData() {
	f.mu.Lock()
	f.seq.Add(1)
}

// unlockData ends a change begun with lockData.
func (f *File) unlockData() {
	f.seq.Add(1)
	f.mu.Unlock()
}

// tso is true on architectures whose loads are not reordered with other
// loads, where a plain atomic load closes a seqcount read.
const tso = runtime.GOARCH == "amd64" || runtime.GOARCH == "386" || runtime.GOARCH == "s390x"

// seqCheck reports whether a lock-free read that began at seq s saw no
// change.
func (f *File) seqCheck(s uint64) bool {
	if tso {
		return f.seq.Load() == s
	}
	return f.seq.CompareAndSwap(s, s)
}

func (fs *FS) newFile(dir *Dir, mode uint32, c vfs.Cred, now instant) *File {
	f := &File{}
	f.init(fs, dir, unix.S_IFREG|mode&0o7777, c, now)
	return f
}

func (f *File) dtype() uint8 { return unix.DT_REG }

// Stat implements vfs.Node. Blocks counts the pages held, in 512-byte units.
// Size and Blocks are read together without a lock, under seq as reads
// are (both are stored atomically, so the read is race-free); while a
// change runs it waits for mu shared.
func (f *File) Stat() (st vfs.Stat, err error) {
	f.stat(&st)
	if s := f.seq.Load(); s&1 == 0 {
		st.Size, st.Blocks = atomic.LoadInt64(&f.size), atomic.LoadInt64(&f.pages.n)*(pageSize/512)
		if f.seq.Load() == s {
			return st, nil
		}
	}
	f.mu.RLock()
	st.Size, st.Blocks = f.size, f.pages.n*(pageSize/512)
	f.mu.RUnlock()
	return st, nil
}

// Open implements vfs.Opener. O_TRUNC is the VFS's: it calls Setattr with
// size 0 after Open, as Linux's handle_truncate does, which sets mtime and
// ctime even if the file was empty. O_APPEND needs nothing here: the VFS
// sends such writes to OpenFile.Append.
func (f *File) Open(flags int, _ vfs.Cred) (vfs.Handle, error) {
	f.mu.Lock()
	f.opens.Add(1) // under mu, so that free sees it
	f.mu.Unlock()
	return &OpenFile{f: f}, nil
}

// Setattr implements vfs.Setattrer. A size sets mtime and ctime,
// overriding a Mtime given with it, when it changes the size or when the
// file holds pages (shmem_setattr calls shmem_truncate_range then, which
// touches both): the current size of an empty file changes nothing, as
// truncate(2) shows on Linux 6.18 (ftruncate and O_TRUNC come with
// SetMtime, Linux's ATTR_MTIME|ATTR_CTIME). A negative size gives EINVAL.
func (f *File) Setattr(a vfs.SetAttr, _ vfs.Cred) error {
	if a.Valid&vfs.SetSize != 0 && a.Size < 0 {
		return errEINVAL
	}
	if a.Valid == 0 {
		return nil
	}
	f.inode.mu.Lock()
	defer f.inode.mu.Unlock()
	now := clockNow()
	resized := false
	if a.Valid&vfs.SetSize != 0 {
		f.lockData()
		resized = a.Size != f.size || f.pages.n > 0
		f.truncateLocked(a.Size)
		f.unlockData()
	}
	f.setattrLocked(a, now)
	if resized || a.Valid&^vfs.SetSize != 0 {
		f.changed(now.wall, resized)
	}
	return nil
}

// truncateLocked sets the size, with mu held. Pages wholly past the new
// end go back to the file system, and the tail of a partial last page is
// zeroed, so that growing the file again shows zeros (Linux
// truncate_setsize).
func (f *File) truncateLocked(size int64) {
	if size <= f.size { // <=: shmem_setattr also drops fallocated pages past EOF
		f.fs.releasePages(f.pages.truncate((size + pageMask) >> pageShift))
		f.unwritten.removeRange((size+pageMask)>>pageShift, maxFileSize)
		if off := size & pageMask; off != 0 {
			if pg := f.pages.get(size >> pageShift); pg != nil {
				clear(pg[off:])
			}
		}
	}
	atomic.StoreInt64(&f.size, size)
}

// free returns the pages once the file has neither links nor handles, and
// the inode the first time.
func (f *File) free() {
	if f.nlink.Load() != 0 || f.opens.Load() != 0 {
		return
	}
	f.lockData()
	defer f.unlockData()
	if f.nlink.Load() != 0 || f.opens.Load() != 0 {
		return
	}
	f.fs.releasePages(f.pages.truncate(0))
	f.unwritten = pageRanges{}
	if !f.freed {
		f.freed = true
		f.evict()
	}
}

// OpenFile is an open regular file, the handle File.Open returns. Its read
// and write methods neither allocate nor keep the caller's buffers.
type OpenFile struct {
	f        *File
	released atomic.Bool
	// noatime says the open file has O_NOATIME: reads leave atime alone
	// (vfs.NoatimeHandle).
	noatime atomic.Bool
	// atime is the policy of the mount the file was opened on
	// (vfs.AtimeHandle), set once before the first read; nil is relatime.
	atime *vfs.AtimePolicy
}

var (
	_ vfs.NoatimeHandle = (*OpenFile)(nil)
	_ vfs.AtimeHandle   = (*OpenFile)(nil)
)

// SetNoatime implements vfs.NoatimeHandle.
func (h *OpenFile) SetNoatime(on bool) { h.noatime.Store(on) }

// SetAtimePolicy implements vfs.AtimeHandle.
func (h *OpenFile) SetAtimePolicy(p *vfs.AtimePolicy) { h.atime = p }

// accessed updates atime for a read through h: file_accessed.
func (h *OpenFile) accessed() {
	if !h.noatime.Load() {
		h.f.touchAtimeMode(h.atime.Mode(false))
	}
}

// Read implements vfs.Reader. It copies from the page map without a lock
// (see File.seq); holes read as zeros. A read that reaches end of file is
// short, and one at or past it returns 0, nil. A negative off gives
// EINVAL. Every read, even at end of file, updates atime by the mount's
// rule (vfs.AtimePolicy).
func (h *OpenFile) Read(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errEINVAL
	}
	f := h.f
	var n int
	if s := f.seq.Load(); raceEnabled || s&1 != 0 {
		n = f.readShared(p, off)
	} else if n = f.copyTo(p, off); !f.seqCheck(s) {
		n = f.readShared(p, off)
	}
	h.accessed()
	return n, nil
}

// readShared is Read under mu held shared, for a reader that met a
// writer.
func (f *File) readShared(p []byte, off int64) int {
	f.mu.RLock()
	n := f.copyTo(p, off)
	f.mu.RUnlock()
	return n
}

// copyTo copies the file's bytes at off into p and returns the count.
// size is loaded once: a lock-free reader may see it change. A run of
// pages (runs.go) is copied in one piece.
func (f *File) copyTo(p []byte, off int64) int {
	size := atomic.LoadInt64(&f.size)
	if off >= size {
		return 0
	}
	if int64(len(p)) > size-off {
		p = p[:size-off]
	}
	n := 0
	var leaf *rnode
	for n < len(p) {
		po := int(off & pageMask)
		idx := off >> pageShift
		if n == 0 || idx&radixMask == 0 {
			leaf = f.pages.leaf(idx)
		}
		var src []byte
		if leaf != nil {
			src = leaf.data(idx&radixMask, po+len(p)-n)
		}
		var k int
		if src != nil {
			k = copy(p[n:], src[po:])
		} else { // a hole
			k = min(len(p)-n, pageSize-po)
			clear(p[n : n+k])
		}
		n += k
		off += int64(k)
	}
	return n
}

// ReadIter implements vfs.IterReader: it copies from each page straight
// into the caller's segments. Its rules are Read's.
func (h *OpenFile) ReadIter(dst iov.Iter, off int64) (int, error) {
	if off < 0 {
		return 0, errEINVAL
	}
	f := h.f
	var n int
	if s := f.seq.Load(); raceEnabled || s&1 != 0 {
		n = f.readIterShared(dst, off)
	} else if n = f.copyToIter(dst, off); !f.seqCheck(s) {
		n = f.readIterShared(dst, off) // dst is a copy: the retry starts afresh
	}
	h.accessed()
	return n, nil
}

func (f *File) readIterShared(dst iov.Iter, off int64) int {
	f.mu.RLock()
	n := f.copyToIter(dst, off)
	f.mu.RUnlock()
	return n
}

// copyToIter is copyTo for a vector.
func (f *File) copyToIter(dst iov.Iter, off int64) int {
	size := atomic.LoadInt64(&f.size)
	if off >= size {
		return 0
	}
	dst.Truncate(int(min(int64(dst.Len()), size-off)))
	n := 0
	var leaf *rnode
	for dst.Len() > 0 {
		po := int(off & pageMask)
		idx := off >> pageShift
		if n == 0 || idx&radixMask == 0 {
			leaf = f.pages.leaf(idx)
		}
		var src []byte
		if leaf != nil {
			src = leaf.data(idx&radixMask, po+dst.Len())
		}
		var k int
		if src != nil {
			k = dst.CopyOut(src[po:])
		} else {
			k = dst.Zero(pageSize - po)
		}
		n += k
		off += int64(k)
	}
	return n
}

// Write implements vfs.Writer. It allocates the pages it lands on that are
// holes; when the size limit stops it, it returns the count written, or
// ENOSPC if that is 0. Writing past the end leaves a hole. An end past
// tmpfs's maximum file size is cut there; a write starting at it gives
// EFBIG (Linux generic_write_checks).
func (h *OpenFile) Write(p []byte, off int64) (int, error) {
	f := h.f
	f.lockData()
	n, err := f.writeLocked(p, off)
	f.unlockData()
	return n, err
}

func (f *File) writeLocked(p []byte, off int64) (int, error) {
	room, err := f.startWrite(off, len(p))
	if room == 0 {
		return 0, err
	}
	p = p[:room]
	n := 0
	for n < len(p) {
		b := f.pageForWrite(off, off+int64(len(p)-n))
		if b == nil {
			break
		}
		k := copy(b, p[n:])
		n += k
		off += int64(k)
	}
	return f.endWrite(n, off)
}

// WriteIter implements vfs.IterWriter: it copies from the caller's
// segments straight into each page. Its rules are Write's.
func (h *OpenFile) WriteIter(src iov.Iter, off int64) (int, error) {
	f := h.f
	f.lockData()
	n, err := f.writeIterLocked(src, off)
	f.unlockData()
	return n, err
}

func (f *File) writeIterLocked(src iov.Iter, off int64) (int, error) {
	room, err := f.startWrite(off, src.Len())
	if room == 0 {
		return 0, err
	}
	src.Truncate(room)
	n := 0
	for src.Len() > 0 {
		b := f.pageForWrite(off, off+int64(src.Len()))
		if b == nil {
			break
		}
		k := src.CopyIn(b)
		n += k
		off += int64(k)
	}
	return f.endWrite(n, off)
}

// Append implements vfs.Appender: it writes src at the end of the file
// under the data lock, so the end it reads is the end it writes at.
func (h *OpenFile) Append(src iov.Iter) (int64, int, error) {
	f := h.f
	f.lockData()
	off := f.size
	n, err := f.writeIterLocked(src, off)
	f.unlockData()
	return off, n, err
}

// startWrite checks a write of count bytes at off and returns how many of
// them fit below the maximum file size. It sets mtime and ctime before
// the copy, as Linux's file_modified does, so they move even if the size
// limit then stops the write.
func (f *File) startWrite(off int64, count int) (int, error) {
	if off < 0 {
		return 0, errEINVAL
	}
	if count == 0 {
		return 0, nil
	}
	if off >= maxFileSize {
		return 0, errEFBIG
	}
	room := int(min(int64(count), maxFileSize-off))
	f.changed(clockNow().wall, true)
	return room, nil
}

// pageForWrite returns the file's bytes from off to end that are stored
// contiguously (the rest of off's page, or of its run), allocating the
// holes among them (allocRun), and marks their pages written; nil means
// the size limit is reached. end > off.
func (f *File) pageForWrite(off, end int64) []byte {
	idx := off >> pageShift
	var b []byte
	if leaf := f.pages.leaf(idx); leaf != nil {
		b = leaf.data(idx&radixMask, int(min(end-off+off&pageMask, maxRun)))
	}
	if b == nil {
		if b = f.allocRun(idx, end); b == nil {
			return nil
		}
	}
	b = b[off&pageMask:]
	if int64(len(b)) > end-off {
		b = b[:end-off]
	}
	if len(f.unwritten.r) != 0 {
		f.unwritten.removeRange(idx, (off+int64(len(b))+pageMask)>>pageShift)
	}
	return b
}

// endWrite grows the size to end, the offset after the last byte written.
func (f *File) endWrite(n int, end int64) (int, error) {
	if n == 0 {
		return 0, errENOSPC
	}
	if end > f.size {
		atomic.StoreInt64(&f.size, end)
	}
	return n, nil
}

// Llseek implements vfs.Seeker, as Linux's shmem_file_llseek: SEEK_SET,
// SEEK_CUR and SEEK_END as generic_file_llseek_size (EINVAL for a negative
// result); SEEK_DATA and SEEK_HOLE over the page map, where a held page is
// data. Both give ENXIO for an offset that is negative or at or past the
// end; SEEK_DATA gives ENXIO too when no data follows off, and SEEK_HOLE
// finds the hole that every file has at its end.
func (h *OpenFile) Llseek(pos, off int64, whence int) (int64, error) {
	f := h.f
	var r int64
	switch whence {
	case unix.SEEK_SET:
		r = off
	case unix.SEEK_CUR:
		if off == 0 {
			return pos, nil
		}
		r = pos + off
		if overflowed(pos, off, r) {
			return 0, errEINVAL
		}
	case unix.SEEK_END:
		f.mu.RLock()
		size := f.size
		f.mu.RUnlock()
		r = size + off
		if overflowed(size, off, r) {
			return 0, errEINVAL
		}
	case unix.SEEK_DATA, unix.SEEK_HOLE:
		return f.seekHoleData(off, whence)
	default:
		return 0, errEINVAL
	}
	if r < 0 {
		return 0, errEINVAL
	}
	return r, nil
}

// seekHoleData is Linux's mapping_seek_hole_data at page granularity.
func (f *File) seekHoleData(off int64, whence int) (int64, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if off < 0 || off >= f.size {
		return 0, errENXIO
	}
	if whence == unix.SEEK_DATA {
		idx := f.nextData(off >> pageShift)
		if idx < 0 {
			return 0, errENXIO
		}
		r := max(off, idx<<pageShift)
		if r >= f.size {
			return 0, errENXIO
		}
		return r, nil
	}
	idx := f.nextHole(off >> pageShift)
	if idx > (f.size-1)>>pageShift { // only the hole at the end
		return f.size, nil
	}
	return min(max(off, idx<<pageShift), f.size), nil
}

// overflowed reports whether r = a + b wrapped around.
func overflowed(a, b, r int64) bool {
	return b > 0 && r < a || b < 0 && r > a
}

// Sync implements vfs.Syncer; memory is as stable as tmpfs gets.
func (h *OpenFile) Sync() error { return nil }

// Release implements vfs.Releaser. The handle's last reference is gone;
// an unlinked file with no other handle frees its pages.
func (h *OpenFile) Release() error {
	if h.released.Swap(true) {
		return nil
	}
	h.f.opens.Add(-1)
	h.f.free()
	return nil
}
