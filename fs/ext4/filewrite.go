package ext4

// Open regular files: the write methods of the handle, and its open and
// release. Writes go to the Writer, acting for the opener; every error
// goes through the error reporter. On a read-only mount the VFS opens no
// file for writing (EROFS), so they are never called; Sync has nothing
// to do there.

import (
	"syscall"

	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
)

// Open implements vfs.Opener. The handle's shape is fixed here, once, by
// the mount's read path (ARCHITECTURE: the path is chosen at open). On a
// read-write mount the handle holds the inode, so an unlink while it is
// open keeps the blocks until Release, and its writes act for c, the
// opener (only a caller that may take the blocks reserved for root gets
// them); the first open records the mount point (s_last_mounted).
func (f *fileNode) Open(flags int, c vfs.Cred) (vfs.Handle, error) {
	h := &handle{fs: f.fs, ref: f.ref}
	if w := f.fs.w; w != nil {
		w.SampleLastMounted()
		if err := f.pin(); err != nil {
			return nil, err
		}
		h.caller = callerOf(c)
		h.as = &h.caller
		return h, nil
	}
	switch f.fs.opts.path {
	case ReadIterWrap:
		return iterWrapHandle{h}, nil
	case ReadIter1Seg:
		return iter1SegHandle{h}, nil
	case ReadIomap:
		return iomapHandle{h}, nil
	}
	return h, nil
}

// Release implements vfs.Releaser: a read-write mount's handle drops its
// hold, freeing an unlinked file at the last one.
func (h *handle) Release() error {
	if h.fs.w == nil {
		return nil
	}
	return h.fs.check("ext4_evict_inode", h.fs.w.Unhold(h.ref.Ino()))
}

// writer is the Writer, or EBADF for a handle of a read-only mount.
func (h *handle) writer() (*disk.Writer, error) {
	if h.fs.w == nil {
		return nil, syscall.EBADF
	}
	return h.fs.w, nil
}

// Write implements vfs.Writer.
func (h *handle) Write(p []byte, off int64) (int, error) {
	w, err := h.writer()
	if err != nil {
		return 0, err
	}
	n, err := w.WriteAtAs(h.as, h.ref.Ino(), p, off)
	return n, h.fs.check("ext4_file_write_iter", err)
}

// WriteIter implements vfs.IterWriter: one WriteAt per segment, stopping
// at a short one.
func (h *handle) WriteIter(src iov.Iter, off int64) (int, error) {
	w, err := h.writer()
	if err != nil {
		return 0, err
	}
	done := 0
	for src.Len() > 0 {
		seg := src.Segment()
		n, err := w.WriteAtAs(h.as, h.ref.Ino(), seg, off+int64(done))
		done += n
		if err != nil || n < len(seg) {
			err = h.fs.check("ext4_file_write_iter", err)
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
		src.Advance(n)
	}
	return done, nil
}

// Append implements vfs.Appender. A single segment is written from the
// caller's buffer, without a copy.
func (h *handle) Append(src iov.Iter) (int64, int, error) {
	w, err := h.writer()
	if err != nil {
		return 0, 0, err
	}
	p := src.Segment()
	if len(p) != src.Len() {
		p = make([]byte, src.Len())
		src.CopyIn(p)
	}
	off, n, err := w.AppendAs(h.as, h.ref.Ino(), p)
	return off, n, h.fs.check("ext4_file_write_iter", err)
}

// Fallocate implements vfs.Fallocater, acting for c.
func (h *handle) Fallocate(mode uint32, off, length int64, c vfs.Cred) error {
	w, err := h.writer()
	if err != nil {
		return err
	}
	cl := callerOf(c)
	return h.fs.check("ext4_fallocate", w.FallocateAs(&cl, h.ref.Ino(), mode, off, length))
}

// Sync implements vfs.Syncer: on a read-write mount it commits the
// running transaction (which holds every change made so far, as ext4's
// fsync forces a commit) and flushes the device.
func (h *handle) Sync() error {
	if h.fs.w == nil {
		return nil
	}
	return h.fs.check("ext4_sync_file", h.fs.w.Sync())
}

// Datasync implements vfs.DataSyncer, as Sync.
func (h *handle) Datasync() error { return h.Sync() }
