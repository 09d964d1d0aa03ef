package tmpfs

import (
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

	// mu is the data lock: it protects the fields below. Reads hold it
	// shared, so readers of one file never wait for each other; writes,
	// truncation and freeing hold it exclusively (Linux holds i_rwsem
	// for a write).
	mu    sync.RWMutex
	size  int64
	pages pageTree
	freed bool // the inode went back at the last unlink and close
	// unwritten are the pages fallocate made that no write has reached
	// (fallocate.go).
	unwritten pageRanges
}

func (fs *FS) newFile(dir *Dir, mode uint32, c vfs.Cred, now instant) *File {
	f := &File{}
	f.init(fs, dir, unix.S_IFREG|mode&0o7777, c, now)
	return f
}

func (f *File) dtype() uint8 { return unix.DT_REG }

// Stat implements vfs.Node. Blocks counts the pages held, in 512-byte units.
func (f *File) Stat() (vfs.Stat, error) {
	st := f.stat()
	f.mu.RLock()
	st.Size, st.Blocks = f.size, f.pages.n*(pageSize/512)
	f.mu.RUnlock()
	return st, nil
}

// Open implements vfs.Opener. O_TRUNC is the VFS's: it calls Setattr with
// size 0 after Open, as Linux's handle_truncate does, which sets mtime and
// ctime even if the file was empty. O_APPEND needs nothing here: the VFS
// sends such writes to OpenFile.Append.
func (f *File) Open(flags int) (vfs.Handle, error) {
	f.mu.Lock()
	f.opens.Add(1) // under mu, so that free sees it
	f.mu.Unlock()
	return &OpenFile{f: f}, nil
}

// Setattr implements vfs.Setattrer. A size, even the current one, sets
// mtime and ctime, overriding a Mtime given with it: Linux 6.x does so for
// truncate(2), ftruncate(2) and O_TRUNC on tmpfs alike (measured). A
// negative size gives EINVAL.
func (f *File) Setattr(a vfs.SetAttr) error {
	if a.Valid&vfs.SetSize != 0 && a.Size < 0 {
		return errEINVAL
	}
	if a.Valid == 0 {
		return nil
	}
	f.inode.mu.Lock()
	defer f.inode.mu.Unlock()
	now := clockNow()
	resized := a.Valid&vfs.SetSize != 0
	if resized {
		f.mu.Lock()
		f.truncateLocked(a.Size)
		f.mu.Unlock()
	}
	f.setattrLocked(a, now)
	f.changed(now.wall, resized)
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
	f.size = size
}

// free returns the pages once the file has neither links nor handles, and
// the inode the first time.
func (f *File) free() {
	if f.nlink.Load() != 0 || f.opens.Load() != 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nlink.Load() != 0 || f.opens.Load() != 0 {
		return
	}
	f.fs.releasePages(f.pages.truncate(0))
	f.unwritten = pageRanges{}
	if !f.freed {
		f.dropXattrs()
		f.freed = true
		f.fs.inodes.Add(-1)
	}
}

// OpenFile is an open regular file, the handle File.Open returns. Its read
// and write methods neither allocate nor keep the caller's buffers.
type OpenFile struct {
	f        *File
	released atomic.Bool
}

// Read implements vfs.Reader. It reads from the page map under the shared
// data lock; holes read as zeros. A read that reaches end of file is short,
// and one at or past it returns 0, nil. A negative off gives EINVAL. Every
// read, even at end of file, updates atime by the relatime rule.
func (h *OpenFile) Read(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errEINVAL
	}
	f := h.f
	f.mu.RLock()
	n := 0
	if off < f.size {
		if int64(len(p)) > f.size-off {
			p = p[:f.size-off]
		}
		for n < len(p) {
			po := int(off & pageMask)
			var k int
			if pg := f.pages.get(off >> pageShift); pg != nil {
				k = copy(p[n:], pg[po:])
			} else {
				k = min(len(p)-n, pageSize-po)
				clear(p[n : n+k])
			}
			n += k
			off += int64(k)
		}
	}
	f.mu.RUnlock()
	f.touchAtime()
	return n, nil
}

// ReadIter implements vfs.IterReader: it copies from each page straight
// into the caller's segments. Its rules are Read's.
func (h *OpenFile) ReadIter(dst iov.Iter, off int64) (int, error) {
	if off < 0 {
		return 0, errEINVAL
	}
	f := h.f
	f.mu.RLock()
	n := 0
	if off < f.size {
		dst.Truncate(int(min(int64(dst.Len()), f.size-off)))
		for dst.Len() > 0 {
			po := int(off & pageMask)
			k := min(dst.Len(), pageSize-po)
			if pg := f.pages.get(off >> pageShift); pg != nil {
				k = dst.CopyOut(pg[po : po+k])
			} else {
				k = dst.Zero(k)
			}
			n += k
			off += int64(k)
		}
	}
	f.mu.RUnlock()
	f.touchAtime()
	return n, nil
}

// Write implements vfs.Writer. It allocates the pages it lands on that are
// holes; when the size limit stops it, it returns the count written, or
// ENOSPC if that is 0. Writing past the end leaves a hole. An end past
// tmpfs's maximum file size is cut there; a write starting at it gives
// EFBIG (Linux generic_write_checks).
func (h *OpenFile) Write(p []byte, off int64) (int, error) {
	f := h.f
	f.mu.Lock()
	n, err := f.writeLocked(p, off)
	f.mu.Unlock()
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
		pg := f.pageForWrite(off)
		if pg == nil {
			break
		}
		k := copy(pg[off&pageMask:], p[n:])
		n += k
		off += int64(k)
	}
	return f.endWrite(n, off)
}

// WriteIter implements vfs.IterWriter: it copies from the caller's
// segments straight into each page. Its rules are Write's.
func (h *OpenFile) WriteIter(src iov.Iter, off int64) (int, error) {
	f := h.f
	f.mu.Lock()
	n, err := f.writeIterLocked(src, off)
	f.mu.Unlock()
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
		pg := f.pageForWrite(off)
		if pg == nil {
			break
		}
		po := int(off & pageMask)
		k := src.CopyIn(pg[po:min(pageSize, po+src.Len())])
		n += k
		off += int64(k)
	}
	return f.endWrite(n, off)
}

// Append implements vfs.Appender: it writes src at the end of the file
// under the data lock, so the end it reads is the end it writes at.
func (h *OpenFile) Append(src iov.Iter) (int64, int, error) {
	f := h.f
	f.mu.Lock()
	off := f.size
	n, err := f.writeIterLocked(src, off)
	f.mu.Unlock()
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

// pageForWrite returns the page that holds off, allocating it if it is a
// hole, or nil when the size limit is reached.
func (f *File) pageForWrite(off int64) *page {
	idx := off >> pageShift
	if pg := f.pages.get(idx); pg != nil {
		f.written(idx)
		return pg
	}
	if !f.fs.reservePage() {
		return nil
	}
	pg := new(page)
	f.pages.insert(idx, pg)
	return pg
}

// endWrite grows the size to end, the offset after the last byte written.
func (f *File) endWrite(n int, end int64) (int, error) {
	if n == 0 {
		return 0, errENOSPC
	}
	if end > f.size {
		f.size = end
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
