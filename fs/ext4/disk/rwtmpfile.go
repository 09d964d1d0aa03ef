package disk

// Unnamed files (O_TMPFILE, Linux's ext4_tmpfile): a regular file made
// with no link and put on the orphan list at once, so that it is freed by
// its last close (Unhold), or at the next mount after a crash, unless
// LinkAs names it first (nameTmpfile), which takes it off the list.

import "syscall"

// TmpfileAs makes an unnamed regular file of mode near dir, owned by uid
// and gid (a set-group-ID dir's group instead), acting for c.
func (w *Writer) TmpfileAs(c *Caller, dir uint32, mode, uid, gid uint32, linkable bool) (uint32, error) {
	if err := w.lockAs(c); err != nil {
		return 0, err
	}
	defer w.unlock()
	defer w.writeSuper()
	draw, err := w.getInode(dir)
	if err != nil {
		return 0, err
	}
	mode, gid = inheritGroup(draw, mode, gid) // rwsgid.go
	ino, err := w.allocInode(dir, false)
	if err != nil {
		return 0, err
	}
	raw := w.newInode(ino, mode, uid, gid, w.Now())
	inheritFlags(raw, draw, mode) // rwflags.go
	w.markNewInline(ino, mode)    // rwinline.go
	w.initMap(raw)
	setILinks(raw, 0)
	if err := w.initACL(ino, raw); err != nil { // rwacl.go
		w.releaseInode(ino, raw, false)
		return 0, err
	}
	if err := w.orphanAdd(ino, raw); err != nil {
		w.releaseInode(ino, raw, false)
		return 0, err
	}
	if err := w.putInode(ino, raw); err != nil {
		return 0, err
	}
	if w.orphan == nil {
		w.orphan = map[uint32]bool{}
	}
	w.orphan[ino] = true
	if linkable {
		if w.linkable == nil {
			w.linkable = map[uint32]bool{}
		}
		w.linkable[ino] = true
	}
	return ino, nil
}

// nameTmpfile lets LinkAs give ino, which has no link, its first name: an
// unnamed file made linkable leaves the orphan list (once: Linux clears
// I_LINKABLE at the first link); any other file with no link gives
// ENOENT (vfs_link).
func (w *Writer) nameTmpfile(ino uint32, raw []byte) error {
	if !w.linkable[ino] {
		return syscall.ENOENT
	}
	if err := w.orphanDel(ino, raw); err != nil {
		return err
	}
	delete(w.linkable, ino)
	delete(w.orphan, ino)
	return nil
}
