package disk

// The on-disk orphan list (fs/ext4/orphan.c without orphan_file): an
// inode whose last link goes while it is open is put at the head of the
// list in the same transaction as the unlink (s_last_orphan names the
// head, each orphan's i_dtime names the next), and taken off it in the
// transaction that frees it at the last close. OpenWriter processes a
// list left by a crash as ext4_orphan_cleanup does: an orphan without
// links is freed, one with links (a truncate cut short) loses the blocks
// past its size. So a crash with open unlinked files leaks nothing.
//
// On a volume with orphan_file and a journal, orphans go to the orphan
// file first (rworphanfile.go).
//
// The list is singly linked on disk; the Writer keeps its backward links
// in memory (orphanPrev), so that taking any orphan off changes its
// predecessor without a walk: the last closes of N open-unlinked files
// cost O(N), in whatever order they come. The map is loaded from the
// list at open (loadOrphanList) and kept by orphanAdd and orphanDel; the
// list on disk is exactly the kernel's (newest first).
//
// Locking: everything here runs under the Writer's mu.

import (
	"encoding/binary"
)

const (
	sbLastOrphan     = 0xE8   // s_last_orphan
	compatOrphanFile = 0x1000 // COMPAT_ORPHAN_FILE
)

func nextOrphan(raw []byte) uint32 { return le32(raw, 0x14) }

func setNextOrphan(raw []byte, ino uint32) { binary.LittleEndian.PutUint32(raw[0x14:], ino) }

// orphanAdd records ino as an orphan, as ext4_orphan_add: in the orphan
// file when it has a free slot, else at the head of the on-disk list
// (raw and the superblock are then the caller's to write).
func (w *Writer) orphanAdd(ino uint32, raw []byte) error {
	if ok, err := w.orphanFileAdd(ino); ok || err != nil {
		return err
	}
	head := le32(w.sb, sbLastOrphan)
	setNextOrphan(raw, head)
	binary.LittleEndian.PutUint32(w.sb[sbLastOrphan:], ino)
	if w.orphanPrev == nil {
		w.orphanPrev = map[uint32]uint32{}
	}
	w.orphanPrev[ino] = 0
	if head != 0 {
		w.orphanPrev[head] = ino
	}
	return nil
}

// orphanDel takes ino off the on-disk list (ext4_orphan_del): its
// predecessor (found in orphanPrev), or s_last_orphan, then names ino's
// successor, and ino's i_dtime is cleared in raw (written by the caller).
// An inode not on the list is left alone.
func (w *Writer) orphanDel(ino uint32, raw []byte) error {
	if ok, err := w.orphanFileDel(ino); ok || err != nil {
		return err
	}
	prev, listed := w.orphanPrev[ino]
	head := le32(w.sb, sbLastOrphan) == ino
	if !listed && !head {
		return nil
	}
	next := nextOrphan(raw)
	setNextOrphan(raw, 0)
	delete(w.orphanPrev, ino)
	if head {
		// The head leaves whatever the map says (a list that loops back
		// to it at open ends here, as the walk it replaces did).
		binary.LittleEndian.PutUint32(w.sb[sbLastOrphan:], next)
		prev = 0
	} else {
		praw, err := w.getInode(prev)
		if err != nil {
			return err
		}
		setNextOrphan(praw, next)
		if err := w.putInode(prev, praw); err != nil {
			return err
		}
	}
	if _, ok := w.orphanPrev[next]; ok {
		w.orphanPrev[next] = prev
	}
	return nil
}

// loadOrphanList fills orphanPrev from the on-disk list: from
// s_last_orphan along the next-orphan links, stopping at an inode number
// out of range or seen before (a damaged list loops).
func (w *Writer) loadOrphanList() error {
	w.orphanPrev = map[uint32]uint32{}
	prev := uint32(0)
	for ino := le32(w.sb, sbLastOrphan); ino != 0 && ino <= w.v.inodes; {
		if _, seen := w.orphanPrev[ino]; seen {
			break
		}
		w.orphanPrev[ino] = prev
		w.orphan[ino] = true // readable with no links
		raw, err := w.getInode(ino)
		delete(w.orphan, ino)
		if err != nil {
			return err
		}
		prev, ino = ino, nextOrphan(raw)
	}
	return nil
}

// cleanupOrphans processes the orphan list at open, as
// ext4_orphan_cleanup: head first, each orphan freed (no links) or cut
// to its size (links left: a truncate the crash interrupted). A volume
// marked with errors only has its list cleared, as the kernel does.
func (w *Writer) cleanupOrphans() error {
	inFile := w.orphanFileEntries() // rworphanfile.go
	// A read-only mount's cleanup ends as ext4_mark_recovery_complete:
	// ORPHAN_PRESENT goes once the orphan file is empty.
	present := !w.mounted && le32(w.sb, 0x64)&rocompatOrphanPresent != 0
	if le32(w.sb, sbLastOrphan) == 0 && len(inFile) == 0 && !present {
		return nil
	}
	if err := w.lock(); err != nil {
		return err
	}
	defer w.unlock()
	defer w.writeSuper()
	if present {
		defer func() {
			if len(w.ofile.slot) == 0 {
				setOrphanPresent(w.sb, false)
			}
		}()
	}
	if le16(w.sb, 0x3A)&stateErrorFS != 0 {
		// The list is cleared, the orphan file left as it is.
		binary.LittleEndian.PutUint32(w.sb[sbLastOrphan:], 0)
		return nil
	}
	if err := w.loadOrphanList(); err != nil {
		return err
	}
	freed, cut := 0, 0
	for n := uint32(0); n < w.v.inodes; n++ {
		ino := le32(w.sb, sbLastOrphan)
		if ino == 0 {
			break
		}
		if err := w.processOrphan(ino, &freed, &cut); err != nil {
			return err
		}
	}
	// Then the orphan file's, in slot order, as ext4_orphan_cleanup.
	for _, ino := range inFile {
		if err := w.processOrphan(ino, &freed, &cut); err != nil {
			return err
		}
	}
	w.v.opt.Logf("ext4: orphan cleanup: %d inodes freed, %d truncated", freed, cut)
	return nil
}

// processOrphan is ext4_process_orphan for ino: off the list or out of
// the orphan file, then freed (no links) or cut to its size (links left:
// a truncate the crash interrupted).
func (w *Writer) processOrphan(ino uint32, freed, cut *int) error {
	w.orphan[ino] = true // readable with no links while it is processed
	raw, err := w.getInode(ino)
	delete(w.orphan, ino)
	if err != nil {
		return err
	}
	if err := w.orphanDel(ino, raw); err != nil {
		return err
	}
	if iLinks(raw) == 0 {
		if w.iBlocks(raw) != 0 {
			touch(raw, w.Now(), tMtime, tCtime) // ext4_evict_inode's ext4_truncate
		}
		if err := w.releaseInode(ino, raw, iMode(raw)&S_IFMT == S_IFDIR); err != nil {
			return err
		}
		*freed++
		return nil
	}
	if iMode(raw)&S_IFMT == S_IFREG && iFlags(raw)&FlagExtents != 0 {
		if err := w.cutBlocks(ino, raw, iSize(raw)); err != nil {
			return err
		}
		touch(raw, w.Now(), tMtime, tCtime) // ext4_truncate's
	}
	if err := w.putInode(ino, raw); err != nil {
		return err
	}
	*cut++
	return nil
}

// freeOrphan frees open-unlinked ino at its last close: off the list,
// blocks and inode freed.
func (w *Writer) freeOrphan(ino uint32) error {
	raw, err := w.getInode(ino) // while still an orphan: links count 0 is valid
	delete(w.orphan, ino)
	delete(w.linkable, ino)
	if err != nil {
		return err
	}
	if err := w.orphanDel(ino, raw); err != nil {
		return err
	}
	return w.releaseInode(ino, raw, iMode(raw)&S_IFMT == S_IFDIR)
}

// freeOrphans frees the orphans still open at Close, as their last
// closes would (the handles see EROFS afterwards).
func (w *Writer) freeOrphans() error {
	if len(w.orphan) == 0 {
		return nil
	}
	for ino := range w.orphan {
		if err := w.freeOrphan(ino); err != nil {
			return err
		}
	}
	return w.writeSuper()
}
