package disk

// Open files on the Writer: unlinked files that are still open keep their
// blocks until the last close, on the on-disk orphan list meanwhile
// (rworphan.go). Also reads, attribute changes and appends under the
// Writer's lock.

import (
	"syscall"
	"time"
)

// Hold records an open of ino; Unhold the close. An inode whose last link
// goes while it is held is freed by the last Unhold.
func (w *Writer) Hold(ino uint32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held == nil {
		w.held = map[uint32]int{}
	}
	w.held[ino]++
}

// HoldIf is Hold if ok, called under the Writer's lock, reports true;
// it reports whether it held. A caller whose inode may have been freed
// asks, under the same lock that frees it, whether it is still its own
// (OnRelease), so that it never holds a number reused by a new inode.
func (w *Writer) HoldIf(ino uint32, ok func() bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !ok() {
		return false
	}
	if w.held == nil {
		w.held = map[uint32]int{}
	}
	w.held[ino]++
	return true
}

// HoldInUse holds inode ino (Hold) if it is in use: allocated, with
// links, or held already (an unlinked file still open); it reports
// whether it held. A file handle, decoded with no path that would pin
// the inode, finds it so (ext4_iget with EXT4_IGET_HANDLE): under the
// lock that frees inodes, so a number never gets held for an inode
// freed meanwhile.
func (w *Writer) HoldInUse(ino uint32) bool {
	if ino == 0 || ino > w.v.inodes {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held[ino] == 0 {
		raw, err := w.getInode(ino)
		if err != nil || iMode(raw) == 0 || iLinks(raw) == 0 {
			return false
		}
	}
	if w.held == nil {
		w.held = map[uint32]int{}
	}
	w.held[ino]++
	return true
}

// OnRelease sets fn to be called, under the Writer's lock, for each inode
// the Writer frees from then on, before its number can be reused: the
// VFS glue forgets the inode's node there.
func (w *Writer) OnRelease(fn func(ino uint32)) {
	w.mu.Lock()
	w.onRelease = fn
	w.mu.Unlock()
}

// Unhold ends a Hold, freeing an unlinked inode at the last one.
func (w *Writer) Unhold(ino uint32) error {
	w.mu.Lock()
	defer w.unlock()
	w.held[ino]--
	if w.held[ino] > 0 {
		return nil
	}
	delete(w.held, ino)
	if !w.orphan[ino] {
		return nil
	}
	if w.closed {
		return syscall.EROFS
	}
	if err := w.freeOrphan(ino); err != nil {
		return err
	}
	return w.writeSuper()
}

// isOpenUnlinked is the Volume's openUnlinked; called with mu held (all
// reads of a writable volume are under mu).
func (w *Writer) isOpenUnlinked(ino uint32) bool { return w.orphan[ino] }

// View runs fn under the Writer's lock, so fn sees no change half made.
func (w *Writer) View(fn func(v *Volume) error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fn(w.v)
}

// Journalled reports whether the Writer logs its changes in a journal
// (has_journal, without noload).
func (w *Writer) Journalled() bool { return w.j != nil }

// ReadAt reads regular file ino at off with pread(2)'s semantics: 0, nil
// at or past the end; holes read as zeros.
func (w *Writer) ReadAt(ino uint32, p []byte, off int64) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	raw, err := w.inodeScratch(ino)
	if err != nil {
		return 0, err
	}
	if iMode(raw)&S_IFMT == S_IFDIR {
		return 0, syscall.EISDIR
	}
	if off < 0 {
		return 0, syscall.EINVAL
	}
	size := int64(iSize(raw))
	if off >= size || len(p) == 0 {
		return 0, nil
	}
	p = p[:min(int64(len(p)), size-off)]
	if iFlags(raw)&FlagInlineData != 0 {
		return w.readInline(ino, raw, p, off) // rwinline.go
	}
	if iFlags(raw)&FlagExtents == 0 {
		return w.readAtMap(ino, raw, p, off) // rwblockmap.go
	}
	v := w.v
	done := 0
	for done < len(p) {
		pos := off + int64(done)
		lblk := uint64(pos) >> v.bsBits
		x, err := w.xfind(ino, raw, uint32(lblk))
		if err != nil {
			return done, err
		}
		e, ok, holeEnd := x.at(uint32(lblk))
		if !ok || e.u {
			// A hole runs to the next extent; unwritten blocks read as zeros.
			end := int64(len(p))
			if !ok {
				end = min(end, int64(holeEnd<<v.bsBits)-off)
			} else {
				end = min(end, int64(e.end()<<v.bsBits)-off)
			}
			clear(p[done:end])
			done = int(end)
			continue
		}
		// The run of the extent holding lblk, in one device read.
		n := int(min(int64(len(p)), int64(e.end()<<v.bsBits)-off) - int64(done))
		phys := e.p + (lblk - uint64(e.l))
		if err := w.readData(p[done:done+n], int64(phys<<v.bsBits)+pos&int64(v.bs-1)); err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// Append writes p at the end of regular file ino, atomically with other
// writes, and returns where it landed.
func (w *Writer) Append(ino uint32, p []byte) (int64, int, error) {
	return w.AppendAs(nil, ino, p)
}

// AppendAs is Append acting for c (see lockAs).
func (w *Writer) AppendAs(c *Caller, ino uint32, p []byte) (int64, int, error) {
	// The lock is dropped between reading the size and writing, so a
	// concurrent append could interleave; appendMu serialises appends.
	w.appendMu.Lock()
	defer w.appendMu.Unlock()
	w.mu.Lock()
	raw, err := w.inodeScratch(ino)
	var off int64
	if err == nil {
		off = int64(iSize(raw))
	}
	w.mu.Unlock()
	if err != nil {
		return 0, 0, err
	}
	n, err := w.WriteAtAs(c, ino, p, off)
	return off, n, err
}

// Attr is what Setattr changes: the fields whose Set bit is in Valid.
type Attr struct {
	Valid        uint32 // AttrMode|AttrUid|...
	Mode         uint32 // permission bits
	Uid, Gid     uint32
	Atime, Mtime time.Time
}

// Attr.Valid bits.
const (
	AttrMode = 1 << iota
	AttrUid
	AttrGid
	AttrAtime
	AttrMtime
)

// Setattr changes ino's attributes and sets its ctime, as chmod, chown
// and utimensat; a size change is Truncate's. EPERM for an immutable
// inode, and for a mode or owner change of an append-only one.
func (w *Writer) Setattr(ino uint32, a Attr) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.unlock()
	raw, err := w.getInode(ino)
	if err != nil {
		return err
	}
	// ext4_setattr: nothing changes on an immutable inode, nor the mode
	// or owner on an append-only one.
	if fl := iFlags(raw); fl&flImmutable != 0 || fl&flAppend != 0 && a.Valid&(AttrMode|AttrUid|AttrGid) != 0 {
		return syscall.EPERM
	}
	if a.Valid&AttrMode != 0 {
		m := iMode(raw)&S_IFMT | a.Mode&07777
		raw[0], raw[1] = byte(m), byte(m>>8)
	}
	if a.Valid&AttrUid != 0 {
		raw[0x2], raw[0x3] = byte(a.Uid), byte(a.Uid>>8)
		raw[0x78], raw[0x79] = byte(a.Uid>>16), byte(a.Uid>>24)
	}
	if a.Valid&AttrGid != 0 {
		raw[0x18], raw[0x19] = byte(a.Gid), byte(a.Gid>>8)
		raw[0x7A], raw[0x7B] = byte(a.Gid>>16), byte(a.Gid>>24)
	}
	if a.Valid&AttrAtime != 0 {
		touch(raw, a.Atime, tAtime)
	}
	if a.Valid&AttrMtime != 0 {
		touch(raw, a.Mtime, tMtime)
	}
	touch(raw, w.Now(), tCtime)
	return w.putInode(ino, raw)
}
